"""A conformance worker process: runs OpInfo entries handed to it, one per line.

Protocol (used by ``pool.WorkerPool``): the worker prints ``{"ready": true}``
once its imports are done, then for every task line ``{"entry", "mode",
"dtype", "samples"}`` read from stdin it prints one ``Outcome`` as a JSON line.
Results go to a private copy of the original stdout; file descriptor 1 itself is
pointed at stderr, so native code that prints cannot corrupt the protocol.

    python -m torchneuron.testing.conformance.worker

Entries named ``selftest.*`` exercise the pool's isolation rather than an op:
``selftest.pass`` passes, ``selftest.crash`` dies of SIGSEGV in native code and
``selftest.hang`` never answers.
"""

from __future__ import annotations

import json
import os
import sys
import warnings


def main() -> int:
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")

    import torchneuron  # noqa: F401 - registers the neuron device
    from torchneuron import backend  # noqa: F401 - the compiler and its imports
    from torchneuron.testing.compile_cost import skip_guard_latency_profiling

    skip_guard_latency_profiling()  # each sample's graph is compiled once

    from .opinfo import op_database, run_entry

    op_database()
    results.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        if task["entry"].startswith("selftest."):
            outcome = _self_test(task)
        else:
            outcome = run_entry(task["entry"], task["mode"], task["dtype"], task.get("samples"))
        results.write(json.dumps(outcome.to_json()) + "\n")
    return 0


def _self_test(task: dict):
    import ctypes
    import time

    from .opinfo import Outcome

    kind = task["entry"].removeprefix("selftest.")
    if kind == "crash":
        ctypes.string_at(0)  # reads address 0: SIGSEGV, as a native-code bug would
    if kind == "hang":
        time.sleep(3600)
    return Outcome(
        task["entry"],
        task["mode"],
        task["dtype"],
        "pass" if kind == "pass" else "error",
        "" if kind == "pass" else f"unknown self-test {kind!r}",
    )


if __name__ == "__main__":
    sys.exit(main())
