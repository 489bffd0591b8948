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
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from torchneuron import settings

WORKER_ENVIRONMENT = {
    settings.CACHE: "0",
    settings.XLA_SINGLE_THREADED: "1",
    "OMP_NUM_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "PYTHONFAULTHANDLER": "1",
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


class _Silent(Exception):
    pass


class _Worker:
    def __init__(self, corpus_dir: str, mutators: tuple[str, ...], memory_mib: int, cli: bool):
        environment = dict(os.environ)
        environment.update(WORKER_ENVIRONMENT)
        handle, self.log_path = tempfile.mkstemp(prefix="neff-fuzz-worker-", suffix=".log")
        os.close(handle)
        log_fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "torchneuron.testing.fuzz.neff.worker", corpus_dir,
             ",".join(mutators), str(memory_mib), "cli" if cli else "no-cli"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            env=environment,
            text=True,
            bufsize=1,
        )  # fmt: skip
        os.close(log_fd)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            ready = self._next(STARTUP_TIMEOUT)
        except _Silent:
            ready = None
        if ready is None or ready.get("event") != "ready":
            reason = self.death_reason()
            self.stop()
            raise RuntimeError(f"a NEFF fuzz worker failed to start: {reason}")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _next(self, timeout: float) -> dict | None:
        try:
            line = self.lines.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            raise _Silent from None
        return None if line is None else json.loads(line)

    def run(self, seed: int, index: int, cli: bool, timeout: float) -> CaseReport:
        report = CaseReport(index, "crash")
        start = time.monotonic()
        try:
            self.process.stdin.write(json.dumps({"seed": seed, "index": index, "cli": cli}) + "\n")
            self.process.stdin.flush()
            while True:
                event = self._next(start + timeout - time.monotonic())
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
            self._wait_for_exit()
            report.detail = {"type": self.signal_name(), "message": self.log_tail()}
        except OSError:
            self._wait_for_exit()
            report.detail = {"type": self.signal_name(), "message": self.log_tail()}
        except _Silent:
            report.outcome = "hang"
            report.detail = {"type": f"no answer in {timeout:g} s", "message": ""}
            self.interrupt()
            report.detail["message"] = self.log_tail()
        report.seconds = time.monotonic() - start
        if report.forbidden and report.stage in ("execute", "cli-run"):
            report.outcome = "forbidden-executed"
        return report

    def _wait_for_exit(self) -> None:
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def alive(self) -> bool:
        return self.process.poll() is None

    def signal_name(self) -> str:
        code = self.process.poll()
        if code is None:
            return "stopped responding"
        if code < 0:
            return signal.Signals(-code).name
        return f"exit status {code}"

    def death_reason(self) -> str:
        return f"{self.signal_name()}: {self.log_tail()}"

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as log:
                text = log.read()[-65536:].decode("utf-8", "replace")
        except OSError:
            return "no log"
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        for marker in _TELLING:
            for line in lines:
                if line.startswith(marker) or (len(marker) > 3 and marker in line):
                    frame = next((f for f in lines if f.startswith("File ")), "")
                    return f"{line[:200]} {('| ' + frame[:160]) if frame else ''}".strip()
        return lines[-1][:200] if lines else "no output"

    def interrupt(self) -> None:
        """SIGABRT first, so Python's fault handler writes where the worker was stuck."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGABRT)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.stop()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self.stop()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass


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
        failures: list[BaseException] = []

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
            except BaseException as error:  # noqa: BLE001 - re-raised on the main thread
                failures.append(error)
            finally:
                if worker is not None:
                    worker.close()

        threads = [threading.Thread(target=serve, daemon=True) for _ in range(self.workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
