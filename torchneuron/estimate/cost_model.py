"""The NeuronCore cost model: how long a StableHLO program takes on one logical core, and
how much HBM it needs.

``estimate(module, "trn2")`` takes a module (annotated by the ``fuse-kernels`` and
``assign-engines`` passes, or annotated here on a copy), costs every kernel on every
resource it uses, list-schedules the kernels over the engines (``scheduler``), plans
the temporaries' HBM (``memory_plan``) and returns a ``Schedule``.

The work is split by job: ``engine_cost`` holds the rates and the matmul formula,
``kernel_cost`` charges each op's work to its kernel, and this module runs the whole
program (annotation, costing, scheduling, memory plan). Every figure comes from the
cited hardware table (``hardware.CHIPS``) or from ``engine_cost``'s named
assumptions. ``docs/cost-model.md`` explains the model and its validation.

The logical core: with LNC=2 one logical core is two physical NeuronCores. We model
it as the physical cores working in parallel on each kernel: a kernel's tiles are
split evenly between them (so engine time is that of ``ceil(tiles / lnc)`` tiles on
one core), each has its own SBUF (so SBUF tiling is decided per physical core, and an
operand both cores need is loaded by both), and together they have the logical core's
share of the chip's HBM bandwidth (``chip bandwidth / logical cores per chip``).
"""

from __future__ import annotations

from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.estimate.engine_cost import SBUF_USABLE_FRACTION, hbm_bytes_per_second
from torchneuron.estimate.kernel_cost import NodeView, cost_kernels, finish_kernel
from torchneuron.estimate.memory_plan import Buffer, plan_memory
from torchneuron.estimate.scheduler import Schedule, list_schedule
from torchneuron.passes.assign_engines import assign_engines, read_engines
from torchneuron.passes.dataflow import Dataflow, main_function
from torchneuron.passes.fuse_kernels import plan_kernels, read_kernels
from torchneuron.target import hardware
from torchneuron.target.engines import GPSIMD_ENGINE, SCALAR_ENGINE, TENSOR_ENGINE, VECTOR_ENGINE
from torchneuron.target.hardware import ChipSpec


class EstimateError(TorchNeuronError, ValueError):
    """The module cannot be estimated (no @main, an inconsistent annotation)."""


def estimate(
    module: ir.Module,
    chip: ChipSpec | str,
    lnc: int | None = None,
    *,
    fuse: bool = True,
    weight_names: dict[int, str] | None = None,
) -> Schedule:
    """Estimate ``module``'s ``@main`` on one logical core of ``chip`` ("trn2", "trn3").

    ``lnc`` defaults to the chip's default logical core size. Kernels and engines come
    from the ``neuron.kernel``/``neuron.engine`` attributes when every op has them;
    otherwise ``fuse-kernels`` (``fuse=False``: one op per kernel) and
    ``assign-engines`` run on a copy. Arguments marked ``neuron.weight`` count as
    weights; ``weight_names`` (argument number -> name) adds others.
    """
    chip = hardware.chip(chip) if isinstance(chip, str) else chip
    lnc = chip.default_lnc if lnc is None else lnc
    chip.check_lnc(lnc)
    with module.context:
        try:
            function = main_function(module)
        except KeyError as error:
            raise EstimateError(str(error).strip("'\"")) from None
        flow = Dataflow.of_function(function)
        kernels = read_kernels(flow) if fuse else None
        annotated = read_engines(flow) if kernels is not None else None
        if kernels is None:
            kernels = plan_kernels(flow, fuse=fuse)
        engine_of, island = annotated if annotated is not None else assign_engines(flow, kernels)
        argument_kinds = _argument_kinds(function, len(flow.arguments), weight_names or {})
        views = [
            NodeView(
                n.index,
                n.op,
                n.name,
                n.kind,
                engine_of[n.index],
                n.operands,
                [flow.info(ref) for ref in n.operands],
                n.results,
                n.users,
                n.returned,
                n.splat,
            )
            for n in flow.nodes
        ]
        builders = cost_kernels(chip, lnc, flow, views, kernels, island)
    kernel_list = [finish_kernel(chip, lnc, b, kernels) for b in builders]
    latency = list_schedule(kernel_list)
    memory = _plan_memory(flow, views, kernels, kernel_list, argument_kinds)
    clocks = {
        TENSOR_ENGINE: chip.tensor_engine.clock_hz,
        VECTOR_ENGINE: chip.vector_engine.clock_hz,
        SCALAR_ENGINE: chip.scalar_engine.clock_hz,
        GPSIMD_ENGINE: chip.gpsimd_engine.clock_hz,
    }
    return Schedule(
        target=chip.name,
        lnc=lnc,
        kernels=kernel_list,
        memory=memory,
        latency_s=latency,
        flops=sum(b.flops for b in builders),
        peak_seconds=sum(b.peak_seconds for b in builders),
        clocks=clocks,
        model=model_figures(chip, lnc),
    )


