"""The compiler driver: ``compile_graph`` and ``compile_artifact`` over the stage table.

    fx ──► torch ──► stablehlo ──► optimized ──► neff       (compiler/stages.py)

``compile_graph`` starts from an ATen FX graph; ``compile_artifact`` from the text of
a re-enterable stage (``neuronc compile --from stablehlo x.mlir``). Both hand the rest
to one ``Compilation.run`` (compiler/compilation.py), which runs the stages in table order from the first one
the caller has not, printing (``stop_after``/``--emit``) and dumping
(``<name>.<suffix>``) each artifact. ``compile_graph`` is the one entry point shared by
the torch.compile backend, eager mode and ``neuronc``; identical requests within a
process are answered from an in-memory LRU.

The FX graph is prepared first: its random ops are seeded (``seed_random_ops``: they
draw Philox words under a key the program takes as its last input, which
``CompiledGraph.takes_random_key`` reports, so the caller draws a fresh key at every
call), then it is retraced to ATen if it lacks metadata.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

import numpy as np
import torch
import torch.fx
from torch_mlir import ir

from torchneuron import lowering
from torchneuron.lowering.rules.random import seed_random_ops
from torchneuron.lru import LRU

from . import graph_cache, observe, program, stages, tensors
from .compilation import (
    TARGETS,
    Compilation,
    CompiledGraph,
    HbmCapacityError,
    Request,
    logical_core_size,
)
from .stages import STAGES, CompileError
from .versions import package_versions

__all__ = [
    "STAGES",
    "TARGETS",
    "CompileError",
    "CompiledGraph",
    "HbmCapacityError",
    "clear_memory_cache",
    "compile_artifact",
    "compile_graph",
    "inputs_from_neff",
    "logical_core_size",
]


def compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[torch.Tensor] = (),
    *,
    name: str = "graph",
    target: str = "trn2",
    pipeline: str | None = None,
    weights: dict[str, torch.Tensor] | None = None,
    weight_sources: dict[str, str] | None = None,
    output_names: Sequence[str] | None = None,
    stop_after: str = "neff",
    dump_dir: str | Path | None = None,
    print_ir_after_all: bool = False,
    ir_stream: TextIO | None = None,
    use_cache: bool = True,
) -> CompiledGraph:
    """Compile an ATen-level FX graph to a NEFF.

    ``example_inputs`` fill in placeholder metadata the graph lacks.
    ``weights`` maps placeholder names to compile-time values (parameters and
    buffers of an exported program); they are stored in the NEFF and are not
    runtime inputs. ``pipeline`` is a pass pipeline string (default: the -O
    pipeline followed by ``externalize-constants``). ``stop_after`` ends compilation after that stage.
    """
    request = Request(
        name,
        target,
        pipeline,
        dict(weight_sources or {}),
        output_names,
        stop_after,
        dump_dir,
        print_ir_after_all,
        ir_stream,
    )
    request.check()
    # Random ops draw from a key given at each call (one more input, last), so the
    # program stays a pure function.
    seeded = seed_random_ops(gm, example_inputs)
    if seeded is not None:
        gm, example_inputs = seeded.graph_module, seeded.example_inputs
    gm = _aten_graph(gm, example_inputs)

    cacheable = use_cache and dump_dir is None and not print_ir_after_all
    key = None
    if cacheable:
        key = _cache_key(gm, request, weights)
        hit, where = _MEMORY_CACHE.get(key), "memory"
        if hit is None and stop_after == "neff":
            hit, where = graph_cache.load(key, name, target), "disk"  # an earlier process's
            if hit is not None:
                _MEMORY_CACHE.put(key, hit)
        if hit is not None:
            observe.program_compiled(f"hit ({where})", {})
            return replace(hit, cache_hit=True)

    compilation = Compilation(request, weights or {})
    compilation.gm = gm
    compilation.takes_random_key = bool(seeded and seeded.takes_key)
    result = compilation.run("fx")
    observe.program_compiled("miss" if cacheable else "", result.stage_seconds)
    observe.trace_artifacts(result)
    if key is not None:
        _MEMORY_CACHE.put(key, result)
        if stop_after == "neff":
            graph_cache.store(key, result)
    return result


def compile_artifact(
    text: str,
    from_stage: str,
    *,
    where: str = "artifact",
    name: str = "graph",
    target: str = "trn2",
    pipeline: str | None = None,
    weights: dict[str, np.ndarray] | None = None,
    weight_sources: dict[str, str] | None = None,
    arguments: Sequence[tuple[str, str]] | None = None,
    output_names: Sequence[str] | None = None,
    stop_after: str = "neff",
    dump_dir: str | Path | None = None,
    print_ir_after_all: bool = False,
    ir_stream: TextIO | None = None,
) -> CompiledGraph:
    """Compile the artifact of stage ``from_stage`` (``torch``, ``stablehlo`` or
    ``optimized``; ``where`` names it in errors) through the stages after it.

    ``weights`` holds the data of the arguments marked ``neuron.weight``. An artifact
    of the torch stage has no marks: ``arguments`` gives ``(kind, name)`` for its
    leading arguments (kind ``weight`` or ``input``); unnamed ones are inputs
    ``input<i>``. An ``optimized`` artifact is not optimized again (``pipeline`` only
    goes into the manifest); its kernels and engines are annotated afresh.
    """
    request = Request(
        name,
        target,
        pipeline,
        dict(weight_sources or {}),
        output_names,
        stop_after,
        dump_dir,
        print_ir_after_all,
        ir_stream,
    )
    request.check()
    module = stages.parse_artifact(from_stage, text, where)
    rest = stages.after(from_stage)
    if stop_after not in rest:
        raise CompileError(f"{stop_after} is not after {from_stage}; nothing to compile")
    compilation = Compilation(request, dict(weights or {}))
    compilation.module = module
    compilation.artifacts[from_stage] = text
    compilation.source = text
    if from_stage == "torch":
        compilation.marks = _marks(module, arguments or ())
    return compilation.run(rest[0])


def inputs_from_neff(neff) -> dict:
    """``compile_artifact`` keywords recovered from a NEFF of the same program (a
    ``torchneuron.neff.Neff``, e.g. the one a dump folder holds): the weights' data
    and sources, the arguments' kinds and names in order, and the output names."""
    manifest = neff.manifest
    variables = neff.definition.get("variables", [])
    return {
        "weights": dict(neff.weights),
        "weight_sources": {w["name"]: w.get("source", w["name"]) for w in manifest["weights"]},
        "arguments": [(v["kind"], v["name"]) for v in variables if v["kind"] != "output"],
        "output_names": [o["name"] for o in manifest["signature"]["outputs"]],
    }


