"""FlexAttention on ``neuron``: the ``flex_attention`` operator as dense masked attention.

``torch.nn.attention.flex_attention`` reaches a Dynamo graph as the higher-order op
``flex_attention(q, k, v, score_mod, block_mask, scale, kernel_options, score_buffers,
mask_buffers)``, with ``score_mod`` and the block mask's ``mask_mod`` as subgraphs.
``inline_flex_attention`` replaces each such call, before AOTAutograd, by
``dense_flex_attention``: plain tensor ops that AOTAutograd traces and differentiates
like any other, so the forward and the backward lower through our ordinary rules (no
kernel of its own, no backward operator). It computes what PyTorch's reference
implementation of the operator computes (the one the CPU runs):

- ``k`` and ``v`` repeated along heads for grouped-query attention and broadcast along
  the batch;
- scores ``q @ k^T * scale`` in float32 (float64 for float64 inputs);
- ``score_mod(score, b, h, q_idx, kv_idx, *buffers)`` and ``mask_mod(b, h, q_idx,
  kv_idx, *buffers)`` evaluated on index tensors laid out along the scores' four
  dimensions (``b`` as ``[B, 1, 1, 1]``, ...), which broadcast exactly as the reference's
  per-element ``vmap`` does for the element-wise and indexing ops these functions hold;
- positions the mask removes at ``-inf``; the softmax that gives a fully masked row zero
  weights (``_safe_softmax``); the log-sum-exp (``-inf`` on a fully masked row) and the
  row maximum in base 2, as the operator returns them.

The block structure of a ``BlockMask`` (which blocks to skip) is an optimization the
reference does not use either: ``mask_mod`` alone decides. The cost model sees the dense
products (skipped blocks are not priced as skipped).

PyTorch's ``flex_attention`` refuses tensors of devices it does not list;
``allow_neuron_inputs`` lets ``neuron`` tensors through that check (eager mode runs
PyTorch's own dense implementation op by op on the device).
"""

from __future__ import annotations

import math

import torch
import torch.fx


def dense_flex_attention(
    query,
    key,
    value,
    score_mod,
    block_mask,
    scale,
    kernel_options,
    score_mod_other_buffers=(),
    mask_mod_other_buffers=(),
):
    groups = query.size(1) // key.size(1)
    key = torch.repeat_interleave(key, groups, dim=1)
    value = torch.repeat_interleave(value, groups, dim=1)
    batch = query.size(0)
    key = key.expand(batch, *key.shape[1:])
    value = value.expand(batch, *value.shape[1:])
    working = torch.float64 if query.dtype == torch.float64 else torch.float32
    scores = (query.to(working) @ key.to(working).transpose(-2, -1) * scale).to(working)
    sizes = scores.shape
    device = scores.device
    b, h, m, n = (
        torch.arange(size, device=device).reshape([-1 if d == axis else 1 for d in range(4)])
        for axis, size in enumerate(sizes)
    )
    modded = score_mod(scores, b, h, m, n, *score_mod_other_buffers)
    keep = block_mask[-1](b, h, m, n, *mask_mod_other_buffers)
    minus_infinity = torch.full((), -math.inf, dtype=working, device=device)
    post = torch.where(keep, modded, minus_infinity).expand(sizes)
    logsumexp = post.logsumexp(dim=-1)
    masked_rows = torch.all(post == -math.inf, dim=-1)
    logsumexp = torch.where(masked_rows, minus_infinity, logsumexp)
    max_scores = post.amax(dim=-1)
    weights = torch._safe_softmax(post, dim=-1)
    out = weights.to(query.dtype) @ value.to(query.dtype)
    return out, logsumexp / math.log(2), max_scores / math.log(2)


def inline_flex_attention(gm: torch.fx.GraphModule) -> int:
    """Replace every ``flex_attention`` call of ``gm`` (a Dynamo graph) by
    ``dense_flex_attention``, in place; returns how many there were."""
    hop = getattr(torch.ops.higher_order, "flex_attention", None)
    if hop is None:
        return 0
    nodes = gm.graph.find_nodes(op="call_function", target=hop)
    for node in nodes:
        node.target = dense_flex_attention
    if nodes:
        gm.recompile()
    return len(nodes)


def allow_neuron_inputs(module) -> None:
    """Let ``neuron`` tensors through the device check of ``module`` (PyTorch's
    ``torch.nn.attention.flex_attention``), once."""
    check = getattr(module, "_validate_device", None)
    if check is None or getattr(check, "_neuron_allowed", False):
        return

    def validate_device(query, key, value):
        if query.device.type == "neuron":
            return
        check(query, key, value)

    validate_device._neuron_allowed = True
    module._validate_device = validate_device