def model_figures(chip: ChipSpec, lnc: int) -> dict:
    """The figures an estimate for ``chip`` at ``lnc`` used (stored with the schedule)."""
    return {
        "hbm_bytes_per_s": hbm_bytes_per_second(chip, lnc),
        "hbm_capacity_bytes": chip.hbm_bytes_per_logical_core(lnc),
        "sbuf_bytes_per_physical_core": chip.sbuf_bytes_per_core,
        "tensor_engine_bf16_flops": chip.tensor_flops_per_logical_core("bfloat16", lnc),
        "instruction_overhead_cycles": chip.instruction_overhead_cycles,
        "dma_fixed_us": chip.dma_fixed_latency_s * 1e6,
        "sbuf_usable_fraction": SBUF_USABLE_FRACTION,
    }


def _argument_kinds(function, count: int, extra_weights: dict[int, str]) -> list[tuple[str, str]]:
    """(kind, name) of every @main argument, from the compiler's argument attributes."""
    kinds = [("input", f"arg{i}") for i in range(count)]
    if "arg_attrs" in function.attributes:
        for i, attrs in enumerate(ir.ArrayAttr(function.attributes["arg_attrs"])):
            attrs = ir.DictAttr(attrs)
            if "neuron.weight" in attrs:
                kinds[i] = ("weight", ir.StringAttr(attrs["neuron.weight"]).value)
            elif "neuron.input" in attrs:
                kinds[i] = ("input", ir.StringAttr(attrs["neuron.input"]).value)
    for i, name in extra_weights.items():
        kinds[i] = ("weight", name)
    return kinds


def _plan_memory(flow, views, kernels, kernel_list, argument_kinds):
    weights = sum(
        flow.arguments[i].nbytes for i, (kind, _) in enumerate(argument_kinds) if kind == "weight"
    )
    inputs = sum(
        flow.arguments[i].nbytes for i, (kind, _) in enumerate(argument_kinds) if kind != "weight"
    )
    returned = set(flow.returns)
    outputs = sum(flow.info(ref).nbytes for ref in flow.returns)
    by_id = {k.id: k for k in kernel_list}
    buffers = []
    for view in views:
        kernel = kernels[view.index]
        if kernel is None:
            continue
        readers = [
            kernels[u] for u in view.users if kernels[u] is not None and kernels[u] != kernel
        ]
        if not readers:
            continue
        for number, info in enumerate(view.results):
            if (view.index, number) in returned or info.nbytes == 0:
                continue
            producer = by_id[kernel]
            buffers.append(
                Buffer(
                    name=f"{producer.name}#{view.index}",
                    size_bytes=info.nbytes,
                    start_s=producer.start_s,
                    end_s=max(by_id[r].end_s for r in readers),
                    shape=list(info.shape),
                    dtype=info.dtype,
                )
            )
    return plan_memory(buffers, weights_bytes=weights, inputs_bytes=inputs, outputs_bytes=outputs)


def estimate_text(text: str, chip: ChipSpec | str, lnc: int | None = None, **options) -> Schedule:
    """``estimate`` of MLIR text (e.g. a ``--emit optimized`` dump)."""
    from torchneuron.passes.ir_utils import parse_module

    return estimate(parse_module(text), chip, lnc, **options)
