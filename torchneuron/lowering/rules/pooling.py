"""Pooling in the forms torch-mlir lowers correctly.

- ``ceil_mode=True`` max pooling: torch-mlir builds a ``reduce_window`` of the
  wrong size (or a silently wrong last window). The input is padded explicitly
  with -inf up to the extent ceil mode reads, and pooled in floor mode; the
  indices are mapped back to positions in the unpadded input.
- average pooling (1-3d), any options: window sums are a depthwise convolution
  with a ones kernel over the explicitly zero-padded input; the divisor (window
  size counting padding or not, or ``divisor_override``) follows PyTorch's
  definition and is computed from ``arange`` (it folds to a constant).
- adaptive max pooling 2d/3d: every (possibly overlapping, unequal) window gathered
  whole, the element chosen as the CPU kernel does (the last NaN, else the first
  maximum), its index mapped back to the input plane.
- adaptive average pooling 3d: average over PyTorch's adaptive windows as one
  matrix product per spatial dim (box averages are separable).
"""

from __future__ import annotations

import math
import struct

import torch

from .registry import lowering_rule

aten = torch.ops.aten


def _expand(value, dims: int) -> list[int]:
    if isinstance(value, int):
        return [value] * dims
    value = list(value)
    return value * dims if len(value) == 1 else value


def _output_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output size (``pooling_output_shape``)."""
    numerator = size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = numerator // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _explicit_padding(sizes, kernel, stride, padding, dilation, ceil_mode):
    """(output sizes, [(before, after)] per dim) for a floor-mode pool of the padded input."""
    outputs, pads = [], []
    for size, k, s, p, d in zip(sizes, kernel, stride, padding, dilation):
        out = _output_size(size, k, s, p, d, ceil_mode)
        reach = (out - 1) * s + d * (k - 1) + 1  # extent the last window reads
        pads.append((p, max(p, reach - size - p)))
        outputs.append(out)
    return outputs, pads


def _pad(x, pads, value):
    flat = []
    for before, after in reversed(pads):
        flat += [before, after]
    return aten.constant_pad_nd.default(x, flat, value)


def _max_pool_with_indices(op, x, kernel_size, stride, padding, dilation, ceil_mode, dims):
    if not ceil_mode or not x.is_floating_point():
        return NotImplemented
    kernel = _expand(kernel_size, dims)
    stride = _expand(stride, dims) if stride else list(kernel)
    padding = _expand(padding, dims)
    dilation = _expand(dilation, dims)
    sizes = list(x.shape[-dims:])
    _, pads = _explicit_padding(sizes, kernel, stride, padding, dilation, ceil_mode)
    padded = _pad(x, pads, -math.inf)
    values, indices = op(padded, kernel, stride, [0] * dims, dilation, False)
    # flat index in the padded plane -> flat index in the input plane
    padded_sizes = [size + before + after for size, (before, after) in zip(sizes, pads)]
    remaining = indices
    flat = torch.zeros_like(indices)
    scale = 1
    for dim in reversed(range(dims)):
        coordinate = torch.remainder(remaining, padded_sizes[dim]) - pads[dim][0]
        remaining = torch.div(remaining, padded_sizes[dim], rounding_mode="floor")
        flat = flat + coordinate * scale
        scale *= sizes[dim]
    return values, flat


@lowering_rule(aten.max_pool2d_with_indices.default)
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    # ceil mode -> pad with -inf to the ceil extent, floor mode, indices mapped back
    return _max_pool_with_indices(
        aten.max_pool2d_with_indices.default,
        self,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
        2,
    )


@lowering_rule(aten.max_pool3d_with_indices.default)
def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    # ceil mode -> pad with -inf to the ceil extent, floor mode, indices mapped back
    return _max_pool_with_indices(
        aten.max_pool3d_with_indices.default,
        self,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
        3,
    )


@lowering_rule(aten.max_pool2d.default)
def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    # ceil mode -> the with-indices form above, values only
    if not ceil_mode:
        return NotImplemented
    result = max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
    return result if result is NotImplemented else result[0]


def _divisors(sizes, outputs, kernel, stride, padding, count_include_pad, like):
    """Per-output window sizes as PyTorch's avg_pool counts them, broadcastable to the output."""
    divisor = None
    for dim, (size, out, k, s, p) in enumerate(zip(sizes, outputs, kernel, stride, padding)):
        start = torch.arange(out, device=like.device) * s - p
        end = torch.clamp(start + k, max=size + p)
        if count_include_pad:
            count = end - start
        else:
            count = torch.clamp(end, max=size) - torch.clamp(start, min=0)
        shape = [1] * len(sizes)
        shape[dim] = out
        count = count.reshape(shape)
        divisor = count if divisor is None else divisor * count
    return divisor.to(like.dtype)


