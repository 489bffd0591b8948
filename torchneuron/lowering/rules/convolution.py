"""Transposed convolution (and its gradients) as ordinary convolutions, which torch-mlir lowers correctly.

torch-mlir's lowering of a transposed ``aten.convolution`` infers a wrong result
shape when the spatial dims have different strides, dilations or paddings (PyTorch
runs ``conv_transpose1d`` as a 2d convolution with a unit first dim, which is such
a case): "inferred shape [2, 8, 2, 13] is incompatible with return type 2x8x1x14".

The rule uses the identity a transposed convolution is defined by: it is the
gradient of a convolution with respect to its input, which equals a stride-1
convolution of the input with ``stride - 1`` zeros inserted between elements,
padded by ``dilation * (kernel - 1) - padding`` on each side (plus
``output_padding`` at the end), with the kernel flipped in every spatial dim and
its in/out channels swapped within each group.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten


def _insert_zeros(x: torch.Tensor, dim: int, stride: int) -> torch.Tensor:
    """``x`` with ``stride - 1`` zeros between consecutive elements along ``dim``."""
    if stride == 1 or x.shape[dim] == 0:
        return x
    size = x.shape[dim]
    spread = x.unsqueeze(dim + 1)
    zeros_shape = list(spread.shape)
    zeros_shape[dim + 1] = stride - 1
    spread = torch.cat([spread, spread.new_zeros(zeros_shape)], dim=dim + 1)
    merged_shape = list(x.shape)
    merged_shape[dim] = size * stride
    spread = spread.reshape(merged_shape)
    return spread.narrow(dim, 0, (size - 1) * stride + 1)


@lowering_rule(aten.convolution.default)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if not transposed:
        return NotImplemented
    parameters = _parameters(input, weight, stride, padding, dilation, output_padding)
    if parameters is None:
        return NotImplemented
    spatial, stride, padding, dilation, output_padding = parameters
    kernel = weight.shape[2:]

    x = input
    for i in range(spatial):
        x = _insert_zeros(x, 2 + i, stride[i])
    pads: list[int] = []
    for i in reversed(range(spatial)):  # F.pad lists the last dim first
        before = dilation[i] * (kernel[i] - 1) - padding[i]
        pads += [before, before + output_padding[i]]
    if any(pads):
        # A negative amount crops (padding larger than the kernel's reach).
        x = aten.constant_pad_nd.default(x, pads, 0.0)

    in_channels = weight.shape[0]
    out_per_group = weight.shape[1]
    w = weight.reshape(groups, in_channels // groups, out_per_group, *kernel)
    w = w.transpose(1, 2).reshape(groups * out_per_group, in_channels // groups, *kernel)
    w = w.flip(list(range(2, 2 + spatial)))
    return aten.convolution.default(
        x, w, bias, [1] * spatial, [0] * spatial, dilation, False, [0] * spatial, groups
    )


def _parameters(input, weight, stride, padding, dilation, output_padding):
    """(spatial dims, and each per-dim list at full length), or None for a shape not covered."""
    spatial = input.dim() - 2
    if spatial < 1 or weight.dim() != input.dim():
        return None
    return (
        spatial,
        _expand(stride, spatial),
        _expand(padding, spatial),
        _expand(dilation, spatial),
        _expand(output_padding, spatial),
    )


def _expand(values, count: int) -> list[int]:
    values = list(values)
    return values * count if len(values) == 1 else values


@lowering_rule(aten.convolution_backward.default)
def convolution_backward(
    grad_output,
    input,
    weight,
    bias_sizes,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    output_mask,
):
    # torch-mlir lowers the gradients of ungrouped ordinary convolutions only.
    parameters = _parameters(input, weight, stride, padding, dilation, output_padding)
    if parameters is None:
        return NotImplemented
    spatial, stride, padding, dilation, output_padding = parameters
    if not transposed:
        if groups == 1:
            return NotImplemented
        return _grouped_backward(
            grad_output, input, weight, stride, padding, dilation, groups, output_mask
        )
    # A transposed convolution is the input-gradient of an ordinary one, so its own
    # gradients are ordinary convolutions: grad_input = conv(grad_output, weight) and
    # grad_weight = the weight-gradient of conv(grad_output) reaching input.
    if any(extra >= step for extra, step in zip(output_padding, stride)):
        return NotImplemented  # the ordinary convolution would not reach input's size
    zeros = [0] * spatial
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_input = aten.convolution.default(
            grad_output, weight, None, stride, padding, dilation, False, zeros, groups
        )
    if output_mask[1]:
        grad_weight = aten.convolution_backward.default(
            input,
            grad_output,
            weight,
            None,
            stride,
            padding,
            dilation,
            False,
            zeros,
            groups,
            [False, True, False],
        )[1]
    if output_mask[2]:
        grad_bias = grad_output.sum([0, *range(2, grad_output.dim())])
    return grad_input, grad_weight, grad_bias


def _grouped_backward(grad_output, input, weight, stride, padding, dilation, groups, output_mask):
    # Gradients of a grouped ordinary convolution: grad_input is the grouped transposed
    # convolution of grad_output (with the output padding that restores input's size);
    # grad_weight is each group's ungrouped weight-gradient, stacked.
    spatial = input.dim() - 2
    zeros = [0] * spatial
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        kernel = weight.shape[2:]
        restore = [
            input.shape[2 + i]
            - (
                (grad_output.shape[2 + i] - 1) * stride[i]
                - 2 * padding[i]
                + dilation[i] * (kernel[i] - 1)
                + 1
            )
            for i in range(spatial)
        ]
        grad_input = convolution(
            grad_output, weight, None, stride, padding, dilation, True, restore, groups
        )
    if output_mask[1]:
        parts = []
        for inputs, grads, weights in zip(
            input.chunk(groups, 1), grad_output.chunk(groups, 1), weight.chunk(groups, 0)
        ):
            parts.append(
                aten.convolution_backward.default(
                    grads,
                    inputs,
                    weights,
                    None,
                    stride,
                    padding,
                    dilation,
                    False,
                    zeros,
                    1,
                    [False, True, False],
                )[1]
            )
        grad_weight = torch.cat(parts, 0)
    if output_mask[2]:
        grad_bias = grad_output.sum([0, *range(2, grad_output.dim())])
    return grad_input, grad_weight, grad_bias
