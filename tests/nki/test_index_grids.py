"""Index grids (nl.arange, nl.mgrid, nl.ds) and masks: kernels in the public NKI docs' style
(a partial last tile cut with ``mask=``) against torch on CPU, and the refusals."""

import numpy as np
import pytest
import torch

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki.errors import NKIError


@nki.jit
def add_rows(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n, d = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(d)[None, :]
    for i in nl.affine_range((n + 127) // 128):
        x = nl.load(a[i * 128 + i_p, i_f], mask=(i * 128 + i_p < n))
        y = nl.load(b[i * 128 + i_p, i_f], mask=(i * 128 + i_p < n))
        z = nl.add(x, y, mask=(i * 128 + i_p < n))
        nl.store(out[i * 128 + i_p, i_f], value=z, mask=(i * 128 + i_p < n))
    return out


@nki.jit
def rmsnorm_rows(x, eps):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n, d = x.shape
    ix, iy = nl.mgrid[0:128, 0:d]
    for i in nl.affine_range((n + 127) // 128):
        m = i * 128 + ix < n
        t = nl.load(x[i * 128 + ix, iy], mask=m)
        sq = nl.square(t, mask=m)
        ss = nl.sum(sq, axis=[1], keepdims=True, mask=m)
        ms = nl.multiply(ss, 1.0 / d, mask=m)
        ms = nl.add(ms, eps, mask=m)
        r = nl.rsqrt(ms, mask=m)
        y = nl.multiply(t, r, mask=m)
        nl.store(out[i * 128 + ix, iy], value=y, mask=m)
    return out


@pytest.mark.parametrize("n,d", [(200, 64), (128, 32), (37, 8)])
def test_add_with_arange_and_partial_tile_mask(n, d):
    gen = torch.Generator().manual_seed(n)
    a = torch.randn(n, d, generator=gen)
    b = torch.randn(n, d, generator=gen)
    got = add_rows(a.numpy(), b.numpy())
    torch.testing.assert_close(torch.from_numpy(got), a + b, rtol=0, atol=0)


@pytest.mark.parametrize("n,d", [(300, 96), (5, 16)])
def test_rmsnorm_with_mgrid_and_partial_tile_mask(n, d):
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(d))
    got = torch.from_numpy(rmsnorm_rows(x.numpy(), 1e-6))
    want = x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6)
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)


