"""The op plan, its walks, and the dispatch decisions made by exception type or by structure."""

from __future__ import annotations

import warnings

import pytest
import torch

import torchneuron
from torchneuron.device import arrays, fallback, plan
from torchneuron.errors import TorchNeuronError
from torchneuron.settings import SettingsError

aten = torch.ops.aten


# -- numbers where the schema has a Tensor (wrapped scalars) ---------------------------


@pytest.mark.parametrize(
    "op, args",
    [
        (aten.add.Tensor, lambda x: (x, 2)),
        (aten.mul.Tensor, lambda x: (2, x)),
        (aten.div.Tensor, lambda x: (x, 2)),
        (aten.sub.Tensor, lambda x: (x, 2)),
        (aten.eq.Tensor, lambda x: (x, 2)),
        (aten.where.self, lambda x: (x > 0, x, 2)),
        (aten.pow.Tensor_Tensor, lambda x: (x, 2)),
        (aten.lerp.Tensor, lambda x: (x, x, 0.5)),
        (aten.maximum.default, lambda x: (x, 2)),
    ],
)
def test_binding_decision_matches_what_the_binding_accepts(op, args):
    # The plan converts numbers before the call exactly when the binding would refuse them.
    x = torch.randn(3)
    try:
        op(*args(x))
        accepted = True
    except RuntimeError:
        accepted = False
    assert plan.binding_takes_numbers_as_tensors(op) == accepted
    assert plan.plan_for(op).numbers_need_tensors == (not accepted)


def test_a_wrapped_number_reaches_an_op_whose_binding_refuses_numbers():
    x = torch.tensor([-1.0, 0.5, 2.0])
    result = plan.plan_for(aten.where.self).call([x > 0, x, 2])
    assert result.dtype == torch.float32 and result.tolist() == [2.0, 0.5, 2.0]
    # on the device: where.ScalarOther passes its scalar on as a wrapped number
    on_device = torch.where(x.to("neuron") > 0, x.to("neuron"), 2.0)
    assert on_device.cpu().tolist() == [2.0, 0.5, 2.0]


# -- a failed shape function: the user's error, or a gap of fake tensors ----------------

_library = torch.library.Library("torchneuron_dispatch_test", "DEF")
_library.define("scale_(Tensor(a!) x) -> Tensor(a!)")  # no fake kernel: a gap
_library.impl("scale_", lambda x: x.mul_(3.0), "CPU")


def test_a_gap_of_the_shape_functions_falls_back_before_running(monkeypatch):
    # With fallback forbidden, an op with no shape function must raise before its CPU
    # kernel touches the tensor (a call the shape function rejected would run it first).
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x = torch.ones(3, device="neuron")
    with pytest.raises(fallback.NeuronFallbackError, match="no shape function"):
        torch.ops.torchneuron_dispatch_test.scale_(x)
    assert x.cpu().tolist() == [1.0, 1.0, 1.0]
    monkeypatch.delenv("TORCHNEURON_NO_FALLBACK")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.ops.torchneuron_dispatch_test.scale_(x)
    assert x.cpu().tolist() == [3.0, 3.0, 3.0]
    assert "no shape function" in fallback.fallback_reasons()["torchneuron_dispatch_test::scale_"]


def test_a_users_error_mentioning_not_implemented_is_pytorchs_error(monkeypatch):
    # The shape function raises RuntimeError('"triu_indices" not implemented for ...'):
    # the user's error, so the CPU kernel's own error comes out, not a fallback.
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    with pytest.raises(NotImplementedError, match="triu_indices"):
        torch.triu_indices(3, 3, dtype=torch.float32, device="neuron")
    assert "aten::triu_indices" not in torchneuron.get_fallback_ops()


# -- the fallback switch and its error ---------------------------------------------------


def test_fallback_error_is_a_torchneuron_error_and_the_switch_reads_like_every_switch(
    monkeypatch,
):
    assert issubclass(fallback.NeuronFallbackError, TorchNeuronError)
    assert issubclass(fallback.NeuronFallbackError, RuntimeError)
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "false")
    assert not fallback.fallback_forbidden()
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "On")
    assert fallback.fallback_forbidden()
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "maybe")
    with pytest.raises(SettingsError, match="TORCHNEURON_NO_FALLBACK"):
        fallback.fallback_forbidden()


