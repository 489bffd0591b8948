"""Shared pytest setup: deterministic, single-threaded PyTorch for numerics comparisons.

The default run is parallel (README: ``pytest -n 2 --dist loadfile``, pytest-xdist; a
test file runs whole on one worker, so its module and session fixtures run once). On a
worker, each process keeps to one thread (PyTorch's, XLA's pool) and the conformance
tool's pool to one process, so two workers do not oversubscribe two cores.
"""

import os

import pytest
import torch

# One core per xdist worker: set before anything starts XLA's CPU client or a pool.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("TORCHNEURON_XLA_THREADS", "1")
    os.environ.setdefault("TORCHNEURON_CONFORMANCE_WORKERS", "1")
    torch.set_num_threads(1)


# The longest file first: under ``--dist loadfile`` a worker takes files in this order,
# and the OpInfo conformance run (one session fixture, minutes) should not start last.
FIRST = ("tests/testing/conformance/test_opinfo_conformance.py",)


def pytest_collection_modifyitems(config, items):
    def first(item) -> bool:
        return any(str(item.path).endswith(name) for name in FIRST)

    items[:] = [item for item in items if first(item)] + [item for item in items if not first(item)]


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
