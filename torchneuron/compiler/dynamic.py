"""Dynamic shapes compiled once: the front half, which lowers a symbolic graph once.

A graph with symbolic sizes (``torch.compile(dynamic=True)``, ``mark_dynamic``,
automatic dynamic, ``torch.export`` with ``Dim``) goes through the front half of the
compiler once::

    fx (symbolic) ──► torch ──► stablehlo (tensor<?x..>) ──► legalize-to-stablehlo

giving a ``DynamicProgram`` (``dynamic_program.py``): the StableHLO text with dynamic
dimensions, its symbolic signature (``dynamic_signature.py``: which input dimension is
which symbol, each symbol's range) and, on request, one NEFF holding both
(``to_neff``/``from_neff``, ``dynamic_neff.py``; ``run`` binds, specializes, loads and
executes it). ``DynamicProgram.specialize(shapes)`` is the back half, run once per
concrete shape and cached. Under torch.compile, ``dynamic_functions.py`` runs the
program (``DynamicGraphFunction``), or compiles per shape where a graph cannot stay
symbolic.

Graph inputs that are sizes (Dynamo passes ``s0`` itself beside a tensor of size
``s0``) are not program arguments: each becomes ``aten.sym_size`` of a tensor input
with that size, and the caller's value is checked against the tensors'. A size that
is a graph output (AOTAutograd saves sizes for the backward pass) is computed at call
time from the bound symbols.

This module is also the dynamic-shape compiler's front door: the program, its
signature and the counters (``STATS``, ``reset_stats``, ``stats``) are importable from
here.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.fx
from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.lowering.errors import DynamicShapeError
from torchneuron.neff import dynamic as neff_dynamic
from torchneuron.runtime.disk_cache import default_cache

from . import graph_cache, stages, tensors
from .compilation import Compilation, Request
from .dynamic_program import (
    SPECIALIZATION_CAPACITY,
    STATS,
    DynamicProgram,
    compile_refined,
    refine,
    reset_stats,
    stats,
)
from .dynamic_signature import (
    MAX_DIMENSION,
    ShapeConstraintError,
    SymbolicSignature,
    evaluate,
    expression_symbols,
    expression_text,
    holds,
)
from .dynamic_sizes import pinned_expr, sizes_from_tensors

__all__ = [
    "MAX_DIMENSION",
    "SPECIALIZATION_CAPACITY",
    "STATS",
    "DynamicProgram",
    "ShapeConstraintError",
    "SymbolicSignature",
    "compile_dynamic_graph",
    "compile_refined",
    "evaluate",
    "expression_symbols",
    "holds",
    "refine",
    "reset_stats",
    "stats",
]


def compile_dynamic_graph(
    gm: torch.fx.GraphModule,
    *,
    name: str = "graph",
    target: str = "trn2",
    pipeline: str | None = None,
    weights: dict[str, torch.Tensor] | None = None,
    weight_sources: dict[str, str] | None = None,
    output_names: Sequence[str] | None = None,
    dump_dir: str | Path | None = None,
    carry_sizes: bool = False,
    pinned: dict | None = None,
) -> tuple[DynamicProgram, list[int]]:
    """Lower an ATen graph with symbolic sizes once.

    With ``dump_dir``, the stored program is written there once, as
    ``<name>.stablehlo.mlir`` and as the dynamic NEFF ``<name>.neff`` (not one per shape).
    Without, the front half is kept in the disk cache (``graph_cache.FrontHalfCache``)
    and a later process with the same graph, sizes, ranges and guards loads it
    (``STATS["disk_front_half"]``).

    Returns the program and the positions of the graph's placeholders that are sizes
    (not program arguments: the caller drops them from its arguments). Raises
    ``DynamicShapeError`` when the graph cannot stay symbolic (a size input no
    tensor dimension carries, a random op of symbolic size), ``LoweringError`` when a
    stage fails. With ``carry_sizes``, a size input that is a symbol no tensor input
    carries (a batch size a backward sees only in products) becomes a program argument
    of shape [size, 0] instead (``carrier_positions``: the caller passes ``carrier(size)``
    for it). ``pinned`` (symbol -> int, ``dynamic_sizes.pinned_symbols``) makes those
    symbols constants of the program.
    """
    arguments = dict(
        name=name,
        target=target,
        pipeline=pipeline,
        weights=weights,
        weight_sources=weight_sources,
        output_names=output_names,
        carry_sizes=carry_sizes,
        pinned=dict(pinned or {}),
    )
    if dump_dir is not None:
        return _lower(gm, dump_dir=dump_dir, **arguments)
    fresh: dict[str, Any] = {}

    def lower() -> bytes:
        program, size_positions = fresh["result"] = _lower(gm, **arguments)
        try:
            neff = program.to_neff()
        except Exception as error:  # noqa: BLE001 - kept in memory whatever the reason
            raise _NotStored() from error
        fresh["payload"] = graph_cache.encode_front_half(size_positions, neff)
        return fresh["payload"]

    def load(payload: bytes) -> tuple[DynamicProgram, list[int]]:
        if payload is fresh.get("payload"):
            return fresh["result"]
        size_positions, neff = graph_cache.decode_front_half(payload)
        program = DynamicProgram.from_neff(neff, target=target, where="front-half cache entry")
        STATS["disk_front_half"] += 1
        return program, size_positions

    cache = default_cache(graph_cache.FrontHalfCache)
    key = graph_cache.graph_key(_front_half_digest(gm, arguments))
    try:
        return cache.get_or_compile(key, lower, load=load)
    except _NotStored:
        return fresh["result"]


class _NotStored(Exception):
    """A front half that lowered but cannot be written as a dynamic NEFF (kept in memory)."""


def _front_half_digest(gm: torch.fx.GraphModule, arguments: dict[str, Any]) -> str:
    """What a front half depends on besides the compiler: the graph's code, its inputs'
    symbolic shapes and dtypes, the symbols' ranges, the tracer's guards, the request
    and the weights."""
    digest = hashlib.sha256(gm.code.encode())
    shape_env = None
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("val")
        dims = value.shape if isinstance(value, torch.Tensor) else (value,)
        described = []
        for dim in dims:
            if isinstance(dim, torch.SymInt):
                shape_env = dim.node.shape_env
                expr = dim.node.expr
                ranges = sorted(
                    (s.name, str(shape_env.var_to_range.get(s))) for s in expr.free_symbols
                )
                described.append(f"{expr}{ranges}")
            else:
                described.append(repr(dim))
        dtype = getattr(value, "dtype", type(value).__name__)
        digest.update(f"{node.name}:{dtype}:{described};".encode())
    guards = [str(g.expr) for g in getattr(shape_env, "guards", ())] if shape_env else []
    digest.update(repr(guards).encode())
    for key in ("name", "target", "pipeline", "output_names", "carry_sizes"):
        digest.update(f"{key}={arguments[key]!r};".encode())
    pinned = sorted((str(symbol), int(value)) for symbol, value in arguments["pinned"].items())
    digest.update(f"pinned={pinned!r};".encode())
    digest.update(repr(sorted((arguments["weight_sources"] or {}).items())).encode())
    for weight_name, value in sorted((arguments["weights"] or {}).items()):
        array = np.ascontiguousarray(
            tensors.to_numpy(value) if isinstance(value, torch.Tensor) else value
        )
        digest.update(f"{weight_name}:{array.dtype}:{array.shape};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _lower(
    gm: torch.fx.GraphModule,
    *,
    name: str,
    target: str,
    pipeline: str | None,
    weights: dict[str, torch.Tensor] | None,
    weight_sources: dict[str, str] | None,
    output_names: Sequence[str] | None,
    dump_dir: str | Path | None = None,
    carry_sizes: bool = False,
    pinned: dict | None = None,
) -> tuple[DynamicProgram, list[int]]:
    """The front half itself (``compile_dynamic_graph`` without the disk cache)."""
    start = time.perf_counter()
    gm, size_positions, size_outputs = sizes_from_tensors(gm, carry_sizes, pinned)
    request = Request(
        name=name,
        target=target,
        pipeline=pipeline,
        weight_sources=dict(weight_sources or {}),
        output_names=output_names,
        stop_after="stablehlo",
        symbolic=True,
    )
    request.check()
    compilation = Compilation(request, dict(weights or {}))
    compilation.gm = gm
    compilation.run("fx")
    module = compilation.module
    _legalize(module)
    prepared = compilation.prepared
    signature = _signature(prepared, pinned)
    weight_arrays = {
        k: tensors.to_numpy(v) if isinstance(v, torch.Tensor) else np.asarray(v)
        for k, v in prepared.weights.items()
    }
    result = DynamicProgram(
        name=name,
        target=target,
        pipeline=request.pipeline,
        text=str(module),
        signature=signature,
        weights=weight_arrays,
        weight_sources=dict(weight_sources or {}),
        output_names=output_names,
        output_count=prepared.output_count + len(size_outputs),
        none_outputs=(),
        constant_outputs={},
        size_outputs=size_outputs,
    )
    # prepared counts the graph without its size outputs: map its positions back
    kept = [i for i in range(result.output_count) if i not in size_outputs]
    result.none_outputs = tuple(kept[i] for i in prepared.none_outputs)
    result.constant_outputs = {kept[i]: v for i, v in prepared.constant_outputs.items()}
    for value in result.constant_outputs.values():
        if not isinstance(value, (bool, int, float)):
            raise DynamicShapeError(f"graph output {value!r} of symbolic size is empty")
    result.front_half_seconds = time.perf_counter() - start
    STATS["front_half"] += 1
    if dump_dir is not None:
        _dump(result, Path(dump_dir))
    return result, size_positions


def _dump(result: DynamicProgram, folder: Path) -> None:
    from torchneuron.files import write_atomically

    try:
        folder.mkdir(parents=True, exist_ok=True)
        suffix = stages.BY_NAME["stablehlo"].suffix
        write_atomically(folder / f"{result.name}.{suffix}", result.text.encode())
        write_atomically(folder / f"{result.name}.neff", result.to_neff())
    except OSError as error:
        raise TorchNeuronError(f"cannot write the dynamic program to {folder}: {error}") from None


def _legalize(module: ir.Module) -> None:
    """torch-mlir's shape arithmetic as StableHLO ops (what refinement can fold)."""
    from torch_mlir import passmanager

    from torchneuron.passes import PassContext, PassManager
    from torchneuron.passes.upstream import _register_stablehlo_passes

    _register_stablehlo_passes()
    ours = PassManager.from_pipeline("legalize-to-stablehlo", verify=True)

    def upstream(pipeline: str) -> None:
        try:
            passmanager.PassManager.parse(
                f"builtin.module({pipeline})", context=module.context
            ).run(module.operation)
        except Exception as error:  # the bindings raise a generic MLIRError
            detail = " ".join(str(error).split())[:400]
            raise DynamicShapeError(
                f"the dynamic program's shape arithmetic has no StableHLO form: {detail}"
            ) from None

    # Broadcast constraints (shape.cstr_broadcastable, shape.assuming) are dropped first:
    # once refined to concrete shapes, a broadcast of incompatible sizes fails
    # refinement's verifier (a ShapeConstraintError), so they cannot turn into a wrong
    # answer. Then ours (tensor.dim, tensor.from_elements, arith), StableHLO's own
    # rewrite of the shape dialect (shape_of, broadcast, const_shape), ours again.
    upstream("func.func(remove-shape-constraints),canonicalize")
    ours.run(module, PassContext({}))
    _binary_broadcasts(module)
    upstream("func.func(shape-legalize-to-stablehlo)")
    ours.run(module, PassContext({}))
    found: set[str] = set()

    def visit(op) -> ir.WalkResult:
        name = op.operation.name
        if name.split(".")[0] in ("shape", "tensor", "arith"):
            found.add(name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    leftovers = sorted(found)
    if leftovers:
        raise DynamicShapeError(
            "the dynamic program keeps shape arithmetic StableHLO cannot express: "
            + ", ".join(leftovers)
        )
    # The shape legalization leaves unrealized_conversion_cast pairs (tensor<2xi32> <->
    # tensor<2xindex>); the stored program (and its NEFF) holds StableHLO only.
    upstream("reconcile-unrealized-casts")


def _binary_broadcasts(module: ir.Module) -> None:
    """Split every n-ary ``shape.broadcast`` into binary ones (all StableHLO's
    shape legalization takes): ``broadcast(a, b, c) -> broadcast(broadcast(a, b), c)``."""
    from torchneuron.passes.ir_utils import create_op

    found = []

    def visit(op) -> ir.WalkResult:
        if op.operation.name == "shape.broadcast" and len(op.operation.operands) > 2:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        operands = list(op.operands)
        lengths = [ir.RankedTensorType(v.type).shape[0] for v in operands]
        if any(length < 0 for length in lengths):
            continue  # shapes of unknown rank: left for the legalization to refuse
        with module.context, op.location:
            current = operands[0]
            for operand in operands[1:-1]:
                length = max(
                    ir.RankedTensorType(current.type).shape[0],
                    ir.RankedTensorType(operand.type).shape[0],
                )
                result = ir.RankedTensorType.get([length], ir.IndexType.get())
                current = create_op("shape.broadcast", [current, operand], [result], before=op)
                current = current.result
            last = create_op(
                "shape.broadcast", [current, operands[-1]], [op.results[0].type], before=op
            )
        op.results[0].replace_all_uses_with(last.result)
        op.erase()


def _signature(prepared, pinned: dict | None = None) -> SymbolicSignature:
    """The inputs' symbolic shapes and the symbols' ranges, from the graph's fake values
    (with the ``pinned`` symbols' values substituted)."""
    import sympy

    inputs, symbols = [], {}
    shape_env = None
    nodes = {n.name: n for n in prepared.graph_module.graph.nodes if n.op == "placeholder"}
    for argument in prepared.arguments:
        value = nodes[argument.node_name].meta["val"]
        shape = []
        for dim in value.shape:
            if isinstance(dim, int):
                shape.append(dim)
                continue
            expr = pinned_expr(dim, pinned)
            if isinstance(expr, sympy.Integer):
                shape.append(int(expr))
                continue
            shape.append(expression_text(expr))
            for symbol in expr.free_symbols:
                shape_env = dim.node.shape_env
                bounds = dim.node.shape_env.var_to_range.get(symbol)
                low = _finite(bounds.lower) if bounds is not None else None
                high = _finite(bounds.upper) if bounds is not None else None
                low = low if low is not None else 0
                if high is not None and high > MAX_DIMENSION:
                    high = None
                symbols[symbol.name] = (max(low, 0), high)
        if argument.kind == "input":
            inputs.append(
                {"name": argument.name, "dtype": _dtype_name(value.dtype), "shape": shape}
            )
        elif any(not isinstance(d, int) for d in shape):
            raise DynamicShapeError(f"weight {argument.name!r} has a symbolic shape {shape}")
    bare = {d for s in inputs for d in s["shape"] if isinstance(d, str) and d in symbols}
    missing = set(symbols) - bare
    if missing:
        raise DynamicShapeError(
            f"symbol(s) {', '.join(sorted(missing))} are no input dimension's size; a "
            "dynamic program binds every symbol from the shape of an input"
        )
    return SymbolicSignature(tuple(inputs), symbols, _guards(shape_env, set(symbols)))


_RELATIONS = {
    "Equality": "==",
    "Unequality": "!=",
    "StrictLessThan": "<",
    "LessThan": "<=",
    "StrictGreaterThan": ">",
    "GreaterThan": ">=",
}


def _guards(shape_env, symbols: set[str]) -> tuple[str, ...]:
    """The tracer's guards on the symbols that a guard of the NEFF can state (one
    comparison of size expressions), so a stored program re-checks them at every bind.
    Others (``Mod``, negative coefficients, symbols no input carries) stay Dynamo's."""
    found: list[str] = []
    for guard in getattr(shape_env, "guards", ()) if shape_env is not None else ():
        expr = guard.expr
        relation = _RELATIONS.get(type(expr).__name__)
        if relation is None or not {s.name for s in expr.free_symbols} <= symbols:
            continue
        try:
            text = f"{expression_text(expr.lhs)} {relation} {expression_text(expr.rhs)}"
            neff_dynamic.guard_symbols(text)
        except (DynamicShapeError, ValueError):
            continue
        if text not in found:
            found.append(text)
    return tuple(found)


def _finite(bound) -> int | None:
    """A range bound as an int; None for the infinities (``int_oo``, ``oo``)."""
    import sympy

    return int(bound) if isinstance(bound, (int, sympy.Integer)) else None


def _dtype_name(dtype: torch.dtype) -> str:
    try:
        return tensors.dtype_name(dtype)
    except TorchNeuronError as error:
        raise DynamicShapeError(str(error)) from None
