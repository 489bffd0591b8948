"""Inputs laid out densely in another order (a transposed weight) reach their program in
that order, without a copy, and the program permutes them back (compiled.dense_orders)."""

import pytest
import torch

from torchneuron.device import compiled


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    # a NEFF of another test's signature must not stand in for this one's
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))


def _entries_with_orders():
    return [entry for _, entry in compiled.cache.items() if getattr(entry, "dense_orders", None)]


def test_dense_orders_names_permuted_layouts_only():
    w = torch.randn(5, 3)
    assert compiled.dense_orders([w]) is None
    assert compiled.dense_orders([w.t(), w]) == ((1, 0), None)
    x = torch.randn(2, 3, 4).permute(2, 0, 1)
    assert compiled.dense_orders([x]) == ((1, 2, 0),)
    assert compiled.dense_orders([torch.randn(6, 4)[:, :2]]) is None  # gaps: copied as before


@pytest.mark.parametrize("shape", [(48, 64), (32, 32)])  # square: same shape either order
def test_a_transposed_weight_is_read_in_its_dense_order(shape):
    a, w = torch.randn(7, shape[1]), torch.randn(*shape)
    device_w = w.to("neuron")
    got = torch.mm(a.to("neuron"), device_w.t())
    torch.testing.assert_close(got.cpu(), a @ w.t(), rtol=1e-5, atol=1e-5)
    # the program's input is the weight as it lies in memory, not transposed
    (entry,) = [
        entry
        for entry in _entries_with_orders()
        if entry.program.program_on(0).manifest["signature"]["inputs"][0]["shape"] == [7, shape[1]]
    ]
    assert entry.dense_orders == (None, (1, 0))
    assert entry.program.program_on(0).manifest["signature"]["inputs"][1]["shape"] == list(shape)


def test_permuted_inputs_of_elementwise_and_in_place_ops_equal_the_cpu():
    x = torch.randn(2, 3, 4)
    device_x = x.to("neuron")
    permuted = device_x.permute(2, 0, 1)
    torch.testing.assert_close((permuted * 2 + 1).cpu(), x.permute(2, 0, 1) * 2 + 1)
    w = torch.randn(6, 5)
    device_w = w.to("neuron")
    device_w.t().mul_(3)  # written through the transposed view
    torch.testing.assert_close(device_w.cpu(), w * 3)
