"""Resampling PyTorch has no decomposition for: antialiased bilinear resizing
(``_upsample_bilinear2d_aa``) and 3-D grid sampling (``grid_sampler_3d``).

Antialiased resizing is separable and linear, so it is two matmuls with weight
matrices that depend only on the sizes: output index i averages the inputs j within
``support = max(scale, 1)`` of its centre ``scale * (i + 0.5)`` (input coordinates),
with the triangle filter ``max(0, 1 - |j + 0.5 - centre| / max(scale, 1))`` normalized
to sum 1, where ``scale`` is ``in / out`` (``1 / scale_factor`` when one is given;
``(in - 1) / (out - 1)`` with ``align_corners``). The window is the filter's support
rounded as PyTorch rounds it (``[trunc(centre - support + 0.5), trunc(centre + support
+ 0.5))``, clipped to the input). Checked against the CPU kernel on down- and
upsampling, odd ratios and both ``align_corners`` (``tests/lowering/test_resampling.py``).

3-D grid sampling follows the documented semantics of ``F.grid_sample``: grid values
(x, y, z) in [-1, 1] map to input coordinates (``align_corners``: the corner pixels'
centres, else their outer edges), ``padding_mode`` zeros (taps outside read 0),
border (coordinates clipped) or reflection (reflected about the edges, then clipped),
trilinear (mode 0) or nearest (mode 1, rounding half to even as ``nearbyint``) taps
gathered from the flattened volume.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten

_FLOATING = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _aa_weights(in_size: int, out_size: int, align_corners: bool, scale_factor, like):
    """The [out, in] weight matrix of antialiased linear resampling along one axis."""
    if align_corners:
        scale = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor else in_size / out_size
    support = max(scale, 1.0)
    i = torch.arange(out_size, dtype=torch.float64, device=like.device).unsqueeze(-1)
    j = torch.arange(in_size, dtype=torch.float64, device=like.device).unsqueeze(0)
    centre = scale * (i + 0.5)
    low = torch.clamp(torch.trunc(centre - support + 0.5), min=0)
    high = torch.clamp(torch.trunc(centre + support + 0.5), max=in_size)
    weights = torch.clamp(1 - ((j + 0.5 - centre) / support).abs(), min=0)
    weights = torch.where((j >= low) & (j < high), weights, 0.0)
    return (weights / weights.sum(-1, keepdim=True)).to(like.dtype)


def _resized(image, out_h: int, out_w: int, align_corners: bool, scale_h, scale_w):
    if image.dtype not in _FLOATING or image.dim() != 4 or min(out_h, out_w) < 1:
        return NotImplemented
    in_h, in_w = image.shape[-2], image.shape[-1]
    if min(in_h, in_w) < 1:
        return NotImplemented
    wide = image.to(torch.float32) if image.dtype in (torch.float16, torch.bfloat16) else image
    rows = _aa_weights(in_h, out_h, align_corners, scale_h, wide)
    columns = _aa_weights(in_w, out_w, align_corners, scale_w, wide)
    return (rows @ wide @ columns.transpose(0, 1)).to(image.dtype)


@lowering_rule(aten._upsample_bilinear2d_aa.default)
def upsample_bilinear2d_aa(self, output_size, align_corners, scales_h=None, scales_w=None):
    out_h, out_w = output_size
    return _resized(self, int(out_h), int(out_w), align_corners, scales_h, scales_w)


@lowering_rule(aten._upsample_bilinear2d_aa.vec)
def upsample_bilinear2d_aa_vec(input, output_size, align_corners, scale_factors):
    if output_size is not None:
        out_h, out_w = (int(s) for s in output_size)
        return _resized(input, out_h, out_w, align_corners, None, None)
    if scale_factors is None or input.dim() != 4:
        return NotImplemented
    scale_h, scale_w = scale_factors
    out_h, out_w = int(input.shape[-2] * scale_h), int(input.shape[-1] * scale_w)
    return _resized(input, out_h, out_w, align_corners, scale_h, scale_w)


# -- grid_sampler_3d ------------------------------------------------------------------

_TRILINEAR, _NEAREST = 0, 1
_ZEROS, _BORDER, _REFLECTION = 0, 1, 2


def _source_coordinate(coordinate, size: int, padding_mode: int, align_corners: bool):
    if align_corners:
        coordinate = (coordinate + 1) / 2 * (size - 1)
    else:
        coordinate = ((coordinate + 1) * size - 1) / 2
    if padding_mode == _BORDER:
        return coordinate.clamp(0, size - 1)
    if padding_mode == _REFLECTION:
        low, high = (0.0, float(size - 1)) if align_corners else (-0.5, size - 0.5)
        span = high - low
        if span <= 0:
            return torch.zeros_like(coordinate)
        distance = (coordinate - low).abs()
        flips = torch.floor(distance / span)
        extra = distance - flips * span
        even = torch.remainder(flips, 2) == 0
        coordinate = torch.where(even, low + extra, high - extra)
        return coordinate.clamp(0, size - 1)
    return coordinate


def _taps(volume, z, y, x, sizes):
    """Values of ``volume`` [N, C, D*H*W] at integer coordinates [N, P] (0 outside)."""
    depth, height, width = sizes
    inside = (z >= 0) & (z < depth) & (y >= 0) & (y < height) & (x >= 0) & (x < width)
    flat = (
        z.clamp(0, depth - 1) * (height * width)
        + y.clamp(0, height - 1) * width
        + x.clamp(0, width - 1)
    )
    index = flat.to(torch.int64).unsqueeze(1).expand(-1, volume.shape[1], -1)
    values = torch.gather(volume, 2, index)
    return torch.where(inside.unsqueeze(1), values, torch.zeros_like(values))


@lowering_rule(aten.grid_sampler_3d.default)
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    if (
        input.dim() != 5
        or grid.dim() != 5
        or grid.shape[-1] != 3
        or input.dtype not in _FLOATING
        or interpolation_mode not in (_TRILINEAR, _NEAREST)
        or padding_mode not in (_ZEROS, _BORDER, _REFLECTION)
        or input.numel() == 0
    ):
        return NotImplemented
    wide = input.to(torch.float32) if input.dtype in (torch.float16, torch.bfloat16) else input
    points = grid.to(wide.dtype)
    batch, channels, depth, height, width = wide.shape
    out_d, out_h, out_w = grid.shape[1:4]
    points = points.reshape(batch, out_d * out_h * out_w, 3)
    x = _source_coordinate(points[..., 0], width, padding_mode, align_corners)
    y = _source_coordinate(points[..., 1], height, padding_mode, align_corners)
    z = _source_coordinate(points[..., 2], depth, padding_mode, align_corners)
    volume = wide.reshape(batch, channels, depth * height * width)
    sizes = (depth, height, width)
    if interpolation_mode == _NEAREST:
        result = _taps(volume, torch.round(z), torch.round(y), torch.round(x), sizes)
    else:
        x0, y0, z0 = torch.floor(x), torch.floor(y), torch.floor(z)
        fx, fy, fz = x - x0, y - y0, z - z0
        result = torch.zeros_like(volume[..., :1].expand(-1, -1, x.shape[-1]))
        for dz, wz in ((0, 1 - fz), (1, fz)):
            for dy, wy in ((0, 1 - fy), (1, fy)):
                for dx, wx in ((0, 1 - fx), (1, fx)):
                    tap = _taps(volume, z0 + dz, y0 + dy, x0 + dx, sizes)
                    result = result + tap * (wz * wy * wx).unsqueeze(1)
    return result.reshape(batch, channels, out_d, out_h, out_w).to(input.dtype)
