"""Plans of real training runs next to the throughput AWS published for them.

    python benchmarks/plan_validation.py            # the table (about a minute)
    python benchmarks/plan_validation.py --sizes    # also time `neuronc plan` on full-size
                                                    # models (wall time and peak RSS)

Every published figure is from the Neuron documentation's Trn1 training performance
tables (the CSV files behind them in github.com/aws-neuron/aws-neuron-sdk, at the commits
named below), the only published throughput of real Trainium training runs we found: no
Trainium2 training figures are published. So the plans here are for trn1.32xlarge
(``target/trainium1.py``), with the model, node count, sequence length, global batch
and layout of the published run. The published runs use sequence parallelism and
(selective) activation checkpointing (their tutorials say so); the plans use sequence
parallelism and full checkpointing, and DDP where the runs use ZeRO-1 (the same
gradient traffic). tokens/s = published sequences/s x sequence length.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "examples" / "configs"
_CSV = "https://github.com/aws-neuron/aws-neuron-sdk/blob/{}/{}/benchmarks/trn1/training_data_decoder.csv"
SDK_224 = _CSV.format("7c165a3e01131a86537f6e0b3ba43716e44d8bc4", "about-neuron")
SDK_221 = _CSV.format("752349fd3de5aaa6eb69690955eeaa7d43fcd082", "general")


@dataclass(frozen=True)
class Run:
    model: str  # examples/configs/<model>.json
    label: str
    nodes: int
    seq: int
    batch: int
    tp: int
    dp: int
    pp: int
    published_seq_per_s: float
    sdk: str
    source: str


RUNS = (
    Run("llama-3-8b", "Llama-3.1-8B", 32, 8192, 1024, 32, 32, 1, 47.95, "2.24.0", SDK_224),
    Run("llama-3-70b", "Llama-3.1-70B", 32, 8192, 1024, 32, 4, 8, 7.94, "2.24.0", SDK_224),
    Run("llama-2-7b", "Llama2-7B", 16, 4096, 1024, 8, 64, 1, 95.14, "2.21.0", SDK_221),
    Run("llama-2-13b", "Llama2-13B", 32, 4096, 1024, 8, 16, 8, 80.33, "2.21.0", SDK_221),
    Run("llama-2-70b", "Llama2-70B", 32, 4096, 1024, 32, 4, 8, 14.44, "2.21.0", SDK_221),
)


def plan_run(run: Run):
    from torchneuron.estimate.model_plan import plan_model
    from torchneuron.estimate.model_source import parse_source
    from torchneuron.estimate.plan_types import Layout

    layout = Layout(
        dp=run.dp,
        tp=run.tp,
        pp=run.pp,
        target="trn1",
        instance="trn1.32xlarge",
        instances=run.nodes,
        sequence_parallel=True,
    )
    source = parse_source(f"hf:{CONFIGS / (run.model + '.json')}")
    return plan_model(source, layout, batch=run.batch, seq=run.seq, ac=True)


def table() -> None:
    print(
        "| model | trn1.32xlarge nodes | seq | global batch | layout | published tokens/s "
        "(SDK) | planned tokens/s | planned / published | planned MFU | peak HBM per core |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in RUNS:
        plan = plan_run(run)
        published = run.published_seq_per_s * run.seq
        planned = plan.summary()["tokens_per_s"]
        layout = f"TP {run.tp} x DP {run.dp}" + (f" x PP {run.pp}" if run.pp > 1 else "")
        fits = "" if plan.fits else " (does not fit)"
        print(
            f"| {run.label} | {run.nodes} | {run.seq} | {run.batch} | {layout} | "
            f"{published:,.0f} ({run.sdk}) | {planned:,.0f} | {planned / published:.2f} | "
            f"{100 * plan.mfu:.1f}% | {plan.memory['peak'] / 2**30:.1f} GiB{fits} |"
        )
    print()
    print("sources:")
    for source in sorted({run.source for run in RUNS}):
        print(f"  {source}")


def sizes() -> None:
    """``neuronc plan`` on the issue's full-size command lines: wall time and peak RSS."""
    lines = [
        ("llama-3-8b", ["--fsdp", "16", "--tp", "4"]),
        ("llama-3-70b", ["--nodes", "8", "--fsdp", "128", "--tp", "4", "--ac"]),
        ("mixtral-8x7b", ["--nodes", "4", "--fsdp", "64", "--tp", "4", "--ac"]),
    ]
    print("| command | wall s | peak RSS MB | exit |")
    print("|---|---|---|---|")
    for model, flags in lines:
        args = [
            sys.executable, "-m", "torchneuron.cli", "plan", "--model",
            f"hf:{CONFIGS / (model + '.json')}", "--instance", "trn2", "--batch", "1024",
            "--seq", "4096", *flags,
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True)
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        rss = max(peak, before) / 1024
        shown = " ".join(["neuronc plan --model", f"hf:{model}.json", *args[8:]])
        print(f"| `{shown}` | {wall:.1f} | {rss:.0f} | {done.returncode} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", action="store_true", help="also time full-size plans")
    args = parser.parse_args()
    table()
    if args.sizes:
        print()
        sizes()


if __name__ == "__main__":
    main()
