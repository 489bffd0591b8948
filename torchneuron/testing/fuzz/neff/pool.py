"""Worker processes that run NEFF fuzz cases, surviving crashes and hangs.

Each worker (``python -m torchneuron.testing.fuzz.neff.worker``) runs many cases, because
starting one (XLA, the MLIR bindings) costs about a second. A worker that dies
during a case makes that case a ``crash`` (the signal and the first telling line of
its stderr: an LLVM error, a glibc message, Python's fatal error); one that says
nothing for ``timeout`` seconds makes it a ``hang``: it is killed. Either way a fresh
worker takes the next case.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from torchneuron import settings

from ...pool import BASE_ENVIRONMENT, NoAnswer, WorkerProcess, run_in_threads

WORKER_ENVIRONMENT = {
    **BASE_ENVIRONMENT,
    settings.CACHE: "0",
    settings.XLA_SINGLE_THREADED: "1",
}
STARTUP_TIMEOUT = 240.0
# stderr lines that say why a process died, most telling first
_TELLING = ("LLVM ERROR", "terminate called", "malloc", "free()", "double free", "corrupted",
            "Check failed", "F0", "Fatal Python error", "Segmentation fault", "Aborted")  # fmt: skip


@dataclass
class CaseReport:
    """What became of one case, as the parent saw it."""

    index: int
    outcome: str
    mutator: str = "?"
    entry: str = "?"
    note: str = ""
    forbidden: bool = False
    stage: str = "?"
    detail: dict = field(default_factory=dict)
    seconds: float = 0.0


class _Worker(WorkerProcess):
    def __init__(self, corpus_dir: str, mutators: tuple[str, ...], memory_mib: int, cli: bool):
        super().__init__(
            "torchneuron.testing.fuzz.neff.worker",
            (corpus_dir, ",".join(mutators), str(memory_mib), "cli" if cli else "no-cli"),
            environment={**os.environ, **WORKER_ENVIRONMENT},
            name="NEFF fuzz",
            startup_timeout=STARTUP_TIMEOUT,
            is_ready=lambda line: json.loads(line).get("event") == "ready",
        )

    def run(self, seed: int, index: int, cli: bool, timeout: float) -> CaseReport:
        report = CaseReport(index, "crash")
        start = time.monotonic()
        try:
            self.send({"seed": seed, "index": index, "cli": cli})
            while True:
                event = self.next_event(start + timeout - time.monotonic())
                if event is None:
                    break
                if event["event"] == "case":
                    report.mutator, report.entry = event["mutator"], event["entry"]
                    report.note, report.forbidden = event["note"], event["forbidden"]
                elif event["event"] == "stage":
                    report.stage = event["stage"]
                elif event["event"] == "done":
                    result = event["result"]
                    report.outcome = result.pop("outcome")
                    report.stage = result.pop("stage", report.stage)
                    report.seconds = result.pop("seconds", time.monotonic() - start)
                    report.detail = result
                    return report
            self.wait_for_exit()
            report.detail = {"type": self.signal_name(), "message": self.log_tail()}
        except OSError:
            self.wait_for_exit()
            report.detail = {"type": self.signal_name(), "message": self.log_tail()}
        except NoAnswer:
            report.outcome = "hang"
            report.detail = {"type": f"no answer in {timeout:g} s", "message": ""}
            self.interrupt()
            report.detail["message"] = self.log_tail()
        report.seconds = time.monotonic() - start
        if report.forbidden and report.stage in ("execute", "cli-run"):
            report.outcome = "forbidden-executed"
        return report

    def death_reason(self) -> str:
        return f"{self.signal_name()}: {self.log_tail()}"

    def log_tail(self) -> str:
        """The most telling line of the log's last 64 KiB (``_TELLING``), with the first
        Python frame, else its last line."""
        lines = self.log_lines(tail_bytes=65536)
        if lines is None:
            return "no log"
        for marker in _TELLING:
            for line in lines:
                if line.startswith(marker) or (len(marker) > 3 and marker in line):
                    frame = next((f for f in lines if f.startswith("File ")), "")
                    return f"{line[:200]} {('| ' + frame[:160]) if frame else ''}".strip()
        return lines[-1][:200] if lines else "no output"


class WorkerPool:
    """Runs cases ``indices`` of run ``seed`` on ``workers`` processes."""

    def __init__(
        self,
        corpus_dir: str,
        mutators: tuple[str, ...],
        *,
        workers: int = 1,
        timeout: float = 60.0,
        memory_mib: int = 4096,
        cli_every: int = 0,
    ):
        self.corpus_dir = str(corpus_dir)
        self.mutators = mutators
        self.workers = max(1, workers)
        self.timeout = timeout
        self.memory_mib = memory_mib
        self.cli_every = cli_every  # every n-th case also runs through neuronc (0: never)
        self.restarts = 0

    def run(self, seed: int, indices: range, on_report: Callable[[CaseReport], None]) -> None:
        pending: queue.Queue[int] = queue.Queue()
        for index in indices:
            pending.put(index)
        lock = threading.Lock()

        def serve() -> None:
            worker: _Worker | None = None
            try:
                while True:
                    try:
                        index = pending.get_nowait()
                    except queue.Empty:
                        return
                    if worker is None or not worker.alive():
                        if worker is not None:
                            worker.close()
                            with lock:
                                self.restarts += 1
                        worker = _Worker(
                            self.corpus_dir, self.mutators, self.memory_mib, self.cli_every > 0
                        )
                    cli = bool(self.cli_every) and index % self.cli_every == self.cli_every - 1
                    report = worker.run(seed, index, cli, self.timeout)
                    if report.outcome in ("crash", "hang"):
                        worker.stop()
                    with lock:
                        on_report(report)
            finally:
                if worker is not None:
                    worker.close()

        run_in_threads(self.workers, serve)
