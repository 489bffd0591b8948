"""Complex values as real pairs, and FFTs as DFT matrix products.

The NeuronCore has no complex arithmetic and no FFT unit, and torch-mlir lowers no
complex op to StableHLO. So a complex tensor is carried as two real tensors of its
component dtype (``Pair(re, im)``: complex64 -> two float32 tensors), and every op on
complex values is rewritten into real ops on the pairs (``RULES``): a product is four
real products and two sums, a complex matmul four real matmuls on TensorE, and a
discrete Fourier transform along a dimension of size ``n`` a product with the
``n x n`` DFT matrix (cos and sin halves, built in float64 from ``(j*k) mod n`` and
rounded once), so the cost model sees the matmuls the chip would run.

``Pair``, the part arithmetic and the rule table live in ``complex_values.py``, the
rules of the FFT ops in ``fft_dft.py``, the graph retrace in ``complex_graph.py``. Two users:

- torch.compile (``complex_graph.PairedGraph``): an ATen graph with complex inputs, values or
  outputs is retraced over real inputs (each complex input as its ``view_as_real``
  pair) with every complex node replaced by its rule; the all-real graph is compiled
  as any other, and complex outputs are returned as ``view_as_complex`` of the pair.
- eager mode (``torchneuron.device.complex_route``): the rule of the op is called on
  the device tensors' pairs (``view_as_real`` views), so each real op of the rule runs
  natively on the device.

An op with complex values and no rule here is not lowered (``has_rule`` is False):
eager mode runs it on the CPU (listed by ``get_fallback_ops``), torch.compile keeps
the graph on the CPU or refuses it under ``TORCHNEURON_NO_FALLBACK=1``.
"""

from __future__ import annotations

import math

import torch

# Importing fft_dft registers the FFT rules in RULES.
from . import fft_dft  # noqa: F401
from .complex_values import (
    COMPONENT,
    RULES,
    Pair,
    add_parts,
    is_complex_value,  # noqa: F401 (complex_graph imports it from here, with apply)
    make_pair,
    matmul_like,
    mul_parts,
    pair_parts,
    rule,
    sub_parts,
)

aten = torch.ops.aten


def has_rule(op) -> bool:
    return op in RULES or op in COMPONENTWISE or op in CREATION


def _alpha(b, alpha):
    if alpha is None or alpha == 1:
        return b
    if isinstance(b, Pair):
        ar, ai = pair_parts(alpha)
        return _complex_mul(b, alpha) if ai else Pair(b.re * ar, b.im * ar)
    return b * alpha


@rule(aten.add.Tensor, aten.add.Scalar)
def _add_rule(a, b, alpha=1):
    b = _alpha(b, alpha)
    ar, ai = pair_parts(a)
    br, bi = pair_parts(b)
    return make_pair(add_parts(ar, br), add_parts(ai, bi))


@rule(aten.sub.Tensor, aten.sub.Scalar)
def _sub_rule(a, b, alpha=1):
    b = _alpha(b, alpha)
    ar, ai = pair_parts(a)
    br, bi = pair_parts(b)
    return make_pair(sub_parts(ar, br), sub_parts(ai, bi))


@rule(aten.rsub.Tensor, aten.rsub.Scalar)
def _rsub_rule(a, b, alpha=1):
    return _sub_rule(b, a, alpha) if alpha == 1 else _sub_rule(b, _alpha(a, alpha))


def _complex_mul(a, b) -> Pair:
    ar, ai = pair_parts(a)
    br, bi = pair_parts(b)
    return make_pair(
        sub_parts(mul_parts(ar, br), mul_parts(ai, bi)),
        add_parts(mul_parts(ar, bi), mul_parts(ai, br)),
    )


@rule(aten.mul.Tensor, aten.mul.Scalar)
def _mul_rule(a, b):
    return _complex_mul(a, b)


@rule(aten.div.Tensor, aten.div.Scalar)
def _div_rule(a, b):
    br, bi = pair_parts(b)
    if bi is None or (isinstance(bi, (int, float)) and bi == 0):
        ar, ai = pair_parts(a)
        return make_pair(ar / br, None if ai is None else ai / br)
    # Smith's scaling (as PyTorch's c10::complex division): no overflow of |b|^2
    ar, ai = pair_parts(a)
    if not isinstance(br, torch.Tensor):
        br = torch.full_like(bi, br)
    if not isinstance(bi, torch.Tensor):
        bi = torch.full_like(br, bi)
    ar = torch.zeros_like(br) if ar is None else ar
    ai = torch.zeros_like(br) if ai is None else ai
    wide = br.abs() >= bi.abs()
    safe_br = torch.where(wide, br, bi)
    safe_bi = torch.where(wide, bi, br)
    ratio = safe_bi / safe_br
    denominator = safe_br + safe_bi * ratio
    re_wide = (ar + ai * ratio) / denominator
    im_wide = (ai - ar * ratio) / denominator
    re_tall = (ar * ratio + ai) / denominator
    im_tall = (ai * ratio - ar) / denominator
    return make_pair(torch.where(wide, re_wide, re_tall), torch.where(wide, im_wide, im_tall))


