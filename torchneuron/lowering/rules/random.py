"""Random ops: samples drawn in the program by a counter-based generator.

Two halves:

- **rules** rewrite every random op (``rand``, ``randn``, ``bernoulli``,
  ``native_dropout``, ``normal``, ``uniform``, ``exponential``, ``cauchy``,
  ``geometric``, ``log_normal``, ``randint``, ``random``, ``multinomial``,
  ``rrelu``...) into one primitive, ``torchneuron::random_bits(size)`` (uniform
  32-bit words, as int64), and ATen arithmetic that turns words into samples;
- ``seed_random_ops`` (the first step of ``compile_graph``, so every compiled graph
  is seeded the same way) replaces the ``random_bits`` of a graph by Philox-4x32-10
  words (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011)
  under a key the graph takes as one more input. The program stays a pure
  function; the caller draws a fresh key from the generator of the inputs'
  device at every call, so ``torch.manual_seed`` makes runs reproducible and
  successive calls differ. Activation checkpointing's recomputation (a draw
  saved in the forward graph, replayed in the backward) replays the same words
  from the saved ``[key, first block]``.

The samples follow PyTorch's distributions, not its CPU stream. A uniform sample
of a dtype is a multiple of 2^-p below 1 (p the dtype's precision), so ``log(1 - u)``
is finite and Box-Muller normals are never NaN or inf (at most 5.8 sigma in
float32, 8.6 in float64).

Declined (the op stays, and ``seed_random_ops`` refuses the graph, so it falls
back or raises): integer ranges over 2^31 (``randint``, ``random_`` of int64 and
float64), generators passed explicitly, and random ops without a rule here
(``randperm``, ``poisson``...). ``multinomial`` checks its weights as PyTorch does while the program runs
(``torchneuron::check``): negative, NaN or inf weights and a row summing to 0 raise
RuntimeError. Without replacement, a row with fewer nonzero weights than samples
gives its zero-weight categories last, as on the CPU.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.fx

from ..checks import RUNTIME_ERROR, require
from .registry import lowering_rule

aten = torch.ops.aten

MASK32 = 0xFFFFFFFF
RANDOM_KEY_INPUT = "random_key"
_LARGEST_RANGE = 2**31  # integer ranges drawn exactly (64-bit multiply-shift)
_PRECISION = {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24, torch.float64: 53}


@torch.library.custom_op(
    "torchneuron::random_bits",
    mutates_args=(),
    schema="(SymInt[] size, Device device) -> Tensor",
    tags=(torch.Tag.nondeterministic_seeded,),
)
def random_bits(size: Sequence[int], device: torch.device) -> torch.Tensor:
    """``size`` independent uniform 32-bit words as int64: the primitive of every random op."""
    return torch.randint(0, 2**32, tuple(size), dtype=torch.int64, device=device)


@random_bits.register_fake
def _random_bits_fake(size, device):
    return torch.empty(tuple(size), dtype=torch.int64, device=device)


# -- words -> samples ------------------------------------------------------------------


def _int(value: int, device) -> torch.Tensor:
    # torch-mlir lowers the Tensor forms of the integer bit ops, not the Scalar ones
    return aten.scalar_tensor.default(value, dtype=torch.int64, device=device)


def _shift_right(words: torch.Tensor, bits: int) -> torch.Tensor:
    return torch.bitwise_right_shift(words, _int(bits, words.device))


def _device(device) -> torch.device:
    return torch.device("cpu") if device is None else torch.device(device)


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Samples of half types are computed in float32 and rounded once, as on the CPU."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _uniform(size, dtype: torch.dtype, device, *, open_interval: bool = False) -> torch.Tensor:
    """U[0, 1) in ``dtype``: multiples of 2^-p below 1, p the dtype's precision.

    ``open_interval``: U(0, 1), odd multiples of 2^-p (one bit fewer, so that the
    largest, 1 - 2^-p, is still below 1 in ``dtype``).
    """
    device = _device(device)
    bits = _PRECISION[dtype] - open_interval
    if dtype == torch.float64:
        words = random_bits([*size, 2], device)
        high = _shift_right(words.select(-1, 0), 32 - 27)
        low = _shift_right(words.select(-1, 1), 32 - (bits - 27))
        integer = (high * _int(2 ** (bits - 27), device) + low).to(torch.float64)
    else:
        integer = _shift_right(random_bits(list(size), device), 32 - bits).to(torch.float32)
    if open_interval:
        integer, bits = integer * 2.0 + 1.0, bits + 1
    sample = integer * 2.0**-bits
    return sample if sample.dtype == dtype else sample.to(dtype)


def _standard_normal(size, dtype: torch.dtype, device) -> torch.Tensor:
    """N(0, 1) by Box-Muller: sqrt(-2 log(1 - u1)) cos(2 pi u2), with 1 - u1 in (0, 1]."""
    compute = _compute_dtype(dtype)
    u1 = _uniform(size, compute, device)
    u2 = _uniform(size, compute, device)
    radius = torch.sqrt(torch.log(1.0 - u1) * -2.0)
    return radius * torch.cos(u2 * (2.0 * math.pi))


def _bernoulli(size, p, dtype: torch.dtype, device) -> torch.Tensor:
    """Booleans that are True with probability ``p`` (a number or a tensor)."""
    compute = _compute_dtype(dtype)
    if isinstance(p, (int, float)) and min(p, 1.0 - p) < 2.0**-8:
        compute = torch.float64  # 24-bit uniforms would quantize a tiny p too coarsely
    return _uniform(size, compute, device) < p


def _randint(low: int, high: int, size, dtype, device):
    """Integers uniform in [low, high): multiply-shift over 64 random bits (Lemire), exact."""
    span = high - low
    if not 0 < span <= _LARGEST_RANGE:
        return NotImplemented
    device = _device(device)
    if span & (span - 1) == 0:  # a power of two: the top bits of one word
        value = _shift_right(random_bits(list(size), device), 32 - span.bit_length() + 1)
    else:
        # floor((w0 * 2^32 + w1) * span / 2^64) = floor((w0 * span + floor(w1 * span / 2^32)) / 2^32)
        words = random_bits([*size, 2], device)
        spans = _int(span, device)
        carry = _shift_right(words.select(-1, 1) * spans, 32)
        value = _shift_right(words.select(-1, 0) * spans + carry, 32)
    if low:
        value = value + _int(low, device)
    return value.to(torch.int64 if dtype is None else dtype)


# -- uniform and integer ops -------------------------------------------------------------


@lowering_rule(aten.rand.default)
def rand(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or torch.get_default_dtype()
    if dtype not in _PRECISION:
        return NotImplemented
    return _uniform(size, dtype, device)


@lowering_rule(aten.rand_like.default)
def rand_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return rand(self.shape, dtype=dtype or self.dtype, device=device or self.device)


@lowering_rule(aten.uniform.default)
def uniform(self, from_=0.0, to=1.0, *, generator=None):
    # x.uniform_(a, b) -> u * (b - a) + a, as PyTorch's kernel computes it
    if generator is not None or self.dtype not in _PRECISION or not from_ <= to:
        return NotImplemented
    compute = _compute_dtype(self.dtype)
    sample = _uniform(self.shape, compute, self.device) * (to - from_) + from_
    return sample.to(self.dtype)


@lowering_rule(aten.randint.default, aten.randint.low)
def randint(*bounds_and_size, dtype=None, layout=None, device=None, pin_memory=None):
    # randint(high, size) or randint(low, high, size)
    *bounds, size = bounds_and_size
    return _randint(*([0] * (2 - len(bounds)) + bounds), size, dtype, device)


@lowering_rule(aten.randint_like.default, aten.randint_like.low_dtype)
def randint_like(self, *bounds, dtype=None, layout=None, device=None, pin_memory=None, **_):
    # randint_like(x, high) or randint_like(x, low, high)
    low, high = [0] * (2 - len(bounds)) + list(bounds)
    return _randint(low, high, self.shape, dtype or self.dtype, device or self.device)


# random_() with no bounds draws from [0, 2^digits] for floats, [0, max] for integers
_RANDOM_SPAN = {
    torch.bool: 2,
    torch.uint8: 2**8,
    torch.int8: 2**7,
    torch.int16: 2**15,
    torch.int32: 2**31,
    torch.float16: 2**11 + 1,
    torch.bfloat16: 2**8 + 1,
    torch.float32: 2**24 + 1,
}


@lowering_rule(aten.random.default)
def random(self, *, generator=None):
    span = _RANDOM_SPAN.get(self.dtype)
    if generator is not None or span is None:
        return NotImplemented  # int64 and float64 draw 64-bit ranges
    return _randint(0, span, self.shape, self.dtype, self.device)


@lowering_rule(getattr(aten.random, "from"), aten.random.to)
def random_bounded(self, *bounds, generator=None):
    # x.random_(to) or x.random_(from, to); to=None (the dtype's limit) is declined
    low, high = [0] * (2 - len(bounds)) + list(bounds)
    if generator is not None or high is None:
        return NotImplemented
    return _randint(low, high, self.shape, self.dtype, self.device)


# -- continuous distributions -----------------------------------------------------------


@lowering_rule(aten.randn.default)
def randn(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or torch.get_default_dtype()
    if dtype not in _PRECISION:
        return NotImplemented
    return _standard_normal(size, dtype, device).to(dtype)


@lowering_rule(aten.randn_like.default)
def randn_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return randn(self.shape, dtype=dtype or self.dtype, device=device or self.device)


def _normal(mean, std, size, dtype, device):
    # normal(mean, std) -> mean + std * z
    if dtype not in _PRECISION:
        return NotImplemented
    return (_standard_normal(size, dtype, device) * std + mean).to(dtype)


@lowering_rule(aten.normal_functional.default)
def normal_functional(self, mean=0.0, std=1.0, *, generator=None):
    if generator is not None or not std >= 0:
        return NotImplemented
    return _normal(mean, std, self.shape, self.dtype, self.device)


@lowering_rule(aten.normal.Tensor_float)
def normal_tensor_float(mean, std=1.0, *, generator=None):
    if generator is not None or not std >= 0:
        return NotImplemented
    return _normal(mean, std, mean.shape, mean.dtype, mean.device)


@lowering_rule(aten.normal.float_Tensor)
def normal_float_tensor(mean, std, *, generator=None):
    if generator is not None:
        return NotImplemented
    return _normal(mean, std, std.shape, std.dtype, std.device)


@lowering_rule(aten.normal.Tensor_Tensor)
def normal_tensor_tensor(mean, std, *, generator=None):
    if generator is not None:
        return NotImplemented
    size = torch.broadcast_shapes(mean.shape, std.shape)
    return _normal(mean, std, size, torch.result_type(mean, std), mean.device)


@lowering_rule(aten.normal.float_float)
def normal_float_float(
    mean, std, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None
):
    if generator is not None or not std >= 0:
        return NotImplemented
    return _normal(mean, std, size, dtype or torch.get_default_dtype(), device)


@lowering_rule(aten.log_normal.default)
def log_normal(self, mean=1.0, std=2.0, *, generator=None):
    # x.log_normal_(m, s) -> exp(m + s * z)
    if generator is not None or self.dtype not in _PRECISION or not std > 0:
        return NotImplemented
    z = _standard_normal(self.shape, self.dtype, self.device)
    return torch.exp(z * std + mean).to(self.dtype)


@lowering_rule(aten.exponential.default)
def exponential(self, lambd=1.0, *, generator=None):
    # x.exponential_(l) -> -log(v) / l, v = 1 - u in (0, 1]; log(v) near 1 is -eps/2, as in
    # PyTorch's transformation, so that no sample is 0
    if generator is not None or self.dtype not in _PRECISION or not lambd > 0:
        return NotImplemented
    compute = _compute_dtype(self.dtype)
    v = 1.0 - _uniform(self.shape, compute, self.device)
    half_eps = torch.finfo(compute).eps / 2
    log = torch.where(v >= 1.0 - half_eps, -half_eps, torch.log(v))
    return (log * (-1.0 / lambd)).to(self.dtype)


@lowering_rule(aten.cauchy.default)
def cauchy(self, median=0.0, sigma=1.0, *, generator=None):
    # x.cauchy_(m, s) -> m + s * tan(pi (u - 1/2))
    if generator is not None or self.dtype not in _PRECISION:
        return NotImplemented
    u = _uniform(self.shape, _compute_dtype(self.dtype), self.device)
    return (torch.tan((u - 0.5) * math.pi) * sigma + median).to(self.dtype)


@lowering_rule(aten.geometric.default)
def geometric(self, p, *, generator=None):
    # x.geometric_(p) -> ceil(log(v) / log(1 - p)), v = 1 - u in (0, 1]; v = 1 gives 1
    if generator is not None or not 0.0 < p < 1.0 or self.dtype == torch.bool:
        return NotImplemented
    compute = torch.float64 if self.dtype in (torch.float64, torch.int64) else torch.float32
    v = 1.0 - _uniform(self.shape, compute, self.device)
    trials = torch.clamp_min(torch.ceil(torch.log(v) * (1.0 / math.log1p(-p))), 1.0)
    return trials.to(self.dtype)


# -- discrete draws -------------------------------------------------------------------------


@lowering_rule(aten.bernoulli.default)
def bernoulli(self, *, generator=None):
    if generator is not None or self.dtype not in _PRECISION:
        return NotImplemented
    return _bernoulli(self.shape, self, self.dtype, self.device).to(self.dtype)


@lowering_rule(aten.bernoulli.p)
def bernoulli_p(self, p=0.5, *, generator=None):
    if generator is not None:
        return NotImplemented
    return _bernoulli(self.shape, p, self.dtype, self.device).to(self.dtype)


@lowering_rule(aten.bernoulli.Tensor)
def bernoulli_tensor(self, p, *, generator=None):
    if generator is not None:
        return NotImplemented
    return _bernoulli(self.shape, p.expand(self.shape), p.dtype, self.device).to(self.dtype)


@lowering_rule(aten.native_dropout.default)
def native_dropout(input, p, train):
    # not training: the identity, every element kept (draws nothing, any dtype)
    if train is False:
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    # train (or None, as on the CPU): (x * keep / (1 - p), keep), keep ~ Bernoulli(1 - p)
    if not input.is_floating_point():
        return NotImplemented
    keep = torch.logical_not(_bernoulli(input.shape, p, input.dtype, input.device))
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * keep * scale, keep


@lowering_rule(aten.rrelu_with_noise_functional.default)
def rrelu_with_noise_functional(
    self, noise, lower=0.125, upper=1.0 / 3, training=False, generator=None
):
    if generator is not None or self.dtype not in _PRECISION:
        return NotImplemented
    if not training:
        return aten.leaky_relu.default(self, (lower + upper) / 2), noise.clone()
    # training: slopes ~ U[lower, upper) where x <= 0 (the noise the backward reads), else 1
    not_positive = self <= 0
    slope = uniform(self, lower, upper)
    output = torch.where(not_positive, self * slope, self)
    return output, torch.where(not_positive, slope, 1.0).to(noise.dtype)


_BAD_WEIGHTS = "probability tensor contains either `inf`, `nan` or element < 0"


@lowering_rule(aten.multinomial.default)
def multinomial(self, num_samples, replacement=False, *, generator=None):
    # Gumbel-max: argmax(log w + g), g = -log(-log u) per draw; without replacement the
    # top num_samples of one draw per row (Gumbel-top-k)
    if generator is not None or self.dim() not in (1, 2) or not self.is_floating_point():
        return NotImplemented
    # the checks PyTorch makes on the weights, made while the program runs
    require(torch.isfinite(self) & (self >= 0), RUNTIME_ERROR, _BAD_WEIGHTS)
    require(
        self.sum(-1) > 0,
        RUNTIME_ERROR,
        "invalid multinomial distribution (sum of probabilities <= 0)",
    )
    compute = _compute_dtype(self.dtype)
    log_weights = torch.log(self.to(compute))
    if replacement and num_samples > 1:
        size = [*self.shape[:-1], num_samples, self.shape[-1]]
        log_weights = log_weights.unsqueeze(-2)
    else:
        size = list(self.shape)
    u = _uniform(size, compute, self.device, open_interval=True)
    keys = log_weights - torch.log(-torch.log(u))
    if replacement and num_samples > 1:
        return torch.argmax(keys, dim=-1)
    return torch.topk(keys, num_samples, dim=-1).indices


# -- the graph's key ---------------------------------------------------------------------------

# Philox-4x32 round constants (Random123)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_ROUNDS = 10


class _Constants(dict):
    """int64 scalars of one trace, each made once (a node per use would bloat the graph)."""

    def __init__(self, device):
        super().__init__()
        self.device = device

    def __missing__(self, value: int) -> torch.Tensor:
        self[value] = _int(value, self.device)
        return self[value]


def _mulhilo(value, multiplier: int, const: _Constants):
    """High and low 32-bit halves of ``value * multiplier`` (a product below 2^64)."""
    if isinstance(value, int):
        product = value * multiplier
        return product >> 32, product & MASK32
    product = value * const[multiplier]  # may wrap past 2^63; the bits are right
    high = torch.bitwise_right_shift(product, const[32])
    return torch.bitwise_and(high, const[MASK32]), torch.bitwise_and(product, const[MASK32])


def _xor(a, b, const: _Constants):
    if isinstance(a, int) and isinstance(b, int):
        return a ^ b
    if isinstance(a, int):
        a, b = b, a
    if isinstance(b, int):
        return a if b == 0 else torch.bitwise_xor(a, const[b])
    return torch.bitwise_xor(a, b)


def philox_words(key: torch.Tensor, count: int, first_block=0) -> torch.Tensor:
    """``count`` Philox-4x32-10 words (int64 in [0, 2^32)) of ``key`` (int64[2], 32-bit words).

    Block ``i`` encrypts the counter ``(i, 0, 0, 0)``; its four words are samples
    ``4i..4i+3``. The words start at block ``first_block`` (an int or a 0-d tensor).
    """
    const = _Constants(key.device)
    blocks = -(-count // 4)
    if blocks > MASK32 // 2:
        raise ValueError(f"{count} random words is more than one Philox key covers")
    c0 = torch.arange(blocks, dtype=torch.int64, device=key.device)
    if not isinstance(first_block, int) or first_block:
        c0 = c0 + first_block
    c1 = c2 = c3 = 0
    k0, k1 = key[0], key[1]
    for _ in range(_PHILOX_ROUNDS):
        high0, low0 = _mulhilo(c0, _PHILOX_M[0], const)
        high1, low1 = _mulhilo(c2, _PHILOX_M[1], const)
        c0, c1, c2, c3 = (
            _xor(_xor(high1, c1, const), k0, const),
            low1,
            _xor(_xor(high0, c3, const), k1, const),
            low0,
        )
        k0 = torch.bitwise_and(k0 + const[_PHILOX_W[0]], const[MASK32])
        k1 = torch.bitwise_and(k1 + const[_PHILOX_W[1]], const[MASK32])
    lanes = [const[c] if isinstance(c, int) else c for c in (c0, c1, c2, c3)]
    words = torch.stack(torch.broadcast_tensors(*lanes), dim=1).reshape(-1)
    return words[:count] if words.shape[0] != count else words


class SeededGraph(NamedTuple):
    graph_module: torch.fx.GraphModule
    example_inputs: list
    takes_key: bool  # a last input more: the key of the graph's fresh draws


_SAVE = torch.ops.higher_order.run_and_save_rng_state
_REPLAY = torch.ops.higher_order.run_with_rng_state


def _words_request(node: torch.fx.Node):
    """(kind, size, device) of a node that draws words: a "draw", a "saved" draw or a
    "replay" of one (activation checkpointing's recomputation); None for other nodes."""
    bits = torch.ops.torchneuron.random_bits.default
    if node.op != "call_function":
        return None
    if node.target is bits:
        return "draw", *node.args
    if node.target is _SAVE and node.args[0] is bits:
        return "saved", *node.args[1:]
    if node.target is _REPLAY and node.args[1] is bits:
        return "replay", *node.args[2:]
    if node.target in (_SAVE, _REPLAY) or torch.Tag.nondeterministic_seeded in getattr(
        node.target, "tags", ()
    ):
        from ..errors import UnsupportedOpError, describe_value, node_source

        operands = [a.meta.get("val") for a in node.all_input_nodes]
        raise UnsupportedOpError(
            str(node.target),
            [describe_value(v) for v in operands if v is not None],
            node_source(node),
            "no native sampler for this random op (or for these arguments)",
        )
    return None


def is_random_state(node: torch.fx.Node) -> bool:
    """Whether ``node`` is only the saved state of replayed draws (its size is ours, fixed)."""
    users = list(node.users)
    return bool(users) and all(
        user.target is _REPLAY and user.args[0] is node and user.args[1] is not None
        for user in users
    )


def seed_random_ops(gm: torch.fx.GraphModule, example_inputs: Sequence) -> SeededGraph | None:
    """A copy of ``gm`` whose random words are Philox words; None if it draws none.

    Fresh draws are keyed by one more input (``random_key``, int64[2] of 32-bit
    words), each starting on a block of its own; a saved draw's state is
    ``[key, first block]``, from which a replay recomputes the same words. Raises
    ``UnsupportedOpError`` for a random op left without a rule (the graph must not
    draw from an unseeded source).
    """
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    # most graphs draw nothing: looked at before the copy, which costs
    if not any(_words_request(n) is not None for n in gm.graph.nodes):
        return None
    graph = copy.deepcopy(gm.graph)
    requests = [(n, r) for n in graph.nodes if (r := _words_request(n)) is not None]
    draws = [(n, size) for n, (kind, size, _) in requests if kind != "replay"]
    replays = [(n, size) for n, (kind, size, _) in requests if kind == "replay"]
    device = torch.device(requests[0][1][2])
    first_blocks, blocks = [], 0
    for _, size in draws:
        first_blocks.append(blocks)
        blocks += -(-math.prod(size) // 4)

    def words(key, *states):
        outputs = []
        flat = philox_words(key, 4 * blocks) if draws else None
        for (node, size), first in zip(draws, first_blocks):
            outputs.append(flat[4 * first : 4 * first + math.prod(size)].reshape(size))
            if node.target is _SAVE:
                outputs.append(torch.cat([key, _int(first, device).reshape(1)]))
        for state, (_, size) in zip(states, replays):
            outputs.append(philox_words(state[:2], math.prod(size), state[2]).reshape(size))
        return tuple(outputs)

    with FakeTensorMode():
        key = torch.empty(2, dtype=torch.int64, device=device)
        states = [torch.empty(3, dtype=torch.int64, device=device) for _ in replays]
        words_gm = make_fx(words)(key, *states)
    values = {}
    if draws:
        inputs = [node for node in graph.nodes if node.op == "placeholder"]
        where = graph.inserting_after(inputs[-1]) if inputs else graph.inserting_before(draws[0][0])
        with where:
            values[key] = graph.placeholder(RANDOM_KEY_INPUT)
        values[key].meta["val"] = key
    for state, (node, _) in zip(states, replays):
        values[state] = node.args[0]
        node.args[0].meta["val"] = state  # PyTorch declares a uint8 state of unknown size
    sub_inputs = [n for n in words_gm.graph.nodes if n.op == "placeholder"]
    with graph.inserting_before(requests[0][0]):
        sources = [values.get(key), *(values[state] for state in states)]
        outputs = iter(graph.graph_copy(words_gm.graph, dict(zip(sub_inputs, sources))))
    for node, _ in draws:
        if node.target is _SAVE:  # (state, words): its users are getitems
            drawn, state = next(outputs), next(outputs)
            for user in list(node.users):
                user.replace_all_uses_with(state if user.args[1] == 0 else drawn)
                graph.erase_node(user)
        else:
            node.replace_all_uses_with(next(outputs))
        graph.erase_node(node)
    for node, _ in replays:
        node.replace_all_uses_with(next(outputs))
        graph.erase_node(node)
    graph.lint()
    extra = [key] if draws else []
    return SeededGraph(torch.fx.GraphModule(gm, graph), [*example_inputs, *extra], bool(draws))
