"""Flash-attention forward for one head: ``softmax(q @ k.T * scale) @ v`` without ever
holding the full score matrix.

``q: [Sq, d]``, ``k, v: [Sk, d]``, Sq and Sk multiples of 128, d <= 128; ``scale`` defaults
to ``1 / sqrt(d)``; ``causal=True`` masks key j > query i (torch's ``is_causal``): key
blocks wholly after a query tile are skipped, and the block holding the diagonal is
masked by GpSimd's ``affine_select``. Once per kernel, the keys are transposed on TensorE so that d is
on the partitions (``kT: [d, Sk]`` in SBUF) and the values are loaded as 128-key tiles. For
each 128-query tile (queries on the partitions; its transpose ``qT`` is the stationary
operand) and each block of up to 512 keys:

1. TensorE: the scores ``qT.T @ kT[:, block]`` into one PSUM bank (128 x 512 float32);
2. VectorE: the block's row maximum; the running maximum ``m_new = max(m, scale * rowmax)``;
3. ScalarE: ``p = exp(scale * s - m_new)`` read from PSUM, written in the inputs' dtype, with
   its row sums in the same instruction; and ``alpha = exp(m - m_new)``;
4. TensorE: ``p`` transposed 128 keys at a time (VectorE copies them back to SBUF) and
   ``p @ v`` accumulated over the block's key tiles in PSUM;
5. VectorE: the running sum ``l = l * alpha + rowsum`` and output ``acc = acc * alpha + pv``
   (float32 in SBUF).

At the end ``acc / l`` is rounded to the inputs' dtype and stored. Steps 1-3 of one (query
tile, key block) step are issued one step ahead of steps 4-5 of the previous one (software
pipelining): each engine runs its instructions in program order, so without it TensorE
would wait for each block's softmax before starting the next block's scores (145 us
instead of 92.7 us at 2048 x 2048, d = 128, BF16).
"""

from __future__ import annotations

import math

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki.errors import refuse
from torchneuron.nki.kernels.mlp import transposed_blocks

P = nl.tile_size.pmax
KB = nl.tile_size.gemm_moving_fmax  # keys per block (one PSUM bank of scores)
LOOKAHEAD = 1  # steps whose stage A is issued ahead of a stage B
MASKED = -1e30  # a masked score: exp(scale * MASKED - m) is 0 in float32


