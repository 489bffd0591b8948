"""Mixed-dtype calls whose shape function promotes unlike the CPU kernel get the CPU's dtype.

``threshold_backward(int64 grad, float32 self)`` returned int64 on the device (the
shape function's dtype) where the CPU returns float32.
"""

from __future__ import annotations

import pytest
import torch

from torchneuron.device.promotion import RESULT_DTYPES

aten = torch.ops.aten


def _data():
    return {
        "x32": torch.tensor([-1.0, 0.5, 2.0]),
        "x64": torch.tensor([0.3, 0.25, 4.0], dtype=torch.float64),
        "i64": torch.tensor([1, 2, 3]),
        "i32": torch.tensor([4, -5, 6], dtype=torch.int32),
        "b": torch.tensor([True, False, True]),
    }


CASES = {
    "threshold_backward-int64-grad-float32-self": lambda d: aten.threshold_backward(
        d["i64"], d["x32"], 0.0
    ),
    "threshold_backward-float32-float64": lambda d: aten.threshold_backward(
        d["x32"], d["x64"], 0.5
    ),
    "threshold_backward-bool-grad": lambda d: aten.threshold_backward(d["b"], d["x32"], 0.0),
    "threshold_backward-int32-int64": lambda d: aten.threshold_backward(d["i32"], d["i64"], 2),
    "threshold_backward-float32-int64-self": lambda d: aten.threshold_backward(
        d["x32"], d["i64"], 1
    ),
    "native_dropout_backward-float64-mask": lambda d: aten.native_dropout_backward(
        d["x32"], d["x64"], 2.0
    ),
    "huber_loss-mean": lambda d: aten.huber_loss(d["x32"], d["x64"]),
    "huber_loss-none": lambda d: aten.huber_loss(d["x32"], d["x64"], 0),
    "soft_margin_loss": lambda d: aten.soft_margin_loss(d["x32"], d["x64"]),
    "same-dtype-untouched": lambda d: aten.threshold_backward(d["x32"], d["x32"], 0.0),
}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.mark.parametrize("case", CASES)
def test_mixed_dtype_call_has_the_cpu_result_dtype_and_values(case):
    data = _data()
    expected = CASES[case](data)
    got = CASES[case]({name: t.to("neuron") for name, t in data.items()})
    assert got.device.type == "neuron"
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected)


def test_every_table_entry_is_an_op_whose_shape_function_disagrees_with_the_cpu():
    # the table says where PyTorch's meta and CPU promotion differ: each entry must still
    data = _data()
    pairs = {
        "aten::threshold_backward": (data["i64"], data["x32"], 0.0),
        "aten::native_dropout_backward": (data["x32"], data["x64"], 2.0),
        "aten::huber_loss": (data["x32"], data["x64"], 0),
        "aten::soft_margin_loss": (data["x32"], data["x64"], 0),
    }
    assert set(pairs) == set(RESULT_DTYPES)
    for name, args in pairs.items():
        op = getattr(aten, name.split("::")[1]).default
        on_meta = op(*(a.to("meta") if isinstance(a, torch.Tensor) else a for a in args))
        assert op(*args).dtype != on_meta.dtype, name
