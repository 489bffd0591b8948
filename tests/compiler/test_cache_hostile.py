"""The NEFF cache heals and degrades: bad entries are recompiled, a cache folder that
cannot be written means memory only, and an entry serves only the key it was written for.

In-process tests drive ``NeffCache`` on real files; the process-level ones run eager ops
and torch.compile in fresh interpreters with ``TORCHNEURON_CACHE_DIR`` in ``tmp_path``.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from torchneuron.compiler.cache import NeffCache, key_for
from torchneuron.neff import NeffError, read_neff, write_neff
from torchneuron.runtime import cache_entry
from torchneuron.runtime.cache_entry import BadEntry, unwrap_entry, wrap_entry
from torchneuron.runtime.errors import NeuronRuntimeError, out_of_memory_error_type

from .test_cache import small_neff, stored_neff

REPO = Path(__file__).resolve().parents[2]


def cache_warnings(caught, text: str) -> list[str]:
    return [str(w.message) for w in caught if text in str(w.message)]


def compile_counting(name: str, calls: list):
    def compile_fn() -> bytes:
        calls.append(name)
        return small_neff(name)

    return compile_fn


# -- entries that do not read ---------------------------------------------------


def _truncated(key: str, data: bytes) -> bytes:
    return data[: len(data) // 2]


def _random_bytes(key: str, data: bytes) -> bytes:
    return hashlib.sha256(key.encode()).digest() * 64


def _bare_neff(key: str, data: bytes) -> bytes:
    return unwrap_entry(key, data)  # a valid NEFF without the envelope (an old entry)


def _other_format(key: str, data: bytes) -> bytes:
    return data.replace(b" %d " % cache_entry.CACHE_FORMAT, b" 999 ", 1)


def _flipped_bit(key: str, data: bytes) -> bytes:
    flipped = bytearray(data)
    flipped[-10] ^= 0x01
    return bytes(flipped)


@pytest.mark.parametrize(
    "damage", [_truncated, _random_bytes, _bare_neff, _other_format, _flipped_bit]
)
def test_bad_entry_is_recompiled_once_replaced_and_then_hits(tmp_path, damage):
    key = key_for("damaged entry")
    NeffCache(tmp_path).put(key, small_neff("old"))
    path = NeffCache(tmp_path).path_for(key)
    path.write_bytes(damage(key, path.read_bytes()))

    calls: list[str] = []
    cache = NeffCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        neff = cache.get_or_compile(key, compile_counting("new", calls))
    assert calls == ["new"] and read_neff(neff).name == "new"
    (message,) = cache_warnings(caught, "corrupt NEFF cache entry")
    assert str(path) in message and "\n" not in message
    assert read_neff(stored_neff(cache, key)).name == "new"  # replaced

    again = NeffCache(tmp_path)
    assert again.get_or_compile(key, compile_counting("third", calls)) == neff
    assert calls == ["new"] and again.stats.disk_hits == 1 and again.stats.corrupt == 0


@pytest.mark.parametrize("error", [ValueError, TypeError, RecursionError, MemoryError])
def test_entry_that_makes_the_reader_raise_anything_is_a_miss(tmp_path, monkeypatch, error):
    import torchneuron.neff

    key = key_for("reader raises", error.__name__)
    NeffCache(tmp_path).put(key, small_neff("poison"))
    real_read_neff = torchneuron.neff.read_neff

    def reader(data, *args, **kwargs):
        neff = real_read_neff(data, *args, **kwargs)
        if neff.name == "poison":
            raise error("the reader tripped over this entry")
        return neff

    monkeypatch.setattr(torchneuron.neff, "read_neff", reader)
    calls: list[str] = []
    cache = NeffCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        neff = cache.get_or_compile(key, compile_counting("healed", calls))
    assert calls == ["healed"] and read_neff(neff).name == "healed"
    (message,) = cache_warnings(caught, "corrupt NEFF cache entry")
    assert error.__name__ in message
    assert NeffCache(tmp_path).get(key) == neff  # the next process hits


# -- entries that read but do not load ------------------------------------------


def refuse(name: str, error: type[Exception]):
    """A ``load`` that refuses the NEFF called ``name`` like the runtime would."""

    def load(neff: bytes) -> str:
        loaded = read_neff(neff).name
        if loaded == name:
            raise error(f"NEFF {name!r}: @main argument 0 is f32[4], but def.json declares f32[3]")
        return loaded

    return load


@pytest.mark.parametrize("error", [NeffError, NeuronRuntimeError])
def test_entry_that_reads_but_does_not_load_is_recompiled_once(tmp_path, error):
    key = key_for("does not load", error.__name__)
    NeffCache(tmp_path).put(key, small_neff("unloadable"))

    calls: list[str] = []
    cache = NeffCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = cache.get_or_compile(
            key, compile_counting("loadable", calls), load=refuse("unloadable", error)
        )
    assert loaded == "loadable" and calls == ["loadable"]
    (message,) = cache_warnings(caught, "corrupt NEFF cache entry")
    assert "does not load" in message and error.__name__ in message
    assert read_neff(stored_neff(cache, key)).name == "loadable"
    again = NeffCache(tmp_path)
    assert again.get_or_compile(key, compile_counting("x", calls), load=refuse("unloadable", error))
    assert calls == ["loadable"] and again.stats.corrupt == 0


def test_memory_entry_that_does_not_load_is_recompiled(tmp_path):
    key = key_for("memory entry does not load")
    cache = NeffCache(tmp_path)
    cache.put(key, small_neff("unloadable"))
    calls: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = cache.get_or_compile(
            key, compile_counting("loadable", calls), load=refuse("unloadable", NeffError)
        )
    assert loaded == "loadable" and calls == ["loadable"]
    assert read_neff(stored_neff(cache, key)).name == "loadable"


def test_fresh_neff_that_does_not_load_raises_and_is_not_kept(tmp_path):
    key = key_for("fresh does not load")
    cache = NeffCache(tmp_path)
    calls: list[str] = []
    with pytest.raises(NeuronRuntimeError, match="def.json declares"):
        cache.get_or_compile(
            key, compile_counting("bad", calls), load=refuse("bad", NeuronRuntimeError)
        )
    assert calls == ["bad"]
    assert cache.get(key) is None and not cache.path_for(key).exists()


def test_device_out_of_memory_at_load_propagates_and_keeps_the_entry(tmp_path):
    key = key_for("device full")
    NeffCache(tmp_path).put(key, small_neff("big"))

    def load(neff: bytes) -> None:
        raise out_of_memory_error_type()("NeuronCore 0: HBM is full")

    cache = NeffCache(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "corrupt entry" warning
        with pytest.raises(out_of_memory_error_type()):
            cache.get_or_compile(key, compile_counting("never", []), load=load)
    assert read_neff(stored_neff(cache, key)).name == "big"


def test_keyboard_interrupt_in_load_is_not_taken_for_a_bad_entry(tmp_path):
    key = key_for("interrupted")
    NeffCache(tmp_path).put(key, small_neff("fine"))

    def load(neff: bytes) -> None:
        raise KeyboardInterrupt

    cache = NeffCache(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        cache.get_or_compile(key, compile_counting("never", []), load=load)
    assert cache.stats.corrupt == 0 and cache.path_for(key).exists()


# -- entries tied to their key --------------------------------------------------


def test_entry_copied_over_another_keys_file_is_refused_and_replaced(tmp_path):
    times_two, plus_one = key_for("x*2"), key_for("x+1")
    cache = NeffCache(tmp_path)
    cache.put(times_two, small_neff("times_two"))
    cache.put(plus_one, small_neff("plus_one"))
    cache.path_for(times_two).write_bytes(cache.path_for(plus_one).read_bytes())

    calls: list[str] = []
    fresh = NeffCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        neff = fresh.get_or_compile(times_two, compile_counting("times_two", calls))
    assert read_neff(neff).name == "times_two" and calls == ["times_two"]
    (message,) = cache_warnings(caught, "corrupt NEFF cache entry")
    assert f"holds the entry of key {plus_one}" in message
    assert read_neff(stored_neff(fresh, times_two)).name == "times_two"


def test_unwrap_names_what_is_wrong():
    key, other = key_for("a"), key_for("b")
    entry = wrap_entry(key, b"neff bytes")
    assert unwrap_entry(key, entry) == b"neff bytes"
    for data, words in [
        (b"", "no entry header"),
        (b"x" * 10_000, "no entry header"),
        (entry[:-1], "header says 10 bytes, found 9"),
        (entry + b"!", "header says 10 bytes, found 11"),
        (entry[:-1] + b"X", "do not match the sha256"),
        (wrap_entry(other, b"neff bytes"), f"holds the entry of key {other}"),
    ]:
        with pytest.raises(BadEntry, match=words):
            unwrap_entry(key, data)


# -- a cache folder that cannot be written ----------------------------------------


def test_file_at_the_cache_path_means_memory_only_with_one_warning(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    cache = NeffCache(blocker)
    calls: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in ("a", "b", "a"):
            cache.get_or_compile(key_for(name), compile_counting(name, calls))
    assert calls == ["a", "b"]  # the third is a memory hit
    (message,) = cache_warnings(caught, "cannot be written")
    assert str(blocker / "neff") in message and "memory only" in message
    assert not cache.disk_writable and blocker.read_text() == "not a folder"


def test_lock_file_that_cannot_be_opened_means_memory_only(tmp_path):
    key = key_for("lock")
    cache = NeffCache(tmp_path)
    cache.path_for(key).with_suffix(".lock").mkdir(parents=True)  # EISDIR on open
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        neff = cache.get_or_compile(key, compile_counting("locked", []))
    assert read_neff(neff).name == "locked"
    assert len(cache_warnings(caught, "cannot be written")) == 1
    assert not cache.path_for(key).exists()


def test_no_space_left_means_memory_only_and_leaves_no_temporary(tmp_path, monkeypatch):
    import errno

    def full(descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache_entry.os, "fsync", full)
    cache = NeffCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in ("a", "b"):
            cache.get_or_compile(key_for(name), compile_counting(name, []))
    (message,) = cache_warnings(caught, "cannot be written")
    assert "No space left on device" in message
    assert cache.get(key_for("a")) is not None  # from memory
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".lock")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_cache_folder_still_reads_its_entries(tmp_path):
    old = key_for("already there")
    NeffCache(tmp_path).put(old, small_neff("old"))
    folders = [tmp_path / "neff", *(tmp_path / "neff").iterdir()]
    for folder in folders:
        folder.chmod(0o555)
    try:
        cache = NeffCache(tmp_path)
        calls: list[str] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert read_neff(cache.get_or_compile(old, compile_counting("x", calls))).name == "old"
            for name in ("new", "newer"):
                cache.get_or_compile(key_for(name), compile_counting(name, calls))
        assert calls == ["new", "newer"]
        assert len(cache_warnings(caught, "cannot be written")) == 1
    finally:
        for folder in folders:
            folder.chmod(0o755)


# -- temporary files of writers that died -------------------------------------------

KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from torchneuron.runtime import cache_entry
    from torchneuron.compiler.cache import NeffCache
    def die(source, destination):
        os.kill(os.getpid(), signal.SIGKILL)  # after the temporary is written, before the rename
    cache_entry.os.replace = die
    NeffCache(sys.argv[1]).put(sys.argv[2], open(sys.argv[3], "rb").read())
    """
)


