"""Executor options that must be set before XLA starts: checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchneuron.runtime import NeuronRuntimeError, executable_cache_info, executor, load_neff
from torchneuron.runtime.executor import PROGRAM_CACHE, get_executor, set_executable_cache_capacity
from torchneuron.settings import SettingsError

from .conftest import binary_neff

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import json, os, sys, numpy as np
extra = {{}}
{before}
from tests.runtime.conftest import binary_neff
from torchneuron.runtime import load_neff
from torchneuron.runtime.executor import get_executor
loaded = load_neff(binary_neff("add", "float32"))
out = loaded.execute([np.ones((2, 3), np.float32)] * 2)[0]
names = [open(f"/proc/self/task/{{t}}/comm").read().strip() for t in os.listdir("/proc/self/task")]
extra["jax imported"] = "jax" in sys.modules
{after}
print(json.dumps({{"flags": os.environ.get("XLA_FLAGS", ""),
                  "single": get_executor().single_threaded, "threads": get_executor().threads,
                  "pool": names.count("tf_XLAEigen"), "sum": float(out.sum()), **extra}}))
"""

# Whatever this test process was started with, a child sees only what a test gives it.
THREAD_VARIABLES = (
    "XLA_FLAGS",
    "PJRT_NPROC",
    "NPROC",
    "TORCHNEURON_XLA_SINGLE_THREADED",
    "TORCHNEURON_XLA_THREADS",
)


