"""HBM accounting for one logical NeuronCore.

The emulator holds tensors in host memory, but accounts every byte a real
NeuronCore would hold in its HBM (loaded weights, the program, each execution's
input and output buffers) against the core's capacity, so a model that would not
fit on the chip fails here too, with the same kind of error PyTorch users know
from CUDA.

Accounting follows PyTorch's CUDA caching allocator where it can: each block is
rounded up to ``ALLOCATION_GRANULARITY`` bytes (its ``kMinBlockSize``), and
``stats()`` uses ``torch.cuda.memory_stats`` key names. There is no cache: a
freed block returns to the device at once, so ``reserved`` equals ``allocated``
and ``num_alloc_retries`` stays 0. Fragmentation is not modelled.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from torchneuron.runtime.errors import NeuronRuntimeError, out_of_memory

# format_bytes lives below the estimate layer (its memory plan prints sizes too).
from torchneuron.target.topology import format_bytes

ALLOCATION_GRANULARITY = 512

__all__ = ["ALLOCATION_GRANULARITY", "HbmAllocator", "format_bytes", "round_to_granularity"]


def _exact(nbytes: int) -> str:
    """``nbytes`` in binary units with the exact count: ``"1.00 GiB (1073741824 bytes)"``."""
    return format_bytes(nbytes) if nbytes < 1024 else f"{format_bytes(nbytes)} ({nbytes} bytes)"


def round_to_granularity(nbytes: int) -> int:
    return -(-nbytes // ALLOCATION_GRANULARITY) * ALLOCATION_GRANULARITY


class HbmAllocator:
    """Accounts allocations against one logical core's HBM capacity. Thread-safe.

    ``allocate`` returns an integer handle that ``free`` takes back. An allocation
    that does not fit raises ``NeuronOutOfMemoryError`` and changes nothing but the
    OOM counter, so the caller may free memory and retry.

    Frees may arrive re-entrantly: the garbage collector can run a finalizer that
    frees device memory (a tensor's storage, a loaded program's weights) in the
    middle of this thread's own ``allocate``. Such a free is deferred to the end of
    the section it interrupted instead of deadlocking or tearing its update.
    """

    def __init__(self, capacity: int, core_description: str) -> None:
        if capacity < 0:
            raise ValueError(f"HBM capacity must be >= 0 bytes, got {capacity}")
        self._capacity = int(capacity)
        self._core_description = core_description
        self._lock = threading.RLock()
        self._busy = False  # this lock's holder is in the middle of an update
        self._deferred: list[int] = []
        # handle -> (bytes charged after rounding, bytes requested, tag)
        self._blocks: dict[int, tuple[int, int, str]] = {}
        self._next_handle = 1
        self._allocated = 0
        self._requested = 0
        self._peak_allocated = 0
        self._peak_requested = 0
        self._peak_blocks = 0
        self._total_allocated = 0
        self._total_freed = 0
        self._total_requested = 0
        self._total_requested_freed = 0
        self._num_allocs = 0
        self._num_frees = 0
        self._num_ooms = 0

    @property
    def capacity(self) -> int:
        """Bytes of HBM this core may hold."""
        return self._capacity

    @property
    def allocated(self) -> int:
        """Bytes held by live allocations (each rounded up to the granularity)."""
        return self._allocated

    @property
    def reserved(self) -> int:
        """Bytes taken from the device; equal to ``allocated`` since nothing is cached."""
        return self._allocated

    @property
    def requested(self) -> int:
        """Bytes asked for by live allocations, before rounding."""
        return self._requested

    @property
    def peak(self) -> int:
        """Highest ``allocated`` since creation or the last ``reset_peak()``."""
        return self._peak_allocated

    @property
    def free_bytes(self) -> int:
        return self._capacity - self._allocated

    def allocate(self, nbytes: int, tag: str) -> int:
        """Charge ``nbytes`` to this core; return a handle for ``free``."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes}) for {tag!r}")
        charged = round_to_granularity(nbytes)
        with self._lock:
            self._busy = True
            try:
                allocated = self._allocated + charged
                if allocated > self._capacity:
                    self._num_ooms += 1
                    raise out_of_memory(self._oom_message(nbytes, tag))
                handle = self._next_handle
                self._next_handle = handle + 1
                self._blocks[handle] = (charged, nbytes, tag)
                self._allocated = allocated
                self._requested += nbytes
                self._total_allocated += charged
                self._total_requested += nbytes
                self._num_allocs += 1
                self._peak_allocated = max(self._peak_allocated, allocated)
                self._peak_requested = max(self._peak_requested, self._requested)
                self._peak_blocks = max(self._peak_blocks, len(self._blocks))
            finally:
                self._end_update()
        return handle

    def free(self, handle: int) -> None:
        """Return an allocation; NeuronRuntimeError if ``handle`` is not live."""
        with self._lock:
            if self._busy:
                # Re-entered from this thread's own update (a finalizer run by the
                # garbage collector there): give it back when that update is done.
                self._deferred.append(handle)
                return
            self._busy = True
            try:
                block = self._blocks.pop(handle, None)
                if block is None:
                    raise NeuronRuntimeError(
                        f"{self._core_description}: HBM handle {handle} is not a live allocation "
                        "(freed twice, or from another core)"
                    )
                self._account_free(block)
            finally:
                self._end_update()

    def _account_free(self, block: tuple[int, int, str]) -> None:
        charged, nbytes, _tag = block
        self._allocated -= charged
        self._requested -= nbytes
        self._total_freed += charged
        self._total_requested_freed += nbytes
        self._num_frees += 1

    def _end_update(self) -> None:
        """Leave an update (lock held), carrying out the frees deferred during it."""
        try:
            while self._deferred:  # still busy: a free arriving now joins the queue
                handle = self._deferred.pop()
                block = self._blocks.pop(handle, None)
                if block is None:
                    warnings.warn(
                        f"{self._core_description}: a deferred free of HBM handle {handle} named "
                        "no live allocation (freed twice?); ignored",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                    continue
                self._account_free(block)
        finally:
            self._busy = False

    def reset_peak(self) -> None:
        """Restart peak tracking from the current usage."""
        with self._lock:
            self._peak_allocated = self._allocated
            self._peak_requested = self._requested
            self._peak_blocks = len(self._blocks)

    def live_allocations(self) -> list[tuple[int, int, str]]:
        """``(handle, bytes charged, tag)`` of every live allocation, oldest first."""
        with self._lock:
            return [(handle, block[0], block[2]) for handle, block in self._blocks.items()]

    def stats(self) -> dict[str, Any]:
        """Counters under ``torch.cuda.memory_stats`` key names, plus ``capacity_bytes``."""
        with self._lock:
            stats: dict[str, Any] = {}
            for prefix in ("allocated_bytes", "reserved_bytes", "active_bytes"):
                stats[f"{prefix}.all.current"] = self._allocated
                stats[f"{prefix}.all.peak"] = self._peak_allocated
                stats[f"{prefix}.all.allocated"] = self._total_allocated
                stats[f"{prefix}.all.freed"] = self._total_freed
            stats["requested_bytes.all.current"] = self._requested
            stats["requested_bytes.all.peak"] = self._peak_requested
            stats["requested_bytes.all.allocated"] = self._total_requested
            stats["requested_bytes.all.freed"] = self._total_requested_freed
            for prefix in ("allocation", "segment", "active"):
                stats[f"{prefix}.all.current"] = len(self._blocks)
                stats[f"{prefix}.all.peak"] = self._peak_blocks
                stats[f"{prefix}.all.allocated"] = self._num_allocs
                stats[f"{prefix}.all.freed"] = self._num_frees
            stats["num_alloc_retries"] = 0
            stats["num_ooms"] = self._num_ooms
            stats["num_device_alloc"] = self._num_allocs
            stats["num_device_free"] = self._num_frees
            stats["capacity_bytes"] = self._capacity
            return stats

    def _oom_message(self, nbytes: int, tag: str) -> str:
        # Called with the lock held. Name the biggest holders: that is what a user needs
        # to decide what to free.
        by_tag: dict[str, int] = {}
        for charged, _nbytes, block_tag in self._blocks.values():
            by_tag[block_tag] = by_tag.get(block_tag, 0) + charged
        largest = sorted(by_tag.items(), key=lambda item: -item[1])[:3]
        holders = ", ".join(f"{name} {format_bytes(size)}" for name, size in largest)
        charged = round_to_granularity(nbytes)
        free = self._capacity - self._allocated
        # Every figure with its exact bytes: rounded units alone can show a request that
        # looks as if it fits ("1.00 GiB" asked, "1024.00 MiB" free).
        rounding = (
            f", {charged} bytes at the {ALLOCATION_GRANULARITY}-byte allocation granularity"
            if charged != nbytes
            else ""
        )
        message = (
            f"{self._core_description} out of HBM: tried to allocate {_exact(nbytes)}{rounding}"
            f" for {tag}, {charged - free} bytes more than is free; "
            f"{_exact(self._allocated)} already allocated; capacity {_exact(self._capacity)}, "
            f"{_exact(free)} free."
        )
        if holders:
            message += f" Largest holders: {holders}."
        return message
