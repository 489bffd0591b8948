"""The compiler driver: the ordered stage table and ``compile_graph``.

    fx ──► torch ──► stablehlo ──► optimized ──► neff

Every stage's artifact can be printed (``stop_after``/``--emit``) and written
to a dump folder as ``<name>.<stage>``. ``compile_graph`` is the one entry point
shared by the torch.compile backend, eager mode and ``neuronc``; identical
requests within a process are answered from an in-memory cache.
"""

from __future__ import annotations

import collections
import hashlib
import operator
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch
import torch.fx
from torch_mlir import ir

from torchneuron import lowering
from torchneuron.lowering import PreparedGraph
from torchneuron.lowering.errors import LoweringError

from . import tensors
from .versions import build_version, dependency_versions, stablehlo_target_version

STAGES = ("fx", "torch", "stablehlo", "optimized", "neff")
WEIGHT_ATTR = "neuron.weight"
INPUT_ATTR = "neuron.input"
TARGETS = ("trn2", "trn3")


def logical_core_size(target: str) -> int:
    """The LNC a NEFF for ``target`` is compiled for: the emulated topology's own when it
    emulates that chip (``NEURON_LOGICAL_NC_CONFIG``), else the chip's default."""
    from torchneuron.target import hardware
    from torchneuron.target.topology import topology

    current = topology()
    return current.lnc if current.target == target else hardware.CHIPS[target].default_lnc


@dataclass
class CompiledGraph:
    """What ``compile_graph`` produced: the NEFF and the text of every stage it ran."""

    name: str
    target: str
    neff: bytes | None
    inputs: list[dict]  # runtime inputs, in call order: name, shape, dtype
    weights: list[dict]  # weights stored in the NEFF: name, shape, dtype, source
    outputs: list[dict]  # name, shape, dtype
    output_count: int  # outputs of the FX graph, None ones included
    none_outputs: tuple[int, ...]
    artifacts: dict[str, str] = field(default_factory=dict)
    constant_outputs: dict[int, Any] = field(default_factory=dict)  # position -> number
    stage_seconds: dict[str, float] = field(default_factory=dict)
    pass_timings: dict[str, float] = field(default_factory=dict)
    pass_counters: dict[str, int] = field(default_factory=dict)
    cache_hit: bool = False
    # The cost model's estimate of the optimized program (estimate.cost_model.estimate),
    # None if the estimate failed (a warning says why).
    schedule: Any = None
    estimate_seconds: float = 0.0


class CompileError(RuntimeError):
    """A compile request was malformed (unknown stage, target or option)."""


class HbmCapacityError(CompileError):
    """The program needs more HBM than one logical NeuronCore of the target has."""


# Run after the pass pipeline on every compile: they only annotate (neuron.kernel,
# neuron.engine), so the program is unchanged, and the estimate reads what they decide.
SCHEDULE_PIPELINE = "fuse-kernels,assign-engines"
# Discardable attributes of ours that stay out of the serialized program.
_ANNOTATION_ATTRS = ("neuron.kernel", "neuron.engine", "neuron.activation")


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
    if stop_after not in STAGES:
        raise CompileError(f"unknown stage {stop_after!r}; stages are {', '.join(STAGES)}")
    if target not in TARGETS:
        raise CompileError(f"unknown target {target!r}; targets are {', '.join(TARGETS)}")
    from torchneuron.passes import NEFF_PIPELINE

    # The -O pipeline, then large constants moved out of the program into NEFF weights.
    pipeline = NEFF_PIPELINE if pipeline is None else pipeline
    gm = _aten_graph(gm, example_inputs)

    cacheable = use_cache and dump_dir is None and not print_ir_after_all
    key = None
    if cacheable:
        key = _cache_key(gm, name, target, pipeline, weights, output_names, stop_after)
        hit = _MEMORY_CACHE.get(key)
        if hit is not None:
            return hit

    result = _Compilation(
        gm,
        name,
        target,
        pipeline,
        weights or {},
        dict(weight_sources or {}),
        output_names,
        dump_dir,
        print_ir_after_all,
        ir_stream,
    ).run(stop_after)
    if key is not None:
        _MEMORY_CACHE.put(key, result)
    return result


