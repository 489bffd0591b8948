"""Means, variances and vector norms, written out so that every form lowers and is exact.

- ``var``/``std``/``var_mean``/``std_mean``: torch-mlir's pipeline crashes the process
  (a segfault, nothing to catch) on a 0-d input, and its lowering divides by
  ``n - correction`` as it is: an empty slice gave -0.0 where PyTorch gives NaN, and a
  correction above ``n`` a negative variance where PyTorch divides by
  ``max(0, n - correction)``. Here: ``mean = sum / n``, ``var = sum((x - mean)**2) /
  max(0, n - correction)``, which gives NaN for ``n == 0`` and inf (NaN for a zero sum)
  for ``correction >= n``, as PyTorch does.
- ``mean`` with ``dtype=`` (an integer input has no other way to take a mean) is the
  mean of the input cast first; a 0-d input is reduced as a 1-element vector.
- ``linalg_vector_norm``: torch-mlir has no lowering for an empty dim list (every dim)
  nor for a 0-d input, and rounds every step of a half-precision sum; here each order
  is its own reduction of ``|x|`` (``amax`` for inf, ``amin`` for -inf, a count for 0,
  ``sum(|x|**p)**(1/p)`` otherwise), accumulated in float32 for half precision and
  rounded once, as PyTorch's kernels do.
- ``softmax``/``log_softmax`` of a 0-d input: torch-mlir's pipeline never returns on it
  (an endless loop); it is computed as a 1-element vector.
"""

from __future__ import annotations

import math

import torch

from .registry import lowering_rule

aten = torch.ops.aten

_HALF = (torch.float16, torch.bfloat16)


def _dims(self: torch.Tensor, dim) -> list[int]:
    """The reduced dims of a tensor of rank >= 1; None or an empty list means all."""
    if dim is None:
        return list(range(self.dim()))
    if isinstance(dim, int):
        return [dim % self.dim()]
    return [d % self.dim() for d in dim] or list(range(self.dim()))


def _count(self: torch.Tensor, dims: list[int]) -> int:
    return math.prod(self.shape[d] for d in dims)


def _as_vector(self: torch.Tensor, dim):
    """A 0-d input as a 1-element vector (its dims: that one), others unchanged."""
    if self.dim() == 0:
        return self.reshape(1), [0]
    return self, _dims(self, dim)


def _squeezed(result: torch.Tensor, self: torch.Tensor, dims: list[int], keepdim: bool):
    if self.dim() == 0:
        return result.reshape(())
    return result if keepdim else result.squeeze(dims)


def _variance_and_mean(self, dim, correction, keepdim):
    """(variance, mean) with PyTorch's divisor max(0, n - correction), or None."""
    if not self.is_floating_point():
        return None  # complex (and integer inputs, which PyTorch refuses)
    value, dims = _as_vector(self, dim)
    n = _count(value, dims)
    correction = 1 if correction is None else correction
    mean = value.sum(dims, keepdim=True) / n  # n == 0: NaN, as PyTorch
    deviation = value - mean
    squares = (deviation * deviation).sum(dims, keepdim=True)
    variance = squares / max(0, n - correction)
    return _squeezed(variance, self, dims, keepdim), _squeezed(mean, self, dims, keepdim)


@lowering_rule(aten.var.correction)
def var(self, dim=None, *, correction=None, keepdim=False):
    # var(x, d) = sum((x - mean)^2, d) / max(0, n - correction)
    moments = _variance_and_mean(self, dim, correction, keepdim)
    return NotImplemented if moments is None else moments[0]


@lowering_rule(aten.std.correction)
def std(self, dim=None, *, correction=None, keepdim=False):
    # std(x, d) = sqrt(var(x, d))
    moments = _variance_and_mean(self, dim, correction, keepdim)
    return NotImplemented if moments is None else torch.sqrt(moments[0])


@lowering_rule(aten.var_mean.correction)
def var_mean(self, dim=None, *, correction=None, keepdim=False):
    # var_mean(x, d) = (var(x, d), mean(x, d))
    moments = _variance_and_mean(self, dim, correction, keepdim)
    return NotImplemented if moments is None else moments


@lowering_rule(aten.std_mean.correction)
def std_mean(self, dim=None, *, correction=None, keepdim=False):
    # std_mean(x, d) = (sqrt(var(x, d)), mean(x, d))
    moments = _variance_and_mean(self, dim, correction, keepdim)
    return NotImplemented if moments is None else (torch.sqrt(moments[0]), moments[1])


@lowering_rule(aten.mean.dim)
def mean(self, dim, keepdim=False, *, dtype=None):
    # mean(x, d, dtype=t) -> mean(t(x), d); mean(0-d x, d) -> mean(x.reshape(1), 0)
    if self.is_complex() or (dtype is not None and dtype.is_complex):
        return NotImplemented
    if dtype is not None and dtype != self.dtype:
        return aten.mean.dim(self.to(dtype), dim, keepdim)
    if self.dim() != 0:
        return NotImplemented
    return aten.mean.dim(self.reshape(1), [0], False).reshape(())


@lowering_rule(aten.linalg_vector_norm.default)
def vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None):
    # ||x||_p over d: amax|x| (inf), amin|x| (-inf), #{x != 0} (0), sum(|x|^p)^(1/p)
    value = self.to(dtype) if dtype is not None else self
    if not value.is_floating_point():
        return NotImplemented  # complex (integer inputs PyTorch refuses)
    value, dims = _as_vector(value, dim)
    if _count(value, dims) == 0 and (ord < 0 or math.isinf(ord)):
        return NotImplemented  # no identity: PyTorch raises
    result_dtype = value.dtype
    magnitude = torch.abs(value.to(torch.float32) if value.dtype in _HALF else value)
    if ord == math.inf:
        result = magnitude.amax(dims, keepdim=True)
    elif ord == -math.inf:
        result = magnitude.amin(dims, keepdim=True)
    elif ord == 0:
        result = (magnitude != 0).sum(dims, keepdim=True).to(magnitude.dtype)
    elif ord == 1:
        result = magnitude.sum(dims, keepdim=True)
    elif ord == 2:
        result = torch.sqrt((magnitude * magnitude).sum(dims, keepdim=True))
    else:
        result = torch.pow(torch.pow(magnitude, ord).sum(dims, keepdim=True), 1.0 / ord)
    return _squeezed(result.to(result_dtype), self, dims, keepdim)


def _over_vector(op):
    def rule(self, dim, half_to_float):
        # op(0-d x, 0) -> op(x.reshape(1), 0).reshape(())
        if self.dim() != 0:
            return NotImplemented
        return op(self.reshape(1), 0, half_to_float).reshape(())

    rule.__name__ = f"zero_dim_{op.__name__.replace('.', '_')}"
    return rule


lowering_rule(aten._softmax.default)(_over_vector(aten._softmax.default))
lowering_rule(aten._log_softmax.default)(_over_vector(aten._log_softmax.default))
