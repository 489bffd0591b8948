"""The kernel library (torchneuron.nki.kernels) on the emulator against PyTorch on CPU, over
several shapes and float32/bfloat16, plus the nl convenience forms; and each library kernel
called from PyTorch: eager on neuron tensors and inside torch.compile(backend="neuron"),
with TORCHNEURON_NO_FALLBACK=1 (float32, rtol/atol 1e-4: matmuls sum up to 384 terms).

Tolerances, stated per kernel:
- float32: the kernels compute in float32 like torch, only the summation order differs:
  rtol 1e-5 for the row kernels (layer norm: atol 1e-5, where + beta cancels), 1e-4 (atol 1e-4 on O(1) outputs) where matmuls sum over
  hundreds of terms.
- bfloat16, row kernels (softmax, RMSNorm, layer norm): float32 inside, one rounding to
  bfloat16 at the end, so at most one bfloat16 ulp (rtol 2**-7) from torch computed in
  float32 on the same bfloat16 inputs and rounded once.
- bfloat16, matmul: float32 PSUM accumulation of exact products, one rounding: 99% of
  elements equal torch's float64 result rounded to bfloat16, the rest one ulp away.
- bfloat16, MLPs and attention: the hidden activations (MLP) and the softmax numerators p
  (attention) are rounded to bfloat16 before the second matmul, as a bfloat16 model does;
  against torch in float32 on the same inputs the error is bounded by 2**-6 of the output's
  largest magnitude.
"""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki import kernels
from torchneuron.target.hardware import TRN2

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BF16 = nl.bfloat16.numpy
DTYPES = {"float32": np.float32, "bfloat16": BF16}


def _inputs(seed, *shapes, dtype="float32", scale=1.0):
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal(s) * scale).astype(np.float32).astype(DTYPES[dtype]) for s in shapes
    ]


def _t(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float32))


def _check_row_kernel(y, expected, dtype, atol=1e-6):
    """Row kernels: float32 math inside, one rounding to the output dtype at the end."""
    assert y.dtype == DTYPES[dtype]
    expected = expected.to(getattr(torch, dtype)).float().numpy()
    rtol = 1e-5 if dtype == "float32" else 2**-7  # bf16: at most one ulp apart
    np.testing.assert_allclose(y.astype(np.float32), expected, rtol=rtol, atol=atol)


ROW_SHAPES = [(128, 64), (200, 100), (384, 640)]  # a ragged last tile; D over one PSUM bank


