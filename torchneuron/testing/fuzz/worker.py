"""A fuzz worker process: fuzzes the ops handed to it, one JSON task per line.

Protocol (used by ``pool.FuzzPool``): the worker prints ``{"event": "ready"}`` once
its imports are done; for each task line ``{"op", "seed", "examples", "modes",
"seconds", "shrink_seconds"}`` it prints ``{"event": "case", "op", "snippet"}``
(its reproduction per mode) before running each new case and ``{"event": "mode",
"mode"}`` before each mode runs it, so a crash is attributed to its case and mode, and ``{"event": "done", "result": OpResult}`` at the end. Events go to a private
copy of the original stdout; file descriptor 1 itself points at stderr, so native
code that prints cannot corrupt the protocol.

    python -m torchneuron.testing.fuzz.worker
"""

from __future__ import annotations

import json
import os
import sys
import warnings


def main() -> int:
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")

    import torchneuron  # noqa: F401 - registers the neuron device
    from torchneuron import backend  # noqa: F401 - the compiler and its imports

    from .ops import lookup
    from .repro import snippet
    from .runner import fuzz_op

    def emit(event: dict) -> None:
        events.write(json.dumps(event) + "\n")

    emit({"event": "ready"})
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        op = lookup(task["op"])
        modes = tuple(task["modes"])

        def on_case(case, op=op, modes=modes):
            snippets = {mode: snippet(case, op, mode) for mode in modes}
            emit({"event": "case", "op": op.name, "snippets": snippets})

        def on_mode(mode):
            emit({"event": "mode", "mode": mode})

        result = fuzz_op(
            op,
            task["seed"],
            task["examples"],
            modes,
            task["seconds"],
            task["shrink_seconds"],
            on_case,
            on_mode,
        )
        emit({"event": "done", "result": result.to_json()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