def test_temporary_file_of_a_killed_writer_is_ignored_then_removed(tmp_path):
    key, neff_file = key_for("killed writer"), tmp_path / "x.neff"
    neff_file.write_bytes(small_neff("killed"))
    root = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(root), key, str(neff_file)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    (temporary,) = (root / "neff" / key[:2]).glob(".*.tmp")
    assert temporary.stat().st_size > 0

    cache = NeffCache(root)
    assert cache.get(key) is None and cache.stats.corrupt == 0  # never read
    sibling = next(k for k in (key_for("same folder", i) for i in range(4096)) if k[:2] == key[:2])
    cache.put(sibling, small_neff("a"))
    assert temporary.exists()  # young: its writer may still be at it
    hour_ago = time.time() - cache_entry.STALE_TEMPORARY_SECONDS - 1
    os.utime(temporary, (hour_ago, hour_ago))
    cache.put(sibling, small_neff("b"))
    assert not temporary.exists()


# -- whole processes: eager ops and torch.compile ------------------------------------

# The compiler's fingerprint digests its sources; pin it so the processes of one test
# share keys even while the source tree changes under them.
PROGRAM = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.simplefilter("default")
    import torch
    from torchneuron.compiler import cache
    cache.compiler_fingerprint = lambda: "pinned for the test"
    x = torch.arange(4.0, device="neuron")
    results = {"x*2": (x * 2).cpu().tolist(), "x+1": (x + 1).cpu().tolist()}
    if "compile" in sys.argv:
        f = torch.compile(lambda t: t * 3 - 1, backend="neuron")
        results["compiled"] = f(x).cpu().tolist()
    stats = cache.get_default_cache().stats
    results["compiles"], results["corrupt"] = stats.compiles, stats.corrupt
    print(json.dumps(results))
    """
)


def run_program(cache_dir: Path, *args: str) -> tuple[dict, str]:
    import json

    env = dict(
        os.environ,
        TORCHNEURON_CACHE_DIR=str(cache_dir),
        TORCHNEURON_NO_FALLBACK="1",
        PYTHONPATH=str(REPO),
    )
    env.pop("TORCHNEURON_CACHE", None)
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=str(cache_dir.parent),
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def entries_by_program(cache_dir: Path) -> dict[str, Path]:
    """Each disk entry by the name of the NEFF inside (``aten.mul.Tensor``, ...)."""
    found = {}
    for path in (cache_dir / "neff").glob("*/*.neff"):
        found[read_neff(unwrap_entry(path.stem, path.read_bytes())).name] = path
    return found


# Slow (eager subprocesses); test_entry_copied_over_another_keys_file_is_refused_and_replaced
# covers the same behaviour in-process.
@pytest.mark.slow
def test_swapped_entry_in_eager_mode_still_computes_x_times_2(tmp_path):
    cache_dir = tmp_path / "cache"
    first, _ = run_program(cache_dir)
    assert first["x*2"] == [0.0, 2.0, 4.0, 6.0]
    entries = entries_by_program(cache_dir)
    mul, add = entries["aten.mul.Tensor"], entries["aten.add.Tensor"]
    mul.write_bytes(add.read_bytes())

    second, stderr = run_program(cache_dir)
    assert second["x*2"] == [0.0, 2.0, 4.0, 6.0] and second["x+1"] == [1.0, 2.0, 3.0, 4.0]
    assert second["compiles"] == 1 and second["corrupt"] == 1
    assert stderr.count("corrupt NEFF cache entry") == 1 and "holds the entry of key" in stderr
    assert entries_by_program(cache_dir)["aten.mul.Tensor"] == mul  # replaced

    third, stderr = run_program(cache_dir)
    assert third["compiles"] == 0 and third["corrupt"] == 0 and "corrupt" not in stderr


# Slow (three eager subprocesses); test_entry_that_reads_but_does_not_load_is_recompiled_once
# covers the same healing in-process.
@pytest.mark.slow
def test_entry_that_fails_to_load_in_eager_mode_is_recompiled_and_replaced(tmp_path):
    cache_dir = tmp_path / "cache"
    run_program(cache_dir)
    mul = entries_by_program(cache_dir)["aten.mul.Tensor"]
    key = mul.stem
    neff = read_neff(unwrap_entry(key, mul.read_bytes()))
    # Compiled for the other chip: a valid NEFF the reader accepts and the core refuses.
    neff.manifest["target"] = "trn3" if neff.manifest["target"] == "trn2" else "trn2"
    mul.write_bytes(wrap_entry(key, write_neff(neff)))
    read_neff(unwrap_entry(key, mul.read_bytes()))  # the entry reads

    second, stderr = run_program(cache_dir)
    assert second["x*2"] == [0.0, 2.0, 4.0, 6.0]
    assert second["compiles"] == 1 and second["corrupt"] == 1
    assert stderr.count("corrupt NEFF cache entry") == 1 and "does not load" in stderr
    assert "was compiled for" in stderr  # the runtime's reason, in the warning's one line
    replaced = read_neff(unwrap_entry(key, mul.read_bytes())).manifest["target"]
    assert replaced != neff.manifest["target"]


EXPECTED = {
    "x*2": [0.0, 2.0, 4.0, 6.0],
    "x+1": [1.0, 2.0, 3.0, 4.0],
    "compiled": [-1.0, 2.0, 5.0, 8.0],
}


# Slow (eager subprocesses); test_file_at_the_cache_path_means_memory_only_with_one_warning
# covers the same behaviour in-process.
@pytest.mark.slow
def test_file_at_the_cache_path_eager_and_torch_compile_work_with_one_warning(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    results, stderr = run_program(blocker, "compile")
    assert {k: results[k] for k in EXPECTED} == EXPECTED
    assert stderr.count("cannot be written") == 1, stderr
    assert "Traceback" not in stderr and blocker.read_text() == "not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_cache_dir_eager_and_torch_compile_work_with_one_warning(tmp_path):
    cache_dir = tmp_path / "cache"
    run_program(cache_dir)  # x*2 and x+1 are on disk now
    folders = [cache_dir, cache_dir / "neff", *(cache_dir / "neff").iterdir()]
    for folder in folders:
        folder.chmod(0o555)
    try:
        results, stderr = run_program(cache_dir, "compile")
    finally:
        for folder in folders:
            folder.chmod(0o755)
    assert {k: results[k] for k in EXPECTED} == EXPECTED
    assert stderr.count("cannot be written") == 1, stderr
    assert "Traceback" not in stderr


def test_clear_keeps_a_young_temporary_file_of_a_write_in_progress(tmp_path):
    cache = NeffCache(tmp_path)
    key = key_for("clear")
    cache.put(key, small_neff("a"))
    young, old = (cache.path_for(key).parent / f".{key}.neff.{n}.tmp" for n in ("young", "old"))
    young.write_bytes(b"half")
    old.write_bytes(b"half")
    hour_ago = time.time() - cache_entry.STALE_TEMPORARY_SECONDS - 1
    os.utime(old, (hour_ago, hour_ago))
    cache.clear()
    assert cache.disk_entries() == [] and young.exists() and not old.exists()
