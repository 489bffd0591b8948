"""Estimated step time, MFU and peak HBM of GPT-style models on Trainium2 and Trainium3.

Two configurations of ``torchneuron.zoo.GPTBlockLM`` with random weights:

- the zoo's small GPT-style stack (vocab 128, d_model 64, 4 heads, 2 layers, context 32),
  batch 2;
- a GPT-2-sized one (vocab 50257, d_model 768, 12 heads, 12 layers, context 1024,
  ~124M parameters without the untied head's extra copy), batch 1 x 1024 tokens.

For each: the forward pass (an inference step) and a training step (forward +
backward of the cross-entropy loss, as AOTAutograd's joint graph; no optimizer), in
FP32 and BF16, estimated by the cost model on one logical NeuronCore of trn2 and trn3
(LNC=2). Nothing is executed: the programs are lowered to optimized StableHLO (weights
are program arguments, so only their shapes matter) and estimated. The time each step
of that takes is printed too.

    python benchmarks/estimates.py              # everything (~70 s on 2 cores)
    python benchmarks/estimates.py --quick      # skip the GPT-2 training step (~40 s of tracing)
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch._functorch.aot_autograd import aot_export_module
from torch.nn.attention import SDPBackend, sdpa_kernel

from torchneuron.compiler.exported import exported_graph
from torchneuron.compiler.pipeline import compile_graph, logical_core_size
from torchneuron.estimate.cost_model import estimate_text
from torchneuron.lowering import decomposition_table
from torchneuron.target import hardware
from torchneuron.target.topology import format_bytes
from torchneuron.zoo import GPTBlockLM

TARGETS = ("trn2", "trn3")
CONFIGS = {
    "gpt-small": (dict(), (2, 32)),
    "gpt2-124M": (dict(vocab=50257, d_model=768, heads=12, layers=12, context=1024), (1, 1024)),
}


class TrainingStep(torch.nn.Module):
    """The loss of next-token prediction; AOTAutograd's joint graph adds its gradients."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, idx):
        logits = self.model(idx)
        vocab = logits.shape[-1]
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), idx[:, 1:].reshape(-1))
        return (loss,)


def forward_program(model, idx):
    """(graph, weights, trace seconds) of the forward pass, via torch.export."""
    start = time.perf_counter()
    graph = exported_graph(torch.export.export(model, (idx,)))
    return graph.graph_module, graph.weights, time.perf_counter() - start


def training_program(model, idx):
    """(graph, weights, trace seconds) of forward + backward, via AOTAutograd's joint graph."""
    start = time.perf_counter()
    with sdpa_kernel([SDPBackend.MATH]):
        gm, signature = aot_export_module(
            TrainingStep(model),
            [idx],
            trace_joint=True,
            output_loss_index=0,
            decompositions=decomposition_table(),
        )
    parameters = dict(model.named_parameters())
    weights = {
        placeholder: parameters[name.removeprefix("model.")].detach()
        for placeholder, name in signature.inputs_to_parameters.items()
    }
    return gm, weights, time.perf_counter() - start


def estimate_all(label, step, dtype, gm, weights, trace_seconds) -> list[dict]:
    start = time.perf_counter()
    compiled = compile_graph(
        gm, name=label, weights=weights, target=TARGETS[0], stop_after="optimized", use_cache=False
    )
    lower_seconds = time.perf_counter() - start - compiled.estimate_seconds
    rows = []
    for target in TARGETS:
        lnc = logical_core_size(target)
        start = time.perf_counter()
        schedule = estimate_text(compiled.artifacts["optimized"], target, lnc)
        seconds = time.perf_counter() - start
        capacity = hardware.chip(target).hbm_bytes_per_logical_core(lnc)
        rows.append(
            {
                "model": label,
                "step": step,
                "dtype": dtype,
                "target": target,
                "latency_s": schedule.latency_s,
                "mfu": schedule.mfu,
                "peak": schedule.memory.peak_hbm_bytes,
                "weights": schedule.memory.weights_bytes,
                "fits": schedule.memory.peak_hbm_bytes <= capacity,
                "kernels": len(schedule.kernels),
                "trace_s": trace_seconds,
                "lower_s": lower_seconds,
                "estimate_s": seconds,
                "bound": _bound(schedule),
            }
        )
    return rows


def _bound(schedule) -> str:
    busy = schedule.engine_busy_seconds()
    engine = max(busy, key=busy.get)
    return f"{engine} {100 * busy[engine] / schedule.latency_s:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="skip the GPT-2-sized training step (its AOTAutograd trace is slow)",
    )
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for label, (options, shape) in CONFIGS.items():
        for dtype in (torch.float32, torch.bfloat16):
            model = GPTBlockLM(**options).to(dtype).eval()
            idx = torch.randint(0, model.tok.num_embeddings, shape)
            dtype_name = str(dtype).removeprefix("torch.")
            rows += estimate_all(label, "forward", dtype_name, *forward_program(model, idx))
            if args.quick and label != "gpt-small":
                continue
            if dtype == torch.bfloat16 and label != "gpt-small":
                continue  # one training trace of the big model is enough to show the cost
            rows += estimate_all(label, "train", dtype_name, *training_program(model, idx))
    print(
        f"{'model':<10} {'step':<8} {'dtype':<9} {'target':<6} {'est. step':>11} {'MFU':>6} "
        f"{'busiest':>12} {'peak HBM':>11} {'weights':>11} {'fits':>4} {'kernels':>7} "
        f"{'trace s':>8} {'lower s':>8} {'estimate s':>10}"
    )
    for r in rows:
        print(
            f"{r['model']:<10} {r['step']:<8} {r['dtype']:<9} {r['target']:<6} "
            f"{r['latency_s'] * 1e3:>8.3f} ms {100 * r['mfu']:>5.1f}% {r['bound']:>12} "
            f"{format_bytes(r['peak']):>11} {format_bytes(r['weights']):>11} "
            f"{'yes' if r['fits'] else 'NO':>4} {r['kernels']:>7} {r['trace_s']:>8.2f} "
            f"{r['lower_s']:>8.2f} {r['estimate_s']:>10.3f}"
        )
    print(
        "\nest. step: the cost model's latency on one logical NeuronCore (LNC=2); MFU: matmul "
        "FLOPs over that time at TensorE peak for the matmuls' dtype; peak HBM: weights, "
        "inputs, outputs and live temporaries. trace s: torch.export / AOTAutograd; lower s: "
        "FX -> optimized StableHLO; estimate s: parse + cost model + schedule + memory plan."
    )


if __name__ == "__main__":
    main()
