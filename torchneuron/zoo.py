"""A small model zoo: the models our tests, benchmarks and golden checks use.

Each entry builds a model with deterministic random weights and example
inputs of a fixed shape, so results are reproducible across runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_in: int = 32, d_hidden: int = 64, d_out: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_hidden)
        self.head = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.gelu(self.fc2(x))
        return self.head(x)


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class GPTBlockLM(nn.Module):
    """Token + position embedding, pre-LN transformer blocks (causal SDPA, GELU MLP), LM head."""

    def __init__(
        self,
        vocab: int = 128,
        d_model: int = 64,
        heads: int = 4,
        layers: int = 2,
        context: int = 32,
    ):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class _Block(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.fc_out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        batch, time, channels = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(channels, dim=2)
        q, k, v = (
            t.view(batch, time, self.heads, channels // self.heads).transpose(1, 2)
            for t in (q, k, v)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(batch, time, channels))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class TopKMoE(nn.Module):
    """A dropless top-k mixture of experts (SwiGLU-free: SiLU MLP experts).

    The router's softmax picks ``top_k`` experts per token, their weights renormalized;
    ``loss`` is the Switch Transformer's load-balancing loss, ``experts`` times the sum
    over experts of (fraction of routed slots) x (mean router probability). Two ways to
    dispatch, the same function:

    - ``"gather"``: per expert, its tokens by ``torch.where`` (a data-dependent count),
      gathered, run, and added back with ``index_add`` (Mixtral's formulation);
    - ``"grouped"``: the token slots sorted by expert and every expert's product in one
      ``torch._grouped_mm`` each layer (bfloat16 operands, as the grouped GEMM takes
      them), static shapes throughout.
    """

    def __init__(self, d_model=32, hidden=64, experts=4, top_k=2, dispatch="gather"):
        super().__init__()
        if dispatch not in ("gather", "grouped"):
            raise ValueError(f"dispatch must be 'gather' or 'grouped', not {dispatch!r}")
        self.experts, self.top_k, self.dispatch = experts, top_k, dispatch
        self.router = nn.Linear(d_model, experts, bias=False)
        self.w_in = nn.Parameter(torch.randn(experts, d_model, hidden) * d_model**-0.5)
        self.w_out = nn.Parameter(torch.randn(experts, hidden, d_model) * hidden**-0.5)

    def forward(self, x):
        probs = F.softmax(self.router(x), -1)
        weights, chosen = probs.topk(self.top_k, -1)
        weights = weights / weights.sum(-1, keepdim=True)
        if self.dispatch == "gather":
            out = torch.zeros_like(x)
            for expert in range(self.experts):
                token, slot = torch.where(chosen == expert)
                y = F.silu(x[token] @ self.w_in[expert]) @ self.w_out[expert]
                out = out.index_add(0, token, y * weights[token, slot].unsqueeze(-1))
        else:
            order = chosen.reshape(-1).argsort(stable=True)
            token = torch.div(order, self.top_k, rounding_mode="floor")
            counts = F.one_hot(chosen.reshape(-1), self.experts).sum(0)
            ends = counts.cumsum(0).to(torch.int32)
            h = torch._grouped_mm(x[token].bfloat16(), self.w_in.bfloat16(), offs=ends)
            y = torch._grouped_mm(F.silu(h), self.w_out.bfloat16(), offs=ends).to(x.dtype)
            scaled = y * weights.reshape(-1)[order].unsqueeze(-1)
            out = torch.zeros_like(x).index_add(0, token, scaled)
        routed = F.one_hot(chosen, self.experts).to(x.dtype).sum((0, 1)) / chosen.numel()
        balance = self.experts * (routed * probs.mean(0)).sum()
        return out, balance


class MoELM(nn.Module):
    """Embedding, ``layers`` residual MoE blocks (pre-LayerNorm), LM head; ``forward``
    returns the logits and the summed load-balancing loss."""

    def __init__(self, vocab=128, d_model=32, layers=2, dispatch="gather", **moe):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(layers))
        self.moes = nn.ModuleList(TopKMoE(d_model, dispatch=dispatch, **moe) for _ in range(layers))
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens.reshape(-1))
        balance = x.new_zeros(())
        for norm, moe in zip(self.norms, self.moes):
            y, aux = moe(norm(x))
            x, balance = x + y, balance + aux
        return self.head(x).reshape(*tokens.shape, -1), balance


@dataclass
class ZooEntry:
    name: str
    build: Callable[[], nn.Module]
    example_inputs: Callable[[], tuple[torch.Tensor, ...]]
    loss: Callable[[torch.Tensor, tuple[torch.Tensor, ...]], torch.Tensor]


def _seeded(factory: Callable[[], nn.Module], seed: int = 0) -> Callable[[], nn.Module]:
    def build():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return factory()

    return build


def _inputs(factory: Callable[[], tuple[torch.Tensor, ...]], seed: int = 1):
    def make():
        generator = torch.Generator().manual_seed(seed)
        return factory(generator)

    return make


def _lm_loss(logits, inputs):
    (idx,) = inputs
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1))


ZOO: dict[str, ZooEntry] = {
    "mlp": ZooEntry(
        "mlp",
        _seeded(MLP),
        _inputs(lambda g: (torch.randn(8, 32, generator=g),)),
        lambda out, inputs: out.pow(2).mean(),
    ),
    "cnn": ZooEntry(
        "cnn",
        _seeded(SmallCNN),
        _inputs(lambda g: (torch.randn(4, 3, 16, 16, generator=g),)),
        lambda out, inputs: F.cross_entropy(out, torch.arange(out.shape[0]) % out.shape[1]),
    ),
    "gpt": ZooEntry(
        "gpt",
        _seeded(GPTBlockLM),
        _inputs(lambda g: (torch.randint(0, 128, (2, 32), generator=g),)),
        _lm_loss,
    ),
}
