"""Device memory: every storage is charged to its core's HBM; OOM and recovery."""

from __future__ import annotations

import gc

import pytest
import torch

from torchneuron.runtime import reset_runtime


@pytest.fixture
def hbm_per_core(monkeypatch):
    """Set the per-core HBM capacity for one test: fresh cores (the topology is read once,
    so it is reset), and the usual ones again afterwards."""

    def set_capacity(text: str) -> None:
        monkeypatch.setenv("TORCHNEURON_HBM_BYTES_PER_CORE", text)
        reset_runtime()

    yield set_capacity
    monkeypatch.undo()
    reset_runtime()


def test_allocations_are_accounted_and_freed():
    gc.collect()
    torch.neuron.empty_cache()
    base = torch.neuron.memory_allocated()
    torch.neuron.reset_peak_memory_stats()
    tensor = torch.empty(1024, 1024, device="neuron")  # 4 MiB
    assert torch.neuron.memory_allocated() - base == 4 * 1024 * 1024
    assert torch.neuron.max_memory_allocated() >= base + 4 * 1024 * 1024
    stats = torch.neuron.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.neuron.memory_allocated()
    assert torch.neuron.memory_reserved() >= torch.neuron.memory_allocated()
    del tensor
    gc.collect()
    assert torch.neuron.memory_allocated() == base


def test_out_of_memory_raises_torch_oom_and_device_recovers(hbm_per_core):
    hbm_per_core("32MiB")
    assert torch.neuron.get_device_properties().total_memory == 32 * 1024**2
    keep = torch.empty(6 * 1024 * 1024, device="neuron")  # 24 MiB
    with pytest.raises(torch.OutOfMemoryError) as caught:
        torch.empty(4 * 1024 * 1024, device="neuron")  # 16 MiB more
    message = str(caught.value)
    assert "16777216" in message or "16.00 MiB" in message  # requested
    assert "32.00 MiB" in message or "33554432" in message  # capacity
    assert torch.neuron.memory_stats()["num_ooms"] >= 1
    del keep
    gc.collect()
    torch.neuron.empty_cache()
    again = torch.empty(4 * 1024 * 1024, device="neuron")  # the 16 MiB that did not fit
    assert (again[:4].fill_(1.0) + 1).cpu().tolist() == [2.0] * 4


def test_op_output_that_does_not_fit_raises_oom(hbm_per_core):
    hbm_per_core("8MiB")
    x = torch.ones(768 * 1024, device="neuron")  # 3 MiB
    with pytest.raises(torch.OutOfMemoryError):
        torch.cat([x, x, x])  # 9 MiB more
    del x
    gc.collect()
    assert (torch.ones(4, device="neuron") * 2).cpu().tolist() == [2.0] * 4


def test_an_op_on_device_tensors_is_charged_once(hbm_per_core):
    # Inputs and outputs of a per-op program are device tensors, accounted as such;
    # the execution adds nothing for them (3 MiB in + 3 MiB out fit in 8 MiB).
    hbm_per_core("8MiB")
    x = torch.ones(768 * 1024, device="neuron")
    torch.neuron.reset_peak_memory_stats()
    y = x + 1
    assert y[:2].cpu().tolist() == [2.0, 2.0]
    assert torch.neuron.max_memory_allocated() <= 6 * 1024 * 1024 + 4096


def test_storages_freed_by_the_garbage_collector_are_given_back():
    # The collector can run inside the HBM allocator's own update; frees it triggers are deferred.
    from tests.device.conftest import run_python

    code = (
        "import gc, torch\n"
        "base = torch.neuron.memory_allocated()\n"
        "gc.set_threshold(1, 1, 1)\n"
        "for _ in range(3000):\n"
        "    cycle = [torch.empty(64, device='neuron')]\n"
        "    cycle.append(cycle)\n"
        "gc.set_threshold(700, 10, 10)\n"
        "del cycle\n"
        "gc.collect()\n"
        "print('leaked', torch.neuron.memory_allocated() - base)\n"
    )
    result = run_python(code, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "leaked 0" in result.stdout
