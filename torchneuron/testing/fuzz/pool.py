"""Worker processes that fuzz ops, surviving crashes and hangs.

Each worker (``python -m torchneuron.testing.fuzz.worker``) fuzzes many ops, one after the
other, because starting one costs seconds. Before every case it reports the case's
reproduction, so when the worker dies (a segfault in native code, an abort) or stays
silent past ``case_timeout`` (a hang or deadlock), the op is reported as ``crash``
with the reproduction of the case that did it, and a fresh worker takes the next op.

Workers run with ``TORCHNEURON_NO_FALLBACK=1`` (a fallback is a refusal, not a pass)
and no disk NEFF cache (every op is compiled cold, where crashes happen).
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from torchneuron import settings

from ..pool import BASE_ENVIRONMENT, NoAnswer, WorkerProcess, run_in_threads
from .runner import Failure, OpResult

WORKER_ENVIRONMENT = {
    **BASE_ENVIRONMENT,
    settings.NO_FALLBACK: "1",
    settings.CACHE: "0",
    settings.XLA_SINGLE_THREADED: "1",
}


@dataclass(frozen=True)
class Task:
    op: str
    family: str
    seed: int
    examples: int
    modes: tuple[str, ...]
    seconds: float
    shrink_seconds: float

    def to_json(self) -> dict:
        return {
            "op": self.op,
            "seed": self.seed,
            "examples": self.examples,
            "modes": list(self.modes),
            "seconds": self.seconds,
            "shrink_seconds": self.shrink_seconds,
        }


class _Worker(WorkerProcess):
    def __init__(self, startup_timeout: float):
        super().__init__(
            "torchneuron.testing.fuzz.worker",
            environment={**os.environ, **WORKER_ENVIRONMENT},
            name="fuzz",
            startup_timeout=startup_timeout,
            is_ready=lambda line: json.loads(line).get("event") == "ready",
        )

    def run(self, task: Task, case_timeout: float) -> OpResult:
        snippets: dict[str, str] = {}
        mode = task.modes[0]
        cases = 0
        try:
            self.send(task.to_json())
            while True:
                event = self.next_event(case_timeout)
                if event is None:
                    break
                if event["event"] == "case":
                    snippets, cases = event["snippets"], cases + 1
                elif event["event"] == "mode":
                    mode = event["mode"]
                elif event["event"] == "done":
                    return OpResult.from_json(event["result"])
            self.wait_for_exit()
            how = self.death_reason()
        except OSError:
            self.wait_for_exit()
            how = self.death_reason()
        except NoAnswer:
            how = f"hang: no progress within {case_timeout:g} s"
            self.stop()
        result = OpResult(task.op, task.family, cases=cases, crash=how)
        snippet = snippets.get(mode, "# the worker died before running a case\n")
        result.failures.append(Failure(task.op, mode, "crash", how, snippet))
        return result


class FuzzPool:
    """Runs tasks in ``workers`` worker processes, each replaced when it dies or hangs."""

    def __init__(
        self, workers: int = 1, case_timeout: float = 120.0, startup_timeout: float = 240.0
    ):
        self.workers = max(1, workers)
        self.case_timeout = case_timeout
        self.startup_timeout = startup_timeout

    def run(
        self,
        tasks: Iterable[Task],
        deadline: float | None = None,
        on_result: Callable[[OpResult], None] | None = None,
    ) -> list[OpResult]:
        """Results in the order of ``tasks``; tasks not started by ``deadline`` are left out."""
        tasks = list(tasks)
        pending: queue.Queue[tuple[int, Task]] = queue.Queue()
        for item in enumerate(tasks):
            pending.put(item)
        results: list[OpResult | None] = [None] * len(tasks)
        lock = threading.Lock()

        def serve() -> None:
            worker: _Worker | None = None
            try:
                while True:
                    try:
                        index, task = pending.get_nowait()
                    except queue.Empty:
                        return
                    if deadline is not None:
                        left = deadline - time.monotonic()
                        if left < 1:
                            return
                        task = _with_seconds(task, min(task.seconds, left))
                    if worker is None or not worker.alive():
                        worker = _Worker(self.startup_timeout)
                    result = worker.run(task, self.case_timeout)
                    if result.crash:
                        worker.close()
                        worker = None
                    with lock:
                        results[index] = result
                        if on_result is not None:
                            on_result(result)
            finally:
                if worker is not None:
                    worker.close()

        run_in_threads(min(self.workers, max(1, len(tasks))), serve)
        return [result for result in results if result is not None]


def _with_seconds(task: Task, seconds: float) -> Task:
    return Task(
        task.op, task.family, task.seed, task.examples, task.modes, seconds, task.shrink_seconds
    )
