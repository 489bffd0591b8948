"""FFTs as DFT matrix products over real pairs: the rules of ``_fft_c2c``, ``_fft_r2c``
and ``_fft_c2r`` (every ``torch.fft`` function, ``stft`` and ``istft`` reach these).

A transform along a dimension of size ``n`` is a product with the DFT matrix: its cos
and sin halves are built in float64 from the integer phase ``(j * k) mod n`` and rounded
once to the operand's dtype, as constants (weights of a compiled program). A complex
transform is four real matmuls, a real-to-complex one two (``rfft``'s ``n // 2 + 1``
columns), a complex-to-real one two (the half spectrum weighted for its Hermitian
mirror). Multi-dimensional transforms are successive 1-D ones. ``normalization`` is
``at::native::fft_norm_mode``: 0 none, 1 by ``1/sqrt(n)``, 2 by ``1/n``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from .complex_values import Pair, matmul_like, rule

aten = torch.ops.aten


@functools.lru_cache(maxsize=64)
def _dft_host(n_in: int, n_out: int, inverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin halves of the DFT matrix ``[n_in, n_out]``, float64, exact phases.

    ``W[j, k] = exp(-+ 2 pi i j k / n)``: rows index the input positions, columns the
    output frequencies (or positions, inverse); the phase ``(j * k) mod n`` is an
    integer, so the angle is rounded once.
    """
    n = n_out if inverse else max(n_in, n_out)
    j = np.arange(n_in, dtype=np.int64)[:, None]
    k = np.arange(n_out, dtype=np.int64)[None, :]
    angle = ((j * k) % n).astype(np.float64) * (2 * math.pi / n)
    sign = 1.0 if inverse else -1.0
    return np.cos(angle), sign * np.sin(angle)


def _constant(table: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """``table`` as a constant of ``like``'s dtype and device (a constant of the graph
    when traced: built outside any fake or proxy mode, rounded once from float64)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing

    with unset_fake_temporarily(), disable_proxy_modes_tracing():
        host = torch.from_numpy(np.ascontiguousarray(table)).to(like.dtype)
    return host.to(like.device)


def _norm_scale(normalization: int, n: int) -> float | None:
    # at::native::fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n
    if normalization == 0:
        return None
    return 1.0 / math.sqrt(n) if normalization == 1 else 1.0 / n


def _scaled(value, scale):
    if scale is None:
        return value
    if isinstance(value, Pair):
        return Pair(value.re * scale, value.im * scale)
    return value * scale


def _c2c_dim(a: Pair, dim: int, inverse: bool) -> Pair:
    n = a.shape[dim]
    cos, sin = _dft_host(n, n, inverse)
    wr, wi = _constant(cos, a.re), _constant(sin, a.re)
    moved = Pair(a.re.movedim(dim, -1), a.im.movedim(dim, -1))
    out = matmul_like(torch.matmul)(moved, Pair(wr, wi))
    return Pair(out.re.movedim(-1, dim), out.im.movedim(-1, dim))


def _dims(a, dim) -> list[int]:
    rank = a.dim()
    return [d % rank for d in dim]


@rule(aten._fft_c2c.default)
def _fft_c2c_rule(a, dim, normalization, forward):
    if not isinstance(a, Pair):
        return NotImplemented
    out = a
    count = 1
    for d in _dims(a, dim):
        out = _c2c_dim(out, d, inverse=not forward)
        count *= a.shape[d]
    return _scaled(out, _norm_scale(normalization, count))


@rule(aten._fft_r2c.default)
def _fft_r2c_rule(x, dim, normalization, onesided):
    dims = _dims(x, dim)
    last = dims[-1]
    n = x.shape[last]
    columns = n // 2 + 1 if onesided else n
    cos, sin = _dft_host(n, columns, False)
    moved = x.movedim(last, -1)
    out = Pair(
        torch.matmul(moved, _constant(cos, x)).movedim(-1, last),
        torch.matmul(moved, _constant(sin, x)).movedim(-1, last),
    )
    count = n
    for d in dims[:-1]:
        out = _c2c_dim(out, d, inverse=False)
        count *= x.shape[d]
    return _scaled(out, _norm_scale(normalization, count))


@functools.lru_cache(maxsize=64)
def _c2r_host(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Matrices ``[m, n]`` taking a half spectrum (m = n//2 + 1 bins) to the real signal.

    ``x[t] = sum_k w_k (Re X_k cos(2 pi k t / n) - Im X_k sin(2 pi k t / n))`` with
    ``w_0 = 1``, ``w_{n/2} = 1`` for even n, 2 otherwise (the Hermitian mirror);
    the imaginary parts of the DC and Nyquist bins do not contribute, as in pocketfft.
    """
    k = np.arange(m, dtype=np.int64)[:, None]
    t = np.arange(n, dtype=np.int64)[None, :]
    angle = ((k * t) % n).astype(np.float64) * (2 * math.pi / n)
    weight = np.full((m, 1), 2.0)
    weight[0] = 1.0
    if n % 2 == 0 and m > n // 2:
        weight[n // 2] = 1.0
    return weight * np.cos(angle), -weight * np.sin(angle)


@rule(aten._fft_c2r.default)
def _fft_c2r_rule(a, dim, normalization, last_dim_size):
    dims = _dims(a, dim)
    out = a
    count = last_dim_size
    for d in dims[:-1]:
        out = _c2c_dim(out, d, inverse=True)
        count *= a.shape[d]
    last = dims[-1]
    m = last_dim_size // 2 + 1
    re = out.re.narrow(last, 0, min(m, out.shape[last])).movedim(last, -1)
    im = out.im.narrow(last, 0, min(m, out.shape[last])).movedim(last, -1)
    m = re.shape[-1]
    cos, sin = _c2r_host(last_dim_size, m)
    signal = torch.matmul(re, _constant(cos, re)) + torch.matmul(im, _constant(sin, im))
    return _scaled(signal.movedim(-1, last), _norm_scale(normalization, count))
