"""The persistent NEFF cache: keys, memory and disk layers, corruption, two processes."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from torchneuron.compiler import cache as cache_module
from torchneuron.compiler.cache import NeffCache, get_default_cache, key_for
from torchneuron.neff import read_neff
from torchneuron.runtime.cache_entry import unwrap_entry


@functools.cache
def small_neff(name: str = "entry") -> bytes:
    """A real NEFF (x + 1 on float32[3]) named ``name``: what the reader accepts."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from torchneuron.compiler.pipeline import compile_graph

    gm = make_fx(lambda x: (x + 1,))(torch.zeros(3))
    return compile_graph(gm, [torch.zeros(3)], name=name).neff


def stored_neff(cache: NeffCache, key: str) -> bytes:
    """The NEFF inside ``key``'s disk entry (``BadEntry`` unless it is whole and for ``key``)."""
    return unwrap_entry(key, cache.path_for(key).read_bytes())


def test_key_is_deterministic_and_sensitive_to_every_part():
    base = key_for("aten.add.Tensor", ((2, 3), "float32"), 1)
    assert base == key_for("aten.add.Tensor", ((2, 3), "float32"), 1)
    assert len(base) == 64
    assert base != key_for("aten.add.Tensor", ((2, 4), "float32"), 1)
    assert base != key_for("aten.add.Tensor", ((2, 3), "bfloat16"), 1)
    assert base != key_for("aten.sub.Tensor", ((2, 3), "float32"), 1)


def test_key_changes_with_compiler_fingerprint(monkeypatch):
    before = key_for("op")
    monkeypatch.setattr(cache_module, "compiler_fingerprint", lambda: "another compiler")
    assert key_for("op") != before


def test_memory_layer_hits_and_evicts_least_recently_used():
    cache = NeffCache(None, memory_entries=2)
    keys = [key_for("op", i) for i in range(3)]
    for i, key in enumerate(keys):
        cache.put(key, small_neff(f"entry{i}"))
    assert cache.get(keys[0]) is None  # evicted
    assert cache.get(keys[2]) is not None
    assert cache.stats.memory_hits == 1 and cache.stats.misses == 1


def test_disk_layer_is_sharded_and_survives_a_new_instance(tmp_path):
    key = key_for("aten.mul.Tensor", (4,))
    neff = small_neff()
    NeffCache(tmp_path).put(key, neff)
    path = tmp_path / "neff" / key[:2] / f"{key}.neff"
    header, _, stored = path.read_bytes().partition(b"\n")
    assert stored == neff  # the NEFF as written, behind one header line naming its key
    assert header.split()[2] == key.encode()
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    fresh = NeffCache(tmp_path)
    assert fresh.get(key) == neff
    assert fresh.stats.disk_hits == 1


def test_corrupt_entry_is_a_miss_recompiled_and_replaced_with_one_warning(tmp_path):
    cache = NeffCache(tmp_path)
    keys = [key_for("corrupt", i) for i in range(2)]
    for key in keys:
        cache.put(key, small_neff())
        path = cache.path_for(key)
        data = bytearray(path.read_bytes())
        data[-10] ^= 0xFF  # flip bits in the tarball: the header hash no longer matches
        path.write_bytes(bytes(data))
    fresh = NeffCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fresh.get(keys[0]) is None
        compiled = []
        neff = fresh.get_or_compile(keys[1], lambda: compiled.append(1) or small_neff("again"))
    assert compiled == [1]
    assert read_neff(neff).name == "again"
    assert read_neff(stored_neff(fresh, keys[1])).name == "again"
    assert fresh.stats.corrupt == 2
    corrupt_warnings = [w for w in caught if "corrupt NEFF cache entry" in str(w.message)]
    assert len(corrupt_warnings) == 1


def test_truncated_and_garbage_entries_are_misses(tmp_path):
    cache = NeffCache(tmp_path)
    key = key_for("garbage")
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a neff")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cache.get(key) is None
    assert not path.exists()


def test_get_or_compile_compiles_once():
    cache = NeffCache(None)
    calls = []
    key = key_for("once")
    for _ in range(3):
        cache.get_or_compile(key, lambda: calls.append(1) or small_neff())
    assert calls == [1]
    assert cache.stats.compiles == 1


def test_rejects_bad_keys_and_values(tmp_path):
    cache = NeffCache(tmp_path)
    with pytest.raises(ValueError, match="hex digests"):
        cache.get("../../etc/passwd")
    with pytest.raises(TypeError, match="NEFF bytes"):
        cache.put(key_for("x"), "text")


def test_default_cache_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.delenv("TORCHNEURON_CACHE", raising=False)
    first = get_default_cache()
    assert first.directory == tmp_path / "a" / "neff"
    assert get_default_cache() is first
    monkeypatch.setenv("TORCHNEURON_CACHE", "0")
    assert get_default_cache().directory is None
    monkeypatch.delenv("TORCHNEURON_CACHE_DIR")
    monkeypatch.delenv("TORCHNEURON_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert get_default_cache().directory == tmp_path / "xdg" / "torchneuron" / "neff"


CONCURRENT_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from torchneuron.compiler.cache import NeffCache
    root, key, marker, neff = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    def compile_slowly():
        with open(marker, "a") as log:
            log.write("compiled\\n")
        time.sleep(1.0)
        return neff.read_bytes()
    neff = NeffCache(root).get_or_compile(key, compile_slowly)
    print(len(neff))
    """
)


def test_two_processes_compile_the_same_key_once(tmp_path):
    key = key_for("two processes")
    marker = tmp_path / "compiles.log"
    neff = tmp_path / "shared.neff"
    neff.write_bytes(small_neff("shared"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CONCURRENT_WRITER,
                str(tmp_path / "cache"),
                key,
                str(marker),
                str(neff),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
    sizes = {out.strip() for out, _ in outputs}
    assert len(sizes) == 1
    assert marker.read_text().count("compiled") == 1
    assert read_neff(NeffCache(tmp_path / "cache").get(key)).name == "shared"