class _Compilation:
    """One run through the stage table; each stage method consumes the previous artifact."""

    def __init__(
        self,
        gm,
        name,
        target,
        pipeline,
        weights,
        weight_sources,
        output_names,
        dump_dir,
        print_ir_after_all,
        ir_stream,
    ):
        self.gm = gm
        self.name = name
        self.target = target
        self.pipeline = pipeline
        self.weights = weights
        self.weight_sources = weight_sources
        self.output_names = output_names
        self.dump_dir = Path(dump_dir) if dump_dir is not None else None
        self.print_ir_after_all = print_ir_after_all
        self.ir_stream = ir_stream or sys.stderr
        self.artifacts: dict[str, str] = {}
        self.seconds: dict[str, float] = {}
        self.prepared: PreparedGraph | None = None
        self.module: ir.Module | None = None
        self.extra_weights: dict[str, np.ndarray] = {}
        self.pass_report = None
        self.neff: bytes | None = None
        self.schedule = None
        self.estimate_seconds = 0.0

    def run(self, stop_after: str) -> CompiledGraph:
        stage_functions: dict[str, Callable[[], str]] = {
            "fx": self._fx,
            "torch": self._torch,
            "stablehlo": self._stablehlo,
            "optimized": self._optimized,
            "neff": self._neff,
        }
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
        for stage in STAGES:
            start = time.perf_counter()
            text = stage_functions[stage]()
            self.seconds[stage] = time.perf_counter() - start
            self.artifacts[stage] = text
            if self.dump_dir is not None:
                path = self.dump_dir / f"{self.name}.{stage}"
                if stage == "neff":
                    path.write_bytes(self.neff)
                else:
                    path.write_text(text)
            if stage == stop_after:
                break
        return self._result()

    # -- stages -------------------------------------------------------------

    def _fx(self) -> str:
        self.prepared = lowering.prepare_graph(self.gm, self.weights)
        return self.prepared.graph_module.print_readable(print_output=False)

    def _torch(self) -> str:
        graph = self.prepared.graph_module.graph
        self.module = lowering.import_graph(self.prepared)
        lowering.lower_to_torch_backend(self.module, graph)
        return str(self.module)

    def _stablehlo(self) -> str:
        lowering.lower_to_stablehlo(self.module, self.prepared.graph_module.graph)
        self._mark_arguments()
        return str(self.module)

    def _optimized(self) -> str:
        from torchneuron.passes import PassContext, PassManager

        manager = PassManager.from_pipeline(
            self.pipeline,
            verify=True,
            print_ir_after_all=self.print_ir_after_all,
            ir_stream=self.ir_stream,
            repro_dir=self.dump_dir,
        )
        context = PassContext(weights={})
        self.pass_report = manager.run(self.module, context)
        self.extra_weights = dict(context.weights)
        self._schedule(context)
        return str(self.module)

    def _schedule(self, context) -> None:
        """Annotate kernels and engines, then estimate time and memory on the target."""
        import warnings

        from torchneuron.estimate.cost_model import estimate
        from torchneuron.passes import PassManager
        from torchneuron.passes.registry import split_pipeline

        # A pipeline that ran an annotation pass itself (fuse-kernels{fuse=false}) keeps it.
        already = {name for name, _ in split_pipeline(self.pipeline)} if self.pipeline else set()
        missing = [name for name in SCHEDULE_PIPELINE.split(",") if name not in already]
        if missing:
            annotate = PassManager.from_pipeline(
                ",".join(missing),
                verify=True,
                print_ir_after_all=self.print_ir_after_all,
                ir_stream=self.ir_stream,
                repro_dir=self.dump_dir,
            )
            report = annotate.run(self.module, context)
            self.pass_report.timings.update(report.timings)
            self.pass_report.counters.update(report.counters)
            self.pass_report.steps.extend(report.steps)
        start = time.perf_counter()
        try:
            self.schedule = estimate(self.module, self.target, logical_core_size(self.target))
        except Exception as error:
            warnings.warn(
                f"torchneuron: no time/memory estimate for {self.name!r}: "
                f"{type(error).__name__}: {error}",
                stacklevel=2,
            )
        self.estimate_seconds = time.perf_counter() - start

    def _neff(self) -> str:
        from torchneuron.neff import Neff, describe, weight_file_path, write_neff

        arguments, results = _signature_of(self.module)
        weight_arrays = self._weight_arrays(arguments)
        program = _portable_artifact(self.module)
        lnc = logical_core_size(self.target)
        schedule = self.schedule
        if schedule is not None:
            schedule.memory.program_bytes = len(program)
            self._check_fits(schedule, lnc)
        inputs = [a for a in arguments if a["kind"] == "input"]
        outputs = self._named_outputs(results)
        variables = [
            {**a, "size_bytes": _size_bytes(a)}
            | ({"file": weight_file_path(a["name"])} if a["kind"] == "weight" else {})
            for a in arguments
        ] + [{**o, "kind": "output", "size_bytes": _size_bytes(o)} for o in outputs]
        source_hash = hashlib.sha256(self.artifacts["fx"].encode()).hexdigest()
        manifest = {
            "format": "torchneuron-neff",
            "name": self.name,
            "signature": {
                "inputs": [_spec(a) for a in inputs],
                "outputs": [_spec(o) for o in outputs],
            },
            "weights": [
                _spec(a) | {"source": self.weight_sources.get(a["name"], a["name"])}
                for a in arguments
                if a["kind"] == "weight"
            ],
            "target": self.target,
            "lnc": lnc,
            "versions": dependency_versions(),
            "pipeline": self.pipeline,
            "source_hash": source_hash,
            "estimates": schedule.summary() if schedule is not None else {},
        }
        definition = {"variables": variables, "dma_queues": []}
        extra_files = {}
        if schedule is not None:
            definition["memory_plan"] = schedule.memory.to_json()
            from torchneuron.estimate.scheduler import SCHEDULE_PATH

            extra_files[SCHEDULE_PATH] = schedule.to_bytes()
        neff = Neff(
            name=self.name,
            manifest=manifest,
            definition=definition,
            program=program,
            weights=weight_arrays,
            num_tpb=1,
            lnc_size=lnc,
            build_version=build_version(),
            extra_files=extra_files,
        )
        self.neff = write_neff(neff)
        return describe(neff)

    # -- helpers ------------------------------------------------------------

    def _check_fits(self, schedule, lnc: int) -> None:
        """HbmCapacityError when the program's peak HBM exceeds one logical core's."""
        from torchneuron.runtime.memory import format_bytes
        from torchneuron.target import hardware

        capacity = hardware.chip(self.target).hbm_bytes_per_logical_core(lnc)
        plan = schedule.memory
        needed = plan.peak_hbm_bytes
        if needed <= capacity:
            return
        arguments, results = _signature_of(self.module)
        tensors = [
            (f"{a['kind']} {a['name']} {a['dtype']}{a['shape']}", _size_bytes(a)) for a in arguments
        ] + [
            (f"output {o['name']} {o['dtype']}{o['shape']}", _size_bytes(o))
            for o in self._named_outputs(results)
        ]
        raise HbmCapacityError(
            f"{self.name!r} does not fit on one {self.target} logical NeuronCore (LNC={lnc}): "
            f"it needs {format_bytes(needed)} ({needed} bytes) of HBM at its peak, "
            f"{format_bytes(capacity)} ({capacity} bytes) are available. "
            f"Weights {format_bytes(plan.weights_bytes)}, inputs "
            f"{format_bytes(plan.inputs_bytes)}, outputs {format_bytes(plan.outputs_bytes)}, "
            f"temporaries {format_bytes(plan.temporaries_bytes)}. Largest live tensors: "
            f"{plan.describe_largest(tensors)}"
        )

    def _mark_arguments(self) -> None:
        """Name every @main argument after its FX placeholder, and tag weights."""
        func = _main_function(self.module)
        with self.module.context:
            attrs = [
                ir.DictAttr.get(
                    {WEIGHT_ATTR if a.kind == "weight" else INPUT_ATTR: ir.StringAttr.get(a.name)}
                )
                for a in self.prepared.arguments
            ]
            func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)

    def _weight_arrays(self, arguments: list[dict]) -> dict[str, np.ndarray]:
        arrays = {}
        for argument in arguments:
            if argument["kind"] != "weight":
                continue
            name = argument["name"]
            if name in self.extra_weights:
                arrays[name] = np.asarray(self.extra_weights[name])
            elif name in self.prepared.weights:
                arrays[name] = tensors.to_numpy(self.prepared.weights[name])
            else:
                raise LoweringError(f"program argument {name!r} is marked a weight but has no data")
        return arrays

    def _named_outputs(self, results: list[dict]) -> list[dict]:
        names = list(self.output_names) if self.output_names is not None else []
        if names and len(names) != len(results):
            raise CompileError(
                f"{len(names)} output names given for {len(results)} program results"
            )
        return [{"name": names[i] if names else f"output{i}", **r} for i, r in enumerate(results)]

    def _result(self) -> CompiledGraph:
        inputs, weights, outputs = [], [], []
        if self.module is not None and "optimized" in self.artifacts:
            arguments, results = _signature_of(self.module)
            inputs = [_spec(a) for a in arguments if a["kind"] == "input"]
            weights = [_spec(a) for a in arguments if a["kind"] == "weight"]
            outputs = [_spec(o) for o in self._named_outputs(results)]
        prepared = self.prepared
        report = self.pass_report
        return CompiledGraph(
            name=self.name,
            target=self.target,
            neff=self.neff,
            inputs=inputs,
            weights=weights,
            outputs=outputs,
            output_count=prepared.output_count if prepared else 0,
            none_outputs=prepared.none_outputs if prepared else (),
            constant_outputs=dict(prepared.constant_outputs) if prepared else {},
            artifacts=self.artifacts,
            stage_seconds=self.seconds,
            pass_timings=dict(report.timings) if report else {},
            pass_counters=dict(report.counters) if report else {},
            schedule=self.schedule,
            estimate_seconds=self.estimate_seconds,
        )


