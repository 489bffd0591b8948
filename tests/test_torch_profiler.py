"""torch.profiler sees the neuron device's work: PrivateUse1 device events, memory events.

Each NEFF execution (an eager op, a compiled graph) and each NKI kernel call is a device
event of ``DeviceType.PrivateUse1`` lasting its estimated device time, linked to the CPU
op that launched it (so ``key_averages`` gives that op device time), and in the Chrome
trace. ``profile_memory=True`` sees device allocations.
"""

from __future__ import annotations

import json

import torch
from torch.profiler import ProfilerActivity, profile

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
DEVICE = torch.autograd.DeviceType.PrivateUse1


def _device_events(prof):
    return [e for e in prof.events() if e.device_type == DEVICE]


def test_eager_compiled_and_kernel_work_are_device_events_of_their_cpu_ops(fresh_dynamo, tmp_path):
    from torchneuron.nki.kernels import rmsnorm

    x = torch.randn(64, 64, device="neuron")
    w = torch.randn(64, 64, device="neuron")
    g = torch.randn(64, device="neuron")
    f = torch.compile(lambda a, b: torch.relu(a @ b) + 1, backend="neuron")
    f(x, w), rmsnorm(x, g), (x @ w).cpu()  # compiled and loaded before the profile
    with profile(activities=ACTIVITIES) as prof:
        y = x @ w
        z = f(x, w)
        k = rmsnorm(x, g)
        torch.neuron.synchronize()
    names = [e.name for e in _device_events(prof)]
    assert "aten.mm" in names  # the eager op's NEFF
    assert any(n.startswith("graph") and n.endswith("_forward") for n in names), names
    assert "nki:rmsnorm" in names
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["aten::mm"].self_device_time_total > 0  # linked to its CPU op
    compiled = next(row for key, row in rows.items() if key.startswith("Torch-Compiled Region"))
    assert compiled.device_time_total > 0
    assert "NEURON" in prof.key_averages().table(row_limit=5)
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert {"aten.mm", "nki:rmsnorm"} <= {e["name"] for e in kernels}
    mm = next(e for e in kernels if e["name"] == "aten.mm")
    assert mm["args"]["neuron"]["estimated"] is True and mm["args"]["neuron"]["engine"]
    torch.testing.assert_close(y.cpu(), x.cpu() @ w.cpu())
    assert z.shape == k.shape == (64, 64)


def test_device_memory_is_seen_with_profile_memory():
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        big = torch.ones(256, 256, device="neuron")
        torch.neuron.synchronize()
        del big
    allocated = max(row.self_device_memory_usage for row in prof.key_averages())
    assert allocated >= 256 * 256 * 4
