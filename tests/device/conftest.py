"""Shared setup for the neuron device tests: the device registered, a private NEFF cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def _neuron_registered(tmp_path_factory):
    # One NEFF cache for the whole session (and its subprocesses), away from the user's.
    os.environ.setdefault("TORCHNEURON_CACHE_DIR", str(tmp_path_factory.mktemp("neff-cache")))
    import torchneuron  # noqa: F401  (registers the device)

    assert torch.neuron.is_available()
    yield


@pytest.fixture(autouse=True)
def _no_padded_classes_from_other_tests():
    # a shape class one test established must not send another test's ops down the
    # padded route (synchronous, outside the fuser): each test starts with none
    from torchneuron.device import compiled

    compiled.forget_padded()


@pytest.fixture
def asynchronous():
    """Run the test with asynchronous execution, whatever NEURON_LAUNCH_BLOCKING says."""
    from torchneuron.device import streams

    streams.set_launch_blocking(False)
    try:
        yield
    finally:
        streams.set_launch_blocking(None)


def run_python(code: str, env: dict | None = None, timeout: int = 300):
    """Run ``code`` in a fresh interpreter (autoload on unless ``env`` says otherwise)."""
    import subprocess
    import tempfile

    full_env = dict(os.environ)
    full_env.update(env or {})
    # Run outside the source tree: the installed package (and its entry points) is what
    # a user gets; a stray *.egg-info in the tree must not shadow its metadata.
    with tempfile.TemporaryDirectory() as workdir:
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=workdir,
        )
