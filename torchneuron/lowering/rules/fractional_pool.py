"""``fractional_max_pool2d`` natively, given its random samples (Graham, 2014).

Each plane's sample u in [0, 1) per axis places the windows: with alpha = (in - k) /
(out - 1), window i starts at ``trunc((i + u) alpha) - trunc(u alpha)`` for i < out - 1
and the last at ``in - k`` (computed in float64, as the CPU kernel's accumulate type).
The samples' last axis is (width, height). Each output is the maximum of its k_h x k_w
window, and its index the flat position ``h * W + w`` of the first maximum in row-major
order (a NaN wins, as in the CPU kernel's ``val > max || isnan(val)``; with several
NaNs the CPU keeps the last, this rule the first).
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten

_FLOATING = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _starts(sample: torch.Tensor, in_size: int, out_size: int, pool: int) -> torch.Tensor:
    """Window starts [..., out] from each plane's sample [...]."""
    last = torch.full_like(sample, in_size - pool, dtype=torch.int64).unsqueeze(-1)
    if out_size == 1:
        return last
    alpha = (in_size - pool) / (out_size - 1)
    u = sample.to(torch.float64).unsqueeze(-1)
    i = torch.arange(out_size - 1, dtype=torch.float64, device=sample.device)
    starts = torch.trunc((i + u) * alpha) - torch.trunc(u * alpha)
    return torch.cat([starts.to(torch.int64), last], dim=-1)


@lowering_rule(aten.fractional_max_pool2d.default)
def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    if self.dim() not in (3, 4) or self.dtype not in _FLOATING or self.numel() == 0:
        return NotImplemented
    batched = self if self.dim() == 4 else self.unsqueeze(0)
    samples = random_samples  # [n, c, 2] (an unbatched input's too: n = 1)
    if samples.dim() != 3:
        return NotImplemented
    n, c, height, width = batched.shape
    pool_h, pool_w = (int(k) for k in kernel_size)
    out_h, out_w = (int(o) for o in output_size)
    if out_h + pool_h - 1 > height or out_w + pool_w - 1 > width:  # the CPU refuses these
        return NotImplemented
    rows = _starts(samples[..., 1], height, out_h, pool_h)  # [n, c, out_h]
    columns = _starts(samples[..., 0], width, out_w, pool_w)  # [n, c, out_w]
    rows = rows.unsqueeze(-1) + torch.arange(pool_h, device=self.device)  # [n, c, oh, kh]
    columns = columns.unsqueeze(-1) + torch.arange(pool_w, device=self.device)
    # flat positions [n, c, oh, ow, kh, kw]
    flat = rows[:, :, :, None, :, None] * width + columns[:, :, None, :, None, :]
    index = flat.reshape(n, c, -1)
    values = torch.gather(batched.reshape(n, c, height * width), 2, index)
    values = values.reshape(n, c, out_h, out_w, pool_h * pool_w)
    positions = flat.reshape(n, c, out_h, out_w, pool_h * pool_w)
    # the first NaN, else the first maximum, in row-major window order
    nan = torch.isnan(values)
    key = torch.where(nan, torch.full_like(values, float("inf")), values)
    best = key.amax(-1, keepdim=True)
    order = torch.arange(pool_h * pool_w, device=self.device)
    first = torch.where(key == best, order, pool_h * pool_w).amin(-1, keepdim=True)
    output = torch.gather(values, -1, first).squeeze(-1)
    indices = torch.gather(positions, -1, first).squeeze(-1)
    if self.dim() == 3:
        output, indices = output.squeeze(0), indices.squeeze(0)
    return output, indices
