"""The NeuronCore cost model: how long a StableHLO program takes on one logical core, and
how much HBM it needs.

``estimate(module, "trn2")`` takes a module (annotated by the ``fuse-kernels`` and
``assign-engines`` passes, or annotated here on a copy), costs every kernel on every
resource it uses, list-schedules the kernels over the engines (``scheduler``), plans
the temporaries' HBM (``memory_plan``) and returns a ``Schedule``.

Every figure comes from the cited hardware table (``hardware.CHIPS``) or from the
named constants below, each with its justification. ``docs/cost-model.md`` explains
the model and its validation.

The logical core: with LNC=2 one logical core is two physical NeuronCores. We model
it as the physical cores working in parallel on each kernel: a kernel's tiles are
split evenly between them (so engine time is that of ``ceil(tiles / lnc)`` tiles on
one core), each has its own SBUF (so SBUF tiling is decided per physical core, and an
operand both cores need is loaded by both), and together they have the logical core's
share of the chip's HBM bandwidth (``chip bandwidth / logical cores per chip``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.estimate.memory_plan import Buffer, plan_memory
from torchneuron.estimate.scheduler import Kernel, Schedule, list_schedule
from torchneuron.passes.assign_engines import assign_engines, read_engines
from torchneuron.passes.dataflow import ARGUMENT, Dataflow, main_function
from torchneuron.passes.fuse_kernels import plan_kernels, read_kernels
from torchneuron.target import dtypes, engines, hardware
from torchneuron.target.engines import (
    DMA_ENGINE,
    GPSIMD_ENGINE,
    SCALAR_ENGINE,
    TENSOR_ENGINE,
    VECTOR_ENGINE,
)
from torchneuron.target.hardware import ChipSpec

# -- named constants (everything not in hardware.CHIPS) ------------------------------

# Elements per partition one VectorE/ScalarE/GpSimd instruction processes when streaming
# a large tensor: 2048 fp32 = 8 KiB of a partition's 192 KiB, leaving room to double-
# buffer inputs and outputs. Larger tiles only amortise the overhead further.
STREAM_TILE_FREE_ELEMENTS = 2048

# Fraction of SBUF a kernel's working set may use; the rest holds double buffers,
# semaphores and the compiler's own scratch. An assumption.
SBUF_USABLE_FRACTION = 0.75

# A reduction whose rows do not fit in one SBUF partition needs another pass over its
# kernel's inputs per reduction. A row is held this many times (input, running
# result, the element-wise results feeding the next step).
REDUCTION_ROW_COPIES = 3

_REREAD_FREE_OPS = frozenset(["stablehlo.slice", "stablehlo.dynamic_slice", "stablehlo.gather"])
_FREE_LAYOUT_OPS = frozenset(
    [
        "stablehlo.broadcast_in_dim",
        "stablehlo.broadcast",
        "stablehlo.slice",
        "stablehlo.dynamic_slice",
        "stablehlo.dynamic_broadcast_in_dim",
    ]
)


class EstimateError(TorchNeuronError, ValueError):
    """The module cannot be estimated (no @main, an inconsistent annotation)."""


# -- per-chip rates --------------------------------------------------------------------


def tensor_engine_flops(chip: ChipSpec, dtype: str) -> float:
    """Dense matmul FLOP/s of one physical core's TensorE for inputs of ``dtype``.

    FP8 on a chip whose table lists only microscaled FP8 (Trainium3) uses the MXFP8
    rate; 1-byte integers run at the FP8 rate, 2-byte ones at BF16, wider ones (and
    FP64, which NeuronCores do not have) at the FP32 rate.
    """
    rates = chip.tensor_engine.tflops_per_core
    if dtype in rates:
        return rates[dtype] * 1e12
    row = dtypes.BY_NAME.get(dtype)
    itemsize = row.itemsize if row is not None else 4
    if dtype.startswith("float8") or itemsize == 1:
        for key in ("float8", "mxfp8"):
            if key in rates:
                return rates[key] * 1e12
    if itemsize == 2:
        return rates["bfloat16"] * 1e12
    return rates["float32"] * 1e12


def hbm_bytes_per_second(chip: ChipSpec, lnc: int) -> float:
    """The logical core's HBM bandwidth: its share of the chip, capped by its DMA engines."""
    return min(chip.hbm_bandwidth_per_logical_core(lnc), chip.dma_bytes_per_logical_core(lnc))


