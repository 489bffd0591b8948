"""Compiled functions that make ``neuron`` tensors inside them, or update their inputs.

A device constant inside a compiled function (``torch.tensor(100.0, device="neuron")``)
is computed by torch.compile's fake mode with the real eager op while the trace is
running; the eager op's own per-op trace then crashed the process (exit 139) when the
op was not yet in the cache. Each case runs in a fresh interpreter with an empty NEFF
cache so that the crash, if it came back, fails one test instead of the run.
"""

from __future__ import annotations

import pytest
import torch

from tests.device.conftest import run_python

COLD_CASES = {
    "add-device-constant": (
        "f = torch.compile(lambda y: y + torch.tensor(100.0, device='neuron'), backend='neuron')\n"
        "print(f(torch.zeros(2, device='neuron')).cpu().tolist())\n",
        "[100.0, 100.0]",
    ),
    "setitem-on-device-input": (
        "def g(y):\n"
        "    y[0] = 100.0\n"
        "    return y * 2\n"
        "y = torch.zeros(3, device='neuron')\n"
        "out = torch.compile(g, backend='neuron')(y)\n"
        "print(out.cpu().tolist(), y.cpu().tolist())\n",
        "[200.0, 0.0, 0.0] [100.0, 0.0, 0.0]",
    ),
    "factory-op-on-device": (
        "f = torch.compile(lambda y: torch.arange(3, device=y.device) + y, backend='neuron')\n"
        "out = f(torch.ones(3, device='neuron'))\n"
        "print(out.device.type, out.cpu().tolist())\n",
        "neuron [1.0, 2.0, 3.0]",
    ),
}


@pytest.mark.parametrize("case", COLD_CASES)
def test_compiled_function_making_device_tensors_runs_natively_with_a_cold_cache(case, tmp_path):
    code, expected = COLD_CASES[case]
    result = run_python(
        "import torch, torchneuron\n" + code,
        env={"TORCHNEURON_CACHE_DIR": str(tmp_path), "TORCHNEURON_NO_FALLBACK": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == expected


def test_compiled_graph_moving_tensors_between_devices_is_refused_not_misplaced(monkeypatch):
    # The program runs on one device; a graph that moves tensors to another would hand
    # its outputs back on the wrong device. Refused natively, run by the CPU otherwise.
    from torchneuron.lowering import LoweringError

    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as raised:
        torch.compile(lambda x: x.to("neuron") * 2, backend="neuron")(torch.ones(2))
    assert isinstance(raised.value.inner_exception, LoweringError)
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "0")
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match="runs on the CPU"):
        out = torch.compile(lambda x: x.to("neuron") * 2, backend="neuron")(torch.ones(2))
    assert out.device.type == "neuron"
    assert torch.equal(out.cpu(), torch.full((2,), 2.0))
