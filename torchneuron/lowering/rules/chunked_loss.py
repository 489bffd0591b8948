"""``F.linear_cross_entropy`` with chunking options: PyTorch's two custom ops, lowered
to the loss and gradients they compute.

With ``options=LinearCrossEntropyOptions(...)``, PyTorch computes the loss (and, for a
mean or sum, every gradient, ahead of the backward) batch chunk by batch chunk inside
two custom ops (``torch_nn::_linear_cross_entropy_batch_chunked`` and its
``_no_reduction`` twin), which reach the compiler opaque; their bodies write chunks
into buffers in place, which a decomposition inside AOTAutograd may not do. These rules
write the same quantities functionally, in one piece (chunking saves memory, it does
not change the values beyond rounding), in the ops' accumulate dtype:

- logits z = x W^T (+ b), per-sample loss l_i = w_{t_i} (logsumexp(z_i) - z_{i, t_i}),
  0 where t_i is ``ignore_index``; the mean divides by the summed weights of the
  counted samples (PyTorch's cross-entropy rule);
- the gradients of the reduced loss: dz = (softmax(z) - onehot(t)) scaled as the loss
  is, then dx = dz W, dW = dz^T x, db = sum_i dz_i.

``label_smoothing`` must be 0 (PyTorch takes this path only then). The custom ops'
registered autograd (scaling the precomputed gradients by the upstream one) is
PyTorch's, unchanged. Checked against eager CPU by the OpInfo entries
``nn.functional.linear_cross_entropy.chunked`` and ``.chunked_none`` in both modes.
"""

from __future__ import annotations

import torch
from torch.nn.modules import linear_cross_entropy as _registers_the_ops  # noqa: F401

from .registry import lowering_rule

_ops = torch.ops.torch_nn


def _loss_parts(input, linear_weight, target, linear_bias, weight, ignore_index, acc_dtype):
    x = input.to(acc_dtype)
    logits = x @ linear_weight.to(acc_dtype).transpose(0, 1)
    if linear_bias is not None:
        logits = logits + linear_bias.to(acc_dtype)
    counted = target != ignore_index
    safe_target = torch.where(counted, target, torch.zeros_like(target))
    picked = torch.gather(logits, 1, safe_target.unsqueeze(1)).squeeze(1)
    per_sample = torch.logsumexp(logits, dim=1) - picked
    scale = counted.to(acc_dtype)
    if weight is not None:
        scale = scale * torch.gather(weight.to(acc_dtype), 0, safe_target)
    return x, logits, safe_target, per_sample * scale, scale


@lowering_rule(_ops._linear_cross_entropy_batch_chunked.default)
def linear_cross_entropy_chunked(
    input,
    linear_weight,
    target,
    linear_bias,
    weight,
    reduction,
    ignore_index,
    label_smoothing,
    batch_chunk_size,
    acc_policy,
    acc_dtype,
    allow_retain_graph,
    compute_input_grad,
    compute_linear_weight_grad,
    compute_linear_bias_grad,
):
    if label_smoothing != 0.0 or reduction not in ("mean", "sum") or input.dim() != 2:
        return NotImplemented
    acc = acc_dtype or input.dtype
    x, logits, safe_target, losses, scale = _loss_parts(
        input, linear_weight, target, linear_bias, weight, ignore_index, acc
    )
    loss = losses.sum()
    if reduction == "mean":
        total = scale.sum()
        loss = loss / total
        scale = scale / total
    # d loss / d logits: (softmax - onehot) per sample, scaled as its loss term
    one_hot = torch.nn.functional.one_hot(safe_target, logits.shape[1]).to(acc)
    d_logits = (torch.softmax(logits, dim=1) - one_hot) * scale.unsqueeze(1)
    empty = input.new_zeros((0,))
    grad_input = (d_logits @ linear_weight.to(acc)).to(input.dtype) if compute_input_grad else empty
    grad_weight = (
        (d_logits.transpose(0, 1) @ x).to(linear_weight.dtype)
        if compute_linear_weight_grad
        else empty
    )
    grad_bias = (
        d_logits.sum(0).to(linear_bias.dtype)
        if compute_linear_bias_grad and linear_bias is not None
        else empty
    )
    return loss.to(input.dtype), grad_input, grad_weight, grad_bias


@lowering_rule(_ops._linear_cross_entropy_batch_chunked_no_reduction.default)
def linear_cross_entropy_chunked_no_reduction(
    input,
    linear_weight,
    target,
    linear_bias,
    weight,
    ignore_index,
    batch_chunk_size,
    acc_policy,
    acc_dtype,
):
    if input.dim() != 2:
        return NotImplemented
    acc = acc_dtype or input.dtype
    losses = _loss_parts(input, linear_weight, target, linear_bias, weight, ignore_index, acc)[3]
    return losses.to(input.dtype)