def _marks(module: ir.Module, given: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(kind, name) of every @main argument: ``given`` names the leading ones (a NEFF's
    list may run longer: constants the passes externalized trail it), the rest are inputs."""
    function_type = ir.FunctionType(
        ir.TypeAttr(program.main_function(module).attributes["function_type"]).value
    )
    count = len(function_type.inputs)
    named = list(given)[:count]
    return named + [("input", f"input{i}") for i in range(len(named), count)]


# -- inputs and caching -------------------------------------------------------


def _aten_graph(gm: torch.fx.GraphModule, example_inputs: Sequence) -> torch.fx.GraphModule:
    """``gm`` itself when it is an ATen graph with metadata; else ``gm`` retraced to one.

    An effect token (``with_effects``, AOTAutograd's wrapping of an op with side effects
    such as ``_linalg_check_errors``) is part of an ATen graph: tracing it again would run
    every lowering rule a second time and gain nothing; nor is a loop
    (``lowering/loops.py``: its condition and body were traced with the rules)."""
    if all(
        "val" in node.meta
        and (
            node.op != "call_function"
            or isinstance(node.target, torch._ops.OpOverload)
            or node.target is operator.getitem
            or node.target is torch.ops.higher_order.with_effects
            or node.target is torch.ops.higher_order.while_loop
        )
        for node in gm.graph.nodes
        if node.op not in ("output", "get_attr")
    ):
        return gm
    from torch.fx.experimental.proxy_tensor import make_fx

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(example_inputs) != len(placeholders):
        raise CompileError(
            f"the graph has {len(placeholders)} inputs but {len(example_inputs)} example "
            "inputs were given; example inputs are needed to trace a graph without metadata"
        )
    return make_fx(gm, decomposition_table=lowering.decomposition_table(), tracing_mode="fake")(
        *example_inputs
    )


def _cache_key(gm, request: Request, weights) -> str:
    digest = hashlib.sha256()
    for part in (
        request.name,
        request.target,
        request.pipeline,
        request.stop_after,
        repr(request.output_names),
        gm.code,
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            digest.update(f"{node.name}:{tuple(value.shape)}:{value.dtype};".encode())
    for attr_name, value in sorted(_graph_tensors(gm).items()):
        digest.update(attr_name.encode())
        digest.update(_tensor_digest(value))
    for weight_name, value in sorted((weights or {}).items()):
        digest.update(weight_name.encode())
        digest.update(_tensor_digest(value))
    # the package versions decide the StableHLO version; asking for it imports torch-mlir,
    # which a process finding every graph in the disk cache never needs
    digest.update(repr(sorted(package_versions().items())).encode())
    digest.update(f"lnc={logical_core_size(request.target)}".encode())
    return digest.hexdigest()


def _graph_tensors(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    found = {}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = gm
            for part in str(node.target).split("."):
                value = getattr(value, part, None)
            if isinstance(value, torch.Tensor):
                found[str(node.target)] = value
    return found


def _tensor_digest(value: torch.Tensor) -> bytes:
    array = tensors.to_numpy(value)
    return hashlib.sha256(f"{array.dtype}{array.shape}".encode() + array.tobytes()).digest()


# Compiled graphs by request digest: a hit is returned as a copy marked cache_hit.
_MEMORY_CACHE: LRU[str, CompiledGraph] = LRU(capacity=256)


def clear_memory_cache() -> None:
    """Forget every compiled graph held in memory (the disk cache is untouched)."""
    _MEMORY_CACHE.clear()
