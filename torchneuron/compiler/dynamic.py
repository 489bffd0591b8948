"""Dynamic shapes compiled once: one StableHLO program with ``?`` dimensions, specialized per shape.

A graph with symbolic sizes (``torch.compile(dynamic=True)``, ``mark_dynamic``,
automatic dynamic, ``torch.export`` with ``Dim``) goes through the front half of the
compiler once::

    fx (symbolic) ──► torch ──► stablehlo (tensor<?x..>) ──► legalize-to-stablehlo

giving a ``DynamicProgram``: the StableHLO text with dynamic dimensions, its symbolic
signature (which input dimension is which symbol, each symbol's range) and, on
request, one NEFF holding both (``to_neff``/``from_neff``, ``dynamic_neff.py``;
``run`` binds, specializes, loads and executes it). ``DynamicProgram.specialize(shapes)`` is the back half,
run once per concrete shape and cached: StableHLO shape refinement of the stored
program (``stablehlo-refine-arguments`` with the concrete argument types, then
``stablehlo-refine-shapes``), then the usual pass pipeline (whose
``stablehlo-canonicalize-dynamism`` turns the now-constant ``dynamic_*`` ops static),
the cost model and the NEFF writer; the runtime's XLA compile follows at load.

``STATS`` counts front-half compiles and per-shape specializations, so tests and the
benchmark can assert "compiled once".

Graph inputs that are sizes (Dynamo passes ``s0`` itself beside a tensor of size
``s0``) are not program arguments: each becomes ``aten.sym_size`` of a tensor input
with that size, and the caller's value is checked against the tensors'. A size that
is a graph output (AOTAutograd saves sizes for the backward pass) is computed at call
time from the bound symbols.

Why this file is long: the symbolic signature (binding, its JSON form checked as input
from strangers, the size-expression parser that never evaluates Python), the front
half and the per-shape specialization all read the same signature; split, each part
would reach into the others.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.fx
from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.lowering.errors import DynamicShapeError
from torchneuron.lru import LRU
from torchneuron.neff import dynamic as neff_dynamic

from . import program, stages, tensors
from .compilation import Compilation, CompiledGraph, Request

# Counters of this process: front_half (graphs lowered once with symbolic sizes),
# specializations (back-half compiles, one per concrete shape), specialization_hits
# (calls answered by an already specialized program), per_shape_front_half (graphs
# that could not stay symbolic and were retraced for a shape: the old path).
STATS: dict[str, int] = {}
_STAT_NAMES = ("front_half", "specializations", "specialization_hits", "per_shape_front_half")


def reset_stats() -> None:
    """Set every counter of ``STATS`` to zero."""
    for name in _STAT_NAMES:
        STATS[name] = 0


def stats() -> dict[str, int]:
    """A copy of ``STATS``."""
    return dict(STATS)


reset_stats()

# The JSON form's checks live with the NEFF format (input from strangers); one place.
MAX_DIMENSION = neff_dynamic.MAX_DIMENSION
expression_symbols = neff_dynamic.expression_symbols
# Specialized programs kept per DynamicProgram (one per concrete shape).
SPECIALIZATION_CAPACITY = 64


class ShapeConstraintError(TorchNeuronError, ValueError):
    """Concrete input shapes that break a dynamic program's symbolic signature."""


