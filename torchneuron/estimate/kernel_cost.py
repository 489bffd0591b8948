"""Costing the kernels of one program: engine time, HBM traffic and SBUF per kernel.

``cost_kernels`` walks the nodes of a function's dataflow graph (``NodeView``: a
node with its engine and operand types), grouped by their ``neuron.kernel``, and
charges each node's work to its kernel: HBM reads of values made outside the
kernel, engine time from ``engine_cost``'s formulas (matmuls tiled over TensorE,
ScalarE activation islands as one pass per value leaving the island, everything
else streamed through its engine), on-chip layout copies, and reductions whose
rows spill an SBUF partition. ``finish_kernel`` turns the accumulated work into
the scheduler's ``Kernel`` (DMA time at the core's bandwidth, dependencies,
primary engine, SBUF held).

A loop (``stablehlo.while``) costs nothing here: its body's kernels read the carried
values from HBM and write them back at every trip, and the cost model adds the
body's schedule, times the trip count, to the loop's kernel (``cost_model``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch_mlir import ir

from torchneuron.estimate.engine_cost import (
    REDUCTION_ROW_COPIES,
    SBUF_USABLE_FRACTION,
    STREAM_TILE_FREE_ELEMENTS,
    hbm_bytes_per_second,
    matmul_cost,
    onchip_dma_bytes_per_second,
    streaming_seconds,
    tensor_engine_flops,
)
from torchneuron.estimate.scheduler import Kernel
from torchneuron.passes.dataflow import ARGUMENT
from torchneuron.target import dtypes, engines
from torchneuron.target.engines import (
    DMA_ENGINE,
    GPSIMD_ENGINE,
    SCALAR_ENGINE,
    TENSOR_ENGINE,
    VECTOR_ENGINE,
)

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


@dataclass
class NodeView:
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


def _widest_dtype(node: NodeView) -> str:
    infos = [*node.operand_infos, *node.results]
    infos = [i for i in infos if i.itemsize > 0]
    if not infos:
        return "float32"
    return max(infos, key=lambda i: i.itemsize).dtype


def _node_engine_seconds(chip, lnc, node: NodeView) -> tuple[float, list[str]]:
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
    if node.kind == engines.IRREGULAR and node.name not in (
        "stablehlo.gather",
        "stablehlo.iota",
        "stablehlo.rng",
        "stablehlo.rng_bit_generator",
        "stablehlo.select_and_scatter",
    ):
        notes.append(f"{node.name}: costed as one GpSimd pass over its results")
    return streaming_seconds(chip, lnc, engine, out_elements, _widest_dtype(node)), notes


def _read_bytes(node: NodeView, operand_number: int, info) -> int:
    """Bytes of operand ``operand_number`` that ``node`` actually reads from HBM."""
    if node.name in _REREAD_FREE_OPS and operand_number == 0:
        return min(info.nbytes, node.results[0].nbytes)
    return info.nbytes


class KernelWork:
    """Accumulates one kernel's work while its nodes are costed."""

    def __init__(self, kernel_id: int):
        self.id = kernel_id
        self.nodes: list[NodeView] = []
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


def cost_kernels(chip, lnc, flow, views, kernels, island) -> list[KernelWork]:
    """The work of every kernel: ``views`` are the function's nodes, ``kernels`` each
    node's kernel (None for constants), ``island`` its ScalarE activation island."""
    count = 1 + max((k for k in kernels if k is not None), default=-1)
    builders = [KernelWork(k) for k in range(count)]
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
            if node.kind == engines.LOOP:
                continue  # the loop's body writes its results (cost_model)
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
    if node.kind == engines.LOOP:
        return  # the loop's body reads the carried values at every trip (cost_model)
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


def finish_kernel(chip, lnc, builder: KernelWork, kernels) -> Kernel:
    """The scheduler's ``Kernel`` for one kernel's accumulated work."""
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


def _primary_engine(builder: KernelWork) -> str:
    if TENSOR_ENGINE in builder.engine_seconds:
        return TENSOR_ENGINE
    if builder.engine_seconds:
        return max(builder.engine_seconds, key=lambda e: (builder.engine_seconds[e], e))
    if any(n.engine == GPSIMD_ENGINE for n in builder.nodes):
        return GPSIMD_ENGINE
    return DMA_ENGINE


def _streaming_sbuf_bytes(chip, lnc, builder: KernelWork) -> int:
    """SBUF a streaming kernel holds per physical core: a double-buffered tile of each value."""
    tile = chip.sbuf_partitions * STREAM_TILE_FREE_ELEMENTS
    total = 0
    for node in builder.nodes:
        if node.kind == engines.LOOP:
            continue  # the cost model sets a loop's SBUF from its body's kernels
        for info in node.results:
            if node.kind == engines.REDUCTION and node.operand_infos:
                # A reduction holds whole rows of its input.
                row = node.operand_infos[0].elements // max(info.elements, 1)
                per_tile = min(node.operand_infos[0].elements, chip.sbuf_partitions * row)
            else:
                per_tile = min(math.ceil(info.elements / lnc), tile)
            total += 2 * per_tile * info.itemsize
    return min(total, chip.sbuf_bytes_per_core)
