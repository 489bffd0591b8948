"""What a program from a NEFF may contain: the ops our compiler emits, and nothing else.

The program verifier (``runtime/verifier.py``) refuses a program with any operation
not named in ``ALLOWED_OPS``, and a ``stablehlo.custom_call`` whose target is not in
``ALLOWED_CUSTOM_CALL_TARGETS``. The table is data only (no imports): the verifier's
child process receives it over its pipe.

How the list was made. It is the union of

- every op found in the programs our compiler wrote to the disk cache (7,044 NEFFs
  from the conformance suite, the fuzzer and the model zoo): the ops marked ``seen``;
- every StableHLO op torch-mlir's torch-to-StableHLO conversion creates that survives
  our pipeline (``passes/pipelines.py``: ``stablehlo-canonicalize-dynamism`` makes the
  dynamic ops static, torch-mlir's backend pipeline legalizes CHLO to StableHLO);
- what our own passes create (``legalize-to-stablehlo``, ``fold-constants``,
  ``algebraic-simplify``, ``externalize-constants``).

No CHLO op is listed: the StableHLO serializer refuses CHLO, so no portable artifact
we write carries one. Every op listed computes a value from its operands on one
device, with static shapes, and touches nothing outside the computation.

``EXCLUDED_OPS`` gives the reason for each StableHLO op left out, so the refusal of
one of them says why; an op in neither table is refused as "not an op our compiler
emits".
"""

from __future__ import annotations

# name -> where it comes from ("seen": in the disk-cache survey; otherwise who emits it)
ALLOWED_OPS: dict[str, str] = {
    # Structure. builtin.module is allowed as the root only (the verifier checks it).
    "builtin.module": "seen",
    "func.func": "seen",
    "func.return": "seen",
    "stablehlo.return": "seen (terminator of reduce, sort, scatter, while bodies)",
    # Counted loops (lowering/loops.py): the verifier admits one only with a proved trip
    # count (torchneuron/loop_bound.py), at most MAX_LOOP_TRIPS with its enclosing
    # loops; a loop whose bound a changed byte could raise would otherwise run for hours.
    "stablehlo.while": "lowering/loops.py (counted loops)",
    # Elementwise arithmetic, logic and conversions.
    "stablehlo.abs": "seen",
    "stablehlo.add": "seen",
    "stablehlo.and": "seen",
    "stablehlo.atan2": "seen",
    "stablehlo.bitcast_convert": "seen",
    "stablehlo.ceil": "seen",
    "stablehlo.clamp": "seen",
    "stablehlo.compare": "seen",
    "stablehlo.convert": "seen",
    "stablehlo.cosine": "torch-mlir (aten.cos)",
    "stablehlo.divide": "seen",
    "stablehlo.exponential": "seen",
    "stablehlo.exponential_minus_one": "seen",
    "stablehlo.floor": "seen",
    "stablehlo.is_finite": "torch-mlir (aten.isfinite)",
    "stablehlo.log": "seen",
    "stablehlo.log_plus_one": "seen",
    "stablehlo.logistic": "seen",
    "stablehlo.maximum": "seen",
    "stablehlo.minimum": "seen",
    "stablehlo.multiply": "seen",
    "stablehlo.negate": "seen",
    "stablehlo.not": "seen",
    "stablehlo.or": "seen",
    "stablehlo.power": "seen",
    "stablehlo.remainder": "seen",
    "stablehlo.round_nearest_afz": "torch-mlir (aten.round), fold-constants",
    "stablehlo.round_nearest_even": "seen",
    "stablehlo.rsqrt": "seen",
    "stablehlo.select": "seen",
    "stablehlo.shift_left": "seen",
    "stablehlo.shift_right_arithmetic": "seen",
    "stablehlo.sign": "seen",
    "stablehlo.sine": "seen",
    "stablehlo.sqrt": "seen",
    "stablehlo.subtract": "seen",
    "stablehlo.tan": "CHLO legalization (chlo.tan)",
    "stablehlo.tanh": "torch-mlir (aten.tanh)",
    "stablehlo.xor": "seen",
    # Shapes, data movement, contractions, reductions.
    "stablehlo.batch_norm_inference": "torch-mlir (aten.batch_norm)",
    "stablehlo.batch_norm_training": "torch-mlir (aten.batch_norm)",
    "stablehlo.broadcast_in_dim": "seen",
    "stablehlo.concatenate": "seen",
    "stablehlo.constant": "seen",
    "stablehlo.convolution": "seen",
    "stablehlo.dot": "torch-mlir (aten.mm)",
    "stablehlo.dot_general": "seen",
    "stablehlo.gather": "seen",
    "stablehlo.get_dimension_size": "legalize-to-stablehlo (tensor.dim)",
    "stablehlo.iota": "seen",
    "stablehlo.pad": "seen",
    "stablehlo.reduce": "seen",
    "stablehlo.reduce_window": "seen",
    "stablehlo.reshape": "seen",
    "stablehlo.reverse": "seen",
    "stablehlo.scatter": "seen",
    "stablehlo.slice": "seen",
    "stablehlo.sort": "seen",
    "stablehlo.transpose": "seen",
}

