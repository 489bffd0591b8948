"""Real models at the scale users train: GPT-2 124M and a Llama-shaped model.

For each model, training step (forward, cross-entropy, backward, SGD) and inference
(forward under ``torch.no_grad``), each engine in its own fresh process so that its
peak RSS is its own: eager CPU, Inductor, ``torch.compile(backend="neuron")`` and
eager on the ``neuron`` device. Every process builds the same model from the same
seed (transformers' ``GPT2LMHeadModel(GPT2Config())`` with dropout 0; a
``LlamaForCausalLM`` with hidden 2048, 8 heads, 2 KV heads, SwiGLU 5632, 2 layers,
vocabulary 32,000), random weights, the same token batch; it reports the first call
(compile included), the median of the timed calls, peak RSS and the losses, which
must equal eager CPU's. Natively (``TORCHNEURON_NO_FALLBACK=1``), fresh cache folders.

Single-threaded by default (torch threads 1, ``TORCHNEURON_XLA_SINGLE_THREADED=1``,
``OMP_NUM_THREADS=1``); ``--threads all`` leaves every thread setting at its default.
Processes run one after another on a noisy machine: read the ratios, run twice.

    pip install -e '.[bench]'       # transformers
    python benchmarks/scale.py [--models gpt2,llama] [--modes train,infer]
                               [--engines eager,inductor,neuron,neuron-eager]
                               [--steps 5] [--threads one|all]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = {
    "gpt2": {"batch": (1, 128)},
    "llama": {"batch": (1, 256)},
}
ENGINES = ("eager", "inductor", "neuron", "neuron-eager")


def build(name: str):
    import torch

    torch.manual_seed(0)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        return GPT2LMHeadModel(config), config.vocab_size
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=2048,
        num_attention_heads=8,
        num_key_value_heads=2,
        intermediate_size=5632,
        num_hidden_layers=2,
        vocab_size=32000,
        max_position_embeddings=512,
        attn_implementation="sdpa",
    )
    return LlamaForCausalLM(config), config.vocab_size


def child(model_name: str, mode: str, engine: str, steps: int, threads: str) -> dict:
    import resource

    import torch

    if threads == "one":
        torch.set_num_threads(1)
    model, vocab = build(model_name)
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, MODELS[model_name]["batch"], generator=generator)
    device = "neuron" if engine == "neuron-eager" else "cpu"
    if device == "neuron":
        import torchneuron  # noqa: F401

        model = model.to(device)
        tokens = tokens.to(device)
    if mode == "infer":
        model.eval()
    fn = model
    if engine in ("inductor", "neuron"):
        fn = torch.compile(model, backend=engine)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def call() -> float:
        if mode == "infer":
            with torch.no_grad():
                return fn(input_ids=tokens, labels=tokens).loss.item()
        opt.zero_grad(set_to_none=True)
        loss = fn(input_ids=tokens, labels=tokens).loss
        loss.backward()
        opt.step()
        return loss.item()

    start = time.perf_counter()
    losses = [call()]
    first = time.perf_counter() - start
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        losses.append(call())
        times.append(time.perf_counter() - start)
    return {
        "first": first,
        "step": statistics.median(times),
        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "losses": losses,
    }


def run_child(args, model: str, mode: str, engine: str) -> dict:
    environment = dict(os.environ, TORCHNEURON_NO_FALLBACK="1")
    environment["TORCHNEURON_CACHE_DIR"] = tempfile.mkdtemp(prefix="scale-neuron-")
    environment["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="scale-inductor-")
    if args.threads == "one":
        environment.update(OMP_NUM_THREADS="1", TORCHNEURON_XLA_SINGLE_THREADED="1")
    command = [sys.executable, __file__, "--child", f"{model},{mode},{engine}"]
    command += ["--steps", str(args.steps), "--threads", args.threads]
    done = subprocess.run(command, capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])[:400]
        return {"error": f"exit {done.returncode}: {tail}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--modes", default="train,infer")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", choices=("one", "all"), default="one")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        model, mode, engine = args.child.split(",")
        print(json.dumps(child(model, mode, engine, args.steps, args.threads)))
        return
    print(f"threads: {args.threads}; TORCHNEURON_NO_FALLBACK=1; {args.steps} timed steps each")
    for model in args.models.split(","):
        for mode in args.modes.split(","):
            rows = {
                engine: run_child(args, model, mode, engine) for engine in args.engines.split(",")
            }
            print(f"\n{model} {mode} (batch {'x'.join(map(str, MODELS[model]['batch']))})")
            print(
                f"{'':14}{'first (s)':>10}{'step (ms)':>11}{'/eager':>8}{'/inductor':>10}"
                f"{'RSS (GB)':>10}{'/eager':>8}  losses equal eager's"
            )
            eager, inductor = rows.get("eager", {}), rows.get("inductor", {})
            for engine, row in rows.items():
                if "error" in row:
                    print(f"{engine:14}{row['error']}")
                    continue

                def ratio(other: dict, key: str, row=row) -> str:
                    return f"{row[key] / other[key]:.2f}x" if key in other else "-"

                same = "-"
                if "losses" in eager:
                    same = str(
                        all(
                            abs(a - b) <= 1e-4 * max(1.0, abs(b))
                            for a, b in zip(row["losses"], eager["losses"])
                        )
                    )
                print(
                    f"{engine:14}{row['first']:>10.1f}{row['step'] * 1e3:>11.0f}"
                    f"{ratio(eager, 'step'):>8}{ratio(inductor, 'step'):>10}"
                    f"{row['rss'] / 1e9:>10.2f}{ratio(eager, 'rss'):>8}  {same} "
                    f"({row['losses'][0]:.4f})"
                )


if __name__ == "__main__":
    main()
