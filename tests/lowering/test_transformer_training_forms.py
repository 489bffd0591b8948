"""Forms that transformer training graphs hand the lowering, natively, in both modes.

The backward of a rotary embedding's ``x[..., k:]`` is ``slice_scatter`` with
``end = 2**63 - 1``; torch-mlir's StableHLO conversion of that form allocated for
the whole range and threw ``std::bad_alloc``, so Llama and Mistral training could not
compile without fallback. The bounds are clamped before import.
"""

from __future__ import annotations

import pytest
import torch
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d

from torchneuron.lowering import LoweringError, UnsupportedOpError, torch_to_stablehlo

END = 2**63 - 1


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    # a CPU fallback would hide a wrong lowering: these must run on the device
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def _rotate_half_loss(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return (x * cos + rotated * sin).square().sum()


def test_compiled_rotary_embedding_backward_matches_pytorch():
    x, cos, sin = torch.randn(2, 3, 5, 8), torch.randn(5, 8), torch.randn(5, 8)

    def grad(fn, x):
        x = x.clone().requires_grad_()
        fn(x, cos, sin).backward()
        return x.grad

    expected = grad(_rotate_half_loss, x)
    got = grad(torch.compile(_rotate_half_loss, backend="neuron"), x)
    torch.testing.assert_close(got, expected)


SCATTERS = {
    "end-past-size": (1, 4, END),
    "negative-start": (1, -3, END),
    "negative-end": (1, 1, -2),
    "start-past-end": (1, 4, 2),
    "start-past-size": (1, 9, END),
    "last-dim": (-1, 0, 2),
}


@pytest.mark.parametrize("case", SCATTERS)
def test_slice_scatter_with_out_of_range_bounds_matches_pytorch(case):
    dim, start, end = SCATTERS[case]
    x = torch.randn(3, 6)
    src_shape = list(x.shape)
    src_shape[dim] = len(range(x.shape[dim])[slice(start, end)])
    src = torch.randn(src_shape)

    def fn(x, src):
        return torch.slice_scatter(x, src, dim, start, end)

    expected = fn(x, src)
    assert torch.equal(torch.compile(fn, backend="neuron")(x, src), expected)
    assert torch.equal(fn(x.to("neuron"), src.to("neuron")).cpu(), expected)


def test_out_of_memory_in_torch_mlir_is_reported_as_such_not_as_an_op(monkeypatch):
    class ExhaustedPipeline:
        def run(self, operation):
            raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(
        torch_to_stablehlo.PassManager, "parse", lambda pipeline: ExhaustedPipeline()
    )
    context = ir.Context()
    torch_d.register_dialect(context)
    module = ir.Module.parse(
        "func.func @main(%a: !torch.vtensor<[2],f32>, %b: !torch.vtensor<[2],f32>)"
        " -> !torch.vtensor<[2],f32> {\n"
        "  %0 = torch.aten.mul.Tensor %a, %b : !torch.vtensor<[2],f32>, !torch.vtensor<[2],f32>"
        " -> !torch.vtensor<[2],f32>\n"
        "  return %0 : !torch.vtensor<[2],f32>\n}",
        context,
    )
    with pytest.raises(LoweringError, match="out of memory") as caught:
        torch_to_stablehlo.lower_to_stablehlo(module)
    assert not isinstance(caught.value, UnsupportedOpError)


def test_compiled_constant_moved_to_the_device_matches_pytorch():
    # a sliding-window cache does torch.tensor(window).to(device): prims.device_put
    def fn(y):
        return torch.minimum(y, torch.tensor(5, dtype=torch.long).to(y.device)) * 2

    y = torch.arange(10)
    assert torch.equal(torch.compile(fn, backend="neuron")(y.to("neuron")).cpu(), fn(y))
