"""Transformer MLPs: ``gelu(x @ w1) @ w2`` and SwiGLU ``(silu(x @ wg) * (x @ wu)) @ wd``.

``x: [N, D]``, up weights ``[D, F]``, down weight ``[F, D]``; N, D and F multiples of 128.
The weights stay in SBUF for the whole kernel (loaded once, after the first token block's
rows, so that TensorE starts while they stream in; they must fit: about
``(ups * D * F + F * D) * itemsize / 128`` bytes per partition, under ~150 KiB on trn2).
Tokens go in blocks of up to 512: each block's rows are transposed on TensorE (128 x 128 at
a time, into one PSUM bank, copied back by VectorE) so that D is on the partitions; then
for each 128-wide slice of F, TensorE accumulates ``w_up[:, f].T @ xT`` over D into PSUM
(128 x 512 float32, the hidden activations already transposed, F on the partitions) and
ScalarE applies the activation on the way out of PSUM. The down projection takes 128-token
slices of the hidden block as the stationary operand and the weight rows as the moving one,
accumulating over F, 512 output columns per PSUM bank. The hidden activations are rounded
to x's dtype before the down projection, as a BF16 model does.
"""

from __future__ import annotations

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki.errors import refuse

P = nl.tile_size.pmax
TB = nl.tile_size.gemm_moving_fmax  # tokens per block (moving free size of the up matmuls)


def transposed_blocks(x, rows: slice, width: int):
    """``x[rows, :].T`` as a list of SBUF tiles [128, width] (one per 128 columns of x),
    transposed on TensorE 128 x 128 at a time."""
    d = x.shape[1]
    tiles = []
    for j in nl.affine_range(width // P):
        t = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        start = rows.start + j * P
        nisa.dma_copy(dst=t, src=x[start : start + P, :])
        tiles.append(t)
    out = []
    for kd in nl.affine_range(d // P):
        bank = nl.ndarray((P, width), dtype=x.dtype, buffer=nl.psum)
        for j, t in enumerate(tiles):
            nisa.nc_transpose(bank[:, j * P : (j + 1) * P], t[:, kd * P : (kd + 1) * P])
        xt = nl.ndarray((P, width), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(xt, bank)
        out.append(xt)
    return out


def _load_rows(w, name: str):
    """``w`` ([R, C], R a multiple of 128) as R / 128 SBUF tiles [128, C]."""
    tiles = []
    for i in nl.affine_range(w.shape[0] // P):
        t = nl.ndarray((P, w.shape[1]), dtype=w.dtype, buffer=nl.sbuf, name=f"{name}{i}")
        nisa.dma_copy(dst=t, src=w[i * P : (i + 1) * P, :])
        tiles.append(t)
    return tiles


def _mlp(kernel: str, x, ups, down, gated: bool):
    if len(x.shape) != 2:
        raise refuse(f"kernel {kernel}", f"x must be [N, D], got shape {x.shape}")
    n, d = x.shape
    f = ups[0].shape[1] if len(ups[0].shape) == 2 else -1
    shapes_ok = all(tuple(u.shape) == (d, f) for u in ups) and tuple(down.shape) == (f, d)
    if not shapes_ok or n % P or d % P or f % P:
        raise refuse(
            f"kernel {kernel}",
            f"x {x.shape}, up {[u.shape for u in ups]}, down {down.shape}: need x [N, D], up "
            f"[D, F], down [F, D] with N, D, F multiples of {P}",
        )
    out = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.shared_hbm)
    up_tiles = down_tiles = None
    for start in nl.affine_range(0, n, TB):
        width = min(TB, n - start)
        xt = transposed_blocks(x, slice(start, start + width), width)
        if up_tiles is None:
            # Issued after the first token block's loads, and the down weights after the up
            # ones: DMA bandwidth goes to transfers in program order, so TensorE can start on
            # the first block while the rest of the weights stream in.
            up_tiles = [_load_rows(u, f"w_up{i}_") for i, u in enumerate(ups)]
            down_tiles = _load_rows(down, "w_down")
        hidden = []
        for kf in nl.affine_range(f // P):
            fs = slice(kf * P, (kf + 1) * P)
            accs = []
            for tiles in up_tiles:
                acc = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.psum)
                for kd, xtile in enumerate(xt):
                    nisa.nc_matmul(acc, tiles[kd][:, fs], xtile, accumulate=kd > 0)
                accs.append(acc)
            h = nl.ndarray((P, width), dtype=x.dtype, buffer=nl.sbuf)
            if gated:
                gate = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(gate, nl.silu, accs[0])
                nisa.tensor_tensor(dst=h, data1=gate, data2=accs[1], op=nl.multiply)
            else:
                nisa.activation(h, nl.gelu, accs[0])
            hidden.append(h)
        for j in nl.affine_range(width // P):
            rows = slice(start + j * P, start + (j + 1) * P)
            for c in nl.affine_range(0, d, TB):
                cols = slice(c, min(d, c + TB))
                acc = nl.ndarray((P, cols.stop - c), dtype=nl.float32, buffer=nl.psum)
                for kf, h in enumerate(hidden):
                    nisa.nc_matmul(
                        acc, h[:, j * P : (j + 1) * P], down_tiles[kf][:, cols], accumulate=kf > 0
                    )
                y = nl.ndarray((P, cols.stop - c), dtype=x.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(y, acc)
                nisa.dma_copy(dst=out[rows, cols], src=y)
    return out


@nki.jit
def gelu_mlp(x, w1, w2):
    """``gelu(x @ w1) @ w2`` (exact, erf-based GELU, as ``torch.nn.functional.gelu``)."""
    return _mlp("gelu_mlp", x, (w1,), w2, gated=False)


@nki.jit
def swiglu_mlp(x, w_gate, w_up, w_down):
    """``(silu(x @ w_gate) * (x @ w_up)) @ w_down`` (LLaMA's MLP)."""
    return _mlp("swiglu_mlp", x, (w_gate, w_up), w_down, gated=True)