# Custom-call targets our compiler emits: none. A target runs host code registered in
# the XLA runtime (LAPACK, Python callbacks...), outside anything we verify.
ALLOWED_CUSTOM_CALL_TARGETS: frozenset[str] = frozenset()

# The most times a loop's body may run in one run of a program, its enclosing loops'
# trips multiplied in. Our rules' loops run far fewer (a Jacobi eigh: at most 8 sweeps).
MAX_LOOP_TRIPS = 4096

_HOST = "it moves data between the program and the host, outside the computation"
_COLLECTIVE = "it communicates with other devices; a NEFF runs on one core"
_DYNAMIC = (
    "our pipeline makes dynamic ops static (stablehlo-canonicalize-dynamism); "
    "the runtime runs static shapes only"
)
_UNUSED = "our compiler never emits it"

# name -> why a program containing it is refused
EXCLUDED_OPS: dict[str, str] = {
    "stablehlo.custom_call": (
        "it calls host code registered in the XLA runtime; our compiler emits no custom calls"
    ),
    "stablehlo.infeed": _HOST,
    "stablehlo.outfeed": _HOST,
    "stablehlo.send": _HOST,
    "stablehlo.recv": _HOST,
    "stablehlo.create_token": "tokens only order host transfers, which are refused",
    "stablehlo.after_all": "tokens only order host transfers, which are refused",
    "stablehlo.all_gather": _COLLECTIVE,
    "stablehlo.all_reduce": _COLLECTIVE,
    "stablehlo.all_to_all": _COLLECTIVE,
    "stablehlo.reduce_scatter": _COLLECTIVE,
    "stablehlo.collective_permute": _COLLECTIVE,
    "stablehlo.collective_broadcast": _COLLECTIVE,
    "stablehlo.partition_id": _COLLECTIVE,
    "stablehlo.replica_id": _COLLECTIVE,
    "stablehlo.async_start": "asynchronous execution wraps other computations; " + _UNUSED,
    "stablehlo.async_done": "asynchronous execution wraps other computations; " + _UNUSED,
    "stablehlo.case": "control flow; " + _UNUSED,
    "stablehlo.if": "control flow; " + _UNUSED,
    "stablehlo.map": "it applies a nested computation; " + _UNUSED,
    "stablehlo.composite": (
        "XLA may replace it by a kernel of its own instead of its decomposition; " + _UNUSED
    ),
    "func.call": "our programs are one function; " + _UNUSED,
    "stablehlo.rng": (
        "its values depend on XLA's hidden seed; our compiler draws random numbers "
        "with Philox inside the program (lowering/rules/random.py)"
    ),
    "stablehlo.rng_bit_generator": "our compiler draws random numbers with Philox; " + _UNUSED,
    "stablehlo.dynamic_broadcast_in_dim": _DYNAMIC,
    "stablehlo.dynamic_conv": _DYNAMIC,
    "stablehlo.dynamic_gather": _DYNAMIC,
    "stablehlo.dynamic_iota": _DYNAMIC,
    "stablehlo.dynamic_pad": _DYNAMIC,
    "stablehlo.dynamic_reshape": _DYNAMIC,
    "stablehlo.real_dynamic_slice": _DYNAMIC,
    "stablehlo.set_dimension_size": _DYNAMIC,
    "stablehlo.tuple": "tuples are not tensors; " + _UNUSED,
    "stablehlo.get_tuple_element": "tuples are not tensors; " + _UNUSED,
    "stablehlo.uniform_quantize": "quantized types are not in the runtime's dtype table",
    "stablehlo.uniform_dequantize": "quantized types are not in the runtime's dtype table",
    "stablehlo.optimization_barrier": _UNUSED,
}

# Attributes whose name holds a dot are a dialect's discardable attributes: XLA reads
# some of them as instructions (mhlo.sharding, mhlo.frontend_attributes such as
# _xla_compute_type = "host", tf.aliasing_output: buffer donation, which would let a
# program overwrite a weight). Our serializer writes none, so none is allowed.
ALLOWED_DISCARDABLE_ATTRIBUTES: frozenset[str] = frozenset()
