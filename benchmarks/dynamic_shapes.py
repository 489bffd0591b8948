"""A GPT-style model served at 20 sequence lengths: compile time and front-half compiles.

Four ways, in one process, each on a fresh Dynamo cache:

- ``neuron dynamic=True``: one front-half compile (Dynamo, AOTAutograd, torch-mlir,
  StableHLO with ``?`` dims), then one specialization (shape refinement, passes, NEFF,
  XLA compile) per sequence length (compiler/dynamic.py);
- ``neuron dynamic=False``: today's per-shape recompilation (a new Dynamo graph and a
  full compile for every length);
- ``neuron buckets``: the sequence length marked dynamic (``mark_dynamic``; the batch
  stays 2) and padded up to the buckets 16, 32, 64, 127 (compiler/buckets.py): one
  front half, one specialization per bucket used, the causal attention masked;
- ``inductor dynamic=True``: PyTorch's own compiler on the CPU, one symbolic kernel set.

For each: the wall time of the 20 first calls (compiling included), of a second pass
over the same lengths (all cached), the number of front-half compiles, and the
largest difference from eager on the CPU. Single-threaded (``torch.set_num_threads(1)``).

    python benchmarks/dynamic_shapes.py            # d=128, 2 layers, vocab 512
    python benchmarks/dynamic_shapes.py --full     # gpt_stack's default sizes
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHNEURON_XLA_SINGLE_THREADED", "1")
# Measured natively: a graph that cannot run on the device raises instead of falling back.
os.environ.setdefault("TORCHNEURON_NO_FALLBACK", "1")

import torch  # noqa: E402
from gpt_stack import GPT  # noqa: E402

from torchneuron.compiler import buckets, dynamic  # noqa: E402

LENGTHS = [8 + 6 * i for i in range(20)]  # 8, 14, ..., 122
# 127, not 128: the model's width is 128, and Dynamo's duck sizing guards the length
# s != 128 (a length of 128 would be traced as the width's size); a padded size must keep
# that guard, so a bucket of 128 would never be used (lengths 68..122 would run exactly).
BUCKETS = [16, 32, 64, 127]


class ServedGPT(GPT):
    """gpt_stack.GPT's logits with its causal mask cut to the tokens' length."""

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens)
        mask = self.mask[:t, :t]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x))


def serve(model, backend: str, dynamic_shapes, batch: int, vocab: int):
    """``dynamic_shapes``: True, False, or "buckets" (sequence length marked dynamic,
    padded to ``BUCKETS``)."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    # per-shape recompilation must recompile 20 times, not give up after 8 and run eager
    torch._dynamo.config.recompile_limit = 64
    torch._dynamo.config.accumulated_recompile_limit = 256
    dynamic.reset_stats()
    buckets.reset_stats()
    bucketed = dynamic_shapes == "buckets"
    if bucketed:
        options = {"buckets": BUCKETS}
        compiled = torch.compile(model, backend=backend, options=options)
    else:
        compiled = torch.compile(model, backend=backend, dynamic=dynamic_shapes)
    worst = 0.0
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randint(0, vocab, (batch, n), generator=generator) for n in LENGTHS]
    if bucketed:
        for tokens in inputs:
            torch._dynamo.mark_dynamic(tokens, 1)
    with torch.no_grad():
        start = time.perf_counter()
        for tokens in inputs:
            out = compiled(tokens)
            worst = max(worst, (out - model(tokens)).abs().max().item())
        first = time.perf_counter() - start
        start = time.perf_counter()
        for tokens in inputs:
            compiled(tokens)
        second = time.perf_counter() - start
    graphs = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    stats = dynamic.stats()
    if bucketed and buckets.stats()["refusals"]:
        raise SystemExit(f"bucketing was refused: {buckets.stats()}")
    if backend == "neuron" and dynamic_shapes:
        front = stats["front_half"] + stats["per_shape_front_half"]
        specializations = stats["specializations"]
    else:
        front, specializations = graphs, graphs
    return first, second, front, specializations, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="gpt_stack's default sizes")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.full:
        sizes = {"vocab": 2048, "d": 256, "heads": 4, "layers": 4, "seq": 128}
    else:
        sizes = {"vocab": 512, "d": 128, "heads": 4, "layers": 2, "seq": 128}
    model = ServedGPT(**sizes).eval()
    batch = 2
    print(
        f"GPT {sizes}, batch {batch}, {len(LENGTHS)} sequence lengths "
        f"{LENGTHS[0]}..{LENGTHS[-1]}; torch threads 1"
    )
    rows = [
        ("neuron dynamic=True", "neuron", True),
        ("neuron dynamic=False (per shape)", "neuron", False),
        (f"neuron buckets {BUCKETS}", "neuron", "buckets"),
        ("inductor dynamic=True (CPU)", "inductor", True),
    ]
    header = (
        f"{'compiler':36} {'20 first calls s':>16} {'20 cached s':>11} "
        f"{'front-half compiles':>19} {'numeric compiles':>16} {'max |diff|':>10}"
    )
    print(header)
    print("-" * len(header))
    for label, backend, dynamic_shapes in rows:
        first, second, front, numeric, worst = serve(
            model, backend, dynamic_shapes, batch, sizes["vocab"]
        )
        print(
            f"{label:36} {first:16.2f} {second:11.3f} {front:19d} {numeric:16d} {worst:10.2e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