@dataclass(frozen=True)
class SymbolicSignature:
    """Which input dimension is which symbol, and each symbol's range.

    ``inputs``: per runtime input (program order) its name, dtype and shape, each
    dimension an int or an expression over the symbols (``"s0"``, ``"2*s0"``).
    ``symbols``: name -> ``(min, max)``, max None when unbounded.
    """

    inputs: tuple[dict, ...]
    symbols: dict[str, tuple[int, int | None]]
    # relations between the symbols the program assumes (``"s0 != 1"``), checked at bind
    guards: tuple[str, ...] = ()

    def bind(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """The value of every symbol for inputs of ``shapes``; ``ShapeConstraintError``
        naming the input and dimension when they break the signature."""
        if len(shapes) != len(self.inputs):
            raise ShapeConstraintError(
                f"the dynamic program takes {len(self.inputs)} inputs, {len(shapes)} were given"
            )
        values: dict[str, int] = {}
        origin: dict[str, str] = {}  # symbol -> the input dimension it was bound from
        for spec, shape in zip(self.inputs, shapes):
            if len(shape) != len(spec["shape"]):
                raise ShapeConstraintError(
                    f"input {spec['name']!r} has {len(shape)} dimensions, the program's "
                    f"signature {_shape_text(spec['shape'])} has {len(spec['shape'])}"
                )
            for axis, (dim, size) in enumerate(zip(spec["shape"], shape)):
                if isinstance(dim, str) and dim in self.symbols:
                    origin.setdefault(dim, f"input {spec['name']!r} dimension {axis}")
                    if values.setdefault(dim, int(size)) != size:
                        raise ShapeConstraintError(
                            f"input {spec['name']!r} dimension {axis} is {size} but symbol "
                            f"{dim} is {values[dim]} (from another input); the program's "
                            f"signature requires them equal"
                        )
        for name, (low, high) in self.symbols.items():
            if name not in values:
                raise ShapeConstraintError(f"symbol {name} is not the size of any input dimension")
            value = values[name]
            if value < low or (high is not None and value > high):
                bound = f"[{low}, {high if high is not None else 'inf'}]"
                raise ShapeConstraintError(
                    f"{origin[name]} is {value}: symbol {name} = {value} is outside its "
                    f"range {bound}; the dynamic program was compiled for sizes in that "
                    "range only"
                )
        for spec, shape in zip(self.inputs, shapes):
            for axis, (dim, size) in enumerate(zip(spec["shape"], shape)):
                expected = dim if isinstance(dim, int) else evaluate(dim, values)
                if expected != size:
                    raise ShapeConstraintError(
                        f"input {spec['name']!r} dimension {axis} is {size}, the program's "
                        f"signature {_shape_text(spec['shape'])} requires "
                        + (f"{dim}" if isinstance(dim, int) else f"{dim} = {expected}")
                    )
        for guard in self.guards:
            if not holds(guard, values):
                bound = ", ".join(
                    f"{n} = {values[n]}" for n in sorted(neff_dynamic.guard_symbols(guard))
                )
                raise ShapeConstraintError(
                    f"the program's guard {guard} fails for {bound} (input shapes "
                    f"{[list(s) for s in shapes]})"
                )
        return values

    def to_json(self) -> dict:
        return {
            "inputs": [dict(spec) for spec in self.inputs],
            "symbols": {n: {"min": lo, "max": hi} for n, (lo, hi) in self.symbols.items()},
        }

    @classmethod
    def from_json(cls, data: Any) -> SymbolicSignature:
        """The signature in ``data`` (a NEFF manifest's ``dynamic`` entry, input from
        strangers); ``ValueError`` saying what is malformed."""
        inputs, symbols = neff_dynamic.parse_signature(data)
        return cls(inputs, symbols)


def _shape_text(shape: Sequence) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def evaluate(text: str, values: dict[str, int]) -> int:
    """The value of size expression ``text`` (checked by ``expression_symbols``)."""
    expression_symbols(text)
    return _value(ast.parse(text, mode="eval").body, values, text)


def holds(guard: str, values: dict[str, int]) -> bool:
    """Whether guard ``guard`` (one comparison of sizes, ``neff.dynamic.guard_symbols``)
    holds for the symbols' ``values``."""
    neff_dynamic.guard_symbols(guard)
    node = ast.parse(guard, mode="eval").body
    left = _value(node.left, values, guard)
    right = _value(node.comparators[0], values, guard)
    return _COMPARE[type(node.ops[0])](left, right)


_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _value(node: ast.AST, values: dict[str, int], text: str) -> int:
    """Our walk of a checked size expression (never Python's eval)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if not isinstance(node, ast.BinOp):
        raise ShapeConstraintError(f"{text!r} is not a size expression")
    left, right = _value(node.left, values, text), _value(node.right, values, text)
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    if right == 0:
        raise ShapeConstraintError(f"size expression {text} divides by zero")
    return left // right


def _expression_text(expr) -> str:
    """A sympy size expression as ``expression_symbols`` reads it; DynamicShapeError otherwise."""
    import sympy

    if isinstance(expr, sympy.Integer):
        return str(int(expr))
    if isinstance(expr, sympy.Symbol):
        return expr.name
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        parts = [_expression_text(arg) for arg in expr.args]
        joiner = " + " if isinstance(expr, sympy.Add) else "*"
        return "(" + joiner.join(parts) + ")"
    if type(expr).__name__ == "FloorDiv":
        return f"({_expression_text(expr.args[0])} // {_expression_text(expr.args[1])})"
    raise DynamicShapeError(f"size expression {expr} has no form a dynamic program can check")


@dataclass
class DynamicProgram:
    """A graph lowered once with symbolic sizes; ``specialize`` compiles it for one shape."""

    name: str
    target: str
    pipeline: str | None
    text: str  # StableHLO with dynamic dimensions, arguments marked
    signature: SymbolicSignature
    weights: dict[str, np.ndarray]
    weight_sources: dict[str, str]
    output_names: Sequence[str] | None
    output_count: int
    none_outputs: tuple[int, ...]
    constant_outputs: dict[int, Any]
    # outputs that are sizes: position -> size expression over the symbols
    size_outputs: dict[int, str] = field(default_factory=dict)
    front_half_seconds: float = 0.0
    _specialized: LRU = field(default_factory=lambda: LRU(SPECIALIZATION_CAPACITY), repr=False)
    _loaded: LRU = field(default_factory=lambda: LRU(SPECIALIZATION_CAPACITY), repr=False)

    def specialize(self, shapes: Sequence[Sequence[int]]) -> CompiledGraph:
        """The program compiled for inputs of ``shapes`` (cached per shape)."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        hit = self._specialized.get(key)
        if hit is not None:
            STATS["specialization_hits"] += 1
            return hit
        self.signature.bind(key)
        start = time.perf_counter()
        refined = refine(self.text, key, self.signature)
        refine_seconds = time.perf_counter() - start
        compiled = compile_refined(
            refined,
            name=f"{self.name}_" + "_".join("x".join(map(str, s)) or "s" for s in key),
            target=self.target,
            pipeline=self.pipeline,
            weights=self.weights,
            weight_sources=self.weight_sources,
            output_names=self.output_names,
        )
        positions = self._graph_positions()
        compiled = replace(
            compiled,
            output_count=self.output_count - len(self.size_outputs),
            none_outputs=tuple(positions[i] for i in self.none_outputs),
            constant_outputs={positions[i]: v for i, v in self.constant_outputs.items()},
        )
        compiled.stage_seconds = {"refine": refine_seconds, **compiled.stage_seconds}
        STATS["specializations"] += 1
        self._specialized.put(key, compiled)
        return compiled

    def optimized(self, shapes: Sequence[Sequence[int]], target: str | None = None) -> str:
        """The program refined to ``shapes`` and through the pass pipeline, not
        compiled further (what ``neuronc estimate --shape`` prices); not cached."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        self.signature.bind(key)
        compiled = compile_refined(
            refine(self.text, key, self.signature),
            name=self.name,
            target=target or self.target,
            pipeline=self.pipeline,
            weights=self.weights,
            weight_sources=self.weight_sources,
            output_names=self.output_names,
            stop_after="optimized",
        )
        return compiled.artifacts["optimized"]

    def run(self, arrays: Sequence[np.ndarray], core: int = 0) -> list[np.ndarray]:
        """The program's outputs for ``arrays``: its symbols bound from their shapes
        (``ShapeConstraintError`` when they break the signature), specialized once per
        shape, loaded once per shape and core, executed. Outputs that are None,
        constants or sizes are not among them (``output_positions`` says which are)."""
        from torchneuron.runtime import load_neff

        shapes = tuple(tuple(int(d) for d in np.shape(a)) for a in arrays)
        for spec, array in zip(self.signature.inputs, arrays):
            dtype = _numpy_dtype_name(array)
            if dtype != spec["dtype"]:
                raise ShapeConstraintError(
                    f"input {spec['name']!r} is {dtype}, the dynamic program takes {spec['dtype']}"
                )
        compiled = self.specialize(shapes)
        loaded = self._loaded.get((shapes, core))
        if loaded is None:
            loaded = load_neff(compiled.neff, core)
            self._loaded.put((shapes, core), loaded)
        return loaded.execute([np.asarray(a) for a in arrays])

    def output_positions(self) -> list[int]:
        """The graph output position of each output the program computes."""
        skipped = {*self.none_outputs, *self.constant_outputs, *self.size_outputs}
        return [i for i in range(self.output_count) if i not in skipped]

    def _graph_positions(self) -> dict[int, int]:
        """Position among all outputs -> position among the outputs that are not sizes."""
        kept = [i for i in range(self.output_count) if i not in self.size_outputs]
        return {i: k for k, i in enumerate(kept)}

    def sizes(self, values: dict[str, int]) -> dict[int, int]:
        """The size outputs' values once the symbols are bound."""
        return {i: evaluate(text, values) for i, text in self.size_outputs.items()}

    @property
    def specializations(self) -> int:
        return len(self._specialized)

    # -- the dynamic NEFF ------------------------------------------------------

    def to_neff(self) -> bytes:
        """One NEFF holding this program with its symbolic signature, guards and weights
        (``neff/dynamic.py`` gives the layout); ``from_neff`` reads it back."""
        from .dynamic_neff import dynamic_neff

        return dynamic_neff(self)

    @classmethod
    def from_neff(
        cls, source: Any, *, target: str | None = None, where: str | None = None
    ) -> DynamicProgram:
        """The dynamic program a NEFF holds (a ``Neff``, NEFF bytes or a path), checked as
        input from strangers; every failure is one ``NeffError`` line naming the field
        (after ``where``, the file by default)."""
        from .dynamic_neff import program_of_neff

        return program_of_neff(source, target=target, where=where)


def _numpy_dtype_name(array) -> str:
    from torchneuron.neff.weights import weight_dtype_name

    return weight_dtype_name(np.asarray(array).dtype) or str(np.asarray(array).dtype)


def compile_refined(text: str, **keywords) -> CompiledGraph:
    """The back half for one refined (static) program: passes, estimate, NEFF."""
    from .pipeline import compile_artifact

    return compile_artifact(text, "stablehlo", where="refined dynamic program", **keywords)


def refine(text: str, shapes: Sequence[Sequence[int]], signature: SymbolicSignature) -> str:
    """``text`` with its inputs given ``shapes`` and every shape refined from them."""
    from torch_mlir.passmanager import PassManager

    from torchneuron.passes.upstream import _register_stablehlo_passes

    _register_stablehlo_passes()
    module = ir.Module.parse(text, stages.make_context())
    func = program.main_function(module)
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    argument_types = []
    shapes_iter = iter(shapes)
    arguments, _ = _arguments_of(module)
    for mlir_type, (kind, _name) in zip(function_type.inputs, arguments):
        tensor_type = ir.RankedTensorType(mlir_type)
        if kind == "input":
            shape = next(shapes_iter)
            element = tensor_type.element_type
            with module.context, ir.Location.unknown():
                argument_types.append(str(ir.RankedTensorType.get(list(shape), element)))
        else:
            argument_types.append(str(mlir_type))
    pipeline = (
        f"builtin.module(stablehlo-refine-arguments{{types={','.join(argument_types)}}},"
        "stablehlo-refine-shapes)"
    )
    try:
        PassManager.parse(pipeline, context=module.context).run(module.operation)
    except Exception as error:
        raise ShapeConstraintError(
            f"shape refinement of the dynamic program for input shapes {list(shapes)} failed: "
            f"{' '.join(str(error).split())[:600]}"
        ) from None
    return str(module)


def _arguments_of(module: ir.Module) -> tuple[list[tuple[str, str]], int]:
    """(kind, name) of every @main argument, read from its marks."""
    func = program.main_function(module)
    marks = []
    attrs = ir.ArrayAttr(func.attributes["arg_attrs"])
    for i in range(len(attrs)):
        entry = ir.DictAttr(attrs[i])
        if program.WEIGHT_ATTR in entry:
            marks.append(("weight", ir.StringAttr(entry[program.WEIGHT_ATTR]).value))
        else:
            marks.append(("input", ir.StringAttr(entry[program.INPUT_ATTR]).value))
    return marks, len(marks)


# -- the front half -------------------------------------------------------------


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
) -> tuple[DynamicProgram, list[int]]:
    """Lower an ATen graph with symbolic sizes once.

    With ``dump_dir``, the stored program is written there once, as
    ``<name>.stablehlo.mlir`` and as the dynamic NEFF ``<name>.neff`` (not one per shape).

    Returns the program and the positions of the graph's placeholders that are sizes
    (not program arguments: the caller drops them from its arguments). Raises
    ``DynamicShapeError`` when the graph cannot stay symbolic (a size input no
    tensor dimension carries, a random op of symbolic size), ``LoweringError`` when a
    stage fails.
    """
    start = time.perf_counter()
    gm, size_positions, size_outputs = _sizes_from_tensors(gm)
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
    signature = _signature(prepared)
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


