"""Neuron tensors are ordinary tensors with storage: views, in-place, out=, save/load, devices."""

from __future__ import annotations

import copy
import io

import pytest
import torch

from torchneuron.device import _C


def test_views_alias_device_memory():
    x = torch.arange(12.0).to("neuron")
    view = x.view(3, 4)
    row = view[1]
    column = view.t()[2]
    assert row._base is x and row.data_ptr() == x.data_ptr() + 4 * 4
    row.fill_(-1.0)  # in-place through a view writes the base
    assert x.cpu()[4:8].tolist() == [-1.0] * 4
    assert column.cpu().tolist() == [2.0, -1.0, 10.0]
    assert not column.is_contiguous()
    assert torch.equal((column * 2).cpu(), column.cpu() * 2)
    strided = x.as_strided((2, 2), (6, 1), 1)
    assert strided.cpu().tolist() == [[1.0, 2.0], [-1.0, 8.0]]
    assert x.reshape(2, 6).unfold(1, 2, 2).shape == (2, 3, 2)


def test_in_place_and_out_semantics():
    a = torch.randn(4, 5)
    b = torch.randn(4, 5)
    da, db = a.to("neuron"), b.to("neuron")
    pointer = da.data_ptr()
    da.add_(db, alpha=0.5).mul_(2)
    a.add_(b, alpha=0.5).mul_(2)
    assert da.data_ptr() == pointer
    torch.testing.assert_close(da.cpu(), a)
    out = torch.empty(0, device="neuron")
    returned = torch.mul(da, db, out=out)
    assert returned is out and out.shape == (4, 5)
    torch.testing.assert_close(out.cpu(), a * b)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        da[:1].add_(db)
    ints = torch.ones(3, dtype=torch.int64, device="neuron")
    with pytest.raises(RuntimeError, match="can't be cast"):
        ints.add_(torch.full((3,), 0.5, device="neuron"))


def test_python_scalars_do_not_recompile():
    from torchneuron.device import dispatch

    x = torch.randn(8, device="neuron")
    x.mul(1.5).add(2.0, alpha=3.0)  # the scalars' types (not values) are part of the key
    before = dispatch.compiled_cache_info()["compiled"]
    results = [x.mul(value).add(value, alpha=value).cpu() for value in (0.25, 2.0, -3.0)]
    assert dispatch.compiled_cache_info()["compiled"] == before
    for value, result in zip((0.25, 2.0, -3.0), results):
        torch.testing.assert_close(result, x.cpu() * value + value * value)


def test_type_promotion_with_scalars_matches_cpu():
    ints = torch.arange(4)
    assert (ints.to("neuron") * 1.5).dtype == (ints * 1.5).dtype == torch.float32
    assert (ints.to("neuron") + 2).dtype == torch.int64
    halves = torch.ones(3, dtype=torch.float16)
    assert (halves.to("neuron") * 2.5).dtype == torch.float16
    torch.testing.assert_close((ints.to("neuron") * 1.5).cpu(), ints * 1.5)
    # 0-d operands: a wrapped number still does not promote
    half_scalar = torch.tensor(1.5, dtype=torch.bfloat16)
    assert (half_scalar.to("neuron") + 0.25).dtype == torch.bfloat16
    # ops whose Python binding rejects a wrapped number (take_along_dim's remainder by an int)
    x, index = torch.randn(3, 4), torch.tensor([[0, 1], [2, 3], [1, -1]])
    assert torch.equal(
        torch.take_along_dim(x.to("neuron"), index.to("neuron"), dim=1).cpu(),
        torch.take_along_dim(x, index, dim=1),
    )


def test_parameters_data_and_deepcopy():
    model = torch.nn.Linear(3, 2).to("neuron")
    assert isinstance(model.weight, torch.nn.Parameter)
    assert model.weight.device.type == "neuron"
    model.weight.data = torch.zeros(2, 3, device="neuron")
    assert model.weight.cpu().abs().sum().item() == 0.0
    clone = copy.deepcopy(model)
    assert clone.weight.device.type == "neuron"
    assert clone.weight.data_ptr() != model.weight.data_ptr()
    clone.weight.data.fill_(1.0)
    assert model.weight.cpu().sum().item() == 0.0


def test_save_and_load_round_trip_weights_only():
    model = torch.nn.Linear(4, 3).to("neuron")
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    assert loaded["weight"].device == torch.device("neuron", 0)
    torch.testing.assert_close(loaded["weight"].cpu(), model.weight.detach().cpu())
    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu", weights_only=True)
    assert on_cpu["bias"].device.type == "cpu"
    fresh = torch.nn.Linear(4, 3).to("neuron")
    fresh.load_state_dict(loaded)
    torch.testing.assert_close(fresh.bias.detach().cpu(), model.bias.detach().cpu())


def test_storages_generators_and_pinned_memory():
    storage = torch.UntypedStorage(16, device="neuron")
    assert storage.device.type == "neuron" and storage.nbytes() == 16
    storage.resize_(64)
    assert storage.nbytes() == 64
    assert storage.cpu().device.type == "cpu"
    pinned = torch.ones(4).pin_memory()
    assert pinned.is_pinned()
    assert torch.equal(pinned.to("neuron", non_blocking=True).cpu(), torch.ones(4))
    assert torch.Generator("neuron").device == torch.device("neuron", 0)


def test_two_devices_have_their_own_memory_and_do_not_mix():
    a = torch.ones(1024, device="neuron:0")
    before = torch.neuron.memory_allocated(1)
    b = torch.ones(1024, device="neuron:1")
    assert b.device == torch.device("neuron", 1)
    assert torch.neuron.memory_allocated(1) - before >= 4096
    result = b * 3
    assert result.device == torch.device("neuron", 1)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + torch.ones(1024)
    assert (a + torch.tensor(2.0)).device == torch.device("neuron", 0)  # CPU scalars are fine
    moved = b.to("neuron:0")
    assert moved.device.index == 0 and torch.equal((moved + a).cpu(), torch.full((1024,), 2.0))


def test_host_alias_shares_bytes():
    x = torch.zeros(3, device="neuron")
    alias = _C.host_alias(x)
    alias[1] = 5.0
    assert x.cpu().tolist() == [0.0, 5.0, 0.0]
    assert x[1].item() == 5.0