# -- module inspection and serialization ------------------------------------

_ELEMENT_TYPES = {
    "f32": "float32",
    "f64": "float64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f8E4M3FN": "float8_e4m3fn",
    "f8E5M2": "float8_e5m2",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "ui8": "uint8",
    "i1": "bool",
    "complex<f32>": "complex64",
}


def _main_function(module: ir.Module):
    for op in module.body.operations:
        if (
            op.operation.name == "func.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == "main"
        ):
            return op
    raise LoweringError("the lowered module has no func.func @main")


def _signature_of(module: ir.Module) -> tuple[list[dict], list[dict]]:
    """Arguments (name, kind, shape, dtype) and results (shape, dtype) of @main."""
    func = _main_function(module)
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    arg_attrs = func.attributes["arg_attrs"] if "arg_attrs" in func.attributes else None
    arguments = []
    for i, arg_type in enumerate(function_type.inputs):
        name, kind = f"input{i}", "input"
        if arg_attrs is not None:
            attrs = ir.DictAttr(ir.ArrayAttr(arg_attrs)[i])
            if WEIGHT_ATTR in attrs:
                name, kind = ir.StringAttr(attrs[WEIGHT_ATTR]).value, "weight"
            elif INPUT_ATTR in attrs:
                name = ir.StringAttr(attrs[INPUT_ATTR]).value
        arguments.append({"name": name, "kind": kind, **_tensor_type(arg_type, f"argument {i}")})
    results = [_tensor_type(t, f"result {i}") for i, t in enumerate(function_type.results)]
    return arguments, results