def onchip_dma_bytes_per_second(chip: ChipSpec, lnc: int) -> float:
    """SBUF-to-SBUF copies run at the DMA engines' rate (no HBM involved)."""
    return chip.dma_bytes_per_logical_core(lnc)


def _engine_spec(chip: ChipSpec, engine: str) -> hardware.EngineSpec:
    if engine == SCALAR_ENGINE:
        return chip.scalar_engine
    if engine == GPSIMD_ENGINE:
        return chip.gpsimd_engine
    return chip.vector_engine


def streaming_seconds(chip: ChipSpec, lnc: int, engine: str, elements: int, dtype: str) -> float:
    """Time for ``engine`` to stream ``elements`` through one instruction per tile."""
    if elements <= 0:
        return 0.0
    spec = _engine_spec(chip, engine)
    per_core = math.ceil(elements / lnc)
    instructions = math.ceil(per_core / (chip.sbuf_partitions * STREAM_TILE_FREE_ELEMENTS))
    return per_core / spec.elements_per_second(dtype) + (
        instructions * chip.instruction_overhead_cycles / spec.clock_hz
    )


# -- matmuls -----------------------------------------------------------------------------


@dataclass
class MatmulCost:
    seconds: float
    instructions: int
    flops: int
    lhs_read_factor: float  # HBM reads of the operand / its size (SBUF tiling re-reads)
    rhs_read_factor: float
    sbuf_bytes: int
    split: bool  # the working set did not fit in SBUF and was blocked


def matmul_cost(
    chip: ChipSpec,
    lnc: int,
    batch: int,
    m: int,
    k: int,
    n: int,
    dtype: str,
    itemsizes: tuple[int, int, int] = (2, 2, 4),
) -> MatmulCost:
    """A ``batch`` x (m x k) @ (k x n) matmul on TensorE, tiled as the hardware requires.

    One instruction holds a stationary tile of at most 128 (contraction, partitions) x
    128 (free) and streams a moving tile of at most 128 x 512; each moving column takes
    one array pass, ``2 * 128 * 128 / flops_per_second`` seconds at the dtype's rate,
    whether or not all 128 x 128 cells are used (so K = 64 uses half the array), plus
    the chip's instruction overhead per instruction. The compiler may make either operand
    stationary; we take the faster orientation.
    """
    te = chip.tensor_engine
    rows, cols = te.max_stationary
    moving = te.max_moving_free
    rate = tensor_engine_flops(chip, dtype)
    # Slower dtypes take several passes through the array (FP32: 79 / 20 -> 4), each an
    # instruction with its own overhead; faster ones (FP8) stream columns faster.
    passes = max(1, round(tensor_engine_flops(chip, "bfloat16") / rate))
    column_seconds = 2 * rows * cols / (rate * passes)
    overhead = chip.instruction_overhead_cycles / te.clock_hz
    k_tiles = math.ceil(k / rows)

    def orientation(stationary: int, streamed: int) -> tuple[float, int]:
        chunks = math.ceil(streamed / moving)
        units = batch * math.ceil(stationary / cols) * chunks
        columns_per_chunk = streamed / chunks
        per_unit = k_tiles * passes * (columns_per_chunk * column_seconds + overhead)
        return math.ceil(units / lnc) * per_unit, units * k_tiles * passes

    seconds, instructions = min(orientation(m, n), orientation(n, m))
    lhs_factor, rhs_factor, sbuf, split = _matmul_traffic(chip, lnc, batch, m, k, n, itemsizes)
    return MatmulCost(
        seconds, instructions, 2 * batch * m * k * n, lhs_factor, rhs_factor, sbuf, split
    )


