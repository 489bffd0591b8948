"""What a new sequence length costs under torch.compile(dynamic=True), and why it differs.

For the zoo GPT in inference, one thread, natively (``TORCHNEURON_NO_FALLBACK=1``):
each mode runs in two fresh processes sharing one empty cache folder, so the first
shows the cost of a length nobody compiled and the second the cost with the disk cache
an earlier process left (graph entries and XLA executables). Modes: the default (auto
buckets: one specialization per bucket) and ``options={"buckets": None}`` (exact sizes:
one specialization per length).

    python benchmarks/dynamic_new_shapes.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WARM_UP = (16, 20)  # the trace and the front half, and two specializations
LENGTHS = (17, 19, 21, 23, 25, 27, 29, 31)  # the zoo GPT holds 32 positions


def child(mode: str) -> None:
    import torch

    from torchneuron.zoo import ZOO

    torch.set_num_threads(1)
    model = ZOO["gpt"].build().eval()
    options = {} if mode == "auto" else {"buckets": None}  # auto buckets are the default
    compiled = torch.compile(model, backend="neuron", dynamic=True, options=options)
    times = {}
    with torch.no_grad():
        for length in WARM_UP:
            compiled(torch.randint(0, 128, (2, length)))
        for length in LENGTHS:
            tokens = torch.randint(0, 128, (2, length))
            start = time.perf_counter()
            compiled(tokens)
            first = time.perf_counter() - start
            start = time.perf_counter()
            compiled(tokens)
            times[length] = (first, time.perf_counter() - start)
    print(json.dumps(times))


def run(mode: str, cache: str) -> dict[int, tuple[float, float]]:
    environment = {
        **os.environ,
        "TORCHNEURON_NO_FALLBACK": "1",
        "TORCHNEURON_XLA_SINGLE_THREADED": "1",
        "TORCHNEURON_CACHE_DIR": cache,
    }
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the {mode} child failed:\n{done.stderr[-3000:]}")
    return {int(k): tuple(v) for k, v in json.loads(done.stdout.splitlines()[-1]).items()}


def main() -> None:
    print("zoo GPT inference, dynamic=True: ms for each new length (first call, then again)")
    for mode in ("exact", "auto"):
        with tempfile.TemporaryDirectory() as cache:
            for process in ("first process", "second process"):
                times = run(mode, cache)
                row = "  ".join(f"{n}:{1e3 * t[0]:.0f}" for n, t in times.items())
                median_new = statistics.median(1e3 * t[0] for t in times.values())
                median_again = statistics.median(1e3 * t[1] for t in times.values())
                print(f"{mode:5} {process:14} new {median_new:7.1f} ms median, "
                      f"again {median_again:5.1f} ms | {row}")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