def _avg_pool(
    x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, dims
):
    if not x.is_floating_point():
        return NotImplemented
    kernel = _expand(kernel_size, dims)
    stride = _expand(stride, dims) if stride else list(kernel)
    padding = _expand(padding, dims)
    sizes = list(x.shape[-dims:])
    outputs, pads = _explicit_padding(sizes, kernel, stride, padding, [1] * dims, ceil_mode)
    unbatched = x.dim() == dims + 1
    batched = x.unsqueeze(0) if unbatched else x
    leading = list(batched.shape[: -dims - 1])
    channels = batched.shape[-dims - 1]
    planes = batched.reshape([-1, channels, *sizes])
    padded = _pad(planes, pads, 0.0)
    ones = torch.ones([channels, 1, *kernel], dtype=x.dtype, device=x.device)
    sums = aten.convolution.default(
        padded, ones, None, stride, [0] * dims, [1] * dims, False, [0] * dims, channels
    )
    if divisor_override:
        result = sums / divisor_override
    else:
        result = sums / _divisors(sizes, outputs, kernel, stride, padding, count_include_pad, x)
    result = result.reshape([*leading, channels, *outputs])
    return result.squeeze(0) if unbatched else result


@lowering_rule(aten.avg_pool2d.default)
def avg_pool2d(
    self,
    kernel_size,
    stride=(),
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    # avg_pool2d -> depthwise ones-conv of the padded input / window size
    return _avg_pool(
        self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2
    )


@lowering_rule(aten.avg_pool3d.default)
def avg_pool3d(
    self,
    kernel_size,
    stride=(),
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    # avg_pool3d -> depthwise ones-conv of the padded input / window size
    return _avg_pool(
        self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3
    )


@lowering_rule(aten.avg_pool1d.default)
def avg_pool1d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    # avg_pool1d -> depthwise ones-conv of the padded input / window size
    return _avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def _adaptive_average_matrix(size: int, out: int, like: torch.Tensor) -> torch.Tensor:
    """A[o, i] = 1 / |window o| for i in PyTorch's adaptive window o, else 0."""
    o = torch.arange(out, device=like.device)
    start = torch.div(o * size, out, rounding_mode="floor")
    end = torch.div((o + 1) * size + out - 1, out, rounding_mode="floor")
    i = torch.arange(size, device=like.device)
    inside = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return inside.to(like.dtype) / (end - start)[:, None].to(like.dtype)


@lowering_rule(aten._adaptive_avg_pool3d.default)
def adaptive_avg_pool3d(self, output_size):
    # adaptive average over each spatial dim in turn: x <- A_d x along dim d
    if not self.is_floating_point():
        return NotImplemented
    result = self
    for offset, out in enumerate(output_size):
        dim = self.dim() - 3 + offset
        matrix = _adaptive_average_matrix(self.shape[dim], out, self)
        result = torch.matmul(result.movedim(dim, -1), matrix.t()).movedim(-1, dim)
    return result


def _adaptive_positions(size: int, out: int, device) -> tuple[torch.Tensor, int]:
    """positions[o, k] = the k-th input index of PyTorch's adaptive window o (its last index
    repeated past the window's end), and the longest window's length."""
    o = torch.arange(out, device=device)
    start = torch.div(o * size, out, rounding_mode="floor")
    end = torch.div((o + 1) * size + out - 1, out, rounding_mode="floor")
    longest = max(-(-((o_ + 1) * size) // out) - (o_ * size) // out for o_ in range(out))
    positions = start[:, None] + torch.arange(longest, device=device)[None, :]
    return torch.minimum(positions, end[:, None] - 1), longest


def _adaptive_max_pool(x, output_size, dims):
    # Every window gathered whole ([..., O_1, K_1, ..., O_d, K_d]); the chosen element is the
    # kernel's: the last NaN if the window has one, else the first maximum.
    if not x.is_floating_point() or x.numel() == 0 or len(output_size) != dims:
        return NotImplemented
    sizes = list(x.shape[-dims:])
    lead = x.dim() - dims
    windows = x
    all_positions, lengths = [], []
    for offset, (size, out) in enumerate(zip(sizes, output_size)):
        positions, longest = _adaptive_positions(size, out, x.device)
        dim = lead + 2 * offset
        picked = torch.index_select(windows, dim, positions.reshape(-1))
        shape = list(windows.shape)
        shape[dim : dim + 1] = [out, longest]
        windows = picked.reshape(shape)
        all_positions.append(positions)
        lengths.append(longest)
    window_dims = [lead + 2 * i + 1 for i in range(dims)]
    windows = windows.movedim(window_dims, list(range(-dims, 0)))
    windows = windows.reshape([*windows.shape[: lead + dims], -1])
    k = torch.arange(windows.shape[-1], device=x.device)
    is_nan = windows != windows
    largest = torch.where(is_nan, torch.full_like(windows, -math.inf), windows).amax(-1)
    first_max = torch.where(windows == largest[..., None], k, windows.shape[-1]).amin(-1)
    last_nan = torch.where(is_nan, k, -1).amax(-1)
    chosen = torch.where(is_nan.any(-1), last_nan, first_max)
    values = torch.gather(windows, -1, chosen[..., None]).squeeze(-1)
    # the chosen window slot -> its input coordinates -> flat index in the input plane
    index = torch.zeros_like(chosen)
    remaining = chosen
    for offset in reversed(range(dims)):
        slot = torch.remainder(remaining, lengths[offset])
        remaining = torch.div(remaining, lengths[offset], rounding_mode="floor")
        shape = [1] * dims
        shape[offset] = output_size[offset]
        start = all_positions[offset][:, 0].reshape(shape)
        last = all_positions[offset][:, -1].reshape(shape)
        coordinate = torch.minimum(start + slot, last)
        index = index + coordinate * math.prod(sizes[offset + 1 :])
    return values, index


@lowering_rule(aten.adaptive_max_pool2d.default)
def adaptive_max_pool2d(self, output_size):
    # max over PyTorch's adaptive windows, index of the last NaN or else the first maximum
    return _adaptive_max_pool(self, list(output_size), 2)


@lowering_rule(aten.adaptive_max_pool3d.default)
def adaptive_max_pool3d(self, output_size):
    # max over PyTorch's adaptive windows, index of the last NaN or else the first maximum
    return _adaptive_max_pool(self, list(output_size), 3)


def _max_pool_backward_from_indices(grad_output, self, indices, dims):
    # grad_input[plane, indices[o]] += grad_output[o]: one scatter-add per plane
    if not self.is_floating_point() or grad_output.dtype != self.dtype:
        return NotImplemented
    lead = list(self.shape[: self.dim() - dims])
    planes = torch.zeros(
        [*lead, math.prod(self.shape[-dims:])], dtype=self.dtype, device=self.device
    )
    sources = grad_output.reshape([*lead, -1])
    updated = torch.scatter_add(planes, -1, indices.reshape([*lead, -1]), sources)
    return updated.reshape(self.shape)


@lowering_rule(aten.adaptive_max_pool2d_backward.default)
def adaptive_max_pool2d_backward(grad_output, self, indices):
    # each output's gradient added at the input position its index names
    return _max_pool_backward_from_indices(grad_output, self, indices, 2)


@lowering_rule(aten.adaptive_max_pool3d_backward.default)
def adaptive_max_pool3d_backward(grad_output, self, indices):
    # each output's gradient added at the input position its index names
    return _max_pool_backward_from_indices(grad_output, self, indices, 3)


def _nearest_sources(
    out: int, size: int, scale, exact: bool, device, special_cases: bool = True
) -> torch.Tensor:
    """The input index each output position of nearest upsampling reads, as PyTorch's
    ``nearest_idx`` / ``nearest_exact_idx`` compute it: ``floorf(o * s)`` (or
    ``(o + 0.5) * s``) with ``s`` the float32 scale, clamped to the last input. The
    float32 product equals the kernel's (its double product is exact, then rounded once)."""
    o = torch.arange(out, device=device)
    special_cases = special_cases and not exact
    if special_cases and out == size:
        return o
    if special_cases and out == 2 * size:
        return torch.div(o, 2, rounding_mode="floor")
    if scale is not None and scale > 0:
        step = struct.unpack("f", struct.pack("f", 1.0 / scale))[0]
    else:
        step = struct.unpack("f", struct.pack("f", float(size)))[0]
        step = struct.unpack("f", struct.pack("f", step / float(out)))[0]
    position = o.to(torch.float32) + (0.5 if exact else 0.0)
    source = torch.floor(position * torch.full((), step, dtype=torch.float32, device=device))
    return torch.clamp(source.to(torch.int64), max=size - 1)


def _upsample_nearest_backward(grad_output, output_size, input_size, scales, exact):
    # grad_input[i] = sum of grad_output[o] over the outputs o that read input i, per dim
    dims = len(output_size)
    if not grad_output.is_floating_point() or len(input_size) != dims + 2:
        return NotImplemented
    dtype = grad_output.dtype
    grad = (
        grad_output.to(torch.float32) if dtype in (torch.float16, torch.bfloat16) else grad_output
    )
    for offset in range(dims):
        dim = 2 + offset
        size, out = input_size[dim], output_size[offset]
        sources = _nearest_sources(out, size, scales[offset], exact, grad.device)
        shape = list(grad.shape)
        shape[dim] = size
        zeros = torch.zeros(shape, dtype=grad.dtype, device=grad.device)
        grad = torch.index_add(zeros, dim, sources, grad)
    return grad.to(dtype)


def _scales(args, dims):
    scales = list(args) + [None] * (dims - len(args))
    return scales[:dims]


@lowering_rule(aten.upsample_nearest1d_backward.default)
def upsample_nearest1d_backward(grad_output, output_size, input_size, *scales):
    # gradients summed back onto the input position each output read
    return _upsample_nearest_backward(
        grad_output, output_size, input_size, _scales(scales, 1), False
    )


@lowering_rule(aten.upsample_nearest2d_backward.default)
def upsample_nearest2d_backward(grad_output, output_size, input_size, *scales):
    # gradients summed back onto the input position each output read
    return _upsample_nearest_backward(
        grad_output, output_size, input_size, _scales(scales, 2), False
    )


@lowering_rule(aten.upsample_nearest3d_backward.default)
def upsample_nearest3d_backward(grad_output, output_size, input_size, *scales):
    # gradients summed back onto the input position each output read
    return _upsample_nearest_backward(
        grad_output, output_size, input_size, _scales(scales, 3), False
    )


@lowering_rule(aten._upsample_nearest_exact1d_backward.default)
def upsample_nearest_exact1d_backward(grad_output, output_size, input_size, *scales):
    # gradients summed back onto the input position each output read (pixel centres)
    return _upsample_nearest_backward(
        grad_output, output_size, input_size, _scales(scales, 1), True
    )


@lowering_rule(aten._upsample_nearest_exact2d_backward.default)
def upsample_nearest_exact2d_backward(grad_output, output_size, input_size, *scales):
    # gradients summed back onto the input position each output read (pixel centres)
    return _upsample_nearest_backward(
        grad_output, output_size, input_size, _scales(scales, 2), True
    )


@lowering_rule(aten._upsample_nearest_exact3d_backward.default)
def upsample_nearest_exact3d_backward(grad_output, output_size, input_size, *scales):
    # gradients summed back onto the input position each output read (pixel centres)
    return _upsample_nearest_backward(
        grad_output, output_size, input_size, _scales(scales, 3), True
    )


def _upsample_nearest(self, output_size, scales, exact: bool):
    # out[o] = in[source(o)] per spatial dim, with the CPU kernel's sources: its 2-D
    # special cases (an unchanged or doubled size copies or halves the index, whatever
    # the scale factor says) and its clamp to the last input, which PyTorch's own
    # decomposition lacks (scale_factor=1.1 on 7 -> 7 copied there, read shifted here
    # before; a scale whose product passes the end read out of bounds)
    dims = len(output_size)
    sizes = list(self.shape[-dims:]) if self.dim() >= dims else []
    if (
        self.dim() != dims + 2
        or not all(isinstance(s, int) for s in [*sizes, *output_size])
        or min([*sizes, 1]) < 1
    ):
        return NotImplemented
    result = self
    for offset in range(dims):
        # the CPU's forward kernels special-case sizes in 2-D only (its 1-D and 3-D
        # forwards compute every index; all its backwards special-case)
        sources = _nearest_sources(
            int(output_size[offset]), sizes[offset], scales[offset], exact, self.device, dims == 2
        )
        result = torch.index_select(result, 2 + offset, sources)
    return result


@lowering_rule(aten.upsample_nearest1d.default)
def upsample_nearest1d(self, output_size, *scales):
    return _upsample_nearest(self, output_size, _scales(scales, 1), False)


@lowering_rule(aten.upsample_nearest2d.default)
def upsample_nearest2d(self, output_size, *scales):
    return _upsample_nearest(self, output_size, _scales(scales, 2), False)


@lowering_rule(aten.upsample_nearest3d.default)
def upsample_nearest3d(self, output_size, *scales):
    return _upsample_nearest(self, output_size, _scales(scales, 3), False)


@lowering_rule(aten._upsample_nearest_exact1d.default)
def upsample_nearest_exact1d(self, output_size, *scales):
    return _upsample_nearest(self, output_size, _scales(scales, 1), True)


@lowering_rule(aten._upsample_nearest_exact2d.default)
def upsample_nearest_exact2d(self, output_size, *scales):
    return _upsample_nearest(self, output_size, _scales(scales, 2), True)


@lowering_rule(aten._upsample_nearest_exact3d.default)
def upsample_nearest_exact3d(self, output_size, *scales):
    return _upsample_nearest(self, output_size, _scales(scales, 3), True)


def _upsample_nearest_vec(input, output_size, scale_factors, dims: int, exact: bool):
    if input.dim() != dims + 2:
        return NotImplemented
    if output_size is not None:
        return _upsample_nearest(input, list(output_size), [None] * dims, exact)
    if scale_factors is None or len(scale_factors) != dims:
        return NotImplemented
    sizes = input.shape[-dims:]
    if not all(isinstance(s, int) for s in sizes):
        return NotImplemented
    # the output size the CPU computes: floor(size * scale) in double
    output = [int(math.floor(size * float(scale))) for size, scale in zip(sizes, scale_factors)]
    return _upsample_nearest(input, output, list(scale_factors), exact)


@lowering_rule(aten.upsample_nearest1d.vec)
def upsample_nearest1d_vec(input, output_size, scale_factors):
    return _upsample_nearest_vec(input, output_size, scale_factors, 1, False)


@lowering_rule(aten.upsample_nearest2d.vec)
def upsample_nearest2d_vec(input, output_size, scale_factors):
    return _upsample_nearest_vec(input, output_size, scale_factors, 2, False)


@lowering_rule(aten.upsample_nearest3d.vec)
def upsample_nearest3d_vec(input, output_size, scale_factors):
    return _upsample_nearest_vec(input, output_size, scale_factors, 3, False)


@lowering_rule(aten._upsample_nearest_exact1d.vec)
def upsample_nearest_exact1d_vec(input, output_size, scale_factors):
    return _upsample_nearest_vec(input, output_size, scale_factors, 1, True)


@lowering_rule(aten._upsample_nearest_exact2d.vec)
def upsample_nearest_exact2d_vec(input, output_size, scale_factors):
    return _upsample_nearest_vec(input, output_size, scale_factors, 2, True)


@lowering_rule(aten._upsample_nearest_exact3d.vec)
def upsample_nearest_exact3d_vec(input, output_size, scale_factors):
    return _upsample_nearest_vec(input, output_size, scale_factors, 3, True)