def test_masked_load_and_store_leave_the_rest_untouched():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((16, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        grid = nl.mgrid[0:16, 0:8]
        t = nl.full((16, 8), 7.0, dtype=x.dtype)
        # masked load: rows 0..3 of the tile come from x, the rest keep 7
        nisa.dma_copy(dst=t[grid.p, grid.x], src=x[grid.p, grid.x], mask=grid.p < 4)
        nl.store(out, value=nl.full((16, 8), -1.0, dtype=x.dtype))
        box = (grid.p >= 2) & (grid.p < 10) & (grid.x >= 3) & (grid.x < 6)
        nl.store(out[grid.p, grid.x], value=t, mask=box)
        return out

    x = torch.arange(16 * 8, dtype=torch.float32).reshape(16, 8)
    got = torch.from_numpy(kernel(x.numpy()))
    tile = torch.full((16, 8), 7.0)
    tile[:4] = x[:4]
    want = torch.full((16, 8), -1.0)
    want[2:10, 3:6] = tile[2:10, 3:6]
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_mixed_slicing_ints_strided_grids_and_ds():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((72, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(72)[:, None]
        i_f = nl.arange(8)[None, :]
        t = nl.load(x[nl.ds(128, 72), 0:32][i_p, 2 * i_f + 1])  # odd columns of rows 128..199
        u = nl.load(x[128 + i_p, 5:13])  # a grid and a slice
        nl.store(out[i_p, i_f], value=t)
        nl.store(out[0:72, 8 + i_f], value=u)
        return out

    x = torch.randn(200, 40, generator=torch.Generator().manual_seed(1))
    got = torch.from_numpy(kernel(x.numpy()))
    want = torch.cat([x[128:200, 1:16:2], x[128:200, 5:13]], dim=1)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_out_of_bounds_grid_is_refused_not_clipped():
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(x.shape[1])[None, :]
        t = nl.load(x[i_p, i_f])  # 128 rows of a 100-row tensor, no mask
        nl.store(out[i_p, i_f], value=t)
        return out

    with pytest.raises(
        NKIError,
        match=r"nki\.isa\.dma_copy at test_index_grids\.py:\d+: "
        r"out-of-bounds access: src reaches indices 0\.\.127 of dimension 0 "
        r"of length 100",
    ):
        kernel(np.zeros((100, 4), np.float32))


def test_mask_that_still_reaches_out_of_bounds_is_refused():
    @nki.jit
    def kernel(x):
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(4)[None, :]
        nl.load(x[64 + i_p, i_f], mask=(i_p < 40))  # rows 64..103 of 100
        return x

    with pytest.raises(NKIError, match=r"out-of-bounds access: src reaches indices 64\.\.103"):
        kernel(np.zeros((100, 4), np.float32))


def test_refusals_are_one_nki_error():
    @nki.jit
    def triangular(x):
        p, f = nl.mgrid[0:8, 0:8]
        t = nl.load(x[p, f], mask=(p < f))
        return t

    @nki.jit
    def transposed(x):
        p, f = nl.mgrid[0:8, 0:8]
        nl.load(x[f, p])
        return x

    @nki.jit
    def flattened(x):
        i_p = nl.arange(8)[:, None]
        i_f = nl.arange(8)[None, :]
        nl.load(x[i_p * 8 + i_f])
        return x

    @nki.jit
    def masked_matmul(x):
        p, f = nl.mgrid[0:8, 0:8]
        t = nl.load(x[p, f])
        acc = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(acc, t, t, mask=(p < 4))
        return x

    x = np.zeros((8, 8), np.float32)
    for kernel, message in [
        (triangular, "not a box"),
        (transposed, "transposed access is not supported"),
        (flattened, "two index grids"),
        (masked_matmul, r"nki\.isa\.nc_matmul at .*mask= is not supported"),
    ]:
        with pytest.raises(NKIError, match=message):
            kernel(x)


@nki.jit
def _big_sbuf_copy(x):
    """240,000 bytes per partition of SBUF: over trn2's 192 KiB, under trn3's 256 KiB."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    big = nl.ndarray((128, 60000), dtype=nl.float32, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:128, 0 : x.shape[1]]
    nisa.dma_copy(dst=big[i_p, i_f], src=x[i_p, i_f], mask=i_p < x.shape[0])
    nl.store(out[i_p, i_f], value=big[i_p, i_f], mask=i_p < x.shape[0])
    return out


def test_torch_call_follows_the_topologys_target():
    from torchneuron.target import topology

    x = torch.randn(100, 8, generator=torch.Generator().manual_seed(3))
    with pytest.raises(NKIError, match="SBUF capacity exceeded"):
        _big_sbuf_copy(x.numpy())  # a NumPy call: trn2 unless target= says otherwise
    try:
        topology.set_topology(topology.build_topology({topology.TARGET_VAR: "trn3"}))
        got = _big_sbuf_copy(x)  # torch tensors: the topology's chip, trn3
        torch.testing.assert_close(got, x, rtol=0, atol=0)
        topology.set_topology(topology.build_topology({topology.TARGET_VAR: "trn2"}))
        with pytest.raises(NKIError, match="SBUF capacity exceeded"):
            _big_sbuf_copy(x)
    finally:
        topology.reset_topology()


def test_returning_an_out_of_bounds_grid_view_is_refused():
    @nki.jit
    def kernel(x):
        i_p = nl.arange(16)[:, None]
        return x[i_p, 0:4]

    with pytest.raises(NKIError, match=r"kernel kernel at .*out-of-bounds access: a returned tile"):
        kernel(np.zeros((10, 4), np.float32))


def test_grid_kernel_on_neuron_tensors_runs_natively(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    gen = torch.Generator().manual_seed(7)
    a, b = torch.randn(150, 24, generator=gen), torch.randn(150, 24, generator=gen)
    got = add_rows(a.to("neuron"), b.to("neuron"))
    assert got.device.type == "neuron"
    torch.testing.assert_close(got.cpu(), a + b, rtol=0, atol=0)


def test_compute_on_rows_a_masked_load_left_unloaded_runs_if_never_stored():
    """Poison tracking: the rows the load left unloaded are computed on (undefined, as the
    chip's garbage) and never stored; storing them is refused."""

    def kernel(a, store_all):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(a.shape[1])[None, :]
        t = nl.load(a[i_p, i_f], mask=(i_p < a.shape[0]))
        e = nl.exp(t)  # no mask: computes on rows 100..127, which nothing wrote
        if store_all:
            nl.store(out[0:100, :], value=e[0:100, :])
            nl.store(out[0:28, :], value=e[100:128, :])  # STORES UNDEFINED
        else:
            nl.store(out[i_p, i_f], value=e, mask=(i_p < a.shape[0]))
        return out

    a = torch.randn(100, 8, generator=torch.Generator().manual_seed(3))
    got = nki.jit(kernel)(a, False)
    torch.testing.assert_close(got, torch.exp(a), rtol=1e-6, atol=0)
    with pytest.raises(NKIError, match=r"nki\.isa\.dma_copy at .*writes 224 undefined elements"):
        nki.jit(kernel)(a, True)