def _matmul_traffic(chip, lnc, batch, m, k, n, itemsizes) -> tuple[float, float, int, bool]:
    """HBM re-read factors of both operands and the SBUF working set, per physical core.

    Cores split the batch when there is one per core, else the rows of the lhs (then
    each core loads all of the rhs). A core's working set that fits in usable SBUF, or
    whose smaller operand fits in half of it (kept resident while the other streams
    through once), reads everything once. Otherwise output blocks of b x b (b a multiple
    of 128, as large as fits with full-K panels of both operands and fp32 accumulators)
    re-read the lhs once per column block and the rhs once per row block.
    """
    a_item, b_item, c_item = itemsizes
    usable = int(chip.sbuf_bytes_per_core * SBUF_USABLE_FRACTION)
    if batch >= lnc:
        rows_per_core, rhs_copies = m, 1
    else:
        rows_per_core, rhs_copies = math.ceil(m / lnc), min(lnc, m)
    lhs = rows_per_core * k * a_item
    rhs = k * n * b_item
    out = rows_per_core * n * c_item
    if lhs + rhs + out <= usable or min(lhs, rhs) <= usable // 2:
        return 1.0, float(rhs_copies), min(lhs + rhs + out, usable), False
    block = 128
    while True:
        candidate = block + 128
        if candidate > max(rows_per_core, n):
            break
        if candidate * k * (a_item + b_item) + candidate * candidate * 4 > usable:
            break
        block = candidate
    working_set = min(usable, block * k * (a_item + b_item) + block * block * 4)
    column_blocks = math.ceil(n / block)
    row_blocks = math.ceil(rows_per_core / block)
    return float(column_blocks), float(rhs_copies * row_blocks), working_set, True


def _dot_dimensions(node) -> tuple[int, int, int, int]:
    """(batch, m, k, n) of a dot_general node."""
    from torch_mlir._mlir_libs import _stablehlo

    lhs_shape = node.operand_infos[0].shape
    rhs_shape = node.operand_infos[1].shape
    if node.name == "stablehlo.dot":
        m = lhs_shape[0] if len(lhs_shape) == 2 else 1
        k = lhs_shape[-1]
        n = rhs_shape[-1] if len(rhs_shape) == 2 else 1
        return 1, m, k, n
    numbers = _stablehlo.DotDimensionNumbers(node.op.attributes["dot_dimension_numbers"])
    lhs_batch = list(numbers.lhs_batching_dimensions)
    lhs_contract = list(numbers.lhs_contracting_dimensions)
    rhs_batch = list(numbers.rhs_batching_dimensions)
    rhs_contract = list(numbers.rhs_contracting_dimensions)
    batch = math.prod(lhs_shape[d] for d in lhs_batch)
    k = math.prod(lhs_shape[d] for d in lhs_contract)
    m = math.prod(s for d, s in enumerate(lhs_shape) if d not in lhs_batch + lhs_contract)
    n = math.prod(s for d, s in enumerate(rhs_shape) if d not in rhs_batch + rhs_contract)
    return batch, m, k, n


