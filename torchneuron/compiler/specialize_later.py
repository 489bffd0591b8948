"""Specializations built on a background thread while the interpreter runs their calls.

A new bucket of an eager op (or of a torch.compile dynamic graph) used to wait for its
specialization (shape refinement,
the pass pipeline, the NEFF, the verifier, XLA's compile: 0.1-0.2 s an op, about a
second for a training step's ops). The device now runs such a bucket's calls with
the interpreter (``runtime/interpreter.py``) and hands the specialization to
``submit``: one daemon thread builds the queued ones in order, and each call checks
its ``Pending`` and switches to the compiled program once it is done. XLA's compile
releases the GIL; our passes hold it in turns with the caller's threads. A thread
that wants the GIL waits for Python's switch interval (5 ms by default) before the
holder must let go, and a step of small ops asks for it dozens of times: a build
therefore runs with the interval at ``BUILD_SWITCH_INTERVAL`` (0.5 ms), and the value
before it is put back when the build ends (unless someone else changed it since).
Measured on an MLP training step while its 13 specializations were built: 35-96 ms a
step at 5 ms, 5-25 ms at 0.5 ms (a step with nothing building: ~5 ms).

The builder also yields the CPU: on Linux its thread runs at nice ``BUILD_NICENESS``
(10), and so do the threads XLA starts from it. XLA's CPU compiler generates code on
threads of its own, about one per core (``PJRT_NPROC`` does not size them), so a
background compile took every core of a two-core machine from the caller interpreting
the new shape: a GPT training step at a new length took 63-85 ms (median of eight
lengths) while its specializations compiled, 33-47 ms with the builder niced, and the
builds took as long. A thread's priority cannot be raised back without a privilege
most processes lack, so those threads keep it for the rest of the process: against
other busy processes they get less of the CPU (one of them may be an XLA thread the
caller's own compiled programs later run on). ``TORCHNEURON_BUILD_NICE=0`` leaves
every priority alone.

One build per key: a second ``submit`` of a queued or running key gets its
``Pending``; a key whose build raised is not built again (``submit`` hands back a
``Pending`` holding that error, so the caller builds on its own thread and the error
reaches the user as it did before). At exit, queued builds are dropped and the running
one is waited for (``JOIN_SECONDS`` at most: exit may wait that long), so XLA is not
torn down under a compile. A forked child starts with no thread: what its parent had
queued or running is marked abandoned (the child's calls compile on their own thread),
the switch interval a running build lowered is put back, and the next
``submit`` starts the child's own thread.
"""

from __future__ import annotations

import atexit
import collections
import os
import sys
import threading
from collections.abc import Callable, Hashable
from typing import Any

from torchneuron.counters import Counters
from torchneuron.lru import LRU

# built: specializations built here; failed: builds that raised (their calls stay
# interpreted); abandoned: builds dropped at exit, by a fork or by ``cancel``
STATS = Counters("submitted", "built", "failed", "abandoned")
reset_stats = STATS.reset
stats = STATS.snapshot

# How long exit waits for the build that is running (a compile takes 0.1-2 s).
JOIN_SECONDS = 60.0
# Python's switch interval while a build runs (seconds).
BUILD_SWITCH_INTERVAL = 0.0005
# The builder thread's niceness (Linux; 0-19; the caller's threads keep theirs, normally 0).
BUILD_NICENESS = 10


class Abandoned(RuntimeError):
    """The build was dropped (the process is exiting, or it was queued in a parent)."""


