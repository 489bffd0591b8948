"""A pool of long-lived worker processes that run OpInfo entries, surviving crashes.

Starting a worker costs seconds (torch, torch-mlir, jaxlib and the op database
are imported), so each worker runs many entries. When a worker dies (a
segfault in native code, an abort, the OOM killer) or an entry runs past the
time limit, that entry is reported as ``crash`` or ``timeout`` and a fresh
worker takes over the remaining entries; the run itself always completes.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from torchneuron import settings

from ..pool import BASE_ENVIRONMENT, NoAnswer, WorkerProcess, run_in_threads
from .opinfo import Outcome

# Environment of every worker: results must not depend on the caller's settings.
WORKER_ENVIRONMENT = {
    **BASE_ENVIRONMENT,
    settings.CACHE: "0",  # no disk NEFF cache: every program compiled fresh
    settings.XLA_SINGLE_THREADED: "1",  # one core per worker
}
REMOVED_ENVIRONMENT = (settings.NO_FALLBACK,)  # fallback is measured, not forbidden


@dataclass(frozen=True)
class Task:
    entry: str
    mode: str
    dtype: str
    # None: the worker's run_entry takes default_samples(mode, dtype), as the expectations
    samples: int | None = None

    def to_json(self) -> dict:
        return {
            "entry": self.entry,
            "mode": self.mode,
            "dtype": self.dtype,
            "samples": self.samples,
        }


class _Worker(WorkerProcess):
    """One conformance worker; counts the entries it has run (the pool recycles it)."""

    reason_limit = 400

    def __init__(self, startup_timeout: float):
        environment = {k: v for k, v in os.environ.items() if k not in REMOVED_ENVIRONMENT}
        environment.update(WORKER_ENVIRONMENT)
        super().__init__(
            "torchneuron.testing.conformance.worker",
            environment=environment,
            name="conformance",
            startup_timeout=startup_timeout,
            is_ready=lambda line: bool(json.loads(line).get("ready")),
        )
        self.tasks_done = 0

    def run(self, task: Task, timeout: float) -> Outcome:
        try:
            self.send(task.to_json())
            line = self.next_line(timeout)
        except OSError:  # the worker closed its end of the pipe: it died
            line = None
        except NoAnswer:
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
            self.wait_for_exit()
            return Outcome(task.entry, task.mode, task.dtype, "crash", self.death_reason())
        self.tasks_done += 1
        return Outcome.from_json(json.loads(line))

    def resident_mib(self) -> float | None:
        return resident_mib(self.process.pid)


def resident_mib(pid: int) -> float | None:
    """The resident memory of process ``pid`` in MiB (Linux's /proc), or None where it
    cannot be read (another system, a process gone)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class WorkerPool:
    """Runs tasks in ``workers`` worker processes; each is replaced when it dies.

    ``timeout`` bounds one entry (all its samples). A worker is recycled once its
    resident memory reaches ``max_resident_mib`` (what compile caches accumulate: a
    worker grew from ~650 MB to ~1.3 GB over 500 entries) or after ``max_tasks``
    entries, whichever comes first (the count alone where memory cannot be read). A
    start costs 5-11 s (torch, the backend, PyTorch's op database), so a worker runs as
    many entries as its memory allows.
    """

    def __init__(
        self,
        workers: int = 2,
        timeout: float = 120.0,
        max_tasks: int = 2000,
        startup_timeout: float = 180.0,
        max_resident_mib: float = 2048.0,
    ):
        self.workers = max(1, workers)
        self.timeout = timeout
        self.max_tasks = max_tasks
        self.startup_timeout = startup_timeout
        self.max_resident_mib = max_resident_mib

    def worn(self, worker) -> bool:
        """Whether ``worker`` (alive) is to be replaced before its next entry."""
        if worker.tasks_done >= self.max_tasks:
            return True
        resident = worker.resident_mib()
        return resident is not None and resident >= self.max_resident_mib

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

        def serve() -> None:
            worker: _Worker | None = None
            try:
                while True:
                    try:
                        index, task = pending.get_nowait()
                    except queue.Empty:
                        return
                    if worker is None or not worker.alive() or self.worn(worker):
                        if worker is not None:
                            worker.close()
                        worker = self._start_worker()
                    outcome = worker.run(task, self.timeout)
                    if outcome.status in ("crash", "timeout"):
                        worker.close()
                        worker = None
                    with lock:
                        outcomes[index] = outcome
                        if on_outcome is not None:
                            on_outcome(outcome)
            finally:
                if worker is not None:
                    worker.close()

        run_in_threads(min(self.workers, max(1, len(tasks))), serve)
        return [o for o in outcomes if o is not None]
