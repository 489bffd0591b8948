"""Mixture-of-experts training: tokens per second and compiles over many steps.

The zoo's ``MoELM`` (2 MoE layers, 8 experts, top-2, d=128, hidden 256, vocabulary
512, batch 8x64 tokens), SGD training steps with random tokens, so every step routes
a different number of tokens to each expert. One process, one thread, natively
(``TORCHNEURON_NO_FALLBACK=1``), fresh caches; each engine runs the same steps from
the same weights:

- eager CPU;
- Inductor (``torch.compile``, CPU), and ``backend="neuron"``, each with
  ``capture_dynamic_output_shape_ops`` (the ``gather`` dispatch's ``torch.where``);
- the ``grouped`` dispatch (``torch._grouped_mm``, static shapes) on the neuron backend.

Printed: the first step (compile) and the median step after it, tokens per second,
the final loss against eager CPU's, and the compiles: Dynamo graphs, and for the neuron
backend the graphs compiled at their bounds, the bucket specializations (the backward
at its forward's bounds) and per-shape recompiles.

    python benchmarks/moe.py [--steps 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ["TORCHNEURON_NO_FALLBACK"] = "1"
os.environ["TORCHNEURON_XLA_SINGLE_THREADED"] = "1"
os.environ.setdefault("TORCHNEURON_CACHE_DIR", tempfile.mkdtemp(prefix="moe-bench-"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torchneuron.compiler import bounded, dynamic  # noqa: E402
from torchneuron.zoo import MoELM  # noqa: E402

CONFIG = {"vocab": 512, "d_model": 128, "hidden": 256, "experts": 8, "top_k": 2}
BATCH, LENGTH = 8, 64


def step(model, tokens, optimizer):
    logits, balance = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    optimizer.zero_grad()
    (loss + 0.01 * balance).backward()
    optimizer.step()
    return loss.detach()


def run(engine: str, steps: int) -> dict:
    dispatch = "grouped" if engine == "neuron grouped" else "gather"
    torch.manual_seed(0)
    model = MoELM(dispatch=dispatch, **CONFIG)
    device = "neuron" if engine.startswith("neuron") else "cpu"
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    bounded.reset_stats()
    dynamic.reset_stats()
    if engine == "eager CPU":
        function = step
    elif engine == "Inductor":
        function = torch.compile(step)
    else:
        function = torch.compile(step, backend="neuron")
    generator = torch.Generator().manual_seed(1)
    times, loss = [], None
    for _ in range(steps):
        tokens = torch.randint(0, CONFIG["vocab"], (BATCH, LENGTH + 1), generator=generator)
        start = time.perf_counter()
        loss = function(model, tokens.to(device), optimizer).item()
        times.append(time.perf_counter() - start)
    result = {
        "first": times[0],
        "median": statistics.median(times[1:]),
        "loss": loss,
        "graphs": torch._dynamo.utils.counters["stats"]["unique_graphs"],
    }
    if device == "neuron":
        result |= {
            "bounded": bounded.stats()["bounded_graphs"],
            "specializations": dynamic.stats()["specializations"],
            "per_shape": dynamic.stats()["per_shape_front_half"],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument(
        "--engines", default="eager CPU,Inductor,neuron,neuron grouped", help="comma-separated"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch._dynamo.config.capture_dynamic_output_shape_ops = True
    engines = [e.strip() for e in args.engines.split(",")]
    results = {engine: run(engine, args.steps) for engine in engines}
    tokens = BATCH * LENGTH
    base = results.get("eager CPU")
    print(f"MoELM {CONFIG}, batch {BATCH}x{LENGTH}, {args.steps} steps, one thread, natively")
    print(
        f"{'engine':<16}{'first (s)':>10}{'step (ms)':>11}{'tokens/s':>10}{'/eager':>8}"
        f"{'final loss':>12}  compiles"
    )
    for engine, r in results.items():
        ratio = f"{r['median'] / base['median']:.2f}x" if base else "-"
        compiles = f"{r['graphs']} Dynamo graphs"
        if "bounded" in r:
            compiles += (
                f", {r['bounded']} at bounds, {r['specializations']} bucket "
                f"specializations, {r['per_shape']} per-shape"
            )
        print(
            f"{engine:<16}{r['first']:>10.1f}{r['median'] * 1e3:>11.1f}"
            f"{tokens / r['median']:>10.0f}{ratio:>8}{r['loss']:>12.5f}  {compiles}"
        )
    chip_estimates()


def chip_estimates() -> None:
    """What the chip would take for the MoE layers (estimate/moe_cost.py): the
    emulator's step above runs them padded."""
    from torchneuron.estimate.collectives import Placement
    from torchneuron.estimate.moe_cost import estimate_moe_layer

    tokens = BATCH * LENGTH
    shape = {k: CONFIG[k] for k in ("d_model", "hidden", "experts", "top_k")}
    for target, dtype in (("trn2", "bfloat16"), ("trn3", "bfloat16"), ("trn3", "mxfp8")):
        layer = estimate_moe_layer(tokens, **shape, dtype=dtype, placement=Placement(target))
        print(
            f"estimated on {target} ({dtype}), one MoE layer: forward "
            f"{layer.forward_seconds * 1e6:.1f} us, backward {layer.backward_seconds * 1e6:.1f} us"
        )


if __name__ == "__main__":
    main()