def _signature(prepared) -> SymbolicSignature:
    """The inputs' symbolic shapes and the symbols' ranges, from the graph's fake values."""
    import sympy

    inputs, symbols = [], {}
    shape_env = None
    nodes = {n.name: n for n in prepared.graph_module.graph.nodes if n.op == "placeholder"}
    for argument in prepared.arguments:
        value = nodes[argument.name].meta["val"]
        shape = []
        for dim in value.shape:
            if isinstance(dim, int):
                shape.append(dim)
                continue
            expr = dim.node.expr
            if isinstance(expr, sympy.Integer):
                shape.append(int(expr))
                continue
            shape.append(_expression_text(expr))
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
            text = f"{_expression_text(expr.lhs)} {relation} {_expression_text(expr.rhs)}"
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


def _sizes_from_tensors(
    gm: torch.fx.GraphModule,
) -> tuple[torch.fx.GraphModule, list[int], dict[int, str]]:
    """A copy of ``gm`` whose size placeholders read a tensor's size, whose size outputs
    are gone; the size placeholders' positions and the size outputs' expressions."""
    import sympy

    graph = torch.fx.Graph()
    output = graph.graph_copy(gm.graph, {}, return_output_node=True)
    graph.output(output[0] if isinstance(output, tuple) else output)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    carriers: dict[Any, tuple[torch.fx.Node, int]] = {}
    for node in placeholders:
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            for axis, dim in enumerate(value.shape):
                if isinstance(dim, torch.SymInt) and isinstance(dim.node.expr, sympy.Symbol):
                    carriers.setdefault(dim.node.expr, (node, axis))
    first_body = next((n for n in graph.nodes if n.op != "placeholder"), None)
    size_positions = []
    for position, node in enumerate(placeholders):
        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            carrier = carriers.get(value.node.expr)
            if carrier is None:
                raise DynamicShapeError(
                    f"size input {node.name} = {value.node.expr} is no tensor input's dimension"
                )
            tensor_node, axis = carrier
            with graph.inserting_before(first_body):
                size = graph.call_function(torch.ops.aten.sym_size.int, (tensor_node, axis))
            size.meta["val"] = value
            node.replace_all_uses_with(size)
            graph.erase_node(node)
            size_positions.append(position)
        elif isinstance(value, (int, float, bool)) or (
            value is not None and not isinstance(value, torch.Tensor)
        ):
            raise DynamicShapeError(
                f"graph input {node.name!r} is {type(value).__name__}, not a tensor or a size"
            )
    output_node = next(n for n in reversed(graph.nodes) if n.op == "output")
    results = output_node.args[0]
    single = not isinstance(results, (tuple, list))
    results = (results,) if single else tuple(results)
    size_outputs: dict[int, str] = {}
    kept = []
    for i, r in enumerate(results):
        value = r.meta.get("val") if isinstance(r, torch.fx.Node) else r
        if isinstance(value, torch.SymInt):
            size_outputs[i] = _expression_text(value.node.expr)
        else:
            kept.append(r)
    if size_outputs:
        output_node.args = (tuple(kept),)
    graph.eliminate_dead_code()
    return torch.fx.GraphModule(gm, graph), size_positions, size_outputs