@rule(aten.reciprocal.default)
def _reciprocal_rule(a):
    return _div_rule(make_pair(torch.ones_like(a.re), None), a)


@rule(aten.neg.default)
def _neg_rule(a):
    return Pair(-a.re, -a.im)


@rule(
    aten._conj.default, aten.conj_physical.default, aten._conj_physical.default, aten.conj.default
)
def _conj_rule(a):
    return Pair(a.re, -a.im) if isinstance(a, Pair) else a


@rule(aten.resolve_conj.default, aten.resolve_neg.default)
def _resolve_rule(a):
    return a


def _hypot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``|x + iy|`` without overflow: ``torch.hypot``, which torch-mlir does not lower for
    float64; for float64 (complex128) the scaled form ``m * sqrt(1 + (s/m)^2)`` (m, s the
    larger and smaller magnitude; an infinite part gives inf, as hypot)."""
    if x.dtype != torch.float64:
        return torch.hypot(x, y)
    ax, ay = x.abs(), y.abs()
    big, small = torch.maximum(ax, ay), torch.minimum(ax, ay)
    ratio = torch.where(big == 0, torch.zeros_like(big), small / big)
    value = big * torch.sqrt(1 + ratio * ratio)
    return torch.where(torch.isinf(ax) | torch.isinf(ay), torch.full_like(big, math.inf), value)


@rule(aten.abs.default)
def _abs_rule(a):
    return _hypot(a.re, a.im)


@rule(aten.angle.default)
def _angle_rule(a):
    if not isinstance(a, Pair):
        return NotImplemented
    return torch.atan2(a.im, a.re)


@rule(aten.sgn.default)
def _sgn_rule(a):
    magnitude = _hypot(a.re, a.im)
    zero = magnitude == 0
    safe = torch.where(zero, torch.ones_like(magnitude), magnitude)
    return Pair(
        torch.where(zero, torch.zeros_like(a.re), a.re / safe),
        torch.where(zero, torch.zeros_like(a.im), a.im / safe),
    )


@rule(aten.exp.default)
def _exp_rule(a):
    scale = torch.exp(a.re)
    return Pair(scale * torch.cos(a.im), scale * torch.sin(a.im))


@rule(aten.log.default)
def _log_rule(a):
    return Pair(torch.log(_hypot(a.re, a.im)), torch.atan2(a.im, a.re))


@rule(aten.real.default)
def _real_rule(a):
    return a.re


@rule(aten.imag.default)
def _imag_rule(a):
    return a.im


@rule(aten.view_as_real.default)
def _view_as_real_rule(a):
    return a.stacked()


@rule(aten.view_as_complex.default)
def _view_as_complex_rule(ri):
    return Pair.of_stacked(ri)


@rule(aten.complex.default)
def _complex_rule(re, im):
    return make_pair(re, im)


@rule(aten.polar.default)
def _polar_rule(magnitude, angle):
    return make_pair(magnitude * torch.cos(angle), magnitude * torch.sin(angle))


for _op, _fn in (
    (aten.mm.default, torch.mm),
    (aten.bmm.default, torch.bmm),
    (aten.mv.default, torch.mv),
    (aten.matmul.default, torch.matmul),
    (aten.dot.default, torch.dot),
):
    RULES[_op] = matmul_like(_fn)


@rule(aten.vdot.default)
def _vdot_rule(a, b):
    # sum(conj(a) * b): the first operand conjugated
    return matmul_like(torch.dot)(_conj_rule(a), b)


@rule(aten.addmv.default)
def _addmv_rule(bias, mat, vec, beta=1, alpha=1):
    product = _alpha(matmul_like(torch.mv)(mat, vec), alpha)
    if isinstance(beta, (int, float)) and beta == 0:
        return product  # PyTorch ignores the bias then (NaN included)
    return _add_rule(_alpha(bias, beta) if beta != 1 else bias, product)


@rule(aten.pow.Tensor_Scalar)
def _pow_rule(a, exponent):
    # small positive integer powers (square) as repeated complex products; others decline
    if not isinstance(a, Pair) or type(exponent) is not int or not 1 <= exponent <= 4:
        return NotImplemented
    result = a
    for _ in range(exponent - 1):
        result = _complex_mul(result, a)
    return result


@rule(aten.addmm.default)
def _addmm_rule(bias, a, b, beta=1, alpha=1):
    product = _alpha(matmul_like(torch.mm)(a, b), alpha)
    return _add_rule(_alpha(bias, beta) if beta != 1 else bias, product)


@rule(aten._to_copy.default)
def _to_copy_rule(a, dtype=None, layout=None, device=None, pin_memory=None, **kwargs):
    moved = {"device": device} if device is not None else {}
    if isinstance(a, Pair):
        if dtype is None or dtype.is_complex:
            real = COMPONENT[dtype] if dtype is not None else a.re.dtype
            return Pair(a.re.to(dtype=real, **moved), a.im.to(dtype=real, **moved))
        return a.re.to(dtype=dtype, **moved)  # PyTorch discards the imaginary part
    if dtype is not None and dtype.is_complex:
        real = a.to(dtype=COMPONENT[dtype], **moved)
        return Pair(real, torch.zeros_like(real))
    return NotImplemented


@rule(torch.ops.prims.convert_element_type.default)
def _convert_rule(a, dtype):
    return _to_copy_rule(a, dtype=dtype)


@rule(aten.where.self)
def _where_rule(condition, a, b):
    ar, ai = pair_parts(a)
    br, bi = pair_parts(b)
    ref = ar if isinstance(ar, torch.Tensor) else br
    ar, br = (x if isinstance(x, torch.Tensor) else torch.full_like(ref, x) for x in (ar, br))
    ai = torch.zeros_like(ref) if ai is None else ai
    bi = torch.zeros_like(ref) if bi is None else bi
    return Pair(torch.where(condition, ar, br), torch.where(condition, ai, bi))


@rule(aten.fill.Scalar)
def _fill_rule(a, value):
    # a real fill value has imaginary part 0 (not the value again, as a per-part op would)
    vr, vi = pair_parts(value)
    return Pair(torch.fill(a.re, vr), torch.fill(a.im, vi or 0))


@rule(aten.constant_pad_nd.default)
def _pad_rule(a, pad, value=0):
    vr, vi = pair_parts(value)
    return Pair(torch.constant_pad_nd(a.re, pad, vr), torch.constant_pad_nd(a.im, pad, vi or 0))


@rule(aten.copy.default)
def _copy_rule(target, source, non_blocking=False):
    sr, si = pair_parts(source)
    if not isinstance(target, Pair):
        return torch.ops.aten.copy.default(target, sr)
    tr = torch.ops.aten.copy.default(target.re, sr if isinstance(sr, torch.Tensor) else target.re)
    ti = torch.ops.aten.copy.default(
        target.im, si if isinstance(si, torch.Tensor) else torch.zeros_like(target.im)
    )
    return Pair(tr, ti)


@rule(aten.eq.Tensor, aten.eq.Scalar)
def _eq_rule(a, b):
    ar, ai = pair_parts(a)
    br, bi = pair_parts(b)
    return torch.logical_and(
        ar == br, (ai if ai is not None else 0) == (bi if bi is not None else 0)
    )


@rule(aten.ne.Tensor, aten.ne.Scalar)
def _ne_rule(a, b):
    return torch.logical_not(_eq_rule(a, b))


@rule(aten.isnan.default)
def _isnan_rule(a):
    return torch.logical_or(torch.isnan(a.re), torch.isnan(a.im))


@rule(aten.isfinite.default)
def _isfinite_rule(a):
    return torch.logical_and(torch.isfinite(a.re), torch.isfinite(a.im))


# Ops linear in their complex operands and blind to dtype: the op applied to the real
# and imaginary parts separately (other arguments unchanged). Structural ops (views,
# copies, concatenation, indexing by integer indices) and sums.
COMPONENTWISE = frozenset(
    {
        aten.clone.default,
        aten.alias.default,
        aten.detach.default,
        aten.lift_fresh_copy.default,
        aten.view.default,
        aten._unsafe_view.default,
        aten.reshape.default,
        aten.permute.default,
        aten.transpose.int,
        aten.t.default,
        aten.expand.default,
        aten.slice.Tensor,
        aten.select.int,
        aten.unsqueeze.default,
        aten.squeeze.default,
        aten.squeeze.dim,
        aten.squeeze.dims,
        aten.cat.default,
        aten.stack.default,
        aten.flip.default,
        aten.roll.default,
        aten.index_select.default,
        aten.index.Tensor,
        aten.gather.default,
        aten.narrow.default,
        aten.split.Tensor,
        aten.split_with_sizes.default,
        aten.unbind.int,
        aten.repeat.default,
        aten.diagonal.default,
        aten.unfold.default,
        aten.movedim.int,
        aten.sum.default,
        aten.sum.dim_IntList,
        aten.mean.dim,
        aten.mean.default,
        aten.cumsum.default,
        aten.slice_scatter.default,
        aten.select_scatter.default,
        aten.zero.default,
        aten.reflection_pad1d.default,
        aten.reflection_pad2d.default,
        aten.replication_pad1d.default,
        aten.replication_pad2d.default,
        torch.ops.prims.squeeze.default,
        torch.ops.prims.broadcast_in_dim.default,
        torch.ops.prims.view_of.default,
        aten.zeros_like.default,
        aten.empty_like.default,
        aten.new_zeros.default,
        aten.new_empty.default,
    }
)

# Creation ops whose dtype argument may be complex: built from their real twins.
CREATION = frozenset(
    {
        aten.full.default,
        aten.zeros.default,
        aten.ones.default,
        aten.empty.memory_format,
        aten.full_like.default,
        aten.ones_like.default,
        aten.scalar_tensor.default,
    }
)


# The arguments of COMPONENTWISE ops that select elements (the same for both parts).
_INDEX_ARGUMENTS = frozenset({"index", "indices"})


def _componentwise(op, args: tuple, kwargs: dict):
    """``op`` applied to the parts: (Pair, ...) -> Pair, lists of Pairs -> list of Pairs."""
    names = [argument.name for argument in op._schema.arguments]
    component = _first_pair_dtype((*args, *kwargs.values()))
    real = [None, None]
    for half in (0, 1):

        def part(value, half=half):
            if isinstance(value, Pair):
                return value.im if half else value.re
            if isinstance(value, (list, tuple)) and any(isinstance(v, Pair) for v in value):
                return type(value)(part(v) for v in value)
            if isinstance(value, complex):
                return value.imag if half else value.real
            if isinstance(value, torch.Tensor):
                # a real operand among complex ones (cat([i, z]), slice_scatter(z, i)): an
                # integer or bool one is promoted to the parts' dtype, as PyTorch promotes
                # it to z's; its imaginary part is 0, not the operand again
                if not value.is_floating_point() and component is not None:
                    value = value.to(component)
                return torch.zeros_like(value) if half else value
            if isinstance(value, torch.dtype) and value.is_complex:
                return COMPONENT[value]
            return value

        def argument(name, value, half=half):
            return value if name in _INDEX_ARGUMENTS else part(value)

        real[half] = op(
            *(argument(name, a) for name, a in zip(names, args)),
            **{name: argument(name, v) for name, v in kwargs.items()},
        )
    re, im = real
    if isinstance(re, (list, tuple)):
        return type(re)(Pair(r, i) for r, i in zip(re, im))
    if isinstance(re, torch.Tensor) and re.dtype.is_floating_point:
        return Pair(re, im)
    return re


def _first_pair_dtype(values) -> torch.dtype | None:
    """The parts' dtype of the first Pair among ``values`` (or in a list among them)."""
    for value in values:
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, Pair):
                return item.re.dtype
    return None


