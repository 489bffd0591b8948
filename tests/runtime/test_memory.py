"""HBM accounting: allocation, peaks, torch-style stats, out-of-memory errors and recovery."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
import torch

from torchneuron.runtime import (
    HbmAllocator,
    NeuronOutOfMemoryError,
    NeuronRuntimeError,
    format_bytes,
    get_core,
    load_neff,
)
from torchneuron.runtime.memory import ALLOCATION_GRANULARITY

from .conftest import make_neff, tensor_type, variable


def test_allocations_round_up_and_free():
    hbm = HbmAllocator(10_000, "NeuronCore 0 (trn2, LNC=2)")
    a = hbm.allocate(1, "a")
    b = hbm.allocate(513, "b")
    assert hbm.allocated == hbm.reserved == 512 + 1024
    assert hbm.requested == 514
    hbm.free(a)
    assert hbm.allocated == 1024 and hbm.peak == 1536
    hbm.reset_peak()
    assert hbm.peak == 1024
    hbm.free(b)
    assert hbm.allocated == 0 and hbm.requested == 0
    assert hbm.allocate(0, "empty") and hbm.allocated == 0


def test_stats_use_torch_key_names():
    hbm = HbmAllocator(4096, "core")
    handle = hbm.allocate(1000, "x")
    hbm.free(handle)
    hbm.allocate(100, "y")
    stats = hbm.stats()
    assert stats["allocated_bytes.all.current"] == ALLOCATION_GRANULARITY
    assert stats["allocated_bytes.all.peak"] == 1024
    assert stats["allocated_bytes.all.allocated"] == 1024 + 512
    assert stats["allocated_bytes.all.freed"] == 1024
    assert stats["reserved_bytes.all.current"] == 512
    assert stats["requested_bytes.all.current"] == 100
    assert stats["allocation.all.current"] == 1 and stats["allocation.all.allocated"] == 2
    assert stats["num_alloc_retries"] == 0 and stats["num_ooms"] == 0
    assert stats["capacity_bytes"] == 4096
    # every key torch.cuda.memory_stats users reach for first is present
    for key in (
        "active_bytes.all.current",
        "segment.all.current",
        "num_device_alloc",
        "num_device_free",
    ):
        assert key in stats


def test_bad_free_and_negative_size():
    hbm = HbmAllocator(4096, "NeuronCore 3 (trn2, LNC=2)")
    handle = hbm.allocate(10, "x")
    hbm.free(handle)
    with pytest.raises(
        NeuronRuntimeError, match=f"NeuronCore 3.*handle {handle} is not a live allocation"
    ):
        hbm.free(handle)
    with pytest.raises(ValueError, match="negative"):
        hbm.allocate(-1, "x")


@pytest.mark.parametrize(
    ("held", "asked", "shown"),
    [
        # "1.00 GiB" asked and "1024.00 MiB" free: the rounded units alone look as if it fits
        ((1 << 30) + 512, 1 << 30, "1024.00 MiB (1073741312 bytes) free"),
        # 1 byte over 1 GiB is charged 512 more (the granularity): "1.00 GiB" of "1.00 GiB"
        (1 << 30, (1 << 30) + 1, "1.00 GiB (1073741824 bytes) free"),
    ],
)
def test_oom_message_shows_that_the_request_exceeds_what_is_free(held, asked, shown):
    hbm = HbmAllocator(2 << 30, "NeuronCore 0")
    hbm.allocate(held, "weights")
    with pytest.raises(NeuronOutOfMemoryError) as info:
        hbm.allocate(asked, "x")
    message = str(info.value)
    assert f"tried to allocate 1.00 GiB ({asked} bytes" in message
    assert "for x, 512 bytes more than is free;" in message
    assert shown in message
    if asked % 512:
        assert f"{asked + 511} bytes at the 512-byte allocation granularity" in message


def test_oom_message_and_consistency():
    core = "NeuronCore 0 (trn2, LNC=2)"
    hbm = HbmAllocator(2 * 1024 * 1024, core)
    kept = hbm.allocate(1024 * 1024 + 1000, "weight 'w' of NEFF 'm'")
    before = hbm.stats()
    with pytest.raises(NeuronOutOfMemoryError) as info:
        hbm.allocate(1024 * 1024, "execution buffers of NEFF 'm'")
    message = str(info.value)
    assert message.startswith(
        f"{core} out of HBM: tried to allocate 1.00 MiB (1048576 bytes) for execution buffers"
    )
    assert "1.00 MiB (1049600 bytes) already allocated" in message
    assert "capacity 2.00 MiB (2097152 bytes)" in message
    assert "Largest holders: weight 'w' of NEFF 'm' 1.00 MiB" in message
    assert isinstance(info.value, torch.OutOfMemoryError)
    assert isinstance(info.value, NeuronRuntimeError)
    after = hbm.stats()
    assert after["num_ooms"] == 1
    assert {k: v for k, v in after.items() if k != "num_ooms"} == {
        k: v for k, v in before.items() if k != "num_ooms"
    }
    hbm.free(kept)
    hbm.allocate(1024 * 1024, "retry")  # fits once memory is freed
    assert hbm.allocated == 1024 * 1024


def test_format_bytes():
    assert format_bytes(0) == "0 bytes"
    assert format_bytes(1023) == "1023 bytes"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(24 * 1024**3) == "24.00 GiB"


def test_concurrent_allocations_stay_consistent():
    hbm = HbmAllocator(1 << 30, "core")

    def churn():
        for _ in range(2000):
            hbm.free(hbm.allocate(700, "t"))

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = hbm.stats()
    assert hbm.allocated == 0
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 8000
    assert stats["allocated_bytes.all.allocated"] == 8000 * 1024


# -- accounting of loaded NEFFs ------------------------------------------------------


def weighted_neff(name: str, rows: int, cols: int = 256):
    """out[rows] = w[rows, cols] . x[cols]; the weight is rows*cols*4 bytes."""
    w_type, x_type, out_type = (
        tensor_type([rows, cols], "float32"),
        tensor_type([cols], "float32"),
        tensor_type([rows], "float32"),
    )
    body = (
        f"  %0 = stablehlo.dot_general %w, %x, contracting_dims = [1] x [0]"
        f" : ({w_type}, {x_type}) -> {out_type}\n"
        f"  return %0 : {out_type}"
    )
    weight = np.full((rows, cols), 0.5, np.float32)
    return make_neff(
        name,
        body,
        [
            variable("x", "input", [cols], "float32"),
            variable("w", "weight", [rows, cols], "float32"),
            variable("out", "output", [rows], "float32"),
        ],
        {"w": weight},
    )


def rounded(nbytes: int) -> int:
    return -(-nbytes // ALLOCATION_GRANULARITY) * ALLOCATION_GRANULARITY


def test_load_accounts_program_and_weights_until_unload():
    neff = weighted_neff("acct", rows=64)
    hbm = get_core(0).hbm
    loaded = load_neff(neff)
    assert hbm.allocated == rounded(len(neff.program)) + rounded(64 * 256 * 4)
    assert loaded.resident_bytes == len(neff.program) + 64 * 256 * 4
    assert get_core(1).hbm.allocated == 0
    loaded.unload()
    loaded.unload()  # idempotent
    assert hbm.allocated == 0


def test_garbage_collection_frees_hbm():
    hbm = get_core(0).hbm
    loaded = load_neff(weighted_neff("gc", rows=8))
    assert hbm.allocated > 0
    del loaded
    gc.collect()
    assert hbm.allocated == 0


def test_execution_buffers_are_held_only_during_execute():
    neff = weighted_neff("exec", rows=16)
    hbm = get_core(0).hbm
    with load_neff(neff) as loaded:
        resident = hbm.allocated
        hbm.reset_peak()
        loaded.execute([np.ones(256, np.float32)])
        assert hbm.allocated == resident
        assert hbm.peak == resident + rounded(256 * 4 + 16 * 4)
        assert loaded.execution_bytes == 256 * 4 + 16 * 4
    assert hbm.allocated == 0


def test_load_oom_names_the_weight_and_leaves_core_usable(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_HBM_BYTES_PER_CORE", "64KiB")
    hbm = get_core(0).hbm
    with pytest.raises(NeuronOutOfMemoryError) as info:
        load_neff(weighted_neff("too_big", rows=128))  # 128 KiB weight
    message = str(info.value)
    assert message.startswith("NeuronCore 0 (trn2, LNC=2) out of HBM: tried to allocate 128.00 KiB")
    assert "weight 'w' of NEFF 'too_big'" in message and "capacity 64.00 KiB" in message
    assert hbm.allocated == 0 and hbm.stats()["num_ooms"] == 1
    small = load_neff(weighted_neff("fits", rows=8))
    out = small.execute([np.ones(256, np.float32)])
    np.testing.assert_array_equal(out[0], np.full(8, 128.0, np.float32))


def test_execute_oom_leaves_weights_loaded_and_runtime_usable(monkeypatch):
    # The weight (8 x 256 f32 = 8 KiB) and the program fit; the execution buffers of a
    # NEFF with a large input do not.
    monkeypatch.setenv("TORCHNEURON_HBM_BYTES_PER_CORE", "20KiB")
    hbm = get_core(0).hbm
    resident_small = load_neff(weighted_neff("small", rows=8))
    t = tensor_type([4096], "float32")
    big_io = load_neff(
        make_neff(
            "big_io",
            f"  %0 = stablehlo.negate %x : {t}\n  return %0 : {t}",
            [
                variable("x", "input", [4096], "float32"),
                variable("out", "output", [4096], "float32"),
            ],
        )
    )
    allocated = hbm.allocated
    with pytest.raises(NeuronOutOfMemoryError, match="execution buffers of NEFF 'big_io'"):
        big_io.execute([np.ones(4096, np.float32)])
    assert hbm.allocated == allocated
    out = resident_small.execute([np.ones(256, np.float32)])
    assert out[0].shape == (8,)
    big_io.unload()
    resident_small.unload()
    assert hbm.allocated == 0


class _FreeingDict(dict):
    """Blocks table that frees another block while an update is half done.

    Stands for the garbage collector running a finalizer (a tensor storage or a
    loaded program dying) inside the allocator's critical section.
    """

    def __init__(self, allocator, victims):
        super().__init__()
        self.allocator = allocator
        self.victims = victims

    def __setitem__(self, key, value):
        if self.victims:
            self.allocator.free(self.victims.pop())
        super().__setitem__(key, value)


def test_free_from_inside_an_allocation_is_deferred_not_deadlocked():
    import threading

    hbm = HbmAllocator(capacity=10 * 1024, core_description="test core")
    first = hbm.allocate(1024, "first")
    second = hbm.allocate(2048, "second")
    victims = [first, second]
    table = _FreeingDict(hbm, victims)
    table.update(hbm._blocks)
    hbm._blocks = table
    results = []
    worker = threading.Thread(target=lambda: results.append(hbm.allocate(4096, "third")))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "allocate deadlocked on a re-entrant free"
    # Only the interrupted free was deferred; it was carried out before allocate returned.
    assert [tag for _, _, tag in hbm.live_allocations()] == ["first", "third"]
    assert hbm.allocated == 1024 + 4096
    assert hbm.stats()["allocation.all.freed"] == 1
    hbm.allocate(1024, "fourth")  # triggers the second re-entrant free
    assert hbm.allocated == 4096 + 1024
    assert [tag for _, _, tag in hbm.live_allocations()] == ["third", "fourth"]
