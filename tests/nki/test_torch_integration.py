"""NKI kernels called from PyTorch (torchneuron/nki/torch_ops.py): the issue's example in
eager mode on ``neuron`` and CPU tensors, inside ``torch.compile(backend="neuron")`` with
TORCHNEURON_NO_FALLBACK=1, and through ``nki.simulate``; one-line errors; autograd through a
forward/backward kernel pair; the profiler's slice per kernel call; ``install_alias``.

Every result is compared with PyTorch on CPU. The kernels compute in float32 like torch and
sum in another order: rtol/atol 1e-5 on O(1) outputs, 1e-4 where a matmul sums ~100 terms.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki, profiler
from torchneuron.nki import torch_ops

EPS = 1e-6
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@nki.jit
def rmsnorm(x, w):  # the example, its elided engine steps written out
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    d = x.shape[1]
    w_row = nl.ndarray((1, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_row, src=w)
    ones = nl.ndarray((1, nl.tile_size.pmax), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(ones, 1.0)
    w_psum = nl.ndarray((nl.tile_size.pmax, d), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(w_psum, ones, w_row)  # w on every partition
    w_all = nl.ndarray((nl.tile_size.pmax, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(w_all, w_psum)
    for i in nl.affine_range(x.shape[0] // nl.tile_size.pmax):
        t = nl.ndarray((nl.tile_size.pmax, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
        squares = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=squares, op=nl.square, data=t, reduce_op=nl.add, reduce_res=sums)
        scale = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(scale, sums, nl.multiply, 1.0 / d, op1=nl.add, operand1=EPS)
        nisa.activation(dst=scale, op=nl.rsqrt, data=scale)
        normed = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(normed, t, nl.multiply, scale)
        nisa.tensor_tensor(dst=t, data1=normed, data2=w_all, op=nl.multiply)
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=t)
    return out


def _reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + EPS) * w


def _inputs(n=256, d=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randn(d, generator=g)


def test_eager_on_neuron_tensors_returns_neuron_tensors(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x, w = _inputs()
    y = rmsnorm(x.to("neuron"), w.to("neuron"))
    assert isinstance(y, torch.Tensor) and y.device == torch.device("neuron", 0)
    assert y.shape == x.shape and y.dtype == torch.float32
    torch.testing.assert_close(y.cpu(), _reference(x, w), rtol=1e-5, atol=1e-5)


def test_eager_on_neuron_reads_device_memory_without_copies(monkeypatch):
    """The emulator's HBM arrays for the arguments and the output are the tensors' memory."""
    x, w = _inputs()
    xn, wn = x.to("neuron"), w.to("neuron")
    seen = {}
    original = torch_ops.emulator.execute

    def spy(trace, bound=None):
        seen.update(bound or {})
        return original(trace, bound)

    monkeypatch.setattr(torch_ops.emulator, "execute", spy)
    y = rmsnorm(xn, wn)
    from torchneuron.device.arrays import host_array

    pointers = {array.__array_interface__["data"][0] for array in seen.values()}
    for tensor in (xn, wn, y):
        assert host_array(tensor).__array_interface__["data"][0] in pointers


def test_eager_after_queued_device_ops_reads_their_results():
    x, w = _inputs(seed=1)
    xn = x.to("neuron")
    shifted = xn * 2.0 + 1.0  # queued on the device; the kernel must see its result
    y = rmsnorm(shifted, w.to("neuron"))
    torch.testing.assert_close(y.cpu(), _reference(x * 2.0 + 1.0, w), rtol=1e-5, atol=1e-5)


def test_eager_on_cpu_tensors_returns_cpu_tensors():
    x, w = _inputs(n=128, d=96, seed=2)
    y = rmsnorm(x, w)
    assert y.device.type == "cpu"
    torch.testing.assert_close(y, _reference(x, w), rtol=1e-5, atol=1e-5)


def test_bfloat16_tensors_round_once_like_torch():
    x, w = _inputs(n=128, d=32, seed=3)
    xb = x.to(torch.bfloat16)
    y = rmsnorm(xb.to("neuron"), w.to("neuron"))
    assert y.dtype == torch.bfloat16
    expected = _reference(xb.float(), w).to(torch.bfloat16)
    torch.testing.assert_close(y.cpu(), expected, rtol=2**-7, atol=2**-7)


def test_compiled_graph_runs_the_kernel_between_segments(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x, w = _inputs(seed=4)
    w2 = torch.randn(64, 32, generator=torch.Generator().manual_seed(5))
    w2n = w2.to("neuron")
    f = torch.compile(lambda x, w: rmsnorm(x, w) @ w2n, backend="neuron", fullgraph=True)
    with profiler.profile() as prof:
        y = f(x.to("neuron"), w.to("neuron"))
    assert y.device.type == "neuron"
    torch.testing.assert_close(y.cpu(), _reference(x, w) @ w2, rtol=1e-4, atol=1e-4)
    names = [event.name for event in prof.events]
    assert len(names) == 2 and names[0] == "nki:rmsnorm", names
    assert names[1].endswith("_forward_part0")  # the matmul, compiled, after the kernel
    event = prof.events[0]
    assert event.device_seconds > 0 and event.core == 0
    slices = [e for e in prof.chrome_trace()["traceEvents"] if e.get("name") == "nki:rmsnorm"]
    lanes = {e["tid"] for e in slices if e.get("cat") == "kernel"}
    assert len(lanes) >= 3  # TensorE, VectorE/ScalarE and DMA lanes


def test_compiled_graph_on_cpu_tensors_and_a_kernel_in_the_middle(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x, w = _inputs(n=128, d=32, seed=6)
    f = torch.compile(lambda x, w: rmsnorm(x.relu() + 1.0, w).sum(dim=0), backend="neuron")
    with profiler.profile() as prof:
        y = f(x, w)
    assert y.device.type == "cpu"
    torch.testing.assert_close(y, _reference(x.relu() + 1.0, w).sum(dim=0), rtol=1e-4, atol=1e-4)
    names = [event.name for event in prof.events]
    assert len(names) == 3 and names[1] == "nki:rmsnorm", names  # in program order
    assert names[0].endswith("_part0") and names[2].endswith("_part1")


def test_simulate_numpy_in_numpy_out():
    x, w = _inputs(n=128, d=48, seed=7)
    y = nki.simulate(rmsnorm)(x.numpy(), w.numpy())
    assert isinstance(y, np.ndarray)
    torch.testing.assert_close(torch.from_numpy(y), _reference(x, w), rtol=1e-5, atol=1e-5)


def test_fake_tensor_shapes_come_from_the_kernel_output_declaration():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x, w = torch.empty(384, 16), torch.empty(16)
        (y,) = torch.ops.torchneuron_nki.call(*torch_ops.register(rmsnorm, (x, w), {}))
    assert y.shape == (384, 16) and y.dtype == torch.float32


@nki.jit
def _writes_argument(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=x, src=t)
    return x


def _error(call) -> str:
    with pytest.raises(nki.NKIError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


def test_errors_are_one_line():
    x, w = _inputs(n=128, d=16)
    assert "different devices" in _error(lambda: rmsnorm(x.to("neuron"), w))
    message = _error(lambda: rmsnorm(x.double(), w.double()))
    assert "dtype float64" in message and "rmsnorm" in message
    assert "dtype bool" in _error(lambda: rmsnorm(x > 0, w))
    y = rmsnorm(x.clone().requires_grad_(), w)
    assert "pair it with a backward kernel" in _error(lambda: y.sum().backward())
    message = _error(lambda: rmsnorm(x[:100], w))  # 100 rows: no whole 128-row tile
    assert "written by no instruction" in message
    assert "writes its argument" in _error(lambda: _writes_argument(x[:, :8].contiguous()))
    assert "list" in _error(lambda: rmsnorm(x, w, [1]))
    message = _error(lambda: rmsnorm(torch.randn(128, 1024), torch.randn(1024)))
    assert "PSUM" in message or "512" in message  # the limit the kernel exceeds, named


def test_compile_refuses_at_trace_time(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x, w = _inputs(n=100, d=16)
    f = torch.compile(lambda x, w: rmsnorm(x, w) + 1.0, backend="neuron")
    with pytest.raises(Exception, match="written by no instruction"):
        f(x, w)


def _autograd_example():
    if "nki_torch_autograd" in sys.modules:
        return sys.modules["nki_torch_autograd"]
    spec = importlib.util.spec_from_file_location(
        "nki_torch_autograd", EXAMPLES / "nki_torch_autograd.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Dynamo looks the example's functions up by module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compile"])
def test_autograd_pairs_forward_and_backward_kernels(compiled, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    example = _autograd_example()
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(64, 96, generator=g), torch.randn(96, 80, generator=g)

    def loss(a, b):
        return example.scaled_matmul(a, b, 0.5).square().sum()

    fn = torch.compile(loss, backend="neuron", fullgraph=True) if compiled else loss
    an, bn = (t.to("neuron").requires_grad_() for t in (a, b))
    fn(an, bn).backward()
    ac, bc = (t.clone().requires_grad_() for t in (a, b))
    (0.5 * ac @ bc).square().sum().backward()
    torch.testing.assert_close(an.grad.cpu(), ac.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(bn.grad.cpu(), bc.grad, rtol=1e-4, atol=1e-3)


def test_install_alias_makes_public_imports_resolve_to_ours():
    assert "nki" not in sys.modules and "neuronxcc" not in sys.modules
    nki.install_alias()
    try:
        import neuronxcc.nki.isa as alias_isa
        import nki as alias_nki
        import nki.language as alias_nl
        from neuronxcc import nki as compiler_nki

        assert alias_nki is nki and compiler_nki is nki
        assert alias_nl is nl and alias_isa is nisa

        @alias_nki.jit
        def double(x):
            t = alias_nl.ndarray(x.shape, dtype=x.dtype, buffer=alias_nl.sbuf)
            alias_isa.dma_copy(dst=t, src=x)
            alias_isa.tensor_scalar(t, t, alias_nl.multiply, 2.0)
            out = alias_nl.ndarray(x.shape, dtype=x.dtype, buffer=alias_nl.shared_hbm)
            alias_isa.dma_copy(dst=out, src=t)
            return out

        x = torch.randn(8, 16)
        torch.testing.assert_close(double(x.to("neuron")).cpu(), x * 2.0)
    finally:
        nki.uninstall_alias()
    assert "nki" not in sys.modules and "neuronxcc.nki" not in sys.modules
    with pytest.raises(ImportError):
        importlib.import_module("nki.language")


@nki.jit
def _halves(x):
    """Returns (rows 0..63 of 2x, x itself): a part of an output and an argument."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(t, t, nl.multiply, 2.0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out[0:64, :], x


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_returned_views_and_arguments_are_new_tensors(device):
    x = torch.randn(128, 8, generator=torch.Generator().manual_seed(9))
    xd = x.to(device)
    part, same = _halves(xd)
    assert isinstance(part, torch.Tensor) and part.device == xd.device
    torch.testing.assert_close(part.cpu(), 2.0 * x[:64])
    torch.testing.assert_close(same.cpu(), x)
    same.zero_()  # a new tensor: the argument keeps its values
    torch.testing.assert_close(xd.cpu(), x)


def test_dynamic_compile_specialises_the_kernel_s_shapes(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    f = torch.compile(lambda x, w: rmsnorm(x, w) * 2.0, backend="neuron", dynamic=True)
    for n in (128, 256):
        x, w = _inputs(n=n, d=16, seed=n)
        torch.testing.assert_close(f(x, w), 2.0 * _reference(x, w), rtol=1e-5, atol=1e-5)