def _tensor_type(mlir_type: ir.Type, what: str) -> dict:
    tensor_type = ir.RankedTensorType(mlir_type)
    if not tensor_type.has_static_shape:
        raise lowering.DynamicShapeError(f"{what} of @main has a dynamic shape: {mlir_type}")
    element = str(tensor_type.element_type)
    if element not in _ELEMENT_TYPES:
        raise LoweringError(f"{what} of @main has element type {element}, not supported")
    return {"shape": list(tensor_type.shape), "dtype": _ELEMENT_TYPES[element]}


def _portable_artifact(module: ir.Module) -> bytes:
    """The module as a StableHLO portable artifact the executor's jaxlib can read."""
    from torch_mlir._mlir_libs import _stablehlo

    func = _main_function(module)
    text = str(module)
    if "arg_attrs" in func.attributes or any(name in text for name in _ANNOTATION_ATTRS):
        # Our argument attributes and kernel/engine annotations are bookkeeping (the
        # schedule is stored beside the program), not part of the portable program.
        clone = ir.Module.parse(text, module.context)
        clone_main = _main_function(clone)
        if "arg_attrs" in clone_main.attributes:
            del clone_main.attributes["arg_attrs"]
        _strip_annotations(clone)
        text = str(clone)
    try:
        return _stablehlo.serialize_portable_artifact_str(text, stablehlo_target_version())
    except Exception as exc:
        raise LoweringError(
            f"could not serialize the program as a StableHLO {stablehlo_target_version()} "
            f"portable artifact: {exc}"
        ) from None


