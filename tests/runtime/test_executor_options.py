"""Executor options that must be set before XLA starts: checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchneuron.runtime import NeuronRuntimeError, executable_cache_info, load_neff
from torchneuron.runtime.executor import PROGRAM_CACHE, get_executor, set_executable_cache_capacity

from .conftest import binary_neff

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import json, os, numpy as np
from tests.runtime.conftest import binary_neff
from torchneuron.runtime import load_neff
from torchneuron.runtime.executor import get_executor
loaded = load_neff(binary_neff("add", "float32"))
out = loaded.execute([np.ones((2, 3), np.float32)] * 2)[0]
print(json.dumps({"flags": os.environ.get("XLA_FLAGS", ""),
                  "single": get_executor().single_threaded, "sum": float(out.sum())}))
"""


def run_child(extra_env: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | extra_env
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
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


def test_xla_keeps_its_threads_by_default(monkeypatch):
    if os.environ.get("TORCHNEURON_XLA_SINGLE_THREADED"):
        pytest.skip("this test process asked for single-threaded XLA")
    load_neff(binary_neff("add", "float32"))
    assert get_executor().single_threaded is False


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
