"""The crash-isolated worker process every test tool runs its cases in, and its threads.

A worker (``python -m <tool>.worker``) is started once and fed many tasks, because
starting one costs seconds (torch, torch-mlir, XLA). It speaks JSON lines: it prints a
ready line, then answers each task line on stdout; its stderr goes to a log file. A
worker that dies (a segfault in native code, an abort, the OOM killer) or stays silent
past a time limit costs its tool one case, never the run: the tool reads why from the
exit status and the log, and starts a fresh worker.

``WorkerProcess`` is that mechanism; each tool (``conformance.pool``, ``fuzz.pool``,
``fuzz.neff.pool``) keeps only its task format, its reading of the answers and its
policy for replacing workers. ``run_in_threads`` runs one serving loop per worker
thread and re-raises the first error of any of them on the caller's thread.
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
from collections.abc import Callable

# Environment every worker gets, whatever the tool: one core, quiet XLA, a Python stack
# in the log when it crashes.
BASE_ENVIRONMENT = {
    "OMP_NUM_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "PYTHONFAULTHANDLER": "1",
}


class NoAnswer(Exception):
    """The worker said nothing within the time limit (not an OSError: pipe errors are those)."""


class WorkerProcess:
    """One worker process: JSON lines in on stdin, lines out on a queue, stderr in a log.

    ``is_ready(first_line)`` says whether the worker's first line is its ready line;
    a worker that does not say it within ``startup_timeout`` seconds is stopped and
    ``RuntimeError("a <name> worker failed to start: <why>")`` raised.
    """

    def __init__(
        self,
        module: str,
        arguments: tuple[str, ...] = (),
        *,
        environment: dict[str, str],
        name: str,
        startup_timeout: float,
        is_ready: Callable[[str], bool],
    ):
        handle, self.log_path = tempfile.mkstemp(prefix="torchneuron-worker-", suffix=".log")
        os.close(handle)
        log_fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, *arguments],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_fd,
                env=environment,
                text=True,
                bufsize=1,
            )
        finally:
            os.close(log_fd)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            ready = self.next_line(startup_timeout)
        except NoAnswer:
            ready = None
        if ready is None or not is_ready(ready):
            reason = self.death_reason()
            self.close()
            raise RuntimeError(f"a {name} worker failed to start: {reason}")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict) -> None:
        """Write one task line (an ``OSError`` if the worker has closed its end)."""
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def next_line(self, timeout: float) -> str | None:
        """The worker's next line; None once its stdout has ended; ``NoAnswer`` on silence."""
        try:
            return self.lines.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            raise NoAnswer from None

    def next_event(self, timeout: float) -> dict | None:
        """``next_line`` parsed as JSON."""
        line = self.next_line(timeout)
        return None if line is None else json.loads(line)

    def wait_for_exit(self) -> None:
        """Wait for a worker whose output ended to exit (killed after 30 s)."""
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def alive(self) -> bool:
        return self.process.poll() is None

    def signal_name(self) -> str:
        """How the process ended, briefly: ``SIGSEGV``, ``exit status 1``, ``stopped responding``."""
        code = self.process.poll()
        if code is None:
            return "stopped responding"
        if code < 0:
            return signal.Signals(-code).name
        return f"exit status {code}"

    # characters of a death reason (what a tool's report line has room for)
    reason_limit = 500

    def death_reason(self) -> str:
        """How the process ended and the telling line of its log, in ``reason_limit``
        characters."""
        code = self.process.poll()
        if code is None:
            how = "stopped responding"
        elif code < 0:
            how = f"killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with status {code}"
        return f"the worker process {how}; {self.fatal_error()}"[: self.reason_limit]

    def log_lines(self, tail_bytes: int | None = None) -> list[str] | None:
        """The log's non-empty lines, stripped (its last ``tail_bytes`` only, if given);
        None once the log is gone."""
        try:
            with open(self.log_path, "rb") as log:
                if tail_bytes is not None:
                    log.seek(max(0, os.fstat(log.fileno()).st_size - tail_bytes))
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return None
        return [line.strip() for line in text.splitlines() if line.strip()]

    def fatal_error(self) -> str:
        """faulthandler's report (the fatal signal and the innermost frame) if the log has
        one, else its last line."""
        lines = self.log_lines()
        if lines is None:
            return "no log"
        for index, line in enumerate(lines):
            if line.startswith("Fatal Python error"):
                frames = [frame for frame in lines[index:] if frame.startswith("File ")]
                return " | ".join([line, *frames[:1]])
        return lines[-1] if lines else "no output"

    def interrupt(self) -> None:
        """SIGABRT first, so Python's fault handler writes where the worker was stuck;
        then stopped."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGABRT)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.stop()

    def stop(self) -> None:
        """Kill the process (its log stays readable until ``close``)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        """Stop the process and delete its log."""
        self.stop()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass


def run_in_threads(count: int, serve: Callable[[], None]) -> None:
    """Run ``serve`` on ``count`` threads (each keeps its own worker); the first
    exception any of them raised is raised here once all have ended."""
    failures: list[BaseException] = []

    def guarded() -> None:
        try:
            serve()
        except BaseException as error:  # noqa: BLE001 - re-raised on the caller's thread
            failures.append(error)

    threads = [threading.Thread(target=guarded, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
