"""Poison tracking in the emulator: kernels may compute on memory no instruction wrote (as on
the chip, where it holds garbage); each result element that depends on such an element is
undefined, and an undefined element reaching HBM is refused. Results compared with torch."""

import numpy as np
import pytest
import torch

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.errors import TorchNeuronError
from torchneuron.nki.errors import NKIError


@nki.jit
def exp_rows(a):
    """The public docs' style: mask only the load and the store of the partial last tile."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n, d = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(d)[None, :]
    for i in nl.affine_range((n + 127) // 128):
        t = nl.load(a[i * 128 + i_p, i_f], mask=(i * 128 + i_p < n))
        y = nl.multiply(nl.exp(t), t)  # unmasked: the unloaded rows are computed on
        nl.store(out[i * 128 + i_p, i_f], value=y, mask=(i * 128 + i_p < n))
    return out


@pytest.mark.parametrize("n", [200, 37])
def test_masked_load_unmasked_compute_masked_store_runs(n):
    a = torch.randn(n, 16, generator=torch.Generator().manual_seed(n))
    got = torch.from_numpy(exp_rows(a.numpy()))
    torch.testing.assert_close(got, torch.exp(a) * a, rtol=1e-6, atol=1e-6)


def _refusal(kernel, *args) -> str:
    with pytest.raises(NKIError) as info:
        nki.simulate(kernel)(*args)
    message = str(info.value)
    assert isinstance(info.value, TorchNeuronError)
    assert "\n" not in message
    return message


def _line(marker: str) -> str:
    lines = open(__file__).read().splitlines()
    return f"test_poison.py:{next(i + 1 for i, t in enumerate(lines) if t.endswith(marker))}"


def test_storing_the_unloaded_rows_is_refused():
    def kernel(a):
        out = nl.ndarray((128, 16), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(16)[None, :]
        t = nl.load(a[i_p, i_f], mask=(i_p < 37))
        y = nl.exp(t)
        nl.store(out[i_p, i_f], value=y)  # STORE ALL

    message = _refusal(kernel, np.zeros((37, 16), np.float32))
    assert "nki.isa.dma_copy" in message and _line("# STORE ALL") in message, message
    assert f"writes {91 * 16} undefined elements of its {128 * 16}" in message, message


def _tile_with_holes(a, holes):
    """An SBUF copy of ``a`` (128 x f) in which the (row, column) ``holes`` are never written."""
    p, f = a.shape
    t = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    for r, c in holes:
        nisa.dma_copy(t[0:p, 0:c], a[0:p, 0:c]) if c > 0 else None
        nisa.dma_copy(t[0:p, c + 1 : f], a[0:p, c + 1 : f]) if c + 1 < f else None
        nisa.dma_copy(t[0:r, c : c + 1], a[0:r, c : c + 1]) if r > 0 else None
        nisa.dma_copy(t[r + 1 : p, c : c + 1], a[r + 1 : p, c : c + 1]) if r + 1 < p else None
    return t


def test_free_axis_reduction_poisons_only_the_row_with_an_undefined_element():
    def kernel(a, store_row_3):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = _tile_with_holes(a, [(3, 5)])
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(s, nl.add, t, axis=1)
        nisa.dma_copy(out[0:3, :], s[0:3, :])
        nisa.dma_copy(out[4:128, :], s[4:128, :])
        if store_row_3:
            nisa.dma_copy(out[3:4, :], s[3:4, :])  # ROW 3
        return out

    a = torch.randn(128, 8, generator=torch.Generator().manual_seed(1))
    got = torch.from_numpy(nki.simulate(kernel)(a.numpy(), False))
    want = a.sum(dim=1, keepdim=True)
    keep = torch.arange(128) != 3
    torch.testing.assert_close(got[keep], want[keep], rtol=1e-5, atol=1e-5)
    message = _refusal(kernel, a.numpy(), True)
    assert _line("# ROW 3") in message and "writes 1 undefined elements of its 1" in message


def test_partition_reduction_poisons_only_the_column():
    def kernel(a, store_column_5):
        out = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = _tile_with_holes(a, [(3, 5)])
        s = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(s, nl.add, t)
        nisa.dma_copy(out[:, 0:5], s[:, 0:5])
        nisa.dma_copy(out[:, 6:8], s[:, 6:8])
        if store_column_5:
            nisa.dma_copy(out[:, 5:6], s[:, 5:6])  # COLUMN 5
        return out

    a = torch.randn(128, 8, generator=torch.Generator().manual_seed(2))
    got = torch.from_numpy(nki.simulate(kernel)(a.numpy(), False))
    keep = torch.arange(8) != 5
    want = a.sum(dim=0, keepdim=True)
    torch.testing.assert_close(got[:, keep], want[:, keep], rtol=1e-5, atol=1e-5)
    message = _refusal(kernel, a.numpy(), True)
    assert _line("# COLUMN 5") in message and "writes 1 undefined elements" in message


def _matmul_kernel(s_in, m_in, region):
    """stationary (128 x 64) with (k=2, i=7) unwritten, moving (128 x 32) with (k=5, j=3)
    unwritten: row 7 and column 3 of the product are undefined."""
    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    s = _tile_with_holes(s_in, [(2, 7)])
    m = _tile_with_holes(m_in, [(5, 3)])
    p = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(p, s, m)
    nisa.nc_matmul(p, s, m, accumulate=True)  # written (if undefined in places): allowed
    r = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(r, p)
    rows, cols = region
    nisa.dma_copy(out[rows, cols], r[rows, cols])  # MATMUL STORE
    return out


def test_matmul_poisons_the_rows_and_columns_of_undefined_contraction_elements():
    gen = torch.Generator().manual_seed(4)
    s, m = torch.randn(128, 64, generator=gen), torch.randn(128, 32, generator=gen)
    want = 2 * (s.T @ m)
    got = torch.from_numpy(
        nki.simulate(_matmul_kernel)(s.numpy(), m.numpy(), (slice(0, 7), slice(0, 3)))
    )
    torch.testing.assert_close(got[0:7, 0:3], want[0:7, 0:3], rtol=1e-4, atol=1e-4)
    got = torch.from_numpy(
        nki.simulate(_matmul_kernel)(s.numpy(), m.numpy(), (slice(8, 64), slice(4, 32)))
    )
    torch.testing.assert_close(got[8:64, 4:32], want[8:64, 4:32], rtol=1e-4, atol=1e-4)
    for region, count in (
        ((slice(7, 8), slice(0, 32)), 32),
        ((slice(0, 64), slice(3, 4)), 64),
        ((slice(6, 9), slice(2, 5)), 3 + 3 - 1),
    ):
        message = _refusal(_matmul_kernel, s.numpy(), m.numpy(), region)
        assert _line("# MATMUL STORE") in message, message
        assert f"writes {count} undefined elements" in message, message


def test_transpose_carries_undefined_elements_transposed():
    def kernel(a, store_row):
        out = nl.ndarray((8, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        t = _tile_with_holes(a, [(3, 5)])
        p = nl.ndarray((8, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(p, t)
        r = nl.ndarray((8, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(r, p)
        nisa.dma_copy(out[store_row : store_row + 1, :], r[store_row : store_row + 1, :])  # T
        return out

    a = torch.randn(128, 8, generator=torch.Generator().manual_seed(5))
    got = torch.from_numpy(nki.simulate(kernel)(a.numpy(), 4))
    torch.testing.assert_close(got[4], a[:, 4], rtol=0, atol=0)
    message = _refusal(kernel, a.numpy(), 5)
    assert _line("# T") in message and "writes 1 undefined elements of its 128" in message


def test_memset_makes_elements_defined_again():
    def kernel(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = _tile_with_holes(a, [(3, 5)])
        u = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(u, t, nl.multiply, 2.0)
        nisa.memset(u[3:4, 5:6], 0.0)
        nisa.dma_copy(out, u)
        return out

    a = torch.randn(128, 8, generator=torch.Generator().manual_seed(6))
    got = torch.from_numpy(nki.simulate(kernel)(a.numpy()))
    want = 2 * a
    want[3, 5] = 0.0
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_scalar_reduction_registers_carry_an_undefined_row_across_instructions():
    def kernel(a, b, store_row_3):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = _tile_with_holes(a, [(3, 5)])
        u = nl.load(b)
        e = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(e, nl.exp, t, reduce_op=nl.add, reduce_res=s)
        # reduce_cmd=reduce adds to the registers: row 3 still holds t's undefined sum
        nisa.activation(
            e, nl.exp, u, reduce_op=nl.add, reduce_res=s, reduce_cmd=nisa.reduce_cmd.reduce
        )
        nisa.dma_copy(out[0:3, :], s[0:3, :])
        nisa.dma_copy(out[4:128, :], s[4:128, :])
        if store_row_3:
            nisa.dma_copy(out[3:4, :], s[3:4, :])  # REGISTERS
        return out

    gen = torch.Generator().manual_seed(8)
    a, b = torch.randn(128, 8, generator=gen), torch.randn(128, 8, generator=gen)
    got = torch.from_numpy(nki.simulate(kernel)(a.numpy(), b.numpy(), False))
    want = torch.exp(a).sum(dim=1, keepdim=True) + torch.exp(b).sum(dim=1, keepdim=True)
    keep = torch.arange(128) != 3
    torch.testing.assert_close(got[keep], want[keep], rtol=1e-5, atol=1e-5)
    message = _refusal(kernel, a.numpy(), b.numpy(), True)
    assert _line("# REGISTERS") in message and "writes 1 undefined elements" in message


def test_docs_style_kernel_on_neuron_tensors_runs_natively(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    a = torch.randn(200, 16, generator=torch.Generator().manual_seed(9))
    got = exp_rows(a.to("neuron"))
    assert got.device.type == "neuron"
    torch.testing.assert_close(got.cpu(), torch.exp(a) * a, rtol=1e-6, atol=1e-6)
