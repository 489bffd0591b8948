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
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from torchneuron import settings

from .runner import Failure, OpResult

WORKER_ENVIRONMENT = {
    settings.NO_FALLBACK: "1",
    settings.CACHE: "0",
    settings.XLA_SINGLE_THREADED: "1",
    "OMP_NUM_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "PYTHONFAULTHANDLER": "1",
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


class _Silent(Exception):
    """The worker said nothing within the time limit."""


class _Worker:
    def __init__(self, startup_timeout: float):
        environment = dict(os.environ)
        environment.update(WORKER_ENVIRONMENT)
        self.log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "torchneuron.testing.fuzz.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=environment,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            ready = self._next(startup_timeout)
        except _Silent:
            ready = None
        if ready is None or ready.get("event") != "ready":
            reason = self.death_reason()
            self.stop()
            raise RuntimeError(f"a fuzz worker failed to start: {reason}")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _next(self, timeout: float) -> dict | None:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise _Silent from None
        return None if line is None else json.loads(line)

    def run(self, task: Task, case_timeout: float) -> OpResult:
        snippets: dict[str, str] = {}
        mode = task.modes[0]
        cases = 0
        try:
            self.process.stdin.write(json.dumps(task.to_json()) + "\n")
            self.process.stdin.flush()
            while True:
                event = self._next(case_timeout)
                if event is None:
                    break
                if event["event"] == "case":
                    snippets, cases = event["snippets"], cases + 1
                elif event["event"] == "mode":
                    mode = event["mode"]
                elif event["event"] == "done":
                    return OpResult.from_json(event["result"])
            self._wait_for_exit()
            how = self.death_reason()
        except OSError:
            self._wait_for_exit()
            how = self.death_reason()
        except _Silent:
            how = f"hang: no progress within {case_timeout:g} s"
            self.stop()
        result = OpResult(task.op, task.family, cases=cases, crash=how)
        snippet = snippets.get(mode, "# the worker died before running a case\n")
        result.failures.append(Failure(task.op, mode, "crash", how, snippet))
        return result

    def _wait_for_exit(self) -> None:
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def alive(self) -> bool:
        return self.process.poll() is None

    def death_reason(self) -> str:
        code = self.process.poll()
        if code is None:
            how = "stopped responding"
        elif code < 0:
            how = f"killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with status {code}"
        return f"the worker process {how}; {self._log_tail()}"[:500]

    def _log_tail(self) -> str:
        if self.log.closed:
            return "no log"
        self.log.seek(0)
        text = self.log.read().decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        for index, line in enumerate(lines):
            if line.startswith("Fatal Python error"):
                frames = [f for f in lines[index:] if f.startswith("File ")]
                return " | ".join([line, *frames[:1]])
        return lines[-1] if lines else "no output"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if not self.log.closed:
            self.log.close()


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
        failures: list[BaseException] = []

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
                        worker.stop()
                        worker = None
                    with lock:
                        results[index] = result
                        if on_result is not None:
                            on_result(result)
            except BaseException as error:
                failures.append(error)
            finally:
                if worker is not None:
                    worker.stop()

        threads = [
            threading.Thread(target=serve, daemon=True)
            for _ in range(min(self.workers, max(1, len(tasks))))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        return [result for result in results if result is not None]


def _with_seconds(task: Task, seconds: float) -> Task:
    return Task(
        task.op, task.family, task.seed, task.examples, task.modes, seconds, task.shrink_seconds
    )
