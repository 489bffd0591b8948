"""Engine and memory rates of one logical NeuronCore, and the cost of one matmul.

The formulas behind the cost model that need no IR: how fast TensorE multiplies a
dtype, how long VectorE/ScalarE/GpSimd take to stream a tensor, the logical core's
HBM and on-chip DMA bandwidth, and how a ``batch x (m x k) @ (k x n)`` matmul is
tiled over TensorE and SBUF (time, instructions, operand re-reads). Hardware
figures come from ``torchneuron.target.hardware``; the constants below are the
model's own assumptions about how a compiler tiles work, each with its reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchneuron.target import dtypes, hardware
from torchneuron.target.engines import GPSIMD_ENGINE, SCALAR_ENGINE
from torchneuron.target.hardware import ChipSpec

# -- named constants (the model's assumptions; hardware figures are in hardware.CHIPS) --

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
