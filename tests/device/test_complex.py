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
    "vdot_mv_square": lambda z, w, x: torch.vdot(z[0], w[1]) + (z @ w[0]) + z[:, 0] ** 2,
    "exp_log": lambda z, w, x: torch.exp(z) + torch.log(w),
    "sum_cat": lambda z, w, x: torch.cat([z, w], 1).sum(0),
    # a real fill value or real operand has imaginary part 0 (they once got the value twice)
    "real_fill_pad_cat": lambda z, w, x: (
        torch.ones_like(z)
        + torch.full((4, 8), 2.5, dtype=torch.complex64, device=z.device)
        + torch.nn.functional.pad(z, (1, 1), value=3.0)[:, 2:]
        + torch.cat([z[:, :4], x[:, 4:]], 1)
    ),
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
    ones = torch.ones(2, 3, dtype=torch.complex64, device="neuron").fill_(-1.5)
    assert torch.equal(ones.cpu(), torch.full((2, 3), -1.5 + 0j))


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


# complex128 (float64 pairs) and complex32 (chalf, float16 pairs): the same rules.
WIDE_CASES = {
    "creation_arithmetic": lambda z, w: (z * w + z / w - torch.full_like(z, 1 - 2j)) * 1j,
    "abs_angle": lambda z, w: z.abs() + w.angle(),
    "view_as_real_complex": lambda z, w: torch.view_as_real(
        torch.view_as_complex(torch.view_as_real(z) * 2) * w.conj()
    ),
    "matmul": lambda z, w: z @ w.mT,
    "fft_ifft": lambda z, w: torch.fft.ifft(torch.fft.fft(z, dim=0) * w),
    "rfft_irfft": lambda z, w: torch.fft.irfft(torch.fft.rfft(z.real), n=8),
}


def _pair_data(dtype):
    z, w, _ = _data()
    return z.to(dtype), w.to(dtype)


@pytest.mark.parametrize("name", sorted(WIDE_CASES))
def test_complex128_runs_natively_and_matches_cpu(name):
    fallback.clear_fallback_ops()
    z, w = _pair_data(torch.complex128)
    expected = WIDE_CASES[name](z, w)
    got = WIDE_CASES[name](z.to("neuron"), w.to("neuron"))
    assert got.device.type == "neuron" and got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected)  # complex128's rtol 1e-7, atol 1e-7
    assert torchneuron.get_fallback_ops() == []


def test_complex128_moves_and_abs_of_extremes_keep_the_values():
    z = torch.tensor([3 + 4j, 0j, complex(float("inf"), 1), 1e300 + 1e300j, 1 - 1j])
    z = z.to(torch.complex128)
    on_device = z.to("neuron")
    assert on_device.dtype == torch.complex128 and torch.equal(on_device.cpu(), z)
    # |1e300 + 1e300j| overflows a naive sqrt(re^2 + im^2); hypot's scaled form does not
    torch.testing.assert_close(on_device.abs().cpu(), z.abs())


# PyTorch's CPU kernels support complex32 for creation, moves, add/sub/mul, abs, conj,
# view_as_real and indexing; those are compared with the CPU directly.
CHALF_CPU_CASES = {
    "creation_arithmetic": lambda z, w: (
        torch.zeros(4, 8, dtype=torch.complex32, device=z.device) + z * w - w
    ),
    "abs": lambda z, w: z.abs(),
    "view_as_real_conj_cat": lambda z, w: torch.view_as_real(torch.cat([z.conj(), w])[1::2]),
}


@pytest.mark.parametrize("name", sorted(CHALF_CPU_CASES))
def test_complex32_runs_natively_and_matches_cpu(name):
    fallback.clear_fallback_ops()
    z, w = _pair_data(torch.complex32)
    expected = CHALF_CPU_CASES[name](z, w)
    got = CHALF_CPU_CASES[name](z.to("neuron"), w.to("neuron"))
    assert got.device.type == "neuron" and got.dtype == expected.dtype
    # complex32's rtol 1e-3; atol one float16 step at 1: the CPU rounds z * w before the
    # sum, the device's fused program keeps it in float32 (as it does for float16)
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-3, atol=2e-3)
    assert torchneuron.get_fallback_ops() == []


