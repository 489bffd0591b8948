"""The pieces every complex rule is built from: ``Pair``, part arithmetic, the rule table.

A complex tensor is carried as ``Pair(re, im)``, two real tensors of its component
dtype (``COMPONENT``). A part may be ``None``, standing for zero, so a real operand
costs no products (``pair_parts``, ``add_parts``, ...; ``make_pair`` fills the zeros).
``RULES`` maps an ATen op to its rule; ``@rule`` registers one. The arithmetic rules
(``complex_pairs.py``) and the FFT rules (``fft_dft.py``) both build on this module,
which imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

# complex dtype -> the real dtype of its components
COMPONENT = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}
COMPLEX_OF = {real: cplx for cplx, real in COMPONENT.items()}


class Pair:
    """A complex tensor as its real and imaginary parts (real tensors of one shape)."""

    __slots__ = ("im", "re")

    def __init__(self, re: torch.Tensor, im: torch.Tensor):
        self.re = re
        self.im = im

    @property
    def shape(self):
        return self.re.shape

    @property
    def dtype(self) -> torch.dtype:
        return COMPLEX_OF[self.re.dtype]

    def dim(self) -> int:
        return self.re.dim()

    def stacked(self) -> torch.Tensor:
        """The ``view_as_real`` layout: ``[..., 2]``."""
        return torch.stack([self.re, self.im], -1)

    @staticmethod
    def of_stacked(ri: torch.Tensor) -> Pair:
        return Pair(ri.select(-1, 0), ri.select(-1, 1))


def is_complex_value(value: Any) -> bool:
    if isinstance(value, Pair):
        return True
    if isinstance(value, torch.Tensor):
        return value.dtype.is_complex
    if isinstance(value, (list, tuple)):
        return any(is_complex_value(v) for v in value)
    return isinstance(value, complex) or (isinstance(value, torch.dtype) and value.is_complex)


def pair_parts(value: Any) -> tuple[Any, Any]:
    """(re, im) of a Pair, a real tensor (im 0) or a number; ``None`` stands for zero."""
    if isinstance(value, Pair):
        return value.re, value.im
    if isinstance(value, complex):
        return value.real, value.imag
    return value, None


def add_parts(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def sub_parts(a, b):
    if b is None:
        return a
    if a is None:
        return -b
    return a - b


def mul_parts(a, b):
    if a is None or b is None:
        return None
    if isinstance(b, (int, float)) and b == 0 and not isinstance(a, (int, float)):
        return None
    return a * b


def zero_part(like: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(like)


def make_pair(re, im) -> Pair:
    """A Pair from parts where one may be ``None`` (zero) or a number."""
    if not isinstance(re, torch.Tensor) and not isinstance(im, torch.Tensor):
        raise TypeError("a complex result needs a tensor part")
    ref = re if isinstance(re, torch.Tensor) else im
    if re is None:
        re = zero_part(ref)
    elif not isinstance(re, torch.Tensor):
        re = torch.full_like(ref, re)
    if im is None:
        im = zero_part(ref)
    elif not isinstance(im, torch.Tensor):
        im = torch.full_like(ref, im)
    if re.shape != im.shape:
        shape = torch.broadcast_shapes(re.shape, im.shape)
        re, im = re.expand(shape), im.expand(shape)
    return Pair(re, im)


# The rules: ATen op -> function over values where complex tensors are Pairs. The
# arithmetic rules register in complex_pairs.py, the FFT rules in fft_dft.py.
RULES: dict[Any, Callable] = {}


def rule(*ops):
    def register(fn):
        for op in ops:
            RULES[op] = fn
        return fn

    return register


def matmul_like(fn):
    def product(a, b):
        ar, ai = pair_parts(a)
        br, bi = pair_parts(b)
        re = sub_parts(maybe_product(fn, ar, br), maybe_product(fn, ai, bi))
        im = add_parts(maybe_product(fn, ar, bi), maybe_product(fn, ai, br))
        return make_pair(re, im)

    return product


def maybe_product(fn, x, y):
    if x is None or y is None:
        return None
    return fn(x, y)
