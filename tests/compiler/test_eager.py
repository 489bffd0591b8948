"""Eager per-op compilation: op -> FX -> NEFF through the shared disk cache, across processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import torch

from torchneuron.compiler import eager

PROGRAM = textwrap.dedent(
    """
    import torch
    from torchneuron.compiler.cache import get_default_cache
    x = torch.arange(6.0, device="neuron").view(2, 3)
    y = (x * 2.5 + 1).relu().sum(dim=1)
    print("result", y.cpu().tolist())
    stats = get_default_cache().stats
    print("stats", stats.compiles, stats.disk_hits)
    """
)


def run(cache_dir, extra_env=None):
    env = dict(os.environ, TORCHNEURON_CACHE_DIR=str(cache_dir), **(extra_env or {}))
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                            env=env, timeout=300, cwd=str(cache_dir))
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    compiles, disk_hits = map(int, lines["stats"].split())
    return lines["result"], compiles, disk_hits, result.stderr


def test_second_process_reuses_the_disk_cache_and_corruption_is_a_miss(tmp_path):
    first, compiles, hits, _ = run(tmp_path)
    assert first == "[10.5, 33.0]"
    assert compiles >= 3 and hits == 0
    entries = sorted((tmp_path / "neff").glob("*/*.neff"))
    assert len(entries) == compiles and all(p.parent.name == p.name[:2] for p in entries)

    second, compiles_again, hits_again, _ = run(tmp_path)
    assert second == first
    assert compiles_again == 0 and hits_again >= compiles

    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:-7])  # truncated: no longer a valid NEFF
    third, recompiles, _, stderr = run(tmp_path)
    assert third == first
    assert recompiles == compiles
    assert stderr.count("corrupt NEFF cache entry") == 1


def test_disabled_disk_cache_writes_nothing(tmp_path):
    result, compiles, hits, _ = run(tmp_path, {"TORCHNEURON_CACHE": "0"})
    assert result == "[10.5, 33.0]" and compiles >= 3 and hits == 0
    assert not (tmp_path / "neff").exists()


def test_compile_op_names_inputs_after_the_call_and_runs_on_a_core():
    import numpy as np

    import torchneuron  # noqa: F401

    specs = [eager.TensorSpec((2, 3), (3, 1), torch.float32), eager.TensorSpec((), (), torch.float64)]
    compiled = eager.compile_op(
        "test::scaled_sub", ("test-scaled-sub", 1), specs,
        lambda a, s: (torch.ops.aten.sub.Tensor(a, s),), 1,
    )
    assert set(compiled.input_order) == {0, 1}
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = compiled.execute(0, [a, np.asarray(1.5)])
    np.testing.assert_allclose(out, a - 1.5)
    assert 0 in compiled.loaded
    compiled.unload()
    assert not compiled.loaded
