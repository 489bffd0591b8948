"""``neuronc cache info|clear|prune``: on a real cache folder with NEFF and executable
entries, in real neuronc processes."""

from __future__ import annotations

import json
import os

import pytest

from tests.runtime.conftest import binary_neff
from torchneuron.compiler.cache import NeffCache, key_for
from torchneuron.neff import write_neff
from torchneuron.runtime.cache_entry import EntryKind
from torchneuron.runtime.executable_cache import ExecutableCache, encode_payload
from torchneuron.runtime.program import ProgramSignature, TensorType

FLOAT_2 = TensorType((2,), "float32")


def small_neff(name: str) -> bytes:
    """A real NEFF (an add on float32[2, 3]), named ``name``."""
    return write_neff(binary_neff("add", "float32", name=name))


@pytest.fixture
def filled(tmp_path):
    """A cache folder with three NEFF and two executable entries, used in a known order:
    (folder, [(cache, key)] oldest first)."""
    neffs, executables = NeffCache(tmp_path), ExecutableCache(tmp_path)
    order = []
    for index in range(3):
        key = key_for("neff", index)
        neffs.put(key, small_neff(f"entry{index}"))
        order.append((neffs, key))
    signature = ProgramSignature((FLOAT_2,), (FLOAT_2,))
    for index in range(2):
        key = key_for("executable", index)
        executables.put(key, encode_payload(signature, bytes(3000)))
        order.append((executables, key))
    # interleave the kinds in time: executable 0 was used before any NEFF
    order.insert(0, order.pop(3))
    for seconds, (cache, key) in enumerate(order):
        os.utime(cache.path_for(key), (1_000_000 + seconds, 1_000_000 + seconds))
    return tmp_path, order


def info(neuronc, folder) -> dict:
    done = neuronc.run("cache", "info", "--json", env={"TORCHNEURON_CACHE_DIR": str(folder)})
    return json.loads(done.stdout)


def test_info_counts_each_kind(neuronc, filled):
    folder, order = filled
    report = info(neuronc, folder)
    sizes = {
        kind: sum(c.path_for(k).stat().st_size for c, k in order if c.entries.folder == kind)
        for kind in ("neff", "xla")
    }
    assert report["folder"] == str(folder) and report["enabled"] is True
    assert report["kinds"] == {
        "neff": {"entries": 3, "bytes": sizes["neff"]},
        "graph": {"entries": 0, "bytes": 0},
        "dynamic": {"entries": 0, "bytes": 0},
        "xla": {"entries": 2, "bytes": sizes["xla"]},
        "aot": {"entries": 0, "bytes": 0},
    }
    assert report["bytes"] == sizes["neff"] + sizes["xla"]
    text = neuronc.run("cache", "info", env={"TORCHNEURON_CACHE_DIR": str(folder)}).stdout
    assert f"cache folder: {folder}" in text and "3 NEFF entries" in text


def test_prune_drops_the_least_recently_used_of_both_kinds(neuronc, filled):
    folder, order = filled
    sizes = [cache.path_for(key).stat().st_size for cache, key in order]
    keep = sum(sizes[2:])  # room for all but the two oldest
    done = neuronc.run(
        "cache", "prune", "--max-size", str(keep), env={"TORCHNEURON_CACHE_DIR": str(folder)}
    )
    assert "2 entries" in done.stdout
    present = [cache.path_for(key).exists() for cache, key in order]
    assert present == [False, False, True, True, True]
    assert info(neuronc, folder)["bytes"] == keep


def test_clear_empties_the_folder(neuronc, filled):
    folder, _ = filled
    neuronc.run("cache", "clear", env={"TORCHNEURON_CACHE_DIR": str(folder)})
    report = info(neuronc, folder)
    assert report["bytes"] == 0
    assert report["kinds"]["neff"]["entries"] == report["kinds"]["xla"]["entries"] == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["cache", "prune", "--max-size", "lots"], "--max-size 'lots' is not a size"),
        (["cache", "prune"], "--max-size"),
        (["cache"], "required"),
    ],
)
def test_bad_command_lines_say_what_is_wrong(neuronc, tmp_path, argv, message):
    done = neuronc.run(*argv, check=False, env={"TORCHNEURON_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 2 and message in done.stderr
    assert done.stderr.startswith("neuronc: error:") and "Traceback" not in done.stderr


def test_sizes_read_like_a_user_writes_them():
    from torchneuron.cli.cache import parse_size

    assert parse_size("4096") == 4096
    assert parse_size("500M") == 500 << 20
    assert parse_size("2G") == parse_size("2GiB") == parse_size("2gb") == 2 << 30
    assert parse_size("1.5K") == 1536


def test_entry_kinds_do_not_read_each_other(tmp_path):
    """A NEFF entry copied where an executable entry belongs is not an executable entry."""
    neffs, executables = NeffCache(tmp_path), ExecutableCache(tmp_path)
    key = key_for("crossed")
    neffs.put(key, small_neff("crossed"))
    target = executables.path_for(key)
    target.parent.mkdir(parents=True)
    target.write_bytes(neffs.path_for(key).read_bytes())
    with pytest.warns(RuntimeWarning, match="not a cache entry"):
        assert executables.get(key) is None
    assert isinstance(ExecutableCache.entries.kind, EntryKind)
