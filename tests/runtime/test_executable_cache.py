"""XLA executables in the disk cache: a second load deserializes instead of verifying
and compiling; a corrupt, truncated, swapped, forged or foreign entry is a miss that
gives the right answer and one warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from torchneuron.neff import write_neff
from torchneuron.runtime import clear_executable_cache, load_neff, verifier
from torchneuron.runtime.cache_entry import unwrap_entry, wrap_entry
from torchneuron.runtime.executable_cache import (
    EXECUTABLE_ENTRY,
    ExecutableCache,
    decode_payload,
    default_executable_cache,
    encode_payload,
    executable_key,
)
from torchneuron.runtime.verifier import VerifierProcess

from .conftest import binary_neff

REPO = Path(__file__).resolve().parents[2]
X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.full((2, 3), 0.5, np.float32)


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """A cache folder of this test's own, and nothing prepared in this process."""
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHNEURON_CACHE", raising=False)
    process = VerifierProcess()
    monkeypatch.setattr(verifier, "VERIFIER", process)
    forget()
    yield process
    forget()
    process.close()


def forget() -> None:
    """What a new process would not have: prepared programs and verified ones."""
    clear_executable_cache()
    verifier.clear_verified_programs()


def run_add(name: str = "add") -> np.ndarray:
    (out,) = load_neff(binary_neff("add", "float32", name=name)).execute([X, Y])
    return out


def only_entry() -> Path:
    (path,) = default_executable_cache().disk_entries()
    return path


def test_second_load_deserializes_without_verifying_or_compiling(fresh):
    np.testing.assert_array_equal(run_add(), X + Y)
    assert fresh.requests == 1
    path = only_entry()
    signature, executable = decode_payload(
        unwrap_entry(path.stem, path.read_bytes(), EXECUTABLE_ENTRY)
    )
    assert [str(t) for t in signature.arguments] == ["float32[2, 3]", "float32[2, 3]"]
    assert executable

    forget()
    cache = default_executable_cache()
    before = cache.stats.disk_hits
    np.testing.assert_array_equal(run_add(), X + Y)
    assert fresh.requests == 1  # not verified again
    assert cache.stats.disk_hits == before + 1 and cache.stats.compiles == 1


def test_two_neffs_with_one_program_share_one_entry():
    run_add("first")
    forget()
    run_add("second")  # another name, the same program bytes
    assert len(default_executable_cache().disk_entries()) == 1


def flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def rewrap(path: Path, payload: bytes) -> None:
    """A whole envelope (right key, right sha256) around ``payload``: only the payload's
    own checks can refuse it."""
    path.write_bytes(wrap_entry(path.stem, payload, EXECUTABLE_ENTRY))


def forged_signature(path: Path) -> None:
    payload = unwrap_entry(path.stem, path.read_bytes(), EXECUTABLE_ENTRY)
    _, executable = decode_payload(payload)
    rewrap(path, b'{"arguments": [[[2, 3], "f99"]], "results": []}\n' + executable)


def garbage_executable(path: Path) -> None:
    payload = unwrap_entry(path.stem, path.read_bytes(), EXECUTABLE_ENTRY)
    signature, _ = decode_payload(payload)
    rewrap(path, encode_payload(signature, b"\x08\x01 not an executable " * 40))


def wrong_signature(path: Path) -> None:
    """A well-formed signature that is not the program's: 3x2 where the program is 2x3."""
    payload = unwrap_entry(path.stem, path.read_bytes(), EXECUTABLE_ENTRY)
    _, executable = decode_payload(payload)
    line = json.dumps({"arguments": [[[3, 2], "f32"]] * 2, "results": [[[3, 2], "f32"]]})
    rewrap(path, line.encode() + b"\n" + executable)


def writable_by_others(path: Path) -> None:
    os.chmod(path, 0o666)


