"""Pipeline and context parallelism checks of parallel_worker.py (one torchrun launch).

``check_pipeline_1f1b`` and ``check_pipeline_interleaved`` train PipeLM with
``torch.distributed.pipelining`` (one stage per rank, or two interleaved);
``check_context_parallel`` trains ContextLM with its sequence split over the ranks
(``torchneuron.distributed.context_parallel``). Each returns the losses the rank saw and
its parameters; tests/distributed/test_parallel_apis.py trains the same models in one
process and compares.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.distributed.parallel_worker import (
    DEVICE,
    HEADS,
    LR,
    SEQ,
    STEPS,
    VOCAB,
    D,
    TinyBlock,
    _on_neuron,
    build,
)

# -- pipeline and context parallelism -------------------------------------------------

PP_LAYERS, PP_MICRO, PP_BATCH = 8, 4, 8  # 8 blocks: 2 per rank, or 2 x 1 interleaved
CP_SEQ = 16  # 2 x 4 chunks of 2 positions over four ranks


class PipeLM(nn.Module):
    """Embedding, PP_LAYERS TinyBlocks, a norm and a head: cut into stages by block."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList([TinyBlock() for _ in range(PP_LAYERS)])
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens):
        x = self.tok(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class PipeStage(nn.Module):
    """Blocks ``lo:hi`` of a PipeLM, with its embedding on the first stage and its norm
    and head on the last (parameter names as in the whole model)."""

    def __init__(self, model: PipeLM, lo: int, hi: int):
        super().__init__()
        self.first, self.last = lo == 0, hi == PP_LAYERS
        self.tok = model.tok if self.first else None
        self.blocks = nn.ModuleDict({str(i): model.blocks[i] for i in range(lo, hi)})
        self.norm = model.norm if self.last else None
        self.head = model.head if self.last else None

    def forward(self, x):
        if self.first:
            x = self.tok(x)
        for block in self.blocks.values():
            x = block(x)
        return self.head(self.norm(x)) if self.last else x


def pipe_batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(4)
    tokens = torch.randint(0, VOCAB, (PP_BATCH, SEQ), generator=g)
    return tokens, torch.randint(0, VOCAB, (PP_BATCH, SEQ), generator=g)


def pipe_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def _stage_params(stage: nn.Module) -> dict[str, torch.Tensor]:
    named = {}
    for name, p in stage.named_parameters():
        if name.startswith("blocks."):
            index, rest = name[len("blocks.") :].split(".", 1)
            name = f"blocks.{index}.{rest}"
        named[name] = p
    return named


def _pipeline(rank, world, interleaved: bool):
    from torch.distributed.pipelining import (
        PipelineStage,
        Schedule1F1B,
        ScheduleInterleaved1F1B,
    )

    model = build(PipeLM)
    device = torch.device(DEVICE, torch.neuron.current_device())
    per_rank = 2 if interleaved else 1
    stages_total = world * per_rank
    size = PP_LAYERS // stages_total
    ids = [rank + k * world for k in range(per_rank)]  # interleaved: rank, rank + world
    modules = [PipeStage(model, i * size, (i + 1) * size).to(DEVICE) for i in ids]
    stages = [PipelineStage(m, i, stages_total, device) for m, i in zip(modules, ids)]
    if interleaved:
        schedule = ScheduleInterleaved1F1B(stages, n_microbatches=PP_MICRO, loss_fn=pipe_loss)
    else:
        schedule = Schedule1F1B(stages[0], n_microbatches=PP_MICRO, loss_fn=pipe_loss)
    params = [p for m in modules for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=LR)
    tokens, targets = (t.to(DEVICE) for t in pipe_batch())
    holds_first, holds_last = 0 in ids, stages_total - 1 in ids
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        step_losses = []
        kwargs = {"target": targets, "losses": step_losses} if holds_last else {}
        if holds_first:
            schedule.step(tokens, **kwargs)
        else:
            schedule.step(**kwargs)
        optimizer.step()
        if holds_last:
            losses.append(float(torch.stack([loss.detach() for loss in step_losses]).mean()))
    named = {}
    for m in modules:
        named.update(_stage_params(m))
    return {"losses": losses, "params": named, "devices": _on_neuron(nn.ModuleList(modules))}


def check_pipeline_1f1b(rank, world):
    """One stage of two blocks per rank, 1F1B over PP_MICRO micro-batches, SGD."""
    return _pipeline(rank, world, interleaved=False)


def check_pipeline_interleaved(rank, world):
    """Two stages of one block per rank (rank and rank + world), interleaved 1F1B."""
    return _pipeline(rank, world, interleaved=True)


class ContextLM(nn.Module):
    """A causal LM whose attention is ``context_parallel.attention`` when given a group."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(CP_SEQ, D)
        self.norm = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens, positions, group=None):
        from torchneuron.distributed import context_parallel

        b, s = tokens.shape
        x = self.tok(tokens) + self.pos(positions)
        q, k, v = self.qkv(self.norm(x)).split(D, dim=-1)
        q, k, v = (t.view(b, s, HEADS, D // HEADS).transpose(1, 2) for t in (q, k, v))
        if group is None:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            a = context_parallel.attention(q, k, v, group)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, D))
        return self.head(x)


def cp_batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, VOCAB, (2, CP_SEQ), generator=g)
    return tokens, torch.randint(0, VOCAB, (2, CP_SEQ), generator=g)


def check_context_parallel(rank, world):
    """Each rank holds CP_SEQ / world positions (load-balanced); the loss is summed over
    local tokens and divided by every token; gradients are summed over the ranks."""
    import torch.distributed as dist

    from torchneuron.distributed import context_parallel

    group = dist.group.WORLD
    model = build(ContextLM).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    tokens, targets = cp_batch()
    positions = context_parallel.positions(CP_SEQ, group)
    tokens = context_parallel.shard(tokens, group).to(DEVICE)
    targets = context_parallel.shard(targets, group).to(DEVICE)
    positions = positions.to(DEVICE)
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        logits = model(tokens, positions, group)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), reduction="sum")
        (loss / targets.new_tensor(2 * CP_SEQ).float()).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(float(total) / (2 * CP_SEQ))
        optimizer.step()
    return {"losses": losses, "params": dict(model.named_parameters())}


CHECKS = {
    "pipeline_1f1b": check_pipeline_1f1b,
    "pipeline_interleaved": check_pipeline_interleaved,
    "context_parallel": check_context_parallel,
}