@pytest.mark.parametrize(("n", "d"), ROW_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_softmax_kernel_matches_torch(n, d, dtype):
    (x,) = _inputs(n + d, (n, d), dtype=dtype, scale=3.0)
    y = nki.simulate(kernels.softmax)(x)
    _check_row_kernel(y, torch.softmax(_t(x), dim=-1), dtype)


@pytest.mark.parametrize(("n", "d"), ROW_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rmsnorm_kernel_matches_torch(n, d, dtype):
    x, w = _inputs(n + d, (n, d), (d,), dtype=dtype)
    w = w.astype(np.float32)
    y = nki.simulate(kernels.rmsnorm)(x, w)
    xt = _t(x)
    expected = xt * torch.rsqrt(xt.square().mean(dim=1, keepdim=True) + kernels.EPS) * _t(w)
    _check_row_kernel(y, expected, dtype)


@pytest.mark.parametrize(("n", "d"), ROW_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_layernorm_kernel_matches_torch(n, d, dtype):
    x, g, b = _inputs(n + d, (n, d), (d,), (d,), dtype=dtype)
    x = x + np.float32(2.0).astype(x.dtype)  # a nonzero mean, so centring matters
    g, b = g.astype(np.float32), b.astype(np.float32)
    y = nki.simulate(kernels.layernorm)(x, g, b)
    expected = F.layer_norm(_t(x), (d,), _t(g), _t(b), eps=kernels.EPS)
    # + beta can cancel the normalized term (|.| up to ~8): a few float32 ulps of it, absolute.
    _check_row_kernel(y, expected, dtype, atol=1e-5)


@pytest.mark.parametrize(("m", "k", "n"), [(128, 128, 512), (256, 384, 1024), (128, 256, 256)])
def test_tiled_bf16_matmul_matches_torch(m, k, n):
    lhs_t, rhs = _inputs(m + k + n, (k, m), (k, n), dtype="bfloat16")
    y = nki.simulate(kernels.matmul_tiled)(lhs_t, rhs)
    # float32 accumulation of exact bf16 products, rounded once to bf16.
    exact = _t(lhs_t).double().T @ _t(rhs).double()
    assert y.dtype == BF16
    np.testing.assert_allclose(y.astype(np.float32), exact.float().numpy(), rtol=2**-7, atol=1e-3)
    matches = (_t(y) == exact.to(torch.bfloat16).float()).float()
    assert matches.mean() > 0.99  # only fp32 summation-order ties differ


def test_tiled_float32_matmul_matches_torch():
    lhs_t, rhs = _inputs(5, (256, 128), (256, 512))
    y = nki.simulate(kernels.matmul_tiled)(lhs_t, rhs)
    np.testing.assert_allclose(y, (_t(lhs_t).T @ _t(rhs)).numpy(), rtol=1e-4, atol=1e-4)


def _check_matmul_kernel(y, expected, dtype):
    assert y.dtype == DTYPES[dtype]
    expected = expected.numpy()
    if dtype == "float32":
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
    else:
        error = np.abs(y.astype(np.float32) - expected).max()
        assert error <= 2**-6 * np.abs(expected).max(), error


MLP_SHAPES = [(128, 128, 256), (384, 256, 384), (640, 128, 128)]  # token blocks of 512 + 128


@pytest.mark.parametrize(("n", "d", "f"), MLP_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gelu_mlp_kernel_matches_torch(n, d, f, dtype):
    x, w1, w2 = _inputs(n + d + f, (n, d), (d, f), (f, d), dtype=dtype)
    w1, w2 = (
        w1 / np.float32(math.sqrt(d)).astype(w1.dtype),
        w2 / np.float32(math.sqrt(f)).astype(w2.dtype),
    )
    y = nki.simulate(kernels.gelu_mlp)(x, w1, w2)
    _check_matmul_kernel(y, F.gelu(_t(x) @ _t(w1)) @ _t(w2), dtype)


@pytest.mark.parametrize(("n", "d", "f"), MLP_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_swiglu_mlp_kernel_matches_torch(n, d, f, dtype):
    x, wg, wu, wd = _inputs(n * d + f, (n, d), (d, f), (d, f), (f, d), dtype=dtype)
    root_d, root_f = (np.float32(math.sqrt(v)).astype(x.dtype) for v in (d, f))
    wg, wu, wd = wg / root_d, wu / root_d, wd / root_f
    y = nki.simulate(kernels.swiglu_mlp)(x, wg, wu, wd)
    expected = (F.silu(_t(x) @ _t(wg)) * (_t(x) @ _t(wu))) @ _t(wd)
    _check_matmul_kernel(y, expected, dtype)


@pytest.mark.parametrize(("sq", "sk", "d"), [(128, 128, 64), (256, 640, 128), (128, 1024, 32)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_flash_attention_kernel_matches_torch(sq, sk, d, dtype):
    q, k, v = _inputs(sq + sk + d, (sq, d), (sk, d), (sk, d), dtype=dtype, scale=1.5)
    y = nki.simulate(kernels.flash_attention)(q, k, v)
    expected = F.scaled_dot_product_attention(_t(q)[None], _t(k)[None], _t(v)[None])[0]
    _check_matmul_kernel(y, expected, dtype)


@pytest.mark.parametrize(("sq", "sk"), [(256, 256), (640, 640), (128, 640)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_causal_flash_attention_matches_torch(sq, sk, dtype):
    q, k, v = _inputs(sq + sk, (sq, 64), (sk, 64), (sk, 64), dtype=dtype, scale=1.5)
    y = nki.simulate(kernels.flash_attention)(q, k, v, causal=True)
    expected = F.scaled_dot_product_attention(
        _t(q)[None], _t(k)[None], _t(v)[None], is_causal=True
    )[0]
    _check_matmul_kernel(y, expected, dtype)


def test_causal_flash_attention_skips_blocks_after_the_queries():
    q = np.zeros((1024, 128), BF16)
    full = nki.estimate(kernels.flash_attention)(q, q, q)
    causal = nki.estimate(kernels.flash_attention)(q, q, q, causal=True)
    count = lambda run: sum(i.name == "nc_matmul" for i in run.trace.instructions)  # noqa: E731
    # 8 query tiles x 2 key blocks of 512: query tiles 0-3 see only the first block.
    assert count(causal) == count(full) - 4 * (1 + 4)  # one QK^T and four PV matmuls each
    # Every query tile has one block holding its diagonal, masked on GpSimd.
    assert sum(i.name == "affine_select" for i in causal.trace.instructions) == 8
    assert not any(i.name == "affine_select" for i in full.trace.instructions)


def test_flash_attention_scale_argument_is_a_constant():
    q, k, v = _inputs(9, (128, 64), (256, 64), (256, 64))
    y = nki.simulate(kernels.flash_attention)(q, k, v, scale=0.5)
    expected = torch.softmax(_t(q) @ _t(k).T * 0.5, dim=-1) @ _t(v)
    np.testing.assert_allclose(y, expected.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("kernel", "shapes", "message"),
    [
        (kernels.matmul_tiled, [(128, 100), (128, 512)], "M a multiple of 128"),
        (kernels.softmax, [(4, 8, 16)], "x must be [N, D]"),
        (kernels.rmsnorm, [(128, 64), (32,)], "w must have shape (64,)"),
        (kernels.gelu_mlp, [(100, 128), (128, 256), (256, 128)], "multiples of 128"),
        (kernels.swiglu_mlp, [(128, 128), (128, 256), (128, 128), (256, 128)], "up [D, F]"),
        (kernels.flash_attention, [(128, 256), (128, 256), (128, 256)], "d <= 128"),
    ],
)
def test_kernels_refuse_shapes_they_do_not_tile(kernel, shapes, message):
    arrays = [np.zeros(s, np.float32) for s in shapes]
    with pytest.raises(nki.NKIError, match=r"kernel \w+ at \w+\.py:\d+: ") as info:
        nki.estimate(kernel)(*arrays)
    assert message in str(info.value)


def test_a_limit_inside_a_library_kernel_names_the_library_line():
    # A row of 60000 float32 needs 240000 bytes per partition; trn2 has 196608.
    with pytest.raises(nki.NKIError, match=r"dma_copy at rows\.py:\d+: SBUF capacity exceeded"):
        nki.estimate(kernels.softmax)(np.zeros((128, 60000), np.float32))


@pytest.mark.parametrize(
    ("kernel", "shapes", "flops"),
    [
        (kernels.softmax, [(512, 1024)], 0),
        (kernels.layernorm, [(512, 1024), (1024,), (1024,)], 0),
        (kernels.gelu_mlp, [(512, 256), (256, 512), (512, 256)], 4 * 512 * 256 * 512),
        (kernels.flash_attention, [(256, 128)] * 3, 4 * 256 * 256 * 128),
    ],
)
def test_kernel_estimates_never_beat_the_roofline(kernel, shapes, flops):
    arrays = [np.zeros(s, BF16 if len(s) == 2 else np.float32) for s in shapes]
    run = nki.estimate(kernel)(*arrays)
    hbm = 362.5e9  # trn2: min(2.9 TB/s / 8 cores, 16 DMA queues x 27.2 GB/s), per core
    traffic = sum(a.nbytes for a in arrays) + arrays[0].nbytes  # inputs once, output once
    roofline = max(flops / (TRN2.tensor_engine.tflops_per_core["bfloat16"] * 1e12), traffic / hbm)
    assert run.seconds >= roofline
    assert run.plan.sbuf_high_water <= TRN2.sbuf_bytes_per_partition


def test_large_bf16_matmul_keeps_tensor_engine_fed():
    # The bar: >= 85% of TensorE's BF16 peak for a large shape (estimate only).
    size = 2048
    a = np.zeros((size, size), BF16)
    run = nki.estimate(kernels.matmul_tiled)(a, a)
    peak = TRN2.tensor_engine.tflops_per_core["bfloat16"] * 1e12
    roofline = 2 * size**3 / peak
    assert roofline / run.seconds >= 0.85, run.seconds
    # It cannot beat the per-instruction bound: 512 columns + the fixed overhead each.
    columns_bound = 512 / (512 + TRN2.instruction_overhead_cycles)
    assert roofline / run.seconds < columns_bound + 0.02


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_examples_use_the_library_and_run(capsys):
    # nki_matmul's main() estimates 2048^3 (test_large_bf16_matmul... does that already).
    assert _example("nki_matmul").matmul_tiled is kernels.matmul_tiled
    module = _example("nki_rmsnorm")
    assert module.rmsnorm is kernels.rmsnorm
    module.main()  # 1024 x 512 float32 through nki.profile
    out = capsys.readouterr().out
    found = re.search(r"max abs error vs NumPy: (\S+)", out)
    assert found and float(found.group(1)) < 1e-4, out
    assert "ScalarE" in out and "SBUF high water" in out


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


# -- from PyTorch: eager mode on neuron tensors and inside torch.compile ---------------------


def _torch_cases():
    """(name, kernel, inputs, constants, reference) with small shapes, float32."""
    g = torch.Generator().manual_seed(0)
    r = lambda *s, scale=1.0: torch.randn(*s, generator=g) * scale  # noqa: E731
    x, w, b = r(256, 128), r(128), r(128)
    q, k, v = r(256, 64), r(384, 64), r(384, 64)
    w1, w2, w3 = r(128, 256, scale=0.1), r(256, 128, scale=0.1), r(128, 256, scale=0.1)
    rms = lambda x, w: x * torch.rsqrt(x.square().mean(1, keepdim=True) + kernels.EPS) * w  # noqa: E731
    sdpa = lambda q, k, v, **kw: F.scaled_dot_product_attention(q[None], k[None], v[None], **kw)[0]  # noqa: E731
    return [
        ("matmul", kernels.matmul_tiled, (r(256, 128), r(256, 512)), {}, lambda a, c: a.T @ c),
        ("softmax", kernels.softmax, (x,), {}, lambda x: torch.softmax(x, -1)),
        ("rmsnorm", kernels.rmsnorm, (x, w), {}, rms),
        (
            "layernorm",
            kernels.layernorm,
            (x, w, b),
            {},
            lambda x, w, b: F.layer_norm(x, (128,), w, b, eps=kernels.EPS),
        ),  # fmt: skip
        ("gelu_mlp", kernels.gelu_mlp, (x, w1, w2), {}, lambda x, w1, w2: F.gelu(x @ w1) @ w2),
        (
            "swiglu_mlp",
            kernels.swiglu_mlp,
            (x, w1, w3, w2),
            {},
            lambda x, wg, wu, wd: (F.silu(x @ wg) * (x @ wu)) @ wd,
        ),  # fmt: skip
        ("flash_attention", kernels.flash_attention, (q, k, v), {}, sdpa),
        (
            "causal_attention",
            kernels.flash_attention,
            (q, q, q),
            {"causal": True},
            lambda q, k, v: sdpa(q, k, v, is_causal=True),
        ),  # fmt: skip
    ]


TORCH_CASES = {case[0]: case for case in _torch_cases()}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_library_kernels_on_neuron_tensors_in_eager_mode(name, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    _, kernel, inputs, constants, reference = TORCH_CASES[name]
    y = kernel(*(t.to("neuron") for t in inputs), **constants)
    assert y.device.type == "neuron"
    torch.testing.assert_close(y.cpu(), reference(*inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_library_kernels_inside_torch_compile(name, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    _, kernel, inputs, constants, reference = TORCH_CASES[name]

    def model(first, *rest):  # compiled work before and after the kernel
        return kernel(first * 0.5, *rest, **constants).relu() + 1.0

    compiled = torch.compile(model, backend="neuron", fullgraph=True)
    y = compiled(*(t.to("neuron") for t in inputs))
    expected = reference(inputs[0] * 0.5, *inputs[1:]).relu() + 1.0
    torch.testing.assert_close(y.cpu(), expected, rtol=1e-4, atol=1e-4)