@pytest.mark.parametrize(
    "damage",
    [flip_last_byte, truncate, forged_signature, garbage_executable, writable_by_others],
)
def test_a_bad_entry_is_a_miss_with_the_right_answer_and_one_warning(damage, fresh):
    run_add()
    path = only_entry()
    damage(path)
    forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(run_add(), X + Y)
        forget()
        np.testing.assert_array_equal(run_add(), X + Y)  # the replacement is whole
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "corrupt executable cache entry" in messages[0]
    assert default_executable_cache().stats.corrupt == 1
    assert fresh.requests == 2  # verified again once, then read from the replacement


def test_an_entry_of_another_key_is_refused(fresh):
    run_add()
    first = only_entry()
    (out,) = load_neff(binary_neff("subtract", "float32")).execute([X, Y])
    np.testing.assert_array_equal(out, X - Y)
    second = next(p for p in default_executable_cache().disk_entries() if p != first)
    second.write_bytes(first.read_bytes())  # add's executable where subtract's should be
    forget()
    with pytest.warns(RuntimeWarning, match="holds the entry of key"):
        (out,) = load_neff(binary_neff("subtract", "float32")).execute([X, Y])
    np.testing.assert_array_equal(out, X - Y)


def test_an_entry_whose_signature_is_not_the_neffs_is_a_miss(fresh):
    """A whole entry recording another signature than the NEFF declares is refused and
    replaced, not blamed on the NEFF."""
    run_add()
    wrong_signature(only_entry())
    forget()
    with pytest.warns(RuntimeWarning, match="not the one the NEFF declares"):
        np.testing.assert_array_equal(run_add(), X + Y)
    assert fresh.requests == 2


def test_entries_over_the_size_bound_are_refused_unread(monkeypatch):
    run_add()
    small = ExecutableCache.entries.__class__(
        **{**ExecutableCache.entries.__dict__, "max_bytes": 64}
    )
    monkeypatch.setattr(ExecutableCache, "entries", small)
    forget()
    with pytest.warns(RuntimeWarning, match="over the 64-byte bound"):
        np.testing.assert_array_equal(run_add(), X + Y)


def test_the_key_changes_with_what_makes_an_executable_invalid(monkeypatch):
    digest = "ab" * 32
    plain = executable_key(digest)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    assert executable_key(digest) != plain
    monkeypatch.undo()
    monkeypatch.setenv("PJRT_NPROC", "7")
    assert executable_key(digest) != plain
    monkeypatch.undo()
    assert executable_key(digest) == plain
    assert executable_key("cd" * 32) != plain


def test_cache_off_keeps_nothing_on_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_CACHE", "0")
    np.testing.assert_array_equal(run_add(), X + Y)
    assert not (tmp_path / "cache").exists()


NEXT_PROCESS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from torchneuron.neff import read_neff
    from torchneuron.runtime import load_neff, verifier
    from torchneuron.runtime.executable_cache import default_executable_cache
    neff = read_neff(open(sys.argv[1], "rb").read())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = load_neff(neff).execute([x, x])
    stats = default_executable_cache().stats
    print(json.dumps({"out": out.tolist(), "verified": verifier.verifier_info()["requests"],
                      "disk_hits": stats.disk_hits, "compiles": stats.compiles}))
    """
)


def test_a_second_process_reuses_the_first_ones_executable(tmp_path):
    path = tmp_path / "add.neff"
    path.write_bytes(write_neff(binary_neff("add", "float32")))
    environment = {**os.environ, "TORCHNEURON_CACHE_DIR": str(tmp_path / "shared")}

    def process() -> dict:
        done = subprocess.run(
            [sys.executable, "-c", NEXT_PROCESS, str(path)],
            capture_output=True,
            text=True,
            env=environment,
            cwd=REPO,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first, second = process(), process()
    expected = (2 * np.arange(6, dtype=np.float32).reshape(2, 3)).tolist()
    assert first["out"] == second["out"] == expected
    assert first == {**first, "verified": 1, "compiles": 1, "disk_hits": 0}
    assert second == {**second, "verified": 0, "compiles": 0, "disk_hits": 1}
