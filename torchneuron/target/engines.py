"""Which NeuronCore engine runs each StableHLO operation: the op table of the hardware model.

A NeuronCore has four compute engines and DMA queues (NeuronCore-v3/v4 architecture
pages, see ``hardware.py``):

- TensorE, the 128x128 systolic array: matrix multiplication and convolution;
- VectorE: element-wise arithmetic and reductions along the free dimension;
- ScalarE: activation functions (exp, tanh, GELU, rsqrt ...), one transcendental per
  element per pass;
- GpSimd, general-purpose SIMD cores: gathers, scatters, sorts, iotas, random numbers
  and whatever else has no dedicated engine;
- DMA: moves data between HBM and SBUF, including layout changes (transposes,
  slices, concatenations) expressed as access patterns.

Every operation falls in one *kind*; the kind decides its engine, whether the fusion
pass may merge it into a producer's kernel, and which cost formula applies. An op
name missing from the table is treated as ``IRREGULAR`` (GpSimd), the conservative
choice: nothing is fused into it and it is costed at GpSimd's rate.
"""

from __future__ import annotations

from torchneuron.target import dtypes

TENSOR_ENGINE = "TensorE"
VECTOR_ENGINE = "VectorE"
SCALAR_ENGINE = "ScalarE"
GPSIMD_ENGINE = "GpSimd"
DMA_ENGINE = "DMA"

# Lane order of traces and tables.
ENGINES = (TENSOR_ENGINE, VECTOR_ENGINE, SCALAR_ENGINE, GPSIMD_ENGINE, DMA_ENGINE)
COMPUTE_ENGINES = ENGINES[:4]

# Op kinds.
MATMUL = "matmul"
ELEMENTWISE = "elementwise"
TRANSCENDENTAL = "transcendental"
REDUCTION = "reduction"
DATA_MOVEMENT = "data-movement"  # a copy in another layout: DMA access patterns
VIEW = "view"  # no data moves at all (same bytes, new type)
IRREGULAR = "irregular"
# A counted loop: priced as its body's schedule times its trip count (the cost model).
LOOP = "loop"
CONTROL = "control"  # other control flow and calls: the cost model refuses them
CONSTANT = "constant"

KIND_ENGINE = {
    MATMUL: TENSOR_ENGINE,
    ELEMENTWISE: VECTOR_ENGINE,
    TRANSCENDENTAL: SCALAR_ENGINE,
    REDUCTION: VECTOR_ENGINE,
    DATA_MOVEMENT: DMA_ENGINE,
    VIEW: DMA_ENGINE,
    IRREGULAR: GPSIMD_ENGINE,
    # A loop's own engine is a label: the cost model schedules it as a barrier over
    # every lane, for as long as its trips take.
    LOOP: GPSIMD_ENGINE,
    CONTROL: GPSIMD_ENGINE,
}

# Kinds the fusion pass may add to a producer's kernel (their inputs then come from SBUF).
FUSIBLE_KINDS = frozenset([ELEMENTWISE, TRANSCENDENTAL, REDUCTION, DATA_MOVEMENT, VIEW])


def _table(kind: str, names: str, dialect: str = "stablehlo") -> dict[str, str]:
    return {f"{dialect}.{name}": kind for name in names.split()}


OP_KINDS: dict[str, str] = {
    **_table(MATMUL, "dot_general dot convolution"),
    **_table(
        ELEMENTWISE,
        "add subtract multiply divide remainder maximum minimum abs negate sign floor ceil "
        "round_nearest_afz round_nearest_even not and or xor shift_left shift_right_arithmetic "
        "shift_right_logical compare select clamp convert is_finite popcnt "
        "count_leading_zeros real imag complex reduce_precision map",
    ),
    **_table(
        TRANSCENDENTAL,
        "exponential exponential_minus_one log log_plus_one logistic tanh sine cosine tan "
        "sqrt rsqrt cbrt power atan2",
    ),
    **_table(
        TRANSCENDENTAL,
        "erf erfc erf_inv lgamma digamma tan sinh cosh asin acos atan asinh acosh atanh "
        "polygamma zeta bessel_i1e",
        dialect="chlo",
    ),
    **_table(
        REDUCTION,
        "reduce reduce_window batch_norm_training batch_norm_inference batch_norm_grad",
    ),
    **_table(
        DATA_MOVEMENT,
        "transpose broadcast_in_dim broadcast slice concatenate pad reverse dynamic_slice "
        "dynamic_update_slice dynamic_broadcast_in_dim real_dynamic_slice dynamic_pad "
        "all_reduce all_gather all_to_all reduce_scatter collective_permute "
        "collective_broadcast send recv",
    ),
    **_table(
        VIEW, "reshape dynamic_reshape bitcast_convert get_tuple_element tuple optimization_barrier"
    ),
    **_table(
        IRREGULAR,
        "gather dynamic_gather scatter sort iota dynamic_iota rng rng_bit_generator "
        "select_and_scatter custom_call fft cholesky triangular_solve infeed outfeed "
        "uniform_quantize uniform_dequantize",
    ),
    **_table(LOOP, "while"),
    **_table(CONTROL, "case if composite"),
    "func.call": CONTROL,
    "stablehlo.constant": CONSTANT,
    "arith.constant": CONSTANT,
}


def op_kind(name: str) -> str:
    """The kind of the operation named ``name``; IRREGULAR for names not in the table."""
    kind = OP_KINDS.get(name)
    if kind is None and name.startswith("chlo."):
        return TRANSCENDENTAL
    return kind if kind is not None else IRREGULAR


def default_engine(name: str) -> str | None:
    """The engine that runs ``name`` on its own; None for constants (they are immediates)."""
    return KIND_ENGINE.get(op_kind(name))


def element_type(mlir_element: str) -> tuple[str, int]:
    """``(dtype name, bytes per element)`` of an MLIR element type, from the dtype table.

    The name is the table's (torch's) name, as hardware.py's throughput tables spell
    them. Types the table lacks count 4 bytes under their MLIR spelling (an estimate
    must not fail on an exotic type; 4 bytes is the common width).
    """
    row = dtypes.from_mlir(mlir_element)
    if row is None:
        return mlir_element, 4
    return row.name, row.itemsize
