"""Shared pytest setup: deterministic, single-threaded PyTorch for numerics comparisons."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _deterministic_torch():
    torch.manual_seed(0)
    yield


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