def run_child(extra_env: dict[str, str], before: str = "", after: str = "") -> dict:
    """CHILD in a fresh interpreter, ``before`` run first and ``after`` last (either may
    put figures in the dict ``extra``, which the report includes)."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES} | extra_env
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(before=before, after=after)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_single_threaded_xla_is_opt_in():
    enabled = run_child(
        {"TORCHNEURON_XLA_SINGLE_THREADED": "1", "XLA_FLAGS": "--xla_dump_hlo_as_text"}
    )
    assert enabled["single"] is True
    assert enabled["flags"].split() == [
        "--xla_dump_hlo_as_text",
        "--xla_cpu_multi_thread_eigen=false",
    ]
    assert enabled["sum"] == 12.0


def test_single_threaded_xla_has_one_pool_thread():
    # The flag alone left XLA's pool at one thread per core; the pool's size is the limit.
    child = run_child({"TORCHNEURON_XLA_SINGLE_THREADED": "1", "TORCHNEURON_XLA_THREADS": "3"})
    assert (child["threads"], child["pool"]) == (1, 1)


def test_xla_threads_sets_the_pool_size():
    child = run_child({"TORCHNEURON_XLA_THREADS": "3"})
    assert (child["threads"], child["pool"], child["single"]) == (3, 3, False)
    assert child["sum"] == 12.0


def test_xla_uses_every_core_by_default():
    child = run_child({})
    cores = len(os.sched_getaffinity(0))
    assert (child["threads"], child["pool"]) == (cores, cores)
    assert child["flags"] == ""


def test_a_pool_size_the_user_gave_xla_is_left_alone():
    child = run_child({"PJRT_NPROC": "3"})
    assert (child["threads"], child["pool"]) == (None, 3)


def test_compiling_and_running_a_program_never_imports_jax(tmp_path):
    # The executor drives jaxlib's PJRT client itself: `import jax` costs ~0.45 s, the
    # largest part of a warm process's first step. The child compiles (its cache folder
    # is empty: no executable to load), keeps the executable and runs, and jax stays
    # out of the process.
    cache = tmp_path / "cache"
    child = run_child({"TORCHNEURON_CACHE_DIR": str(cache)})
    assert child["jax imported"] is False
    assert child["sum"] == 12.0
    assert len(list((cache / "xla").iterdir())) == 1  # the executable XLA compiled


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float16"])
def test_outputs_numpy_cannot_name_are_read_without_jax(dtype):
    # numpy's buffer protocol has no format for bfloat16 or float8: their outputs are
    # read through the buffer's DLPack export, still without importing jax. Copied and
    # uncopied (resident) results, and an empty one, keep dtype, shape and values.
    after = (
        "import ml_dtypes\n"
        f"dt = np.dtype(getattr(ml_dtypes, '{dtype}', None) or '{dtype}')\n"
        f"low = load_neff(binary_neff('add', '{dtype}', (3, 4)))\n"
        "x = (np.arange(12).reshape(3, 4) / 4).astype(dt)\n"
        "(copied,) = low.execute([x, x])\n"
        "(resident,) = low.execute([x, x], resident=True)\n"
        "want = (x.astype(np.float32) * 2).astype(dt)\n"
        "extra['copied'] = [str(copied.dtype), list(copied.shape), copied.flags.writeable,"
        " bool((copied == want).all())]\n"
        "extra['resident'] = [str(resident.dtype), bool((resident == want).all())]\n"
        f"empty = load_neff(binary_neff('add', '{dtype}', (0, 4), name='empty'))\n"
        "(e,) = empty.execute([x[:0], x[:0]])\n"
        "extra['empty'] = [str(e.dtype), list(e.shape)]\n"
        "extra['jax after'] = 'jax' in sys.modules\n"
    )
    child = run_child({}, after=after)
    assert child["copied"] == [dtype, [3, 4], True, True]
    assert child["resident"] == [dtype, True]
    assert child["empty"] == [dtype, [0, 4]]
    assert child["jax after"] is False


def test_jax_works_in_a_process_where_we_run_first():
    # jaxlib makes an output's aval from jax.core once per process, and keeps the answer
    # (none at all, if the import failed) for good; we never ask it, so jax, imported
    # after us, gets its arrays whole.
    after = (
        "import jax.numpy as jnp\n"
        "value = jnp.arange(3.0) * 2\n"
        "extra['jax sum'] = float(value.sum())\n"
        "extra['jax aval'] = str(value.aval)\n"
    )
    child = run_child({}, after=after)
    assert child["sum"] == 12.0
    assert (child["jax sum"], child["jax aval"]) == (6.0, "float32[3]")


def test_a_cpu_backend_jax_started_first_is_shared():
    # One XLA CPU client (one thread pool) per process: JAX's, when JAX got there first.
    before = (
        "import jax, jax.numpy as jnp\n"
        "jnp.ones(2).block_until_ready()\n"
        "from jax.extend.backend import get_backend\n"
    )
    after = "extra['shared'] = get_executor()._backend is get_backend('cpu')\n"
    child = run_child({}, before=before, after=after)
    assert child["shared"] is True
    assert child["sum"] == 12.0


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_a_malformed_thread_count_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("TORCHNEURON_XLA_THREADS", value)
    monkeypatch.delenv("TORCHNEURON_XLA_SINGLE_THREADED", raising=False)
    monkeypatch.setattr(executor, "_single_threaded_request", None)
    with pytest.raises(
        SettingsError, match=f"TORCHNEURON_XLA_THREADS='{value}' is not a whole number >= 1"
    ):
        executor.requested_xla_threads()


def test_set_single_threaded_false_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_XLA_SINGLE_THREADED", "1")
    monkeypatch.setenv("TORCHNEURON_XLA_THREADS", "2")
    monkeypatch.setattr(executor, "_single_threaded_request", False)
    assert executor.requested_xla_threads() == 2
    monkeypatch.setattr(executor, "_single_threaded_request", None)
    assert executor.requested_xla_threads() == 1


def test_unknown_executor():
    with pytest.raises(NeuronRuntimeError, match="unknown executor 'bogus'; available: null, xla"):
        get_executor("bogus")


def test_cache_capacity_evicts_least_recently_used():
    old_capacity = PROGRAM_CACHE.capacity
    try:
        PROGRAM_CACHE.clear()
        set_executable_cache_capacity(1)
        load_neff(binary_neff("add", "float32"))
        load_neff(binary_neff("subtract", "float32"))
        load_neff(binary_neff("add", "float32"))
        assert executable_cache_info() == {"hits": 0, "misses": 3, "size": 1, "capacity": 1}
    finally:
        set_executable_cache_capacity(old_capacity)
