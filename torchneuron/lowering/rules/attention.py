"""The inference fast paths of ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``.

In eval mode without gradients both modules call one fused ATen op
(``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``) that no
lowering knows. Each is written here as the ops PyTorch's CPU kernel performs,
in its order: the packed q/k/v projection, the bias added and q scaled by
``1/sqrt(head_dim)`` (rounded to the input's dtype, as the kernel does), a
masked softmax over the keys, the weighted values and the output projection;
the encoder layer adds the residuals, layer norms and the feed-forward block.

Masks follow ``_masked_softmax``: any mask is read as bool (True = masked), a
``mask_type`` 0 mask is (L, L), type 1 is a (B, L) key padding mask, type 2 has
the scores' full shape; a row masked everywhere is NaN, as on the CPU.
"""

from __future__ import annotations

import math
import struct

import torch

from .registry import lowering_rule

aten = torch.ops.aten


def _query_scale(head_dim: int, dtype: torch.dtype) -> float:
    """``1.0 / sqrt(scalar_t(head_dim))`` as the CPU kernel computes it (rounded by the caller)."""
    root = math.sqrt(head_dim)
    if dtype != torch.float64:  # sqrt of a float (Half and BFloat16 compute in float)
        root = struct.unpack("f", struct.pack("f", root))[0]
    return 1.0 / root


def _scores_mask(mask, mask_type, scores_shape):
    """The bool mask broadcastable to the (B, heads, T, T) scores, or None to decline."""
    mask = mask.to(torch.bool)
    batch, _, length, _ = scores_shape
    if mask.dim() == 2 and mask_type == 0 and list(mask.shape) == [length, length]:
        return mask.reshape(1, 1, length, length)
    if mask.dim() == 2 and mask_type == 1 and list(mask.shape) == [batch, length]:
        return mask.reshape(batch, 1, 1, length)
    if list(mask.shape) == list(scores_shape) and (mask.dim() != 2 or mask_type == 2):
        return mask
    return None  # PyTorch rejects the shape, or a mask_type it does not define


def _multi_head_attention(
    query,
    key,
    value,
    num_head,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    mask,
    mask_type,
):
    """(output, scores after softmax [B, heads, T, T]) or NotImplemented."""
    if query.dim() != 3 or not query.is_floating_point() or query.is_complex():
        return NotImplemented
    if not (query.shape == key.shape == value.shape) or query.numel() == 0:
        return NotImplemented
    batch, length, embed = query.shape
    if embed % num_head or qkv_weight.shape[0] != 3 * embed:
        return NotImplemented
    head_dim = embed // num_head
    w_q, w_k, w_v = qkv_weight.split(embed, 0)
    b_q, b_k, b_v = qkv_bias.split(embed, 0)
    scale = torch.full((), _query_scale(head_dim, query.dtype), dtype=query.dtype)

    def heads(x):  # [B, T, D] -> [B, heads, T, head_dim]
        return x.reshape(batch, length, num_head, head_dim).permute(0, 2, 1, 3)

    q = heads((torch.matmul(query, w_q.t()) + b_q) * scale)
    k = heads(torch.matmul(key, w_k.t()) + b_k)
    v = heads(torch.matmul(value, w_v.t()) + b_v)
    scores = torch.matmul(q, k.transpose(-2, -1))
    if mask is not None:
        scores_mask = _scores_mask(mask, mask_type, scores.shape)
        if scores_mask is None:
            return NotImplemented
        scores = scores.masked_fill(scores_mask, -math.inf)
    weights = torch.softmax(scores, -1)
    context = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(batch, length, embed)
    return torch.nn.functional.linear(context, proj_weight, proj_bias), weights


@lowering_rule(aten._native_multi_head_attention.default)
def native_multi_head_attention(
    query,
    key,
    value,
    embed_dim,
    num_head,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    mask=None,
    need_weights=True,
    average_attn_weights=True,
    mask_type=None,
):
    # softmax(q k^T / sqrt(d) masked) v, projected; weights averaged over heads if asked
    if query.dim() != 3 or query.shape[-1] != embed_dim:
        return NotImplemented
    result = _multi_head_attention(
        query, key, value, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias, mask, mask_type
    )
    if result is NotImplemented:
        return NotImplemented
    output, weights = result
    if not need_weights:  # the kernel returns no weights; its meta function an empty tensor
        return output, torch.empty((0,), dtype=query.dtype, device=query.device)
    if average_attn_weights:
        weights = weights.sum(1) / num_head
    return output, weights


@lowering_rule(aten._transformer_encoder_layer_fwd.default)
def transformer_encoder_layer(
    src,
    embed_dim,
    num_heads,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    use_gelu,
    norm_first,
    eps,
    norm_weight_1,
    norm_bias_1,
    norm_weight_2,
    norm_bias_2,
    ffn_weight_1,
    ffn_bias_1,
    ffn_weight_2,
    ffn_bias_2,
    mask=None,
    mask_type=None,
):
    # x + attention(norm?(x)), normed; + ffn(norm?(.)), normed (post- or pre-norm)
    if src.dim() != 3 or src.shape[-1] != embed_dim:
        return NotImplemented
    if src.numel() == 0:
        return src.clone()

    def norm(x, weight, bias):
        return torch.nn.functional.layer_norm(x, [embed_dim], weight, bias, eps)

    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    result = _multi_head_attention(
        x, x, x, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, mask, mask_type
    )
    if result is NotImplemented:
        return NotImplemented
    x = result[0] + src
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    residual = x
    if norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    hidden = torch.nn.functional.linear(x, ffn_weight_1, ffn_bias_1)
    hidden = torch.nn.functional.gelu(hidden) if use_gelu else torch.relu(hidden)
    x = torch.nn.functional.linear(hidden, ffn_weight_2, ffn_bias_2) + residual
    if not norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    return x
