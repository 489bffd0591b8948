"""Ops without a lowering run on the CPU once-warned and listed, or raise when forbidden."""

from __future__ import annotations

import warnings

import pytest
import torch

import torchneuron
from torchneuron.device import dispatch, fallback


def _symmetric(seed: int) -> torch.Tensor:
    a = torch.randn(4, 4, generator=torch.Generator().manual_seed(seed))
    return a @ a.T + torch.eye(4)


def test_unlowered_op_falls_back_with_one_warning_and_is_listed():
    # LAPACK's LDL^T factorization (Bunch-Kaufman pivots) has no lowering
    a, b = _symmetric(0), _symmetric(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = torch.linalg.ldl_factor(a.to("neuron"))
        second = torch.linalg.ldl_factor(b.to("neuron"))
    assert first.LD.device.type == "neuron"
    torch.testing.assert_close(first.LD.cpu(), torch.linalg.ldl_factor(a).LD)
    torch.testing.assert_close(second.pivots.cpu(), torch.linalg.ldl_factor(b).pivots)
    name = "aten::linalg_ldl_factor_ex"
    messages = [str(w.message) for w in caught if name in str(w.message)]
    assert len(messages) == 1 and "runs on the CPU" in messages[0]
    assert name in torchneuron.get_fallback_ops()
    assert name in torch.neuron.get_fallback_ops()
    assert "no lowering" in fallback.fallback_reasons()[name]


def test_fallback_writes_in_place_and_out_results_back():
    a = _symmetric(2)
    expected = torch.linalg.ldl_factor(a)
    ld = torch.empty(0, device="neuron")
    pivots = torch.empty(0, dtype=torch.int32, device="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.linalg.ldl_factor(a.to("neuron"), out=(ld, pivots))
    torch.testing.assert_close(ld.cpu(), expected.LD)
    torch.testing.assert_close(pivots.cpu(), expected.pivots)


_test_library = torch.library.Library("torchneuron_test", "DEF")
_test_library.define("bump_(Tensor(a!) x, float amount) -> ()")
_test_library.define("halve_(Tensor(a!) x) -> Tensor(a!)")


def _bump(x, amount):
    x.add_(amount)


def _halve(x):
    return x.mul_(0.5)


_test_library.impl("bump_", _bump, "CPU")
_test_library.impl("halve_", _halve, "CPU")


def test_fallback_writes_in_place_results_back_into_device_tensors():
    # An op no lowering will ever cover: a CPU-only custom op that mutates its argument.
    x = torch.arange(6.0, device="neuron")
    view = x[2:5]  # a strided view: the write must land in the base's memory
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.ops.torchneuron_test.bump_(view, 10.0)
        returned = torch.ops.torchneuron_test.halve_(x)
    assert returned is x
    assert x.cpu().tolist() == [0.0, 0.5, 6.0, 6.5, 7.0, 2.5]
    assert "torchneuron_test::bump_" in torchneuron.get_fallback_ops()


def test_complex_results_of_fallback_ops_copy_back_with_their_conjugate_bit():
    signal = torch.randn(8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spectrum = torch.fft.ifft(signal.to("neuron"))  # a lazily conjugated result
        torch.testing.assert_close(spectrum.cpu(), torch.fft.ifft(signal))
        torch.testing.assert_close(
            torch.fft.irfft(torch.fft.rfft(signal.to("neuron"))).cpu(),
            torch.fft.irfft(torch.fft.rfft(signal)),
        )
    z = torch.randn(3, 3, dtype=torch.complex64)
    on_device = z.to("neuron")
    assert torch.equal(on_device.conj().cpu(), z.conj())
    assert torch.equal(torch.imag(on_device.conj()).cpu(), torch.imag(z.conj()))  # negative bit
    torch.testing.assert_close((on_device.mH @ on_device).cpu(), z.mH @ z)
    torch.testing.assert_close((torch.imag(on_device.conj()) + 1).cpu(), torch.imag(z.conj()) + 1)


def test_no_fallback_switch_makes_it_an_error_naming_the_op(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x = torch.rand(3, device="neuron")
    with pytest.raises(
        RuntimeError,
        match=r"aten::linalg_ldl_factor_ex has no lowering .*TORCHNEURON_NO_FALLBACK",
    ):
        torch.linalg.ldl_factor(_symmetric(3).to("neuron"))
    # compiled ops still run
    assert (x * 2).device.type == "neuron"


def test_data_dependent_ops_run_on_host_without_warning():
    x = torch.tensor([0.0, 1.5, 0.0, 2.0], device="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nonzero = x.nonzero()
        selected = x[x > 0]
    assert nonzero.device.type == "neuron" and nonzero.cpu().flatten().tolist() == [1, 3]
    assert selected.cpu().tolist() == [1.5, 2.0]
    assert "aten::nonzero" not in torchneuron.get_fallback_ops()
    assert dispatch.plan_for(torch.ops.aten.nonzero.default).route == "host"
