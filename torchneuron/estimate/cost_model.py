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

Loops: a ``stablehlo.while`` is priced as its trip count times its body. The body is
estimated like a function of its own (its kernels and engines from its annotations,
or planned; block arguments, the carried values, read from HBM and the values handed
to the next trip written back at every trip; constants and values it closes over
read like arguments) and list-scheduled on its own; the loop's kernel on the
enclosing schedule is a barrier over every lane lasting ``trips x`` that makespan
(``scheduler``), with ``trips x`` the body's engine time, HBM traffic and FLOPs.
Nested loops multiply, since a body's estimate prices its own loops. The condition
(one scalar compare of the counter) is not charged. The trip count must be proved
(``dataflow.loop_trip_count``, the runtime verifier's proof); a loop whose count is
not proved, and any other op with regions (case, if, call: the runtime runs none),
is an ``EstimateError`` naming the op, never priced as free.

Memory of a loop: its operands (the first trip's carried values, and what the body
closes over) stay live until it ends; each result the body changes is live from the
loop's start (the values a trip writes while it reads the previous ones: such a
carried value is held twice) to its last reader; a result the body hands back
unchanged (what the loop closes over, carried by our compiler) is its operand's
buffer, kept live to the result's last reader; the body's temporaries, planned on
the body's own schedule (nested loops included), are one buffer of the body's arena
size over the loop's whole time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.estimate.engine_cost import SBUF_USABLE_FRACTION, hbm_bytes_per_second
from torchneuron.estimate.kernel_cost import NodeView, cost_kernels, finish_kernel
from torchneuron.estimate.memory_plan import Buffer, assign_offsets, plan_memory
from torchneuron.estimate.scheduler import Kernel, Schedule, list_schedule
from torchneuron.passes.assign_engines import assign_engines, read_engines
from torchneuron.passes.dataflow import (
    ARGUMENT,
    Dataflow,
    UncountedLoopError,
    ValueRef,
    loop_trip_count,
    main_function,
)
from torchneuron.passes.fuse_kernels import plan_kernels, read_kernels
from torchneuron.target import engines, hardware
from torchneuron.target.engines import GPSIMD_ENGINE, SCALAR_ENGINE, TENSOR_ENGINE, VECTOR_ENGINE
from torchneuron.target.hardware import ChipSpec


class EstimateError(TorchNeuronError, ValueError):
    """The module cannot be estimated (no @main, an inconsistent annotation, a loop whose
    trip count is not proved, an op with regions the model cannot price)."""


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
    from the ``neuron.kernel``/``neuron.engine`` attributes when every op of a block
    (@main's body, each loop's body) has them; otherwise the ``fuse-kernels``
    (``fuse=False``: one op per kernel) and ``assign-engines`` plans are made for that
    block, without changing the module. Arguments marked ``neuron.weight`` count as
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
        program = _estimate_block(chip, lnc, Dataflow.of_function(function), fuse, "@main")
        argument_kinds = _argument_kinds(function, len(program.flow.arguments), weight_names or {})
    memory = _plan_memory(program, argument_kinds)
    clocks = {
        TENSOR_ENGINE: chip.tensor_engine.clock_hz,
        VECTOR_ENGINE: chip.vector_engine.clock_hz,
        SCALAR_ENGINE: chip.scalar_engine.clock_hz,
        GPSIMD_ENGINE: chip.gpsimd_engine.clock_hz,
    }
    return Schedule(
        target=chip.name,
        lnc=lnc,
        kernels=program.kernels,
        memory=memory,
        latency_s=program.latency_s,
        flops=sum(k.flops for k in program.kernels),
        peak_seconds=program.peak_seconds,
        clocks=clocks,
        model=model_figures(chip, lnc),
    )


@dataclass
class _BlockEstimate:
    """One block (@main's body or a loop's) costed and scheduled on its own."""

    flow: Dataflow
    views: list[NodeView]
    kernel_of: list[int | None]  # node -> kernel id (None for constants)
    kernels: list[Kernel]  # position = kernel id
    latency_s: float
    peak_seconds: float
    loops: dict[int, _BlockEstimate] = field(default_factory=dict)  # loop node -> its body


def _estimate_block(
    chip: ChipSpec, lnc: int, flow: Dataflow, fuse: bool, where: str
) -> _BlockEstimate:
    """Cost and schedule ``flow``'s kernels, each loop's kernel priced from its body."""
    for node in flow.nodes:
        if node.kind == engines.CONTROL:
            raise EstimateError(
                f"{node.name} (op {node.index} of {where}) cannot be estimated: the cost "
                "model prices no op with regions but stablehlo.while (the runtime runs none)"
            )
    kernel_of = read_kernels(flow) if fuse else None
    annotated = read_engines(flow) if kernel_of is not None else None
    if kernel_of is None:
        kernel_of = plan_kernels(flow, fuse=fuse)
    engine_of, island = annotated if annotated is not None else assign_engines(flow, kernel_of)
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
    builders = cost_kernels(chip, lnc, flow, views, kernel_of, island)
    kernels = [finish_kernel(chip, lnc, b, kernel_of) for b in builders]
    block = _BlockEstimate(
        flow, views, kernel_of, kernels, 0.0, sum(b.peak_seconds for b in builders)
    )
    for node in flow.nodes:
        if node.kind != engines.LOOP:
            continue
        trips = _trip_count(node, where)
        body_where = f"the body of {node.name} (op {node.index} of {where})"
        body = _estimate_block(chip, lnc, Dataflow.of_loop_body(node.op), fuse, body_where)
        _add_trips(kernels[kernel_of[node.index]], node.name, trips, body)
        block.peak_seconds += trips * body.peak_seconds
        block.loops[node.index] = body
    block.latency_s = list_schedule(kernels)
    return block