# PyTorch's CPU has no complex32 division, matmul or FFT kernels (CUDA has some): the
# device computes them on float16 pairs; the reference is the complex64 computation of
# the same (complex32) inputs, rounded once, at float16's tolerance.
CHALF_BEYOND_CPU = {
    "div": lambda z, w: z / w,
    "matmul": lambda z, w: z @ w.mT,
    "fft_odd_n": lambda z, w: torch.fft.fft(z, n=5),
}


@pytest.mark.parametrize("name", sorted(CHALF_BEYOND_CPU))
def test_complex32_where_the_cpu_has_no_kernel_matches_the_complex64_computation(name):
    fallback.clear_fallback_ops()
    z, w = _pair_data(torch.complex32)
    with pytest.raises((RuntimeError, NotImplementedError)):
        CHALF_BEYOND_CPU[name](z, w)  # the CPU refuses complex32 here
    expected = CHALF_BEYOND_CPU[name](z.to(torch.complex64), w.to(torch.complex64))
    got = CHALF_BEYOND_CPU[name](z.to("neuron"), w.to("neuron"))
    assert got.dtype == torch.complex32
    torch.testing.assert_close(
        got.cpu().to(torch.complex64),
        expected.to(torch.complex32).to(torch.complex64),
        rtol=2e-3,
        atol=2e-3,
    )
    assert torchneuron.get_fallback_ops() == []


def test_complex32_and_complex128_without_a_rule_refuse_or_fall_back_listed(monkeypatch):
    z, _ = _pair_data(torch.complex128)
    with pytest.raises(fallback.NeuronFallbackError, match="aten::sqrt"):
        torch.sqrt(z.to("neuron"))
    # float16 FFTs: PyTorch refuses them off CUDA, on the CPU as on neuron
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        torch.fft.rfft(torch.ones(8, dtype=torch.float16, device="neuron"))
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "0")
    fallback.clear_fallback_ops()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(torch.sqrt(z.to("neuron")).cpu(), torch.sqrt(z))
        # the CPU fallback has no complex32 sqrt either: PyTorch's own error, no wrong value
        with pytest.raises(NotImplementedError, match="ComplexHalf"):
            torch.sqrt(z.to(torch.complex32).to("neuron"))
    assert "aten::sqrt" in torchneuron.get_fallback_ops()


# A real operand of an integer or bool dtype among complex ones has imaginary part 0: the
# per-part rule took such tensors for indices and put their value in both parts (5 -> 5+5j).
INTEGER_OPERAND_CASES = {
    "cat_int": lambda z, i, b: torch.cat([z, i]),
    "cat_bool_first": lambda z, i, b: torch.cat([b, z]),
    "stack_int": lambda z, i, b: torch.stack([z, i]),
    "slice_scatter_int": lambda z, i, b: torch.slice_scatter(z, i[:1], 0, 0, 1),
    "select_scatter_int": lambda z, i, b: torch.select_scatter(z, i[0], 0, 1),
    "add_where_copy": lambda z, i, b: (
        (z + i) * torch.where(b, z, i) + z.clone().copy_(i) + z.clone().copy_(b)
    ),
    "indexed_by_int": lambda z, i, b: torch.index_select(z, 0, i % 2) + z[i % 2],
}


@pytest.mark.parametrize("mode", ["eager", "compile"])
@pytest.mark.parametrize("name", sorted(INTEGER_OPERAND_CASES))
def test_integer_operand_of_a_complex_op_has_zero_imaginary_part(name, mode):
    fn = INTEGER_OPERAND_CASES[name]
    data = (
        torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128),
        torch.tensor([5, 7]),
        torch.tensor([True, False]),
    )
    expected = fn(*data)
    if mode == "compile":
        torch._dynamo.reset()
        fn = torch.compile(fn, backend="neuron")
    got = fn(*(_on(v) for v in data))
    assert got.dtype == expected.dtype
    assert torch.equal(got.cpu(), expected), (got.cpu(), expected)
