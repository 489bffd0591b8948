"""Each nki.isa instruction on the emulator against PyTorch on CPU (several shapes, dtypes).

Engines compute in float32 and round once to the output dtype; PSUM accumulates in float32.
The references do the same in torch: float32 math, then ``.to(dtype)`` (round to nearest even).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

RNG = np.random.default_rng(0)


def _bf16(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=np.float32).astype(nl.bfloat16.numpy)


def _torch(array: np.ndarray) -> torch.Tensor:
    if array.dtype == nl.bfloat16.numpy:
        return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array))


def _np(tensor: torch.Tensor) -> np.ndarray:
    if tensor.dtype == torch.bfloat16:
        return tensor.float().numpy().astype(nl.bfloat16.numpy)
    return tensor.numpy()


def _unary_kernel(instruction, out_dtype):
    """A kernel: load x, run ``instruction(dst, src)``, store."""

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=out_dtype or x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        dst = nl.ndarray(x.shape, dtype=out_dtype or x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=x)
        instruction(dst, src)
        nisa.dma_copy(dst=out, src=dst)
        return out

    return kernel


@pytest.mark.parametrize("shape", [(128, 64), (17, 5), (128, 2, 8)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dma_copy_round_trip_and_cast(shape, dtype):
    x = RNG.standard_normal(shape).astype(np.float32)

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=getattr(nl, dtype), buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=getattr(nl, dtype), buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)  # the cast happens here
        nisa.dma_copy(dst=out, src=t)
        return out

    y = kernel(x)
    expected = _np(torch.from_numpy(x).to(getattr(torch, dtype)))
    assert y.dtype == expected.dtype
    np.testing.assert_array_equal(y.astype(np.float32), expected.astype(np.float32))


@pytest.mark.parametrize(("m", "k", "n"), [(128, 256, 512), (64, 96, 100), (5, 130, 7)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float8_e4m3"])
def test_nc_matmul_accumulates_in_fp32_psum(m, k, n, dtype):
    # a_t is [K, M] (stationary, contraction on partitions), b is [K, N] (moving).
    nl_dtype = getattr(nl, dtype)
    a_t = RNG.standard_normal((k, m)).astype(np.float32).astype(nl_dtype.numpy)
    b = RNG.standard_normal((k, n)).astype(np.float32).astype(nl_dtype.numpy)

    @nki.jit
    def kernel(a_t, b):
        out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
        for kt in nl.affine_range((k + 127) // 128):
            lo, hi = kt * 128, min(k, (kt + 1) * 128)
            s = nl.ndarray((hi - lo, m), dtype=a_t.dtype, buffer=nl.sbuf)
            mv = nl.ndarray((hi - lo, n), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=a_t[lo:hi, :])
            nisa.dma_copy(dst=mv, src=b[lo:hi, :])
            nisa.nc_matmul(acc, s, mv, accumulate=kt > 0)
        res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(res, acc)
        nisa.dma_copy(dst=out, src=res)
        return out

    y = kernel(a_t, b)
    a32 = torch.from_numpy(a_t.astype(np.float32))
    b32 = torch.from_numpy(b.astype(np.float32))
    expected = (a32.T.double() @ b32.double()).float().numpy()
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-4)


def test_nc_transpose_on_tensor_and_vector_engines():
    x = RNG.standard_normal((96, 40)).astype(np.float32)
    small = RNG.standard_normal((32, 16)).astype(np.float32)

    @nki.jit
    def kernel(x, small):
        out = nl.ndarray((40, 96), dtype=nl.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        tp = nl.ndarray((40, 96), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(tp, t)
        nl.store(out, nl.copy(tp))
        s = nl.load(small)
        st = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_transpose(st, s, engine=nisa.engine.vector)
        nl.store(out2, st)
        return out, out2

    y, y2 = kernel(x, small)
    np.testing.assert_array_equal(y, x.T)
    np.testing.assert_array_equal(y2, small.T)


ACTIVATIONS = {
    "exp": torch.exp,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "rsqrt": torch.rsqrt,
    "square": torch.square,
    "relu": torch.relu,
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_activation_with_scale_bias_and_reduce(name, out_dtype):
    x = RNG.uniform(0.1, 2.0, (128, 48)).astype(np.float32)
    bias = RNG.uniform(0.0, 0.5, (128, 1)).astype(np.float32)
    fn = getattr(nl, name)
    dst_dtype = getattr(nl, out_dtype)

    @nki.jit
    def kernel(x, bias):
        out = nl.ndarray(x.shape, dtype=dst_dtype, buffer=nl.shared_hbm)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        b = nl.load(bias)
        y = nl.ndarray(x.shape, dtype=dst_dtype, buffer=nl.sbuf)
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=y, op=fn, data=t, bias=b, scale=0.5, reduce_op=nl.add, reduce_res=s)
        nl.store(out, y)
        nl.store(total, s)
        return out, total

    y, total = kernel(x, bias)
    pre = torch.from_numpy(x) * 0.5 + torch.from_numpy(bias)
    expected = ACTIVATIONS[name](pre).to(getattr(torch, out_dtype))
    # NumPy's and torch's float32 exp/tanh may differ in the last bit; after bf16 rounding
    # that is at most one bf16 ulp (2**-7 relative).
    rtol = 2e-6 if out_dtype == "float32" else 2**-7
    np.testing.assert_allclose(y.astype(np.float32), expected.float().numpy(), rtol=rtol, atol=1e-6)
    # The reduction sums what was written (after rounding to the output dtype).
    written = torch.from_numpy(y.astype(np.float32))
    np.testing.assert_allclose(total[:, 0], written.sum(1).numpy(), rtol=1e-6)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "divide"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tensor_tensor(op, dtype):
    a = (
        _bf16(RNG.standard_normal((100, 33)))
        if dtype == "bfloat16"
        else RNG.standard_normal((100, 33)).astype(np.float32)
    )
    b = (
        _bf16(RNG.uniform(0.5, 2, (100, 33)))
        if dtype == "bfloat16"
        else RNG.uniform(0.5, 2, (100, 33)).astype(np.float32)
    )

    @nki.jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=d, data1=nl.load(a), data2=nl.load(b), op=getattr(nl, op))
        nl.store(out, d)
        return out

    y = kernel(a, b)
    fn = {
        "add": torch.add,
        "subtract": torch.sub,
        "multiply": torch.mul,
        "maximum": torch.maximum,
        "divide": torch.div,
    }[op]
    expected = fn(_torch(a).float(), _torch(b).float()).to(getattr(torch, dtype))
    np.testing.assert_array_equal(y.astype(np.float32), expected.float().numpy())


def test_tensor_scalar_with_vector_operand_and_reverse():
    x = RNG.standard_normal((128, 20)).astype(np.float32)
    v = RNG.standard_normal((128, 1)).astype(np.float32)

    @nki.jit
    def kernel(x, v):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        # (v - x) * 3
        nisa.tensor_scalar(
            d, nl.load(x), nl.subtract, nl.load(v), reverse0=True, op1=nl.multiply, operand1=3.0
        )
        nl.store(out, d)
        return out

    expected = (torch.from_numpy(v) - torch.from_numpy(x)) * 3.0
    np.testing.assert_allclose(kernel(x, v), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize(("op", "ref"), [("add", torch.sum), ("maximum", torch.amax)])
def test_tensor_reduce_last_axes(op, ref):
    x = RNG.standard_normal((64, 6, 10)).astype(np.float32)

    @nki.jit
    def kernel(x):
        out = nl.ndarray((64, 6), dtype=nl.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        r = nl.ndarray((64, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(r, getattr(nl, op), t, axis=2)
        r2 = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(r2, getattr(nl, op), t, axis=(1, 2), negate=True)
        nl.store(out, r)
        nl.store(out2, r2)
        return out, out2

    y, y2 = kernel(x)
    np.testing.assert_allclose(y, ref(torch.from_numpy(x), dim=2).numpy(), rtol=1e-5)
    np.testing.assert_allclose(y2[:, 0], -ref(torch.from_numpy(x), dim=(1, 2)).numpy(), rtol=1e-5)


def test_tensor_copy_rounds_to_bf16_and_fp8():
    x = RNG.standard_normal((128, 64)).astype(np.float32) * 10
    for dtype, torch_dtype in (("bfloat16", torch.bfloat16), ("float8_e5m2", torch.float8_e5m2)):
        kernel = _unary_kernel(lambda d, s: nisa.tensor_copy(d, s), getattr(nl, dtype))
        y = kernel(x)
        expected = torch.from_numpy(x).to(torch_dtype).float().numpy()
        np.testing.assert_array_equal(y.astype(np.float32), expected)


def test_iota_memset_and_affine_select_causal_mask():
    x = RNG.standard_normal((128, 128)).astype(np.float32)

    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        idx = nl.ndarray((128, 3, 4), dtype=nl.int32, buffer=nl.shared_hbm)
        filled = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        t = nl.load(x)
        masked = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        # keep column j <= row p: p - j >= 0
        nisa.affine_select(
            masked,
            pattern=[[-1, 128]],
            offset=0,
            channel_multiplier=1,
            on_true_tile=t,
            on_false_value=-1e9,
            cmp_op=nl.greater_equal,
        )
        nl.store(out, masked)
        it = nl.ndarray((128, 3, 4), dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(it, pattern=[[4, 3], [1, 4]], offset=7, channel_multiplier=100)
        nl.store(idx, it)
        m = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(m, 1.00390625)  # rounds to bf16 1.0 (ties to even)
        nl.store(filled, m)
        return out, idx, filled

    y, idx, filled = kernel(x)
    t = torch.from_numpy(x)
    expected = torch.where(torch.ones(128, 128).tril().bool(), t, torch.tensor(-1e9))
    np.testing.assert_array_equal(y, expected.numpy())
    p, a, b = np.meshgrid(np.arange(128), np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(idx, 7 + 100 * p + 4 * a + b)
    assert (filled.astype(np.float32) == torch.tensor(1.00390625).to(torch.bfloat16).item()).all()


def test_where_and_convenience_forms():
    x = RNG.standard_normal((128, 32)).astype(np.float32)

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        positive = nl.greater(t, 0.0)
        y = nl.where(positive, nl.exp(t) * 2.0 + 1.0, 0.0)
        z = y - nl.max(y, axis=1)
        nl.store(out, z)
        return out

    t = torch.from_numpy(x)
    y = torch.where(t > 0, torch.exp(t) * 2.0 + 1.0, torch.tensor(0.0))
    expected = y - y.amax(dim=1, keepdim=True)
    np.testing.assert_allclose(kernel(x), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_scalar_tensor_tensor_tensor_scalar_reduce_partition_reduce_reciprocal():
    x = RNG.uniform(0.5, 2.0, (64, 24)).astype(np.float32)
    y = RNG.standard_normal((64, 24)).astype(np.float32)

    @nki.jit
    def kernel(x, y):
        outs = [
            nl.ndarray((64, 24), dtype=nl.float32, buffer=nl.shared_hbm),
            nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.shared_hbm),
            nl.ndarray((1, 24), dtype=nl.float32, buffer=nl.shared_hbm),
            nl.ndarray((64, 24), dtype=nl.float32, buffer=nl.shared_hbm),
        ]
        a, b = nl.load(x), nl.load(y)
        stt = nl.ndarray((64, 24), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(stt, a, nl.subtract, 1.0, nl.multiply, b)  # (a - 1) * b
        nl.store(outs[0], stt)
        scaled = nl.ndarray((64, 24), dtype=nl.float32, buffer=nl.sbuf)
        row_max = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(scaled, a, nl.multiply, 3.0, nl.maximum, row_max)
        nl.store(outs[1], row_max)
        column_sum = nl.ndarray((1, 24), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(column_sum, nl.add, b)
        nl.store(outs[2], column_sum)
        inv = nl.ndarray((64, 24), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(inv, a)
        nl.store(outs[3], inv)
        return tuple(outs)

    stt, row_max, column_sum, inv = kernel(x, y)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    np.testing.assert_allclose(stt, ((tx - 1) * ty).numpy(), rtol=1e-6)
    np.testing.assert_allclose(row_max[:, 0], (tx * 3).amax(dim=1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(column_sum[0], ty.sum(dim=0).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inv, (1 / tx).numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "bad_call",
    [
        lambda t: nl.ndarray((128, "x"), dtype=nl.float32),
        lambda t: nl.ndarray((128, 4), dtype="float64"),
        lambda t: nl.ndarray((128, 4), dtype=nl.float32, buffer="l2"),
        lambda t: nisa.tensor_scalar(t, t, "add", 1.0),
        lambda t: nisa.activation(dst=t, op=nl.add, data=t),
        lambda t: nisa.activation(dst=t, op=nl.exp, data=t, scale="2"),
        lambda t: nisa.memset(t, "zero"),
        lambda t: nisa.iota(t, pattern="abc"),
        lambda t: nisa.tensor_reduce(t, nl.add, t, axis="1"),
        lambda t: nisa.tensor_copy(t, np.zeros((128, 4))),
        lambda t: nl.affine_range(2.5),
        lambda t: t[0:2:-1],
        lambda t: t[t],
        lambda t: bool(t),
        lambda t: nisa.tensor_copy(t, t, engine=nisa.engine.tensor),
    ],
)
def test_stranger_arguments_get_one_nki_error(bad_call):
    def kernel(x):
        t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        bad_call(t)
        return x

    with pytest.raises(nki.NKIError) as info:
        nki.simulate(kernel)(np.zeros((4, 4), np.float32))
    assert "test_instructions.py:" in str(info.value) and "\n" not in str(info.value)
