"""Whole kernels on the emulator against PyTorch on CPU: the issue's RMSNorm (examples/
nki_rmsnorm.py), the tiled BF16 matmul (examples/nki_matmul.py) and the nl convenience forms
(nl.load/nl.matmul with += accumulation/nl.store)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.target.hardware import TRN2

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RMSNORM = _example("nki_rmsnorm")
MATMUL = _example("nki_matmul")


@pytest.mark.parametrize(("n", "d"), [(128, 64), (384, 512), (256, 100)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rmsnorm_kernel_matches_torch(n, d, dtype):
    rng = np.random.default_rng(n + d)
    x32 = rng.standard_normal((n, d)).astype(np.float32)
    w32 = rng.standard_normal(d).astype(np.float32)
    np_dtype = getattr(nl, dtype).numpy
    x, w = x32.astype(np_dtype), w32.astype(np.float32)
    y = nki.simulate(RMSNORM.rmsnorm)(x, w)
    xt = torch.from_numpy(x.astype(np.float32))
    expected = xt * torch.rsqrt(xt.square().mean(dim=1, keepdim=True) + RMSNORM.EPS)
    expected = (expected * torch.from_numpy(w)).to(getattr(torch, dtype))
    assert y.dtype == np_dtype and y.shape == (n, d)
    rtol = 1e-5 if dtype == "float32" else 2**-7  # bf16: at most one ulp apart
    np.testing.assert_allclose(y.astype(np.float32), expected.float().numpy(), rtol=rtol, atol=1e-5)


@pytest.mark.parametrize(("m", "k", "n"), [(128, 128, 512), (256, 384, 1024)])
def test_tiled_bf16_matmul_matches_torch(m, k, n):
    rng = np.random.default_rng(m + k + n)
    bf16 = nl.bfloat16.numpy
    lhs_t = rng.standard_normal((k, m)).astype(bf16)
    rhs = rng.standard_normal((k, n)).astype(bf16)
    y = nki.simulate(MATMUL.matmul_tiled)(lhs_t, rhs)
    a = torch.from_numpy(lhs_t.astype(np.float32)).to(torch.bfloat16)
    b = torch.from_numpy(rhs.astype(np.float32)).to(torch.bfloat16)
    # float32 accumulation of exact bf16 products, rounded once to bf16.
    exact = a.double().T @ b.double()
    assert y.dtype == bf16
    np.testing.assert_allclose(y.astype(np.float32), exact.float().numpy(), rtol=2**-7, atol=1e-3)
    matches = (torch.from_numpy(y.astype(np.float32)) == exact.to(torch.bfloat16).float()).float()
    assert matches.mean() > 0.99  # only fp32 summation-order ties differ


def test_large_bf16_matmul_keeps_tensor_engine_fed():
    # The bar: >= 85% of TensorE's BF16 peak for a large shape (estimate only).
    size = 2048
    a = np.zeros((size, size), nl.bfloat16.numpy)
    run = nki.estimate(MATMUL.matmul_tiled)(a, a)
    peak = TRN2.tensor_engine.tflops_per_core["bfloat16"] * 1e12
    roofline = 2 * size**3 / peak
    assert roofline / run.seconds >= 0.85, run.seconds
    # It cannot beat the per-instruction bound: 512 columns + the fixed overhead each.
    columns_bound = 512 / (512 + TRN2.instruction_overhead_cycles)
    assert roofline / run.seconds < columns_bound + 0.02


def test_convenience_forms_matmul_accumulation_and_softmax():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((128, 256)).astype(np.float32)  # [M, K]
    k = rng.standard_normal((256, 64)).astype(np.float32)  # [K, N]

    @nki.jit
    def kernel(q, k):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
        for kt in nl.affine_range(2):
            a = nl.load(q[:, kt * 128 : (kt + 1) * 128])
            b = nl.load(k[kt * 128 : (kt + 1) * 128, :])
            acc += nl.matmul(a, b)  # transposes a on TensorE, then accumulates in PSUM
        scores = nl.copy(acc)
        shifted = scores - nl.max(scores, axis=1)
        e = nl.exp(shifted)
        nl.store(out, e / nl.sum(e, axis=1))
        return out

    run = nki.profile(kernel)(q, k)
    names = [s.instruction.name for s in run.run.schedule.slots]
    assert names.count("nc_matmul") == 2 and names.count("nc_transpose") == 2
    scores = torch.from_numpy(q) @ torch.from_numpy(k)
    np.testing.assert_allclose(
        run.outputs, torch.softmax(scores, dim=1).numpy(), rtol=1e-5, atol=1e-6
    )
