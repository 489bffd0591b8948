"""``_grouped_mm``: one matrix product per group, the grouped GEMM of mixture-of-experts.

``offs`` (int32, one entry per group) holds each group's *end* along the grouped
dimension, cumulatively: group ``g`` covers ``[offs[g-1], offs[g])``. The forms, as
PyTorch's CPU kernel computes them:

- 2-D ``x [M, K]`` by 3-D ``w [G, K, N]``, grouped rows: ``out[r] = x[r] @ w[g(r)]``
  (the experts' forward: tokens sorted by expert);
- 2-D by 2-D grouped along ``K``: ``out[g] = x[:, K_g] @ y[K_g, :]``, ``[G, M, N]``
  (a weight gradient);
- 3-D ``x [G, M, K]`` by 2-D ``y [K, N]``, grouped columns: ``out[:, n] = x[g(n)] @
  y[:, n]``;
- 3-D by 3-D without ``offs``: a batched product.

The group of a position ``p`` is the number of ends at or below it,
``sum(offs <= p)``. Every group's product is computed for every position and the
position's own one kept (G times the arithmetic of the real kernel, static shapes:
this is the emulator's numerics; the cost model prices the grouped GEMM's own
FLOPs). Positions past the last end belong to no group: PyTorch's kernel leaves them
unwritten (whatever the memory held); here they are 0. ``bias`` is refused (PyTorch's
CPU kernel refuses it too).
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten


def _groups(offs: torch.Tensor, length: int) -> torch.Tensor:
    """Each position's group along a dimension of ``length`` (``G`` for none)."""
    positions = torch.arange(length, device=offs.device)
    return (positions.unsqueeze(1) >= offs.to(torch.int64).unsqueeze(0)).sum(1)


@lowering_rule(aten._grouped_mm.default)
def grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None):
    if bias is not None:
        return NotImplemented
    dtype = out_dtype or self.dtype
    a, b = self.to(torch.float32), mat2.to(torch.float32)
    if offs is None:
        if a.dim() == 3 and b.dim() == 3:
            return torch.bmm(a, b).to(dtype)
        return NotImplemented
    count = offs.shape[0]
    if a.dim() == 2 and b.dim() == 3:
        group = _groups(offs, a.shape[0])  # [M]
        every = torch.einsum("mk,gkn->gmn", a, b)  # [G, M, N]
        chosen = torch.nn.functional.one_hot(group, count + 1)[:, :count].to(a.dtype)
        return torch.einsum("gmn,mg->mn", every, chosen).to(dtype)
    if a.dim() == 2 and b.dim() == 2:
        group = _groups(offs, a.shape[1])  # [K]
        member = torch.nn.functional.one_hot(group, count + 1)[:, :count].to(a.dtype)
        return torch.einsum("mk,kg,kn->gmn", a, member, b).to(dtype)
    if a.dim() == 3 and b.dim() == 2:
        group = _groups(offs, b.shape[1])  # [N]
        every = torch.einsum("gmk,kn->gmn", a, b)
        chosen = torch.nn.functional.one_hot(group, count + 1)[:, :count].to(a.dtype)
        return torch.einsum("gmn,ng->mn", every, chosen).to(dtype)
    return NotImplemented
