"""The background thread that builds specializations while the interpreter runs calls."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from torchneuron.compiler import specialize_later


def test_one_build_per_key_and_its_value_reaches_every_waiter():
    release = threading.Event()
    calls = []

    def build():
        calls.append(1)
        release.wait(5)
        return "built"

    first = specialize_later.submit(("key", 1), build)
    second = specialize_later.submit(("key", 1), build)
    assert second is first and not first.done
    release.set()
    assert first.wait(5) and first.value == "built" and first.error is None
    assert calls == [1]
    # once ended, the key may be built again
    again = specialize_later.submit(("key", 1), lambda: "again")
    assert again is not first and again.wait(5) and again.value == "again"


def test_a_failed_build_hands_its_error_to_the_pending():
    before = specialize_later.stats()["failed"]

    def build():
        raise ValueError("refinement failed")

    pending = specialize_later.submit(("failing",), build)
    assert pending.wait(5)
    assert isinstance(pending.error, ValueError) and pending.value is None
    assert specialize_later.stats()["failed"] == before + 1


def test_a_build_runs_at_a_short_switch_interval_and_puts_the_old_one_back():
    seen = []
    before = sys.getswitchinterval()
    pending = specialize_later.submit(("interval",), lambda: seen.append(sys.getswitchinterval()))
    assert pending.wait(5) and specialize_later.drain(5)
    assert seen == [specialize_later.BUILD_SWITCH_INTERVAL]
    assert sys.getswitchinterval() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_abandons_its_parents_builds_and_starts_its_own_thread():
    release = threading.Event()
    started = threading.Event()
    interval = sys.getswitchinterval()

    def running_build():
        started.set()
        return release.wait(5)

    running = specialize_later.submit(("fork", "running"), running_build)
    queued = specialize_later.submit(("fork", "queued"), lambda: "parent's")
    assert started.wait(5)
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code, never run pytest's teardown
        code = 0
        try:
            for pending in (running, queued):
                if not (pending.done and isinstance(pending.error, specialize_later.Abandoned)):
                    code = 1
            if sys.getswitchinterval() != interval:  # the parent's build lowered it
                code = 3
            own = specialize_later.submit(("fork", "child"), lambda: "child's")
            if not (own.wait(5) and own.value == "child's"):
                code = 2
        finally:
            os._exit(code)
    release.set()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert running.wait(5) and running.error is None
    assert queued.wait(5) and queued.value == "parent's"


def test_exit_waits_for_the_running_build_and_drops_the_queued_ones(tmp_path):
    script = textwrap.dedent(
        f"""
        import pathlib, threading, time
        from torchneuron.compiler import specialize_later

        folder = pathlib.Path({str(tmp_path)!r})
        started = threading.Event()

        def slow():
            started.set()
            time.sleep(0.5)
            (folder / "running").write_text("done")

        specialize_later.submit("running", slow)
        specialize_later.submit("queued", lambda: (folder / "queued").write_text("done"))
        started.wait(5)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert (tmp_path / "running").read_text() == "done"
    assert not (tmp_path / "queued").exists()


def test_cancel_drops_the_queued_builds_and_waits_for_the_running_one():
    release = threading.Event()
    started = threading.Event()

    def running_build():
        started.set()
        release.wait(5)
        return "ran"

    running = specialize_later.submit(("cancel", "running"), running_build)
    queued = specialize_later.submit(("cancel", "queued"), lambda: "never")
    assert started.wait(5)
    threading.Timer(0.2, release.set).start()
    specialize_later.cancel()
    assert running.done and running.value == "ran"
    assert queued.done and isinstance(queued.error, specialize_later.Abandoned)
    # the thread goes on serving later builds
    assert specialize_later.submit(("cancel", "after"), lambda: 1).wait(5)


def test_a_failed_key_is_not_built_again():
    calls = []

    def build():
        calls.append(1)
        raise RuntimeError("XLA refused it")

    first = specialize_later.submit(("failed key",), build)
    assert first.wait(5) and isinstance(first.error, RuntimeError)
    again = specialize_later.submit(("failed key",), build)
    assert again.done and again.error is first.error
    assert calls == [1]


def _niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities: Linux")
@pytest.mark.parametrize("setting", ["", "0"])
def test_the_builder_yields_the_cpu_unless_told_not_to(monkeypatch, setting):
    monkeypatch.setenv("TORCHNEURON_BUILD_NICE", setting)
    caller = _niceness()
    worker = specialize_later._Worker()  # a thread of its own, started by this submit
    try:
        pending = worker.submit(("niceness",), _niceness)
        assert pending.wait(10) and pending.error is None
    finally:
        worker.close()
    expected = caller if setting == "0" else max(caller, specialize_later.BUILD_NICENESS)
    assert pending.value == expected
    assert _niceness() == caller  # the caller's thread keeps its priority


def test_a_malformed_niceness_setting_is_the_callers_error(monkeypatch):
    from torchneuron.settings import SettingsError

    monkeypatch.setenv("TORCHNEURON_BUILD_NICE", "sometimes")
    worker = specialize_later._Worker()
    with pytest.raises(SettingsError, match="TORCHNEURON_BUILD_NICE"):
        worker.submit(("malformed",), lambda: 1)
    assert worker.thread is None and not worker.pending  # nothing queued, no thread
    monkeypatch.setenv("TORCHNEURON_BUILD_NICE", "0")
    try:
        assert worker.submit(("malformed",), lambda: 1).wait(10)
    finally:
        worker.close()