def _creation(op, args: tuple, kwargs: dict):
    dtype = kwargs.get("dtype")
    if dtype is None and args and isinstance(args[0], Pair):  # full_like(z, ...) keeps z's
        dtype = args[0].dtype
    if dtype is None or not dtype.is_complex:
        return NotImplemented
    values = list(args)
    # the fill value: full(size, fill), full_like(x, fill), scalar_tensor(s)
    fill_at = {aten.full.default: 1, aten.full_like.default: 1, aten.scalar_tensor.default: 0}
    real_kwargs = {**kwargs, "dtype": COMPONENT[dtype]}
    position = fill_at.get(op)
    values = [v.re if isinstance(v, Pair) else v for v in values]
    if position is None:
        re = op(*values, **real_kwargs)
        im = torch.zeros_like(re)
        if op in (aten.empty.memory_format,):
            re = torch.zeros_like(re)
        return Pair(re, im)
    fill_re, fill_im = pair_parts(values[position])
    values[position] = fill_re
    re = op(*values, **real_kwargs)
    values[position] = fill_im or 0
    im = op(*values, **real_kwargs)
    return Pair(re, im)


def apply(op, args: tuple, kwargs: dict):
    """``op`` on values whose complex tensors are Pairs; NotImplemented without a rule."""
    fn = RULES.get(op)
    if fn is not None:
        return fn(*args, **kwargs)
    if op in COMPONENTWISE:
        return _componentwise(op, args, kwargs)
    if op in CREATION:
        return _creation(op, args, kwargs)
    return NotImplemented


_REAL_OF = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}


@rule(aten.linalg_vector_norm.default)
def _vector_norm_rule(a, ord=2, dim=None, keepdim=False, *, dtype=None):
    # every norm of z is that norm of |z| (linalg.norm, norm(p=...), the L1 norm, ...)
    if not isinstance(a, Pair):
        return NotImplemented
    real_dtype = COMPONENT.get(dtype) if dtype is not None else None
    if dtype is not None and real_dtype is None:
        return NotImplemented
    magnitude = _hypot(a.re, a.im)
    return aten.linalg_vector_norm.default(magnitude, ord, dim, keepdim, dtype=real_dtype)
