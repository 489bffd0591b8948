"""One run through the stage table (``compiler/stages.py``), from any stage onward.

``Compilation.run(first)`` runs the stages in table order from ``first``: the front
half (fx, torch, stablehlo) needs an FX graph, the back half (optimized, neff) only a
module, so ``compile_graph`` enters at ``fx`` and ``compile_artifact`` right after the
stage whose text it was given. Each stage's artifact is kept as text, dumped as
``<name>.<suffix>`` when asked, and the run stops after ``Request.stop_after``.
"""

from __future__ import annotations

import hashlib
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch
import torch.fx
from torch_mlir import ir

from torchneuron import lowering
from torchneuron.lowering.errors import LoweringError
from torchneuron.lowering.refusals import refuse_graph_calls
from torchneuron.target import dtypes
from torchneuron.target.hardware import CHIPS

from . import program, stages, tensors
from .stages import STAGES, CompileError
from .versions import build_version, dependency_versions

TARGETS = tuple(CHIPS)  # "trn2", "trn3": the chips target/hardware.py describes


class HbmCapacityError(CompileError):
    """The program needs more HBM than one logical NeuronCore of the target has."""


def logical_core_size(target: str) -> int:
    """The LNC a NEFF for ``target`` is compiled for: the emulated topology's own when it
    emulates that chip (``NEURON_LOGICAL_NC_CONFIG``), else the chip's default."""
    from torchneuron.target import hardware
    from torchneuron.target.topology import topology

    current = topology()
    return current.lnc if current.target == target else hardware.CHIPS[target].default_lnc


@dataclass
class CompiledGraph:
    """What a compilation produced: the NEFF and the text of every stage it ran."""

    name: str
    target: str
    neff: bytes | None
    inputs: list[dict]  # runtime inputs, in call order: name, shape, dtype
    weights: list[dict]  # weights stored in the NEFF: name, shape, dtype, source
    outputs: list[dict]  # name, shape, dtype (the run-time checks' results not among them)
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
    # run-time checks, as the manifest lists them: output (position among the program's
    # results), error (kind), message
    checks: list[dict] = field(default_factory=list)
    # The program takes one input more than the FX graph, last: the key of its random
    # draws (int64[2]), which the caller draws afresh at every call (compile_graph
    # seeds the graph's random ops, lowering/rules/random.py).
    takes_random_key: bool = False


@dataclass
class Request:
    """What every compilation is asked, whichever stage it starts from."""

    name: str = "graph"
    target: str = "trn2"
    pipeline: str | None = None
    weight_sources: dict[str, str] = field(default_factory=dict)
    output_names: Sequence[str] | None = None
    stop_after: str = "neff"
    dump_dir: str | Path | None = None
    print_ir_after_all: bool = False
    ir_stream: TextIO | None = None
    # the graph may keep symbolic sizes (a dynamic program, compiler/dynamic.py)
    symbolic: bool = False

    def check(self) -> None:
        stages.stage(self.stop_after)
        if self.target not in TARGETS:
            raise CompileError(f"unknown target {self.target!r}; targets are {', '.join(TARGETS)}")
        if self.pipeline is None:
            from torchneuron.passes import NEFF_PIPELINE

            # The -O pipeline, then large constants moved out into NEFF weights.
            self.pipeline = NEFF_PIPELINE