def _strip_annotations(module: ir.Module) -> None:
    """Delete our discardable scheduling attributes from every operation of ``module``."""

    def strip(op) -> ir.WalkResult:
        attributes = op.operation.attributes
        for name in _ANNOTATION_ATTRS:
            if name in attributes:
                del attributes[name]
        return ir.WalkResult.ADVANCE

    module.operation.walk(strip)


def _spec(entry: dict) -> dict:
    return {"name": entry["name"], "shape": list(entry["shape"]), "dtype": entry["dtype"]}


def _size_bytes(entry: dict) -> int:
    count = int(np.prod(entry["shape"], dtype=np.int64)) if entry["shape"] else 1
    return count * tensors.numpy_dtype(entry["dtype"]).itemsize


# -- inputs and caching -------------------------------------------------------


def _aten_graph(gm: torch.fx.GraphModule, example_inputs: Sequence) -> torch.fx.GraphModule:
    """``gm`` itself when it is an ATen graph with metadata; else ``gm`` retraced to one."""
    if all(
        "val" in node.meta
        and (
            node.op != "call_function"
            or isinstance(node.target, torch._ops.OpOverload)
            or node.target is operator.getitem
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


def _cache_key(gm, name, target, pipeline, weights, output_names, stop_after) -> str:
    digest = hashlib.sha256()
    for part in (name, target, pipeline, stop_after, repr(output_names), gm.code):
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
    digest.update(repr(sorted(dependency_versions().items())).encode())
    digest.update(f"lnc={logical_core_size(target)}".encode())
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


class _LruCache:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._items: collections.OrderedDict[str, CompiledGraph] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> CompiledGraph | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
        return _replace_hit(item)

    def put(self, key: str, value: CompiledGraph) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _replace_hit(item: CompiledGraph) -> CompiledGraph:
    from dataclasses import replace

    return replace(item, cache_hit=True)


_MEMORY_CACHE = _LruCache(capacity=256)


def clear_memory_cache() -> None:
    """Forget every compiled graph held in memory (the disk cache is untouched)."""
    _MEMORY_CACHE.clear()