def _trip_count(node, where: str) -> int:
    try:
        return loop_trip_count(node.op)
    except UncountedLoopError as error:
        raise EstimateError(
            f"{node.name} (op {node.index} of {where}) cannot be estimated: {error}. The "
            "cost model prices a loop as its trip count times its body; it counts the "
            "loops our compiler writes (a counter from a constant start, compared LT with "
            "a constant, plus a positive constant per trip)"
        ) from None


def _add_trips(kernel: Kernel, name: str, trips: int, body: _BlockEstimate) -> None:
    """Charge ``trips`` runs of ``body`` to the loop's ``kernel``: its span on the enclosing
    schedule (after the kernel's other work, if an annotation put ops beside the loop)
    and its engine time, HBM traffic, on-chip copies and FLOPs."""
    kernel.span_s = kernel.work_seconds + trips * body.latency_s
    for inner in body.kernels:
        for engine, seconds in inner.engine_seconds.items():
            kernel.engine_seconds[engine] = kernel.engine_seconds.get(engine, 0.0) + trips * seconds
        kernel.dma_seconds += trips * inner.dma_seconds
        kernel.hbm_read_bytes += trips * inner.hbm_read_bytes
        kernel.hbm_write_bytes += trips * inner.hbm_write_bytes
        kernel.onchip_dma_bytes += trips * inner.onchip_dma_bytes
        kernel.flops += trips * inner.flops
        kernel.sbuf_bytes = max(kernel.sbuf_bytes, inner.sbuf_bytes)
    kernel.engine_seconds = dict(sorted(kernel.engine_seconds.items()))
    kernel.notes.append(
        f"{name}: {trips} trips x {body.latency_s * 1e6:.3f} us "
        f"(its body's schedule of {len(body.kernels)} kernels)"
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


def _plan_memory(program: _BlockEstimate, argument_kinds):
    flow = program.flow
    weights = sum(
        flow.arguments[i].nbytes for i, (kind, _) in enumerate(argument_kinds) if kind == "weight"
    )
    inputs = sum(
        flow.arguments[i].nbytes for i, (kind, _) in enumerate(argument_kinds) if kind != "weight"
    )
    outputs = sum(flow.info(ref).nbytes for ref in flow.returns)
    return plan_memory(
        _temporaries(program), weights_bytes=weights, inputs_bytes=inputs, outputs_bytes=outputs
    )


def _temporaries(block: _BlockEstimate) -> list[Buffer]:
    """The HBM buffers of ``block``'s values that pass between its kernels, and of its
    loops (module docstring), with their liveness on ``block``'s schedule."""
    flow, kernels = block.flow, block.kernel_of
    returned = set(flow.returns)
    by_id = {k.id: k for k in block.kernels}
    unchanged = _unchanged_results(block)
    held_until: dict[ValueRef, float] = {}  # a loop's operand -> its unchanged result's use
    for result, operand in unchanged.items():
        readers = _readers(block, result)
        if readers:
            end = max(by_id[r].end_s for r in readers)
            held_until[operand] = max(held_until.get(operand, 0.0), end)
    buffers = []
    for view in block.views:
        kernel = kernels[view.index]
        if kernel is None:
            continue
        producer = by_id[kernel]
        for number, info in enumerate(view.results):
            ref = (view.index, number)
            if ref in returned or ref in unchanged or info.nbytes == 0:
                continue
            if view.kind == engines.LOOP:
                readers = _readers(block, ref)
                end = max([producer.end_s, *(by_id[r].end_s for r in readers)])
            else:
                readers = {kernels[u] for u in view.users} - {None, kernel}
                if not readers:
                    continue
                end = max(by_id[r].end_s for r in readers)
            end = max(end, held_until.get(ref, 0.0))
            buffers.append(
                Buffer(
                    name=f"{producer.name}#{view.index}",
                    size_bytes=info.nbytes,
                    start_s=producer.start_s,
                    end_s=end,
                    shape=list(info.shape),
                    dtype=info.dtype,
                )
            )
    for index, body in block.loops.items():
        loop = by_id[kernels[index]]
        size = assign_offsets(_temporaries(body))
        if size > 0:
            buffers.append(Buffer(f"{loop.name}#{index}.body", size, loop.start_s, loop.end_s))
    return buffers


def _unchanged_results(block: _BlockEstimate) -> dict[ValueRef, ValueRef]:
    """Each loop result that its body hands back unchanged -> the value it is (the loop's
    operand, followed through earlier such results)."""
    unchanged: dict[ValueRef, ValueRef] = {}
    for index in sorted(block.loops):
        operands = block.views[index].operands
        for number, ref in enumerate(block.loops[index].flow.returns):
            if ref == (ARGUMENT, number):
                unchanged[(index, number)] = unchanged.get(operands[number], operands[number])
    return unchanged


def _readers(block: _BlockEstimate, ref) -> set[int]:
    """The kernels, other than its producer's, that read the value ``ref``."""
    kernels = block.kernel_of
    own = kernels[ref[0]]
    return {
        kernels[v.index]
        for v in block.views
        if ref in v.operands and kernels[v.index] not in (None, own)
    }


def estimate_text(text: str, chip: ChipSpec | str, lnc: int | None = None, **options) -> Schedule:
    """``estimate`` of MLIR text (e.g. a ``--emit optimized`` dump)."""
    from torchneuron.passes.ir_utils import parse_module

    return estimate(parse_module(text), chip, lnc, **options)
