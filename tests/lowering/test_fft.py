"""torch.compile of complex and FFT graphs: real pairs and DFT matmuls (lowering/complex_graph.py).

Each graph compiles with ``TORCHNEURON_NO_FALLBACK=1`` and is compared with PyTorch on
the CPU (``assert_close``'s complex64 tolerance, PyTorch's own for complex tests);
gradients through AOTAutograd's backward graph too. ``golden_fft/*.check`` is the
golden IR of the DFT lowering, FileChecked against the StableHLO the compile dumps.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torchneuron
from torchneuron.lowering import complex_graph

GOLDEN = Path(__file__).parent / "golden_fft"


@pytest.fixture(autouse=True)
def _native(monkeypatch):
    import torchneuron.device  # noqa: F401  (registers the device)

    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def _compiled(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", fullgraph=True, dynamic=False, options=options)


def _data():
    generator = torch.Generator().manual_seed(41)
    z = torch.randn(4, 8, dtype=torch.complex64, generator=generator)
    w = torch.randn(4, 8, dtype=torch.complex64, generator=generator)
    x = torch.randn(4, 8, generator=generator)
    return z, w, x


def _cases(z, w, x):
    return (
        (z * w.conj() + z / w).abs() + torch.angle(z),
        (z * 1j - w) @ z.mT,
        torch.view_as_real(torch.polar(x.abs(), x) * z),
        torch.fft.ifft(torch.fft.fft(z, norm="ortho") * w),
        torch.fft.irfft(torch.fft.rfft(x) * 2, n=8),
        torch.fft.fft2(z) + torch.fft.rfftn(x, s=(4, 15))[:, :8],
        torch.fft.fftshift(torch.fft.fft(x)).real,
        torch.fft.hfft(z[:, :5], n=8, dim=1, norm="forward"),
    )


def test_compiled_complex_graph_matches_cpu():
    data = _data()
    expected = _cases(*data)
    got = _compiled(_cases)(*(v.to("neuron") for v in data))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.device.type == "neuron" and g.dtype == e.dtype
        torch.testing.assert_close(g.cpu(), e)


def test_compiled_stft_power_and_gradient():
    signal = torch.randn(2, 240, generator=torch.Generator().manual_seed(5))
    window = torch.hann_window(32)

    def fn(s, w):
        spec = torch.stft(s, 32, hop_length=8, window=w, return_complex=True)
        return spec.abs().pow(2).log1p().sum()

    cpu = signal.clone().requires_grad_()
    expected = fn(cpu, window)
    expected.backward()
    dev = signal.to("neuron").requires_grad_()
    got = _compiled(fn)(dev, window.to("neuron"))
    got.backward()
    torch.testing.assert_close(got.cpu(), expected.detach())
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.slow  # ~50 s of compiling; eager istft is in tests/device/test_complex.py
def test_compiled_istft_round_trip_and_gradient():
    signal = torch.randn(2, 240, generator=torch.Generator().manual_seed(6))
    window = torch.hann_window(32)

    def fn(s, w):
        spec = torch.stft(s, 32, hop_length=8, window=w, return_complex=True)
        return torch.istft(spec * 0.5, 32, hop_length=8, window=w, length=240)

    cpu = signal.clone().requires_grad_()
    expected = fn(cpu, window)
    expected.pow(2).sum().backward()
    dev = signal.to("neuron").requires_grad_()
    got = _compiled(fn)(dev, window.to("neuron"))
    got.pow(2).sum().backward()
    torch.testing.assert_close(got.cpu(), expected.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad, atol=1e-5, rtol=1e-4)


def test_compiled_gradient_of_a_complex_input():
    z = _data()[0]

    def fn(a):
        return (torch.fft.fft(a) * a.conj()).abs().sum()

    cpu = z.clone().requires_grad_()
    fn(cpu).backward()
    dev = z.to("neuron").requires_grad_()
    _compiled(fn)(dev).backward()
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad)


def test_real_pair_graph_has_matmuls_and_no_complex_value():
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: torch.fft.fft(x, dim=0).abs())(torch.randn(6, 3))
    assert complex_graph.graph_has_complex(gm)
    paired = complex_graph.PairedGraph(gm, [torch.randn(6, 3)], lambda real, inputs: real)
    targets = [n.target for n in paired.real_gm.graph.nodes if n.op == "call_function"]
    assert not complex_graph.graph_has_complex(paired.real_gm)
    assert torch.ops.aten.mm.default in targets or torch.ops.aten.bmm.default in targets
    assert not any("fft" in str(t) for t in targets)


def test_dft_lowering_golden_ir(tmp_path):
    fn = _compiled(lambda x: torch.fft.rfft(x).abs().pow(2), dump_dir=str(tmp_path))
    x = torch.randn(3, 8)
    torch.testing.assert_close(fn(x.to("neuron")).cpu(), torch.fft.rfft(x).abs().pow(2))
    (stablehlo,) = tmp_path.glob("*forward.stablehlo.mlir")
    check = GOLDEN / "rfft_stft_power.check"
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "filecheck"), str(check)],
        input=stablehlo.read_text(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr + stablehlo.read_text()


def test_complex_op_without_a_rule_is_refused_when_fallback_is_disabled():
    z = _data()[0]
    with pytest.raises(Exception, match="sqrt"):
        _compiled(lambda a: torch.sqrt(a) * 2)(z.to("neuron"))
    assert torchneuron.get_fallback_ops() is not None