class Pending:
    """A build queued or running on the background thread."""

    __slots__ = ("_event", "error", "value")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the build ended (the GIL released); False on timeout."""
        return self._event.wait(timeout)

    def _finish(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error
        self._event.set()


class _Worker:
    def __init__(self) -> None:
        self.condition = threading.Condition(threading.Lock())
        self.queue: collections.deque = collections.deque()
        self.pending: dict[Hashable, Pending] = {}
        self.thread: threading.Thread | None = None
        self.closing = False
        # the build running now, and the switch interval it replaced (a fork's child
        # puts that back: the build is not running there)
        self.running: Pending | None = None
        self.interval_before: float | None = None
        # keys whose build raised: not built again (``submit`` hands back the error)
        self.failed: LRU[Hashable, BaseException] = LRU(capacity=1024)

    def submit(self, key: Hashable, build: Callable[[], Any]) -> Pending:
        # read by the caller: a malformed setting is its error, not the thread's
        niced = _niced() if self.thread is None else False
        with self.condition:
            found = self.pending.get(key)
            if found is not None:
                return found
            pending = Pending()
            error = self.failed.get(key)
            if error is not None:
                pending._finish(error=error)
                return pending
            self.pending[key] = pending
            if self.closing:
                del self.pending[key]
                STATS["abandoned"] += 1
                pending._finish(error=Abandoned("the process is exiting"))
                return pending
            self.queue.append((key, build, pending))
            STATS["submitted"] += 1
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._work, args=(niced,), name="torchneuron-specialize", daemon=True
                )
                self.thread.start()
            self.condition.notify()
        return pending

    def _work(self, niced: bool) -> None:
        if niced:
            _yield_the_cpu()
        while True:
            with self.condition:
                while not self.queue and not self.closing:
                    self.condition.wait()
                if self.closing:
                    return
                key, build, pending = self.queue.popleft()
                self.running = pending
                before = self.interval_before = sys.getswitchinterval()
            if before > BUILD_SWITCH_INTERVAL:
                sys.setswitchinterval(BUILD_SWITCH_INTERVAL)
            try:
                value, error = build(), None
                STATS["built"] += 1
            except BaseException as raised:  # noqa: BLE001 - handed to the waiting calls
                value, error = None, raised
                STATS["failed"] += 1
            finally:
                if sys.getswitchinterval() == min(before, BUILD_SWITCH_INTERVAL):
                    sys.setswitchinterval(before)
            with self.condition:
                if error is not None:
                    self.failed.put(key, error)
                # finished before it leaves ``pending``: a fork in between abandons it
                pending._finish(value, error)
                self.pending.pop(key, None)
                self.running = self.interval_before = None

    def close(self, closing: bool = True) -> None:
        with self.condition:
            self.closing = closing
            dropped = list(self.queue)
            self.queue.clear()
            for key, _, _ in dropped:
                self.pending.pop(key, None)
            self.condition.notify_all()
            thread = self.thread
        for _, _, pending in dropped:
            STATS["abandoned"] += 1
            pending._finish(error=Abandoned("the process is exiting" if closing else "cancelled"))
        if not closing:  # the running build, if any, is waited for
            with self.condition:
                running = list(self.pending.values())
            for pending in running:
                pending.wait(JOIN_SECONDS)
        elif thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_SECONDS)


_worker = _Worker()


def _niced() -> bool:
    """Whether the builder yields the CPU: on Linux (elsewhere a thread's id is not a
    target of setpriority), unless ``TORCHNEURON_BUILD_NICE=0``."""
    from torchneuron import settings

    return sys.platform.startswith("linux") and settings.env_flag(settings.BUILD_NICE, default=True)


def _yield_the_cpu() -> None:
    """Give the calling thread (the builder) ``BUILD_NICENESS``: the caller's threads
    win the CPU from it and from the threads XLA starts from it (its compile's)."""
    thread = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, thread) < BUILD_NICENESS:
            os.setpriority(os.PRIO_PROCESS, thread, BUILD_NICENESS)
    except OSError:  # not allowed here (a sandbox): the build runs at the caller's priority
        pass


def interpreting() -> bool:
    """Whether a new shape's calls may run interpreted while it builds: the switch
    (``TORCHNEURON_INTERPRET``) is on and results need not be bit-stable (deterministic
    algorithms: the interpreter's last bits may differ from XLA's)."""
    import torch

    from torchneuron import settings

    return (
        settings.env_flag(settings.INTERPRET, default=True)
        and not torch.are_deterministic_algorithms_enabled()
    )


def submit(key: Hashable, build: Callable[[], Any]) -> Pending:
    """``build()`` run on the background thread (once per ``key`` while queued or running)."""
    return _worker.submit(key, build)


def drain(timeout: float | None = None) -> bool:
    """Wait until nothing is queued or running (tests, benchmarks); False on timeout."""
    with _worker.condition:
        waiting = list(_worker.pending.values())
    return all(pending.wait(timeout) for pending in waiting)


def cancel() -> None:
    """Drop the queued builds (their calls build on their own thread if they run again)
    and wait for the running one: a test's end, where nothing will use them."""
    _worker.close(closing=False)


def _after_fork_in_child() -> None:
    global _worker
    parent = _worker
    inherited = [*parent.pending.values(), *([parent.running] if parent.running else [])]
    if parent.interval_before is not None:  # a build was running: not in this process
        sys.setswitchinterval(parent.interval_before)
    _worker = _Worker()
    for pending in inherited:
        if pending.done:
            continue
        pending._event = threading.Event()  # the parent's may have been locked mid-fork
        STATS["abandoned"] += 1
        pending._finish(error=Abandoned("queued in the parent process before a fork"))


atexit.register(lambda: _worker.close())
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