# -- the walks over a call -------------------------------------------------------------


def test_flatten_and_unflatten_are_inverse():
    op = aten.addcmul.default  # self, tensor1, tensor2, *, value (a lifted Scalar)
    op_plan = plan.plan_for(op)
    assert op_plan.kinds[:3] == (plan.ArgKind.TENSOR,) * 3
    assert op_plan.kinds[3] is plan.ArgKind.SCALAR and 3 in op_plan.lifted
    a, b, c = (torch.randn(2, 3, device="neuron") for _ in range(3))
    values = op_plan.normalize((a, b, c), {"value": 0.5})
    device, key, tensors, scalars = plan.flatten(op_plan, values)
    assert device == 0 and tensors == [a, b, c] and scalars == [0.5]
    assert key[0] is op and key[-1] == ("scalar", "float")
    again = plan.flatten(op_plan, op_plan.normalize((a, b, c.t().contiguous().t()), {}))
    assert again[1] != key and again[3] == []  # strides and the default value are in the key
    others = [t.cpu() for t in tensors]
    rebuilt = plan.unflatten(op_plan, values, iter(others), iter([torch.tensor(0.5)]))
    assert all(x is y for x, y in zip(rebuilt[:3], others))
    assert isinstance(rebuilt[3], torch.Tensor) and rebuilt[3].item() == 0.5
    assert plan.unflatten(op_plan, values, iter(others))[3] == 0.5  # scalars kept as they are


def test_flatten_rejects_tensors_on_two_devices():
    op_plan = plan.plan_for(aten.add.Tensor)
    values = op_plan.normalize((torch.ones(2, device="neuron:0"), torch.ones(2)), {})
    with pytest.raises(RuntimeError, match="same device"):
        plan.flatten(op_plan, values)


def test_pack_returns_gives_aliases_back_and_new_tensors_in_order():
    in_place = plan.plan_for(aten.add_.Tensor)
    x = torch.ones(2)
    assert plan.pack_returns(in_place, [x, x, 1], []) is x
    two = plan.plan_for(aten.max.dim)
    values, indices = torch.zeros(1), torch.zeros(1, dtype=torch.int64)
    packed = plan.pack_returns(two, [torch.ones(2), 0, False], [values, indices])
    assert packed[0] is values and packed[1] is indices
    assert plan.new_returns(two, packed) == [values, indices]
    assert plan.new_returns(in_place, x) == []


# -- numpy views of device tensors -----------------------------------------------------


def test_host_array_shares_dense_memory_and_copies_the_rest():
    x = torch.zeros(2, 3, device="neuron")
    array = arrays.host_array(x)
    array[0, 0] = 5.0
    assert x.cpu()[0, 0].item() == 5.0  # the same memory
    transposed = arrays.host_array(x.t())
    transposed[0, 1] = 7.0
    assert x.cpu()[1, 0].item() == 0.0  # a copy


@pytest.mark.parametrize("row", arrays.carried_rows(), ids=lambda row: row.name)
def test_every_carried_dtype_travels_through_a_program(row):
    values = torch.tensor([0.5, 1.0, 2.0, -4.0]).to(row.torch)
    on_device = values.to("neuron")
    assert arrays.host_array(on_device).dtype == row.numpy
    assert torch.equal(on_device.clone().cpu(), values)


def test_numpy_views_flag_is_set_only_after_the_views_are(monkeypatch):
    class FailingNative:
        def register_numpy_view(self, *args):
            raise RuntimeError("native layer unavailable")

    registered = []

    class RecordingNative:
        def register_numpy_view(self, dtype, carrier, numpy_dtype, carrier_numpy_name):
            registered.append((dtype, carrier, carrier_numpy_name))

    monkeypatch.setattr(arrays, "_views_registered", False)
    monkeypatch.setattr(arrays, "_C", FailingNative())
    with pytest.raises(RuntimeError, match="unavailable"):
        arrays.register_numpy_views()
    assert arrays._views_registered is False
    monkeypatch.setattr(arrays, "_C", RecordingNative())
    arrays.register_numpy_views()
    assert arrays._views_registered is True
    assert (torch.bfloat16, torch.int16, "int16") in registered
    assert (torch.float8_e4m3fn, torch.int8, "int8") in registered
