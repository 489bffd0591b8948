"""DEFAULT_PIPELINE leaves programs semantically identical: run before and after on XLA.

The programs are real torch-mlir output (``torch_mlir.fx.export_and_import``
to StableHLO) of small PyTorch modules: with parameters (inlined as
``dense_resource``), torch's scalar-constant chains, layout round trips,
integer arithmetic, reductions and bf16. "Before" is the minimum XLA accepts
(legalize-to-stablehlo); both sides externalize every constant so the
``dense_resource`` payloads can be serialized.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from tests.passes.execute import assert_same_values, execute
from torchneuron.passes import DEFAULT_PIPELINE, PassContext, PassManager, parse_module

LIFT_ALL_CONSTANTS = "externalize-constants{threshold-bytes=0}"


class ScalarChains(torch.nn.Module):
    def forward(self, x, y):
        z = x * 1.0 + 0.0
        w = z.t().t().reshape(2, 8).reshape(4, 4)
        return torch.relu(w @ y) + torch.arange(4.0), (x > 0).sum()


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


class Normalize(torch.nn.Module):
    def forward(self, x, idx):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True)
        normed = (x - mean) / torch.sqrt(var + 1e-5)
        leaky = torch.where(normed > 0, normed, 0.1 * normed)
        return leaky, (idx * 3 + 1) // 2, (x.to(torch.bfloat16) * 2).sum(0)


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.head = torch.nn.Linear(4 * 8 * 8, 5)

    def forward(self, x):
        return self.head(torch.flatten(torch.relu(self.conv(x)), 1))


def _lower(model: torch.nn.Module, *args: torch.Tensor) -> str:
    from torch_mlir import fx

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return str(fx.export_and_import(model.eval(), *args, output_type="stablehlo"))


def _run(text: str, pipeline: str, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], str]:
    module = parse_module(text)
    ctx = PassContext()
    PassManager.from_pipeline(pipeline).run(module, ctx)
    return execute(module, inputs, ctx.weights), str(module)


def _example(name: str):
    rng = np.random.default_rng(7)
    if name == "scalar_chains":
        args = [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2)]
        return ScalarChains(), args
    if name == "mlp":
        return Mlp(), [rng.standard_normal((3, 16)).astype(np.float32)]
    if name == "normalize":
        return Normalize(), [
            rng.standard_normal((5, 8)).astype(np.float32),
            rng.integers(-1000, 1000, (5,), dtype=np.int64),
        ]
    return ConvNet(), [rng.standard_normal((2, 3, 8, 8)).astype(np.float32)]


@pytest.mark.parametrize("name", ["scalar_chains", "mlp", "normalize", "convnet"])
def test_default_pipeline_preserves_results(name: str):
    torch.manual_seed(0)
    model, inputs = _example(name)
    text = _lower(model, *[torch.from_numpy(a) for a in inputs])
    before, _ = _run(text, f"legalize-to-stablehlo,{LIFT_ALL_CONSTANTS}", inputs)
    after, optimized = _run(text, f"{DEFAULT_PIPELINE},{LIFT_ALL_CONSTANTS}", inputs)
    assert len(after) == len(before)
    for index, (got, want) in enumerate(zip(after, before)):
        assert_same_values(got, want, f"{name} output {index}")
    # And PyTorch agrees with both (loosely: XLA's exp/sqrt differ in the last ulp).
    with torch.no_grad():
        expected = model(*[torch.from_numpy(a) for a in inputs])
    expected = expected if isinstance(expected, tuple) else (expected,)
    for got, want in zip(after, expected):
        np.testing.assert_allclose(
            got.astype(np.float64), want.float().numpy(), rtol=2e-2, atol=1e-5
        )
    assert "arith." not in optimized


def test_default_pipeline_shrinks_torch_output():
    model, inputs = _example("scalar_chains")
    text = _lower(model, *[torch.from_numpy(a) for a in inputs])
    module = parse_module(text)
    report = PassManager.from_pipeline(DEFAULT_PIPELINE).run(module, PassContext())
    assert report.steps[-1].ops_after < report.steps[0].ops_before / 2
    assert report.counters["algebraic-simplify.mul-by-one"] >= 1
    assert report.counters["algebraic-simplify.transpose-of-transpose"] == 1


def test_neff_pipeline_runs_on_the_importers_own_module():
    """No text round trip: the module object torch-mlir returns, in its own Context."""
    from torch_mlir import fx

    from torchneuron.passes import NEFF_PIPELINE

    model, inputs = _example("mlp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = fx.export_and_import(
            model.eval(), torch.from_numpy(inputs[0]), output_type="stablehlo"
        )
    ctx = PassContext(weights={})
    PassManager.from_pipeline(NEFF_PIPELINE).run(module, ctx)
    assert "dense_resource" not in str(module)
    # fc1's 32x16 weight is over the 1024-byte default threshold; the rest is small.
    assert {name: w.shape for name, w in ctx.weights.items()} == {"const_0": (32, 16)}
    (output,) = execute(module, inputs, ctx.weights)
    with torch.no_grad():
        expected = model(torch.from_numpy(inputs[0])).numpy()
    np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-6)
