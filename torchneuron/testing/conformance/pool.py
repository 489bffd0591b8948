"""A pool of long-lived worker processes that run OpInfo entries, surviving crashes.

Starting a worker costs seconds (torch, torch-mlir, jax and the op database
are imported), so each worker runs many entries. When a worker dies (a
segfault in native code, an abort, the OOM killer) or an entry runs past the
time limit, that entry is reported as ``crash`` or ``timeout`` and a fresh
worker takes over the remaining entries; the run itself always completes.
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from torchneuron import settings

from .opinfo import DEFAULT_SAMPLES, Outcome

# Environment of every worker: results must not depend on the caller's settings.
WORKER_ENVIRONMENT = {
    settings.CACHE: "0",  # no disk NEFF cache: every program compiled fresh
    settings.XLA_SINGLE_THREADED: "1",  # one core per worker
    "OMP_NUM_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "PYTHONFAULTHANDLER": "1",  # a crash leaves a Python stack in the log
}
REMOVED_ENVIRONMENT = (settings.NO_FALLBACK,)  # fallback is measured, not forbidden


@dataclass(frozen=True)
class Task:
    entry: str
    mode: str
    dtype: str
    samples: int = DEFAULT_SAMPLES

    def to_json(self) -> dict:
        return {
            "entry": self.entry,
            "mode": self.mode,
            "dtype": self.dtype,
            "samples": self.samples,
        }


class _NoAnswer(Exception):
    """A worker said nothing within the time limit (not an OSError: pipe errors are those)."""


class _Worker:
    """One worker process, its output lines arriving on a queue."""

    def __init__(self, startup_timeout: float):
        environment = {k: v for k, v in os.environ.items() if k not in REMOVED_ENVIRONMENT}
        environment.update(WORKER_ENVIRONMENT)
        # lives as long as the worker; closed by stop()
        self.log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "torchneuron.testing.conformance.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=environment,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.tasks_done = 0
        try:
            ready = self._next_line(startup_timeout)
        except _NoAnswer:
            ready = None
        if ready is None or not json.loads(ready).get("ready"):
            detail = self.death_reason()
            self.stop()
            raise RuntimeError(f"a conformance worker failed to start: {detail}")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _next_line(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise _NoAnswer from None

    def run(self, task: Task, timeout: float) -> Outcome:
        try:
            self.process.stdin.write(json.dumps(task.to_json()) + "\n")
            self.process.stdin.flush()
            line = self._next_line(timeout)
        except OSError:  # the worker closed its end of the pipe: it died
            line = None
        except _NoAnswer:
            self.stop()
            return Outcome(
                task.entry,
                task.mode,
                task.dtype,
                "timeout",
                f"no result within {timeout:g} s",
                seconds=timeout,
            )
        if line is None:
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            return Outcome(task.entry, task.mode, task.dtype, "crash", self.death_reason())
        self.tasks_done += 1
        return Outcome.from_json(json.loads(line))

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
        return f"the worker process {how}; {self._log_tail()}"[:400]

    def _log_tail(self) -> str:
        self.log.seek(0)
        text = self.log.read().decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        # faulthandler's report starts with the fatal signal; else the last message.
        for index, line in enumerate(lines):
            if line.startswith("Fatal Python error"):
                return " | ".join(lines[index : index + 1] + _innermost_frame(lines[index:]))
        return lines[-1] if lines else "no output"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()


def _innermost_frame(lines: list[str]) -> list[str]:
    frames = [line for line in lines if line.startswith("File ")]
    return frames[:1]


class WorkerPool:
    """Runs tasks in ``workers`` worker processes; each is replaced when it dies.

    ``timeout`` bounds one entry (all its samples); ``max_tasks`` recycles a
    worker after that many entries, bounding what compile caches accumulate.
    """

    def __init__(
        self,
        workers: int = 2,
        timeout: float = 120.0,
        max_tasks: int = 250,
        startup_timeout: float = 180.0,
    ):
        self.workers = max(1, workers)
        self.timeout = timeout
        self.max_tasks = max_tasks
        self.startup_timeout = startup_timeout

    def _start_worker(self) -> _Worker:
        # a second try: on a loaded machine one start can take longer than the limit
        try:
            return _Worker(self.startup_timeout)
        except RuntimeError:
            return _Worker(self.startup_timeout)

    def run(
        self, tasks: Iterable[Task], on_outcome: Callable[[Outcome], None] | None = None
    ) -> list[Outcome]:
        """Run every task; outcomes come back in the order of ``tasks``."""
        tasks = list(tasks)
        pending: queue.Queue[tuple[int, Task]] = queue.Queue()
        for item in enumerate(tasks):
            pending.put(item)
        outcomes: list[Outcome | None] = [None] * len(tasks)
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
                    if worker is None or not worker.alive() or worker.tasks_done >= self.max_tasks:
                        if worker is not None:
                            worker.stop()
                        worker = self._start_worker()
                    outcome = worker.run(task, self.timeout)
                    if outcome.status in ("crash", "timeout"):
                        worker.stop()
                        worker = None
                    with lock:
                        outcomes[index] = outcome
                        if on_outcome is not None:
                            on_outcome(outcome)
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
        return [o for o in outcomes if o is not None]