class Compilation:
    """One run through the stage table; each stage method consumes the previous artifact."""

    def __init__(self, request: Request, weights: dict[str, Any]):
        self.request = request
        self.name = request.name
        self.target = request.target
        self.pipeline = request.pipeline
        self.dump_dir = Path(request.dump_dir) if request.dump_dir is not None else None
        self.ir_stream = request.ir_stream or sys.stderr
        self.weights = weights  # argument name -> tensor or array
        self.gm: torch.fx.GraphModule | None = None
        self.prepared: lowering.PreparedGraph | None = None
        self.graph: torch.fx.Graph | None = None  # for errors that name the user's line
        self.marks: list[tuple[str, str]] | None = None  # (kind, name) per @main argument
        self.module: ir.Module | None = None
        self.source: str | None = None  # the text the NEFF's source_hash digests
        self.artifacts: dict[str, str] = {}
        self.seconds: dict[str, float] = {}
        self.extra_weights: dict[str, np.ndarray] = {}
        self.pass_report = None
        self.neff: bytes | None = None
        self.schedule = None
        self.estimate_seconds = 0.0
        self.takes_random_key = False  # the graph was seeded (compile_graph)

    def run(self, first: str) -> CompiledGraph:
        stage_functions: dict[str, Callable[[], str]] = {
            "fx": self._fx,
            "torch": self._torch,
            "stablehlo": self._stablehlo,
            "optimized": self._optimized,
            "neff": self._neff,
        }
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
        if first == "neff":  # an optimized program given: annotate and estimate it afresh
            from torchneuron.passes import PassContext
            from torchneuron.passes.pipelines import SCHEDULE_PIPELINE

            program.strip_annotations(self.module)
            context = PassContext(weights={})
            self._schedule(context, SCHEDULE_PIPELINE.split(","))
        for name in STAGES[STAGES.index(first) :]:
            start = time.perf_counter()
            text = stage_functions[name]()
            self.seconds[name] = time.perf_counter() - start
            self.artifacts[name] = text
            if self.dump_dir is not None:
                path = self.dump_dir / stages.BY_NAME[name].file_name(self.name)
                if name == "neff":
                    path.write_bytes(self.neff)
                else:
                    path.write_text(text)
            if name == self.request.stop_after:
                break
        return self._result()

    # -- stages -------------------------------------------------------------

    def _fx(self) -> str:
        self.prepared = lowering.prepare_graph(self.gm, self.weights, self.request.symbolic)
        _made_on_host(self.prepared.graph_module.graph)
        refuse_graph_calls(self.prepared.graph_module.graph)
        self.weights = self.prepared.weights
        self.graph = self.prepared.graph_module.graph
        self.marks = [(a.kind, a.name) for a in self.prepared.arguments]
        text = self.prepared.graph_module.print_readable(print_output=False)
        self.source = text
        return text

    def _torch(self) -> str:
        self.module = lowering.import_graph(self.prepared)
        lowering.lower_to_torch_backend(self.module, self.graph)
        return str(self.module)

    def _stablehlo(self) -> str:
        lowering.lower_to_stablehlo(self.module, self.graph)
        program.mark_arguments(self.module, self.marks)
        if self.prepared is not None:  # (a torch-stage artifact carries no checks)
            program.mark_checks(self.module, self.prepared.checks)
        return str(self.module)

    def _optimized(self) -> str:
        from torchneuron.passes import PassContext, PassManager
        from torchneuron.passes.pipelines import SCHEDULE_PIPELINE
        from torchneuron.passes.registry import split_pipeline

        manager = PassManager.from_pipeline(self.pipeline, **self._manager_options())
        context = PassContext(weights={})
        self.pass_report = manager.run(self.module, context)
        self.extra_weights = dict(context.weights)
        # A pipeline that ran an annotation pass itself (fuse-kernels{fuse=false}) keeps it.
        already = {name for name, _ in split_pipeline(self.pipeline)} if self.pipeline else set()
        self._schedule(
            context, [name for name in SCHEDULE_PIPELINE.split(",") if name not in already]
        )
        return str(self.module)

    def _manager_options(self) -> dict:
        return {
            "verify": True,
            "print_ir_after_all": self.request.print_ir_after_all,
            "ir_stream": self.ir_stream,
            "repro_dir": self.dump_dir,
        }

    def _schedule(self, context, annotations: list[str]) -> None:
        """Annotate kernels and engines, then estimate time and memory on the target."""
        from torchneuron.estimate.cost_model import estimate
        from torchneuron.passes import PassManager

        if annotations:
            annotate = PassManager.from_pipeline(",".join(annotations), **self._manager_options())
            report = annotate.run(self.module, context)
            if self.pass_report is None:
                self.pass_report = report
            else:
                self.pass_report.timings.update(report.timings)
                self.pass_report.counters.update(report.counters)
                self.pass_report.steps.extend(report.steps)
        lnc = logical_core_size(self.target)  # a malformed setting is an error, not a warning
        start = time.perf_counter()
        try:
            self.schedule = estimate(self.module, self.target, lnc)
        except Exception as error:
            warnings.warn(
                f"torchneuron: no time/memory estimate for {self.name!r}: "
                f"{type(error).__name__}: {error}",
                stacklevel=2,
            )
        self.estimate_seconds = time.perf_counter() - start

    def _neff(self) -> str:
        from torchneuron.estimate.scheduler import SCHEDULE_PATH
        from torchneuron.neff import Neff, describe, weight_file_path, write_neff
        from torchneuron.neff.schema import MANIFEST_FORMAT

        arguments, results = program.signature_of(self.module)
        weight_arrays = self._weight_arrays(arguments)
        portable = program.portable_artifact(self.module)
        lnc = logical_core_size(self.target)
        schedule = self.schedule
        if schedule is not None:
            schedule.memory.program_bytes = len(portable)
            self._check_fits(schedule, lnc)
        inputs = [a for a in arguments if a["kind"] == "input"]
        outputs = self._program_outputs(results)
        variables = [
            {**a, "size_bytes": program.size_bytes(a)}
            | ({"file": weight_file_path(a["name"])} if a["kind"] == "weight" else {})
            for a in arguments
        ] + [
            {**program.spec(o), "kind": "output", "size_bytes": program.size_bytes(o)}
            for o in outputs
        ]
        sources = self.request.weight_sources
        manifest = {
            "format": MANIFEST_FORMAT,
            "name": self.name,
            "signature": {
                "inputs": [program.spec(a) for a in inputs],
                "outputs": [program.spec(o) for o in outputs if "check" not in o],
            },
            "weights": [
                program.spec(a) | {"source": sources.get(a["name"], a["name"])}
                for a in arguments
                if a["kind"] == "weight"
            ],
            "target": self.target,
            "lnc": lnc,
            "versions": dependency_versions(),
            "pipeline": self.pipeline,
            "source_hash": hashlib.sha256(self.source.encode()).hexdigest(),
            "estimates": schedule.summary() if schedule is not None else {},
        }
        checks = self._checks()
        if checks:  # absent when there are none: such a NEFF reads as before
            manifest["checks"] = checks
        definition = {"variables": variables, "dma_queues": []}
        extra_files = {}
        if schedule is not None:
            definition["memory_plan"] = schedule.memory.to_json()
            extra_files[SCHEDULE_PATH] = schedule.to_bytes()
        neff = Neff(
            name=self.name,
            manifest=manifest,
            definition=definition,
            program=portable,
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
        """HbmCapacityError when the program's peak HBM exceeds one logical core's (as the
        runtime emulates it: ``TORCHNEURON_HBM_BYTES_PER_CORE`` counts here as at run time)."""
        from torchneuron.runtime.memory import format_bytes
        from torchneuron.target.topology import hbm_bytes_per_core, hbm_source

        capacity = hbm_bytes_per_core(self.target, lnc)
        plan = schedule.memory
        needed = plan.peak_hbm_bytes
        if needed <= capacity:
            return
        arguments, results = program.signature_of(self.module)
        described = [
            (f"{a['kind']} {a['name']} {a['dtype']}{a['shape']}", program.size_bytes(a))
            for a in arguments
        ] + [
            (f"output {o['name']} {o['dtype']}{o['shape']}", program.size_bytes(o))
            for o in self._program_outputs(results)
        ]
        raise HbmCapacityError(
            f"{self.name!r} does not fit on one {self.target} logical NeuronCore (LNC={lnc}): "
            f"it needs {format_bytes(needed)} ({needed} bytes) of HBM at its peak, "
            f"{format_bytes(capacity)} ({capacity} bytes) are available "
            f"(from {hbm_source(self.target)}). "
            f"Weights {format_bytes(plan.weights_bytes)}, inputs "
            f"{format_bytes(plan.inputs_bytes)}, outputs {format_bytes(plan.outputs_bytes)}, "
            f"temporaries {format_bytes(plan.temporaries_bytes)}. Largest live tensors: "
            f"{plan.describe_largest(described)}"
        )

    def _weight_arrays(self, arguments: list[dict]) -> dict[str, np.ndarray]:
        arrays = {}
        for argument in arguments:
            if argument["kind"] != "weight":
                continue
            name = argument["name"]
            if name in self.extra_weights:
                arrays[name] = np.asarray(self.extra_weights[name])
            elif name in self.weights:
                value = self.weights[name]
                arrays[name] = tensors.to_numpy(value) if isinstance(value, torch.Tensor) else value
                if self.prepared is None:
                    _check_weight_data(name, argument, arrays[name])
            elif self.prepared is None:
                raise CompileError(
                    f"program argument {name!r} is marked a weight but no data was given "
                    "for it (neuronc: --weights NEFF, e.g. the one --dump-dir wrote)"
                )
            else:
                raise LoweringError(f"program argument {name!r} is marked a weight but has no data")
        return arrays

    def _checks(self) -> list[dict]:
        """The manifest's ``checks``: output (the result's position), error, message."""
        return [
            {"output": c["result"], "error": c["error"], "message": c["message"]}
            for c in program.checks_of(self.module)
        ]

    def _program_outputs(self, results: list[dict]) -> list[dict]:
        """Every result of @main, named: the outputs (``output<i>`` or the requested names)
        and the run-time checks (``check<k>``, with ``check`` set to the check)."""
        checks = {c["result"]: c for c in program.checks_of(self.module)}
        given = self.request.output_names
        names = list(given) if given is not None else []
        count = len(results) - len(checks)
        if names and len(names) != count:
            raise CompileError(f"{len(names)} output names given for {count} program results")
        outputs: list[dict] = []
        for i, result in enumerate(results):
            position = len(outputs) - sum(1 for o in outputs if "check" in o)
            if i in checks:
                outputs.append({"name": f"check{i - position}", **result, "check": checks[i]})
            else:
                outputs.append(
                    {"name": names[position] if names else f"output{position}", **result}
                )
        return outputs

    def _result(self) -> CompiledGraph:
        inputs, weights, outputs = [], [], []
        results: list[dict] = []
        if self.module is not None and (
            "optimized" in self.artifacts or (self.prepared is None and self.neff is not None)
        ):
            arguments, results = program.signature_of(self.module)
            inputs = [program.spec(a) for a in arguments if a["kind"] == "input"]
            weights = [program.spec(a) for a in arguments if a["kind"] == "weight"]
            outputs = [program.spec(o) for o in self._program_outputs(results) if "check" not in o]
        prepared = self.prepared
        report = self.pass_report
        return CompiledGraph(
            name=self.name,
            target=self.target,
            neff=self.neff,
            inputs=inputs,
            weights=weights,
            outputs=outputs,
            output_count=prepared.output_count if prepared else len(outputs),
            none_outputs=prepared.none_outputs if prepared else (),
            constant_outputs=dict(prepared.constant_outputs) if prepared else {},
            artifacts=self.artifacts,
            stage_seconds=self.seconds,
            pass_timings=dict(report.timings) if report else {},
            pass_counters=dict(report.counters) if report else {},
            schedule=self.schedule,
            estimate_seconds=self.estimate_seconds,
            checks=self._checks() if self.module is not None and outputs else [],
            takes_random_key=self.takes_random_key,
        )


def _made_on_host(graph: torch.fx.Graph) -> None:
    """Factory ops of the graph (``arange``, ``scalar_tensor``, ...) make CPU tensors.

    A graph traced from ``neuron`` tensors names the device in its factory ops'
    ``device=`` arguments. The program runs where its inputs live and its outputs
    are given the device of the first tensor input (of the traced outputs when there
    is none), so the name means nothing to the program (and torch-mlir cannot import
    ``neuron``). A graph with an output on another device (``x.cpu()`` of a neuron
    input, ``x.to("neuron")`` of a CPU one) is refused: it would come back on the
    wrong device. CPU scalars among neuron inputs are fine, as in PyTorch.
    """
    first_input = None
    outputs = set()
    for node in graph.nodes:
        if node.op == "placeholder":
            value = node.meta.get("val")
            if first_input is None and isinstance(value, torch.Tensor):
                first_input = value.device.type
        elif node.op == "output":
            for value in torch.utils._pytree.tree_leaves(node.args[0]):
                value = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
                if isinstance(value, torch.Tensor):
                    outputs.add(value.device.type)
        elif node.op == "call_function":
            device = node.kwargs.get("device")
            if isinstance(device, torch.device) and device.type != "cpu":
                node.kwargs = {**node.kwargs, "device": torch.device("cpu")}
    expected = {first_input} if first_input is not None else outputs
    if len(outputs | expected) > 1:
        raise LoweringError(
            f"the graph's outputs are on {', '.join(sorted(outputs))} but its first input is "
            f"on {first_input}: a compiled program returns its results on one device"
        )


def _check_weight_data(name: str, argument: dict, array: np.ndarray) -> None:
    """CompileError unless ``array`` has the shape and dtype the program declares."""
    row = dtypes.from_numpy(array.dtype)
    found = f"{row.name if row else array.dtype}{list(array.shape)}"
    expected = f"{argument['dtype']}{argument['shape']}"
    if found != expected:
        raise CompileError(f"weight {name!r} is {expected} in the program but its data is {found}")
