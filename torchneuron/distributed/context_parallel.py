"""Context parallelism: a sequence split over the ranks of a group, attention over all of it.

Each rank of a context-parallel group holds ``seq / cp`` positions of every sequence
(activations, norms, MLPs run on them alone). Attention needs every key and value: each
layer all-gathers them over the group (autograd's backward reduce-scatters their
gradients), and the rank's queries attend to the gathered keys with the causal mask
written for their true positions. This is the all-gather form of context parallelism
(the form Llama 3's training used); the planner prices it the same way
(``estimate.model_plan``: "CP all-gather (keys, values)").

Causal attention costs more for late positions, so the sequence is cut into ``2 x cp``
chunks and rank r holds chunks r and ``2cp - 1 - r`` (load balancing): every rank then
does the same work. ``shard``/``unshard`` move a tensor between the whole sequence and
that layout; ``positions`` gives a rank's positions (for position embeddings and masks).

    group = dist.new_group(...)                 # or a DeviceMesh dimension's group
    tokens = context_parallel.shard(tokens, group, dim=1)
    ... q, k, v of the local positions ...
    out = context_parallel.attention(q, k, v, group)   # (batch, heads, local, head_dim)

``torch.distributed.tensor.experimental.context_parallel`` (ring attention over
DTensors) needs the flash or efficient SDPA kernels of CUDA; on ``neuron`` tensors SDPA
runs as its math decomposition, which that API refuses, so it is not the way here.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F


def _world(group) -> tuple[int, int]:
    return dist.get_rank(group), dist.get_world_size(group)


def _chunks(length: int, size: int) -> int:
    if length % (2 * size):
        raise ValueError(
            f"context parallelism over {size} ranks cuts the sequence into {2 * size} equal "
            f"chunks; a sequence of {length} does not divide"
        )
    return length // (2 * size)


def positions(length: int, group, device=None) -> torch.Tensor:
    """The positions (in the whole sequence of ``length``) this rank holds, in order."""
    rank, size = _world(group)
    chunk = _chunks(length, size)
    first = torch.arange(rank * chunk, (rank + 1) * chunk, device=device)
    last = torch.arange((2 * size - 1 - rank) * chunk, (2 * size - rank) * chunk, device=device)
    return torch.cat([first, last])


def shard(tensor: torch.Tensor, group, dim: int = 1) -> torch.Tensor:
    """This rank's positions of ``tensor`` (the whole sequence along ``dim``)."""
    rank, size = _world(group)
    chunk = _chunks(tensor.shape[dim], size)
    pieces = tensor.split(chunk, dim=dim)
    return torch.cat([pieces[rank], pieces[2 * size - 1 - rank]], dim=dim)


def _gather(tensor: torch.Tensor, group, dim: int) -> torch.Tensor:
    """Every rank's ``tensor`` concatenated along ``dim`` in rank order (differentiable:
    the backward reduce-scatters the gradient)."""
    from torch.distributed._functional_collectives import all_gather_single_autograd

    return all_gather_single_autograd(tensor.contiguous(), dim % tensor.dim(), group)


def unshard(tensor: torch.Tensor, group, dim: int = 1) -> torch.Tensor:
    """The whole sequence from every rank's positions (the inverse of ``shard``)."""
    _, size = _world(group)
    gathered = _gather(tensor, group, dim)
    pieces = gathered.chunk(2 * size, dim=dim)  # rank r's two chunks at 2r and 2r + 1
    order = [pieces[2 * r] for r in range(size)] + [
        pieces[2 * r + 1] for r in reversed(range(size))
    ]
    return torch.cat(order, dim=dim)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    group,
    *,
    causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """Attention of this rank's queries over the keys and values of every rank.

    ``q``, ``k``, ``v``: ``(batch, heads, local, head_dim)``, this rank's positions in
    ``shard``'s layout. Returns the rank's ``(batch, heads, local, head_dim)`` output.
    """
    _, size = _world(group)
    local = q.shape[-2]
    keys = unshard(k, group, dim=-2)
    values = unshard(v, group, dim=-2)
    mask = None
    if causal:
        mine = positions(local * size, group, device=q.device)
        every = torch.arange(local * size, device=q.device)
        mask = mine[:, None] >= every[None, :]
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale)