@nki.jit
def flash_attention(q, k, v, scale=None, causal=False):
    shapes = [tuple(t.shape) for t in (q, k, v)]
    if any(len(s) != 2 for s in shapes):
        raise refuse("kernel flash_attention", f"q, k, v must be 2-D [S, d], got {shapes}")
    (sq, d), (sk, dk), (sv, dv) = shapes
    if dk != d or dv != d or sv != sk or sq % P or sk % P or d > P:
        raise refuse(
            "kernel flash_attention",
            f"q {shapes[0]}, k {shapes[1]}, v {shapes[2]}: need q [Sq, d], k and v [Sk, d], Sq "
            f"and Sk multiples of {P}, d <= {P}",
        )
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    out = nl.ndarray((sq, d), dtype=q.dtype, buffer=nl.shared_hbm)
    # The keys transposed (d on the partitions), one SBUF tile per block of keys.
    kt_blocks = []
    for start in nl.affine_range(0, sk, KB):
        width = min(KB, sk - start)
        kt_blocks.append((start, width, _transposed(k, start, width, d)))
    v_tiles = []
    for i in nl.affine_range(sk // P):
        t = nl.ndarray((P, d), dtype=v.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=v[i * P : (i + 1) * P, :])
        v_tiles.append(t)
    # (query tile, key block) steps in order; each step's scores and softmax numerators
    # (stage A) are issued LOOKAHEAD steps before its p @ v and running updates (stage B), so
    # each engine's in-order stream interleaves independent work of neighbouring steps.
    steps = [
        (qi, block)
        for qi in nl.affine_range(sq // P)
        for block in kt_blocks
        if not (causal and block[0] > qi * P + P - 1)  # keys all after the tile's queries
    ]
    last_block = {qi: block for qi, block in steps}
    tiles = {}  # query tile -> its running state: qt, m, l, acc
    pending = []
    for qi, block in steps:
        if qi not in tiles:
            tiles[qi] = {"qt": _transposed(q, qi * P, P, d), "m": None, "l": None, "acc": None}
        pending.append((qi, block, _scores(tiles[qi], qi, block, scale, causal, q.dtype)))
        if len(pending) > LOOKAHEAD:
            _accumulate(tiles, last_block, v_tiles, out, d, *pending.pop(0))
    for step in pending:
        _accumulate(tiles, last_block, v_tiles, out, d, *step)
    return out


def _scores(state, qi, block, scale, causal, dtype):
    """Stage A of one step: scores, running max, p = exp(scale * s - m) with its row sums,
    and alpha = exp(m_old - m)."""
    start, width, kt = block
    s = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(s, state["qt"], kt)
    if causal and start + width - 1 > qi * P:
        s = _causal_mask(s, qi * P - start)
    m_old = state["m"]
    m_new = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(m_new, nl.maximum, s, axis=1)
    if m_old is None:
        nisa.tensor_scalar(m_new, m_new, nl.multiply, scale)
    else:
        nisa.tensor_scalar(m_new, m_new, nl.multiply, scale, op1=nl.maximum, operand1=m_old)
    neg_m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(neg_m, m_new, nl.multiply, -1.0)
    p = nl.ndarray((P, width), dtype=dtype, buffer=nl.sbuf)
    rowsum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(p, nl.exp, s, bias=neg_m, scale=scale, reduce_op=nl.add, reduce_res=rowsum)
    alpha = None
    if m_old is not None:
        alpha = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(alpha, nl.exp, m_old, bias=neg_m)
    state["m"] = m_new
    return p, rowsum, alpha


def _accumulate(tiles, last_block, v_tiles, out, d, qi, block, stage_a):
    """Stage B of one step: p @ v (p transposed 128 keys at a time on TensorE) and the
    running sum and output; after the tile's last block, acc / l is stored."""
    start, width, _ = block
    p, rowsum, alpha = stage_a
    state = tiles[qi]
    pt_bank = nl.ndarray((P, width), dtype=p.dtype, buffer=nl.psum)
    for c in nl.affine_range(width // P):
        nisa.nc_transpose(pt_bank[:, c * P : (c + 1) * P], p[:, c * P : (c + 1) * P])
    pt = nl.ndarray((P, width), dtype=p.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(pt, pt_bank)
    pv = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
    for c in nl.affine_range(width // P):
        nisa.nc_matmul(pv, pt[:, c * P : (c + 1) * P], v_tiles[start // P + c], accumulate=c > 0)
    new_l = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    new_acc = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
    if alpha is None:
        nisa.tensor_copy(new_l, rowsum)
        nisa.tensor_copy(new_acc, pv)
    else:
        nisa.scalar_tensor_tensor(new_l, state["l"], nl.multiply, alpha, nl.add, rowsum)
        nisa.scalar_tensor_tensor(new_acc, state["acc"], nl.multiply, alpha, nl.add, pv)
    state["l"], state["acc"] = new_l, new_acc
    if block is last_block[qi]:
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(inv, new_l)
        o = nl.ndarray((P, d), dtype=out.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(o, new_acc, nl.multiply, inv)
        nisa.dma_copy(dst=out[qi * P : (qi + 1) * P, :], src=o)


def _causal_mask(s, offset: int):
    """The scores with key j > query p (``offset + p - j < 0``) replaced by -1e30: copied
    out of PSUM by VectorE, masked by GpSimd's ``affine_select`` (GpSimd cannot read PSUM).
    Every row keeps at least one key: blocks start at multiples of 512 <= the query tile's
    first row."""
    width = s.shape[1]
    scores = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(scores, s)
    masked = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(
        masked,
        pattern=[[-1, width]],
        offset=offset,
        channel_multiplier=1,
        on_true_tile=scores,
        on_false_value=MASKED,
        cmp_op=nl.greater_equal,
    )
    return masked


def _transposed(x, start: int, width: int, d: int):
    """``x[start:start + width, :d].T``: one SBUF tile [d, width]."""
    if d == P:
        (tile,) = transposed_blocks(x, slice(start, start + width), width)
        return tile
    tiles = []
    for j in nl.affine_range(width // P):
        t = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[start + j * P : start + (j + 1) * P, :])
        tiles.append(t)
    bank = nl.ndarray((d, width), dtype=x.dtype, buffer=nl.psum)
    for j, t in enumerate(tiles):
        nisa.nc_transpose(bank[:, j * P : (j + 1) * P], t)
    xt = nl.ndarray((d, width), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(xt, bank)
    return xt
