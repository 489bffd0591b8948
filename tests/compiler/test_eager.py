"""Eager per-op compilation: op -> FX -> NEFF through the shared disk cache, across processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import torch

from torchneuron.compiler import eager
from torchneuron.compiler.cache import NeffCache

PROGRAM = textwrap.dedent(
    """
    import sys
    import torch
    from torchneuron.compiler.cache import get_default_cache
    x = torch.arange(6.0, device="neuron").view(2, 3)
    y = (x * 2.5 + 1).relu().sum(dim=1)
    print("result", y.cpu().tolist())
    stats = get_default_cache().stats
    print("stats", stats.compiles, stats.disk_hits)
    heavy = ("torch_mlir", "torchneuron.lowering.decompositions", "torchneuron.passes")
    print("imported", ",".join(m for m in heavy if m in sys.modules) or "-")
    """
)


def run(cache_dir, extra_env=None):
    env = dict(os.environ, TORCHNEURON_CACHE_DIR=str(cache_dir), **(extra_env or {}))
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=str(cache_dir),
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    compiles, disk_hits = map(int, lines["stats"].split())
    return lines["result"], compiles, disk_hits, lines["imported"]


def test_second_process_reuses_the_disk_cache(tmp_path):
    first, compiles, hits, imported = run(tmp_path)
    assert first == "[10.5, 33.0]"
    assert compiles >= 3 and hits == 0
    assert "torch_mlir" in imported  # it compiled
    entries = sorted((tmp_path / "neff").glob("*/*.neff"))
    assert len(entries) == compiles and all(p.parent.name == p.name[:2] for p in entries)

    second, compiles_again, hits_again, imported_again = run(tmp_path)
    assert second == first
    assert compiles_again == 0 and hits_again >= compiles
    # a process that finds every program on disk loads no compiler: not torch-mlir (the
    # cache key's versions, the bucket setting), not the lowering or the passes
    assert imported_again == "-"


def test_corrupt_entry_is_recompiled_and_replaced(tmp_path):
    import warnings

    import numpy as np

    import torchneuron  # noqa: F401

    specs = [eager.TensorSpec((3,), (1,), torch.float32)]
    traced = []

    def negate(a):
        traced.append(1)
        return (torch.ops.aten.neg.default(a),)

    key = ("test-negate", str(tmp_path))
    eager.compile_op("test::negate", key, specs, negate, 1, cache=NeffCache(tmp_path))
    eager.compile_op("test::negate", key, specs, negate, 1, cache=NeffCache(tmp_path))
    assert traced == [1]  # the second (fresh) cache read the disk entry: no trace
    (entry,) = (tmp_path / "neff").glob("*/*.neff")
    entry.write_bytes(entry.read_bytes()[:-7])
    cache = NeffCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = eager.compile_op(
            "test::negate", key, specs, negate, 1, cache=cache, load=_loaded_on_core_0
        )
    assert traced == [1, 1] and cache.stats.corrupt == 1
    assert sum("corrupt NEFF cache entry" in str(w.message) for w in caught) == 1
    (out,) = program.execute(0, [np.arange(3, dtype=np.float32)])
    np.testing.assert_array_equal(out, [-0.0, -1.0, -2.0])
    program.unload()


def test_an_op_from_disk_or_just_compiled_is_read_once_on_its_way_to_a_core(tmp_path, monkeypatch):
    """The disk cache's check reads the NEFF (every check of the reader); the signature
    check and the load on a core take that reading instead of reading the bytes again."""
    import torchneuron.neff

    specs = [eager.TensorSpec((2,), (1,), torch.float32)]
    reads = []
    real = torchneuron.neff.read_neff

    def counted(data, **keywords):
        reads.append(len(data) if isinstance(data, bytes) else type(data).__name__)
        return real(data, **keywords)

    monkeypatch.setattr(torchneuron.neff, "read_neff", counted)

    def double(a):
        return (torch.ops.aten.mul.Tensor(a, 2.0),)

    key = ("test-double", str(tmp_path))
    for expected_reads in (1, 1):  # compiled, then from the disk of a new cache
        reads.clear()
        program = eager.compile_op(
            "test::double", key, specs, double, 1, cache=NeffCache(tmp_path), load=_loaded_on_core_0
        )
        assert len(reads) == expected_reads and isinstance(reads[0], int), reads
        program.unload()


def _loaded_on_core_0(compiled):
    """``compile_op``'s ``load``: the program resident on core 0, as the device loads it."""
    from torchneuron.device import programs

    program = programs.ResidentProgram(compiled)
    program.program_on(0)
    return program


def test_compile_op_takes_the_call_inputs_in_order_and_runs_on_a_core():
    import numpy as np

    import torchneuron  # noqa: F401
    from torchneuron.device import programs
    from torchneuron.neff import read_neff

    specs = [
        eager.TensorSpec((2, 3), (3, 1), torch.float32),
        eager.TensorSpec((), (), torch.float64),
    ]
    program = programs.compile_resident(
        "test::scaled_sub",
        ("test-scaled-sub", 1),
        specs,
        lambda a, s: (torch.ops.aten.sub.Tensor(a, s),),
        1,
        0,
    )
    inputs = read_neff(program.compiled.neff).manifest["signature"]["inputs"]
    assert [(i["shape"], i["dtype"]) for i in inputs] == [([2, 3], "float32"), ([], "float64")]
    assert 0 in program.loaded  # loaded on the caller's core as part of the lookup
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = program.execute(0, [a, np.asarray(1.5)])
    np.testing.assert_allclose(out, a - 1.5)
    program.unload()
    assert not program.loaded


def test_a_cached_neff_whose_inputs_are_not_the_calls_is_recompiled(tmp_path):
    # The cache entry under this key is another program (inputs swapped): a miss.
    import warnings

    specs = [
        eager.TensorSpec((2, 3), (3, 1), torch.float32),
        eager.TensorSpec((3,), (1,), torch.float32),
    ]
    cache = NeffCache(tmp_path)
    key = ("test-swapped", 1)
    add = lambda a, b: (torch.ops.aten.add.Tensor(a, b),)  # noqa: E731
    right = eager.compile_op("test::add", key, specs, add, 1, cache=cache)
    wrong = eager.compile_op(
        "test::add", ("other", 2), list(reversed(specs)), lambda b, a: add(a, b), 1, cache=cache
    )
    cache.put(right.key, wrong.neff)
    cache.clear_memory()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        healed = eager.compile_op("test::add", key, specs, add, 1, cache=cache)
    assert healed.neff != wrong.neff
    assert any("are not the op's inputs" in str(w.message) for w in caught), caught
