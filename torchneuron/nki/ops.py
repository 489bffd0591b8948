"""The operators kernels name: ALU operators, reductions and activation functions.

``nl.add``, ``nl.maximum`` ... are ``AluOp``s: passed as ``op`` to ``nisa.tensor_tensor`` /
``tensor_scalar`` / ``tensor_reduce`` they name the operator; called on tiles they are the
``nl`` convenience form. ``nl.exp``, ``nl.rsqrt`` ... are ``ActivationFn``s, the functions
ScalarE applies (``nisa.activation``); called on a tile they are ``nl.exp(x)``. Engines
compute in float32 (the NKI ISA pages: inputs are cast to float32, the result is cast to
the output dtype), so each function here maps float32 arrays to float32 arrays.

Calling an operator on tiles issues an ``nl`` convenience form, which nki.language defines
and registers in ``CONVENIENCE_FORMS`` (language issues isa instructions, and those name
the operators here, so this file cannot import language back).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# The nl convenience forms, by name, filled by nki.language when it is imported (the
# torchneuron.nki package imports it, so they are there before any kernel runs):
# "elementwise" (op, x, y, dtype, mask), "activation" (fn, x, dtype, mask) and
# "accumulate" (acc, value): ``nl.add(x, y)``, ``nl.exp(x)``, and tensor.Tile's ``+``, ``+=``.
CONVENIENCE_FORMS: dict[str, Callable] = {}

ARITH = "arith"
BITVEC = "bitvec"
COMPARE = "compare"


@dataclass(frozen=True, eq=False)
class AluOp:
    name: str
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    kind: str = ARITH
    reduce: Callable | None = None  # ufunc-like .reduce for tensor_reduce

    def __call__(self, x, y, dtype=None, mask=None, **kwargs):
        return CONVENIENCE_FORMS["elementwise"](self, x, y, dtype=dtype, mask=mask)

    def __repr__(self) -> str:
        return f"nl.{self.name}"


def _f32(fn):
    def run(a, b):
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b), dtype=np.float32)

    return run


def _cmp(fn):
    def run(a, b):
        return fn(a, b).astype(np.float32)

    return run


def _bits(fn):
    def run(a, b):
        return fn(a.astype(np.int64), b.astype(np.int64))

    return run


ALU_OPS: dict[str, AluOp] = {
    op.name: op
    for op in (
        AluOp("add", _f32(np.add), reduce=np.add.reduce),
        AluOp("subtract", _f32(np.subtract), reduce=np.subtract.reduce),
        AluOp("multiply", _f32(np.multiply), reduce=np.multiply.reduce),
        AluOp("divide", _f32(np.divide)),
        AluOp("maximum", _f32(np.maximum), reduce=np.maximum.reduce),
        AluOp("minimum", _f32(np.minimum), reduce=np.minimum.reduce),
        AluOp("power", _f32(np.power)),
        AluOp("equal", _cmp(np.equal), COMPARE),
        AluOp("not_equal", _cmp(np.not_equal), COMPARE),
        AluOp("greater", _cmp(np.greater), COMPARE),
        AluOp("greater_equal", _cmp(np.greater_equal), COMPARE),
        AluOp("less", _cmp(np.less), COMPARE),
        AluOp("less_equal", _cmp(np.less_equal), COMPARE),
        AluOp("bitwise_and", _bits(np.bitwise_and), BITVEC, reduce=np.bitwise_and.reduce),
        AluOp("bitwise_or", _bits(np.bitwise_or), BITVEC, reduce=np.bitwise_or.reduce),
        AluOp("bitwise_xor", _bits(np.bitwise_xor), BITVEC, reduce=np.bitwise_xor.reduce),
        AluOp("left_shift", _bits(np.left_shift), BITVEC),
        AluOp("right_shift", _bits(np.right_shift), BITVEC),
    )
}


@dataclass(frozen=True, eq=False)
class ActivationFn:
    name: str
    fn: Callable[[np.ndarray], np.ndarray]

    def __call__(self, x, dtype=None, mask=None, **kwargs):
        return CONVENIENCE_FORMS["activation"](self, x, dtype=dtype, mask=mask)

    def __repr__(self) -> str:
        return f"nl.{self.name}"


def _erf(x):
    from scipy.special import erf

    return erf(x)


def _act(fn):
    def run(x):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float32)), dtype=np.float32)

    return run


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.float32(0.7978845608028654) * (x + 0.044715 * x**3)))


ACTIVATIONS: dict[str, ActivationFn] = {
    fn.name: fn
    for fn in (
        ActivationFn("copy", _act(lambda x: x)),
        ActivationFn("exp", _act(np.exp)),
        ActivationFn("log", _act(np.log)),
        ActivationFn("tanh", _act(np.tanh)),
        ActivationFn("sigmoid", _act(lambda x: 1.0 / (1.0 + np.exp(-x)))),
        ActivationFn("relu", _act(lambda x: np.maximum(x, 0))),
        ActivationFn("gelu", _act(lambda x: 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0))))),
        ActivationFn("gelu_apprx_tanh", _act(_gelu_tanh)),
        ActivationFn("silu", _act(lambda x: x / (1.0 + np.exp(-x)))),
        ActivationFn("rsqrt", _act(lambda x: 1.0 / np.sqrt(x))),
        ActivationFn("sqrt", _act(np.sqrt)),
        ActivationFn("square", _act(np.square)),
        ActivationFn("reciprocal", _act(lambda x: 1.0 / x)),
        ActivationFn("sin", _act(np.sin)),
        ActivationFn("cos", _act(np.cos)),
        ActivationFn("erf", _act(_erf)),
        ActivationFn("softplus", _act(lambda x: np.logaddexp(0, x))),
        ActivationFn("abs", _act(np.abs)),
        ActivationFn("negative", _act(np.negative)),
        ActivationFn("sign", _act(np.sign)),
    )
}