def _convolution_dimensions(node) -> tuple[int, int, int, int]:
    """A convolution as its implicit GEMM: (groups, output pixels, taps x in-features,
    out-features)."""
    from torch_mlir._mlir_libs import _stablehlo

    kernel_shape = node.operand_infos[1].shape
    out = node.results[0]
    numbers = _stablehlo.ConvDimensionNumbers(node.op.attributes["dimension_numbers"])
    out_features = kernel_shape[numbers.kernel_output_feature_dimension]
    groups = 1
    for name in ("feature_group_count", "batch_group_count"):
        if name in node.op.attributes:
            groups *= ir.IntegerAttr(node.op.attributes[name]).value
    pixels = out.elements // max(out_features, 1)
    taps = math.prod(kernel_shape) // max(out_features, 1)
    return groups, pixels, taps, max(out_features // groups, 1)


# -- costing the nodes and kernels ------------------------------------------------------


@dataclass
class _NodeView:
    """What the cost formulas need of one node."""

    index: int
    op: ir.Operation
    name: str
    kind: str
    engine: str | None
    operands: list
    operand_infos: list
    results: list
    users: list[int]
    returned: bool
    splat: bool


def _widest_dtype(node: _NodeView) -> str:
    infos = [*node.operand_infos, *node.results]
    infos = [i for i in infos if i.itemsize > 0]
    if not infos:
        return "float32"
    return max(infos, key=lambda i: i.itemsize).dtype


def _node_engine_seconds(chip, lnc, node: _NodeView) -> tuple[float, list[str]]:
    """Busy time of a non-matmul node on its engine, and notes about approximations."""
    engine = node.engine
    out_elements = sum(r.elements for r in node.results)
    if engine in (None, DMA_ENGINE) or node.kind == engines.VIEW:
        return 0.0, []
    if node.kind == engines.REDUCTION:
        if node.name == "stablehlo.reduce_window":
            window = ir.DenseI64ArrayAttr(node.op.attributes["window_dimensions"])
            elements = out_elements * math.prod(list(window))
        else:
            half = max(1, len(node.operand_infos) // 2)
            elements = sum(i.elements for i in node.operand_infos[:half])
        return streaming_seconds(chip, lnc, engine, elements, _widest_dtype(node)), []
    if node.name == "stablehlo.sort":
        dimension = ir.IntegerAttr(node.op.attributes["dimension"]).value
        length = node.operand_infos[0].shape[dimension] if node.operand_infos[0].shape else 1
        passes = max(1, math.ceil(math.log2(max(length, 2))))
        return streaming_seconds(chip, lnc, engine, out_elements * passes, "float32"), []
    if node.name == "stablehlo.scatter":
        updates = node.operand_infos[-1].elements if node.operand_infos else out_elements
        return streaming_seconds(chip, lnc, engine, updates, _widest_dtype(node)), []
    notes = []
    if node.kind == engines.CONTROL:
        notes.append(f"{node.name}: body not costed (one pass over its results)")
    elif node.kind == engines.IRREGULAR and node.name not in (
        "stablehlo.gather",
        "stablehlo.iota",
        "stablehlo.rng",
        "stablehlo.rng_bit_generator",
        "stablehlo.select_and_scatter",
    ):
        notes.append(f"{node.name}: costed as one GpSimd pass over its results")
    return streaming_seconds(chip, lnc, engine, out_elements, _widest_dtype(node)), notes


def _read_bytes(node: _NodeView, operand_number: int, info) -> int:
    """Bytes of operand ``operand_number`` that ``node`` actually reads from HBM."""
    if node.name in _REREAD_FREE_OPS and operand_number == 0:
        return min(info.nbytes, node.results[0].nbytes)
    return info.nbytes


class _KernelBuilder:
    """Accumulates one kernel's work while its nodes are costed."""

    def __init__(self, kernel_id: int):
        self.id = kernel_id
        self.nodes: list[_NodeView] = []
        self.engine_seconds: dict[str, float] = {}
        self.reads: dict[tuple[int, int], int] = {}
        self.write_bytes = 0
        self.onchip_bytes = 0
        self.flops = 0
        self.peak_seconds = 0.0
        self.sbuf_bytes = 0
        self.notes: list[str] = []
        self.outputs: list[tuple[int, int]] = []

    def add_engine(self, engine: str, seconds: float) -> None:
        if seconds > 0:
            self.engine_seconds[engine] = self.engine_seconds.get(engine, 0.0) + seconds

    def read(self, ref: tuple[int, int], nbytes: float) -> None:
        self.reads[ref] = max(self.reads.get(ref, 0), int(nbytes))


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
            _NodeView(
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
        builders = _cost_kernels(chip, lnc, flow, views, kernels, island)
    kernel_list = [_finish_kernel(chip, lnc, b, kernels) for b in builders]
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


def _cost_kernels(chip, lnc, flow, views, kernels, island) -> list[_KernelBuilder]:
    count = 1 + max((k for k in kernels if k is not None), default=-1)
    builders = [_KernelBuilder(k) for k in range(count)]
    for view in views:
        if kernels[view.index] is not None:
            builders[kernels[view.index]].nodes.append(view)

    island_passes = _island_passes(views, kernels, island)
    for builder in builders:
        members = {v.index for v in builder.nodes}
        for node in builder.nodes:
            _cost_node(
                chip,
                lnc,
                builder,
                node,
                members,
                views,
                island,
                island_passes,
                flow.info,
            )
        for node in builder.nodes:
            escapes = node.returned or any(kernels[u] != builder.id for u in node.users)
            if escapes:
                for number, info in enumerate(node.results):
                    builder.write_bytes += info.nbytes
                    builder.outputs.append((node.index, number))
        _reduction_spills(chip, lnc, builder)
    return builders


def _island_passes(views, kernels, island) -> dict[int, list[int]]:
    """Activation island id -> the island's nodes whose results leave the island."""
    passes: dict[int, list[int]] = {}
    for view in views:
        if island[view.index] is None:
            continue
        leaves = view.returned or any(
            island[u] != island[view.index] or kernels[u] != kernels[view.index] for u in view.users
        )
        if leaves:
            passes.setdefault(island[view.index], []).append(view.index)
    return passes


def _cost_node(chip, lnc, builder, node, members, views, island, island_passes, info_of) -> None:
    # HBM reads of values made outside this kernel (arguments, other kernels, constants).
    for number, (ref, info) in enumerate(zip(node.operands, node.operand_infos)):
        producer = ref[0]
        if producer != ARGUMENT and producer in members:
            continue
        if producer != ARGUMENT and views[producer].kind == engines.CONSTANT:
            if views[producer].splat:
                continue  # splats are immediates
        builder.read(ref, _read_bytes(node, number, info))

    if node.kind == engines.MATMUL:
        _cost_matmul(chip, lnc, builder, node, members, views, info_of)
        return
    if island[node.index] is not None:
        # One ScalarE pass per value leaving the island, charged to the op producing it.
        if node.index in island_passes.get(island[node.index], []):
            elements = sum(r.elements for r in node.results)
            builder.add_engine(
                SCALAR_ENGINE,
                streaming_seconds(chip, lnc, SCALAR_ENGINE, elements, _widest_dtype(node)),
            )
        return
    seconds, notes = _node_engine_seconds(chip, lnc, node)
    engine = node.engine if node.engine in engines.COMPUTE_ENGINES else VECTOR_ENGINE
    builder.add_engine(engine, seconds)
    builder.notes.extend(notes)
    if node.kind == engines.DATA_MOVEMENT and node.name not in _FREE_LAYOUT_OPS:
        # A layout change between two ops of the kernel is an SBUF-to-SBUF DMA; next to
        # HBM it is the access pattern of the kernel's load or store, and free.
        made_inside = any(ref[0] != ARGUMENT and ref[0] in members for ref in node.operands)
        used_inside = any(u in members for u in node.users)
        if made_inside and used_inside:
            builder.onchip_bytes += sum(r.nbytes for r in node.results)


def _cost_matmul(chip, lnc, builder, node, members, views, info_of) -> None:
    if node.name == "stablehlo.convolution":
        batch, m, k, n = _convolution_dimensions(node)
    else:
        batch, m, k, n = _dot_dimensions(node)
    lhs = _multiplied_info(node.operands[0], node.operand_infos[0], views)
    rhs = _multiplied_info(node.operands[1], node.operand_infos[1], views)
    dtype = lhs.dtype if lhs.itemsize >= rhs.itemsize else rhs.dtype
    cost = matmul_cost(
        chip, lnc, batch, m, k, n, dtype, (lhs.itemsize, rhs.itemsize, node.results[0].itemsize)
    )
    builder.add_engine(TENSOR_ENGINE, cost.seconds)
    builder.flops += cost.flops
    builder.peak_seconds += cost.flops / (tensor_engine_flops(chip, dtype) * lnc)
    builder.sbuf_bytes = max(builder.sbuf_bytes, cost.sbuf_bytes)
    if cost.split:
        builder.notes.append(
            f"{node.name} working set exceeds SBUF: blocked, operands re-read "
            f"{cost.lhs_read_factor:g}x / {cost.rhs_read_factor:g}x"
        )
    for ref, factor in (
        (node.operands[0], cost.lhs_read_factor),
        (node.operands[1], cost.rhs_read_factor),
    ):
        source = _external_source(ref, members, views)
        if source is not None:
            builder.read(source, info_of(source).nbytes * factor)


def _multiplied_info(ref, info, views):
    """The operand as the TensorEngine multiplies it: a float widened by a ``convert``
    just for this product (bfloat16 upcast so the result accumulates in float32) is fed
    to the engine at its narrow width, which accumulates in float32 anyway."""
    if ref[0] == ARGUMENT:
        return info
    producer = views[ref[0]]
    if producer.name != "stablehlo.convert" or not producer.operand_infos:
        return info
    source = producer.operand_infos[0]
    if 0 < source.itemsize < info.itemsize and source.dtype in _NARROW_FLOATS:
        return source
    return info


# The float formats a NEFF carries that are narrower than float32 (TensorE's inputs).
_NARROW_FLOATS = frozenset(
    row.name for row in dtypes.NEFF_DTYPES.values() if row.is_floating and row.itemsize < 4
)


def _external_source(ref, members, views):
    """The value outside the kernel an operand is loaded from (through in-kernel layout ops)."""
    seen = 0
    while ref[0] != ARGUMENT and ref[0] in members:
        producer = views[ref[0]]
        if producer.kind not in (engines.VIEW, engines.DATA_MOVEMENT):
            return None  # computed inside the kernel: already in SBUF
        inputs = [
            r for r in producer.operands if r[0] == ARGUMENT or views[r[0]].kind != engines.CONSTANT
        ]
        if len(inputs) != 1 or seen > 64:
            return None
        ref = inputs[0]
        seen += 1
    if ref[0] != ARGUMENT and views[ref[0]].kind == engines.CONSTANT and views[ref[0]].splat:
        return None
    return ref


def _reduction_spills(chip, lnc, builder) -> None:
    """A reduction row that does not fit in a partition forces one more pass over the inputs."""
    capacity = chip.sbuf_bytes_per_partition * SBUF_USABLE_FRACTION
    inputs = sum(builder.reads.values())
    for node in builder.nodes:
        if node.name != "stablehlo.reduce" or not node.results or not node.operand_infos:
            continue
        operand, result = node.operand_infos[0], node.results[0]
        row = operand.elements // max(result.elements, 1)
        if row * operand.itemsize * REDUCTION_ROW_COPIES > capacity:
            builder.reads[("spill", node.index)] = inputs
            builder.notes.append(
                f"reduce over rows of {row} elements exceeds an SBUF partition: "
                f"+{inputs} bytes for a second pass"
            )


def _finish_kernel(chip, lnc, builder: _KernelBuilder, kernels) -> Kernel:
    reads = sum(builder.reads.values())
    hbm = reads + builder.write_bytes
    dma_seconds = hbm / hbm_bytes_per_second(chip, lnc)
    dma_seconds += builder.onchip_bytes / onchip_dma_bytes_per_second(chip, lnc)
    deps = sorted(
        {
            kernels[ref[0]]
            for node in builder.nodes
            for ref in node.operands
            if ref[0] != ARGUMENT and kernels[ref[0]] is not None and kernels[ref[0]] != builder.id
        }
    )
    engine = _primary_engine(builder)
    anchor = next(
        (n for n in builder.nodes if n.kind not in (engines.VIEW, engines.DATA_MOVEMENT)),
        builder.nodes[0],
    )
    if builder.sbuf_bytes == 0:
        builder.sbuf_bytes = _streaming_sbuf_bytes(chip, lnc, builder)
    return Kernel(
        id=builder.id,
        name=f"k{builder.id}.{anchor.name.split('.', 1)[-1]}",
        engine=engine,
        ops=[n.name for n in builder.nodes],
        op_indices=[n.index for n in builder.nodes],
        engine_seconds=dict(sorted(builder.engine_seconds.items())),
        dma_seconds=dma_seconds,
        hbm_read_bytes=reads,
        hbm_write_bytes=builder.write_bytes,
        sbuf_bytes=int(builder.sbuf_bytes),
        flops=builder.flops,
        onchip_dma_bytes=builder.onchip_bytes,
        dma_latency_s=chip.dma_fixed_latency_s if hbm > 0 else 0.0,
        deps=deps,
        notes=sorted(set(builder.notes)),
    )


def _primary_engine(builder: _KernelBuilder) -> str:
    if TENSOR_ENGINE in builder.engine_seconds:
        return TENSOR_ENGINE
    if builder.engine_seconds:
        return max(builder.engine_seconds, key=lambda e: (builder.engine_seconds[e], e))
    if any(n.engine == GPSIMD_ENGINE for n in builder.nodes):
        return GPSIMD_ENGINE
    return DMA_ENGINE


def _streaming_sbuf_bytes(chip, lnc, builder: _KernelBuilder) -> int:
    """SBUF a streaming kernel holds per physical core: a double-buffered tile of each value."""
    tile = chip.sbuf_partitions * STREAM_TILE_FREE_ELEMENTS
    total = 0
    for node in builder.nodes:
        for info in node.results:
            if node.kind == engines.REDUCTION and node.operand_infos:
                # A reduction holds whole rows of its input.
                row = node.operand_infos[0].elements // max(info.elements, 1)
                per_tile = min(node.operand_infos[0].elements, chip.sbuf_partitions * row)
            else:
                per_tile = min(math.ceil(info.elements / lnc), tile)
            total += 2 * per_tile * info.itemsize
    return min(total, chip.sbuf_bytes_per_core)


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


def estimate_program(program: bytes, chip: ChipSpec | str, lnc: int | None = None) -> Schedule:
    """``estimate`` of a NEFF's program (a StableHLO portable artifact or MLIR text)."""
    from torch_mlir._mlir_libs import _stablehlo

    from torchneuron.passes.ir_utils import make_context, parse_module

    if bytes(program[:4]) == b"ML\xefR":
        context = make_context()
        module = _stablehlo.deserialize_portable_artifact(context, bytes(program))
        return estimate(module, chip, lnc)
    return estimate(parse_module(bytes(program).decode("utf-8")), chip, lnc)
