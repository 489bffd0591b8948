"""Backward passes free device memory on the autograd thread without hanging.

The autograd engine runs a neuron backward on its own device thread; there, the
compiled-op cache evicts programs (unloading them frees their HBM) and the garbage
collector frees storages through the native allocator's hook, in the middle of
other allocations. A lock taken twice on that path hung ``backward()``. The case runs
in a fresh interpreter with a two-entry op cache (every op evicts another) under a
timeout, so a hang fails the test instead of the run.
"""

from __future__ import annotations

from tests.device.conftest import run_python

CODE = """
import gc, torch, torchneuron
from torchneuron.device import compiled
compiled.cache.set_capacity(2)
for step in range(6):
    x = torch.rand(4 + step % 3, 3, device="neuron", requires_grad=True)
    y = x * 1
    y[torch.tensor([0, 2], device="neuron")] = torch.tensor(5.0, device="neuron")
    (y * y).sum().backward()
    expected = 2 * x.detach().cpu()
    expected[[0, 2]] = 0
    assert torch.equal(x.grad.cpu(), expected), step
    if step % 2 == 0:
        gc.collect()
print("done")
"""


def test_backward_with_evictions_and_collections_on_the_autograd_thread_finishes(tmp_path):
    result = run_python(
        CODE,
        env={"TORCHNEURON_CACHE_DIR": str(tmp_path), "TORCHNEURON_NO_FALLBACK": "1"},
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("done")
