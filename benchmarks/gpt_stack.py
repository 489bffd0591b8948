"""The GPT-style stack of issue 12, shared by the benchmarks that measure it.

Token embedding, 4 x [LayerNorm, causal ``nn.MultiheadAttention`` (batch_first),
LayerNorm, 4x MLP], LayerNorm, head and cross-entropy; d=256, 4 heads, vocab 2048,
batch 4 x 128 (16.06 MiB of float32 parameters). ``GPT()(tokens, targets)`` returns
the loss, ``GPT().logits(tokens)`` the logits (the inference benchmark).

Run the benchmarks as ``python benchmarks/<name>.py``: this directory is then on
``sys.path`` and ``import gpt_stack`` finds this module.
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D, HEADS, LAYERS, BATCH, SEQ = 2048, 256, 4, 4, 4, 128


class Block(nn.Module):
    def __init__(self, d: int = D, heads: int = HEADS):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """The stack at the sizes above, or at the sizes given (the tests' tiny ones)."""

    def __init__(
        self,
        vocab: int = VOCAB,
        d: int = D,
        heads: int = HEADS,
        layers: int = LAYERS,
        seq: int = SEQ,
    ):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def logits(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, self.mask)
        return self.head(self.ln(x))

    def forward(self, tokens, targets):
        return F.cross_entropy(self.logits(tokens).view(-1, self.vocab), targets.view(-1))


class Logits(nn.Module):
    """The stack's inference: tokens to logits (no loss)."""

    def __init__(self, gpt: GPT):
        super().__init__()
        self.gpt = gpt

    def forward(self, tokens):
        return self.gpt.logits(tokens)


def make_model(seed: int = 0) -> GPT:
    """The same weights for every engine that is compared."""
    torch.manual_seed(seed)
    return GPT()


def make_inputs():
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    targets = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    return tokens, targets


def train_step_timed(fn, opt, tokens, targets):
    """One SGD step of ``fn`` (the model, compiled or not): forward, backward and
    optimizer seconds, and the loss."""
    t0 = time.perf_counter()
    loss = fn(tokens, targets)
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    opt.step()
    opt.zero_grad(set_to_none=True)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, loss.detach()
