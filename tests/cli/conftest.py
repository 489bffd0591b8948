"""Fixtures of the ``neuronc`` tests: a runner of command lines and two small programs."""

import numpy as np
import pytest
import torch

from tests.cli.neuronc import NeuroncSession
from torchneuron.zoo import ZOO


@pytest.fixture(scope="module")
def neuronc():
    """``neuronc.run(*args)``: each command line in a process forked from one runner."""
    session = NeuroncSession()
    yield session
    session.close()


@pytest.fixture(scope="module")
def mlp_program(tmp_path_factory):
    """(the zoo MLP exported to a .pt2, the model, its example input)."""
    entry = ZOO["mlp"]
    model = entry.build().eval()
    (x,) = entry.example_inputs()
    path = tmp_path_factory.mktemp("programs") / "mlp.pt2"
    torch.export.save(torch.export.export(model, (x,)), str(path))
    return path, model, x


@pytest.fixture(scope="module")
def affine_program(tmp_path_factory):
    """(a .pt2 of ``x * 3 + 1`` on four floats, an .npy of ``arange(4)`` to feed it)."""

    class Affine(torch.nn.Module):
        def forward(self, x):
            return x * 3.0 + 1.0

    folder = tmp_path_factory.mktemp("affine")
    path = folder / "affine.pt2"
    torch.export.save(torch.export.export(Affine(), (torch.ones(4),)), str(path))
    np.save(folder / "x.npy", np.arange(4, dtype=np.float32))
    return path, folder / "x.npy"
