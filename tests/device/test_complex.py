"""Complex tensors on the device in eager mode: real ops on real pairs, FFTs as DFT matmuls.

Every case runs with ``TORCHNEURON_NO_FALLBACK=1`` (nothing may run on the CPU) and
is compared with PyTorch on the CPU at ``assert_close``'s complex64 tolerance (the one
PyTorch's own complex tests use).
"""

from __future__ import annotations

import warnings

import pytest
import torch

import torchneuron
from torchneuron.device import fallback


@pytest.fixture(autouse=True)
def _native(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def _data():
    generator = torch.Generator().manual_seed(14)
    z = torch.randn(4, 8, dtype=torch.complex64, generator=generator)
    w = torch.randn(4, 8, dtype=torch.complex64, generator=generator)
    x = torch.randn(4, 8, generator=generator)
    return z, w, x


def _on(value):
    return value.to("neuron") if isinstance(value, torch.Tensor) else value


CASES = {
    "arithmetic": lambda z, w, x: (z * w + z / w - 2 * z) * 1j,
    "mixed_real": lambda z, w, x: z * x + x / w,
    "abs_angle": lambda z, w, x: z.abs() + w.angle(),
    "conj": lambda z, w, x: z.conj() * w,
    "real_imag": lambda z, w, x: torch.real(z) * torch.imag(w),
    "view_as_real": lambda z, w, x: torch.view_as_real(z * w),
    "view_as_complex": lambda z, w, x: torch.view_as_complex(torch.stack([x, x * 2], -1)) * z,
    "polar": lambda z, w, x: torch.polar(x.abs(), x),
    "complex": lambda z, w, x: torch.complex(x, x.flip(0)),
    "matmul": lambda z, w, x: z @ w.mT,
    "exp_log": lambda z, w, x: torch.exp(z) + torch.log(w),
    "sum_cat": lambda z, w, x: torch.cat([z, w], 1).sum(0),
    "sgn_reciprocal": lambda z, w, x: z.sgn() + w.reciprocal(),
    "fft": lambda z, w, x: torch.fft.fft(x),
    "fft_complex_n": lambda z, w, x: torch.fft.fft(z, n=6, dim=0),
    "ifft_ortho": lambda z, w, x: torch.fft.ifft(z, norm="ortho"),
    "rfft": lambda z, w, x: torch.fft.rfft(x, norm="forward"),
    "irfft_odd": lambda z, w, x: torch.fft.irfft(z, n=9),
    "irfft_even": lambda z, w, x: torch.fft.irfft(torch.fft.rfft(x), n=8),
    "fft2_ifft2": lambda z, w, x: torch.fft.ifft2(torch.fft.fft2(z) * w),
    "rfftn_irfftn": lambda z, w, x: torch.fft.irfftn(torch.fft.rfftn(x) * 2, s=(4, 8)),
    "hfft": lambda z, w, x: torch.fft.hfft(z[:, :5], n=8),
    "shift": lambda z, w, x: torch.fft.ifftshift(torch.fft.fftshift(torch.fft.fft(x), dim=1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_op_runs_natively_and_matches_cpu(name):
    fallback.clear_fallback_ops()
    fn = CASES[name]
    data = _data()
    expected = fn(*data)
    got = fn(*(_on(v) for v in data))
    assert got.device.type == "neuron"
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected)
    assert torchneuron.get_fallback_ops() == []


def test_stft_istft_with_window_round_trip():
    signal = torch.randn(2, 300, generator=torch.Generator().manual_seed(3))
    window = torch.hann_window(32)

    def spectrum(s, w):
        return torch.stft(s, 32, hop_length=8, window=w, return_complex=True)

    expected = spectrum(signal, window)
    got = spectrum(signal.to("neuron"), window.to("neuron"))
    torch.testing.assert_close(got.cpu(), expected)
    back = torch.istft(got, 32, hop_length=8, window=window.to("neuron"), length=300)
    torch.testing.assert_close(back.cpu(), signal, atol=1e-5, rtol=1e-5)


def test_gradients_through_stft_and_complex_ops():
    signal = torch.randn(2, 200, generator=torch.Generator().manual_seed(4))
    window = torch.hann_window(16)

    def loss(s, w):
        spec = torch.stft(s, 16, hop_length=4, window=w, return_complex=True)
        z = torch.fft.ifft(spec * spec.conj().flip(-1), dim=-2)
        return (z.abs() + torch.angle(z + 1)).sum()

    cpu = signal.clone().requires_grad_()
    loss(cpu, window).backward()
    dev = signal.to("neuron").requires_grad_()
    loss(dev, window.to("neuron")).backward()
    assert dev.grad.device.type == "neuron"
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad, atol=1e-4, rtol=1e-5)


def test_complex_leaf_gradient():
    z = _data()[0]
    cpu = z.clone().requires_grad_()
    (torch.fft.fft(cpu) * cpu.conj()).abs().sum().backward()
    dev = z.to("neuron").requires_grad_()
    (torch.fft.fft(dev) * dev.conj()).abs().sum().backward()
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad)


def test_in_place_and_out_forms_write_the_device_tensor():
    z, w, _ = _data()
    expected = z * w
    target = z.to("neuron")
    target.mul_(w.to("neuron"))
    torch.testing.assert_close(target.cpu(), expected)
    out = torch.empty(0, device="neuron")
    torch.abs(z.to("neuron"), out=out)
    torch.testing.assert_close(out.cpu(), z.abs())


def test_transfers_and_creation_keep_the_values():
    z = _data()[0]
    assert torch.equal(z.to("neuron").cpu(), z)
    full = torch.full((3,), 1 - 2j, dtype=torch.complex64, device="neuron")
    assert torch.equal(full.cpu(), torch.full((3,), 1 - 2j, dtype=torch.complex64))
    zeros = torch.zeros(2, 3, dtype=torch.complex64, device="neuron")
    assert torch.equal(zeros.cpu(), torch.zeros(2, 3, dtype=torch.complex64))


def test_op_without_a_rule_is_a_listed_fallback(monkeypatch):
    # sqrt has no real-pair rule: the CPU computes it, listed and warned, or it is refused
    z = _data()[0]
    with pytest.raises(fallback.NeuronFallbackError, match="aten::sqrt"):
        torch.sqrt(z.to("neuron"))
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "0")
    fallback.clear_fallback_ops()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.sqrt(z.to("neuron"))
    torch.testing.assert_close(got.cpu(), torch.sqrt(z))
    assert "aten::sqrt" in torchneuron.get_fallback_ops()
    assert "real-pair rule" in fallback.fallback_reasons()["aten::sqrt"]
