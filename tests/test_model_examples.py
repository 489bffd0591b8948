"""The examples of the models people build now, run as users run them.

``examples/moe.py``, ``examples/flex_attention.py`` and ``examples/fp8_training.py``
in fresh processes with the fallback off, their printed figures checked. Slow: the
same behaviours run in process in tests/compiler/test_moe.py,
tests/compiler/test_flex_attention.py and ``test_the_float8_recipe_trains_like_the_cpu``
below, which stays in the default run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str) -> str:
    env = dict(os.environ, TORCHNEURON_NO_FALLBACK="1", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _pairs(output: str) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in re.findall(r"loss ([0-9.]+) \(CPU ([0-9.]+)", output)]


@pytest.mark.slow
@pytest.mark.parametrize("dispatch", ["gather", "grouped"])
def test_moe_example_trains_like_the_cpu_and_compiles_once(dispatch):
    output = _run("moe.py", "--steps", "4", "--dispatch", dispatch)
    pairs = _pairs(output)
    assert len(pairs) == 4
    for got, want in pairs:
        assert abs(got - want) <= (1e-5 if dispatch == "gather" else 1e-3)
    if dispatch == "gather":
        assert "graphs compiled at their bounds: 1, backward specializations: 1" in output


@pytest.mark.slow
def test_flex_attention_example_matches():
    output = _run("flex_attention.py")
    errors = [float(e) for e in re.findall(r"by ([0-9.e+-]+)", output)]
    assert len(errors) == 6 and max(errors) < 1e-4


@pytest.mark.slow
def test_fp8_training_example_matches_the_cpus_float8_kernels():
    pairs = _pairs(_run("fp8_training.py", "--steps", "3"))
    assert len(pairs) == 3 and all(abs(a - b) <= 1e-5 for a, b in pairs)


def test_the_float8_recipe_trains_like_the_cpu(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    torch._dynamo.reset()
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import fp8_training
    finally:
        sys.path.remove(str(ROOT / "examples"))
    torch.manual_seed(0)
    on_cpu, on_device = fp8_training.model(), fp8_training.model()
    on_device.load_state_dict(on_cpu.state_dict())
    on_device.to("neuron")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (on_cpu, on_device)]
    step = torch.compile(fp8_training.train_step, backend="neuron")
    generator = torch.Generator().manual_seed(1)
    for _ in range(1):  # one step: a forward, a backward of float8 products, an update
        x = torch.randn(32, 64, generator=generator)
        labels = torch.randint(0, 10, (32,), generator=generator)
        got = step(on_device, x.to("neuron"), labels.to("neuron"), optimizers[1])
        want = fp8_training.train_step(on_cpu, x, labels, optimizers[0])
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    for got, want in zip(on_device.parameters(), on_cpu.parameters()):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-4, atol=1e-5)
    torch._dynamo.reset()
