"""Shared pytest setup: deterministic, single-threaded PyTorch for numerics comparisons.

The default run is parallel (README: ``pytest -n 2 --dist loadfile``, pytest-xdist; a
test file runs whole on one worker, so its module and session fixtures run once). On a
worker, each process keeps to one thread (PyTorch's, XLA's pool) and the conformance
tool's pool to one process, so two workers do not oversubscribe two cores.
"""

import os

import pytest
import torch

from torchneuron.testing.compile_cost import skip_guard_latency_profiling

# One core per xdist worker: set before anything starts XLA's CPU client or a pool.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("TORCHNEURON_XLA_THREADS", "1")
    os.environ.setdefault("TORCHNEURON_CONFORMANCE_WORKERS", "1")
    torch.set_num_threads(1)


# Tests compile thousands of one-off graphs: Dynamo's timing of each new guard set (a
# logged metric, ~21 ms a compile) is left out (torchneuron/testing/compile_cost.py).
skip_guard_latency_profiling()


# Longest files first (``--dist loadfile`` hands whole files to the workers in
# collection order; ``--no-loadscope-reorder`` in pyproject.toml keeps xdist from
# reordering them by test count, which put the long files of one or two tests last, one
# worker running them while the other had nothing left). The OpInfo conformance run
# (one session fixture, ~12 min) comes first; then the files over ~30 s in the
# fresh-clone run's --durations (seconds then); the rest keep their order.
FIRST = (
    "tests/testing/conformance/test_opinfo_conformance.py",  # 727
    "tests/distributed/test_parallel_apis.py",  # 96
    "tests/distributed/test_llama_recipe.py",  # 85
    "tests/distributed/test_collectives.py",  # 62
    "tests/compiler/test_dynamic_shapes.py",  # 56
    "tests/cli/test_compile_cli.py",  # 53
    "tests/testing/fuzz/test_smoke.py",  # 46
    "tests/compiler/test_moe.py",  # 44
    "tests/test_getting_started.py",  # 40
    "tests/lowering/test_unsigned_semantics.py",  # 36
    "tests/test_readme.py",  # 36
    "tests/lowering/test_native_coverage.py",  # 36
    "tests/device/test_registration.py",  # 35
    "tests/distributed/test_ddp.py",  # 33
    "tests/compiler/test_buckets.py",  # 31
    "tests/test_backend.py",  # 30
)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        path = item.path.as_posix()
        return next((i for i, name in enumerate(FIRST) if path.endswith(name)), len(FIRST))

    items.sort(key=rank)  # stable: within a rank, collection order


@pytest.fixture(autouse=True)
def _background_builds_end_with_their_test(monkeypatch):
    """Nothing a test's calls left to the background thread runs after the test's
    environment (its cache folder) is undone: the running build ends, the queued ones
    are dropped (a test that counts builds waits for them itself: ``drain``)."""
    yield
    from torchneuron.compiler import specialize_later

    specialize_later.cancel()


@pytest.fixture(autouse=True)
def _deterministic_torch():
    torch.manual_seed(0)
    yield


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def native_compile(monkeypatch, tmp_path, fresh_dynamo):
    """No CPU fallback, a disk cache of this test's own, Dynamo reset before and after."""
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    yield
