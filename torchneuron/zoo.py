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
