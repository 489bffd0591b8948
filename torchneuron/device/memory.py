"""Device memory accounting: every neuron storage is charged to its core's HBM allocator.

The bytes themselves are host memory owned by the native allocator (``_C``);
on each allocation it calls ``allocate_hook`` and on each free ``free_hook``, so
capacity, out-of-memory errors and statistics are those of
``torchneuron.runtime.get_core(i).hbm``.

A storage freed by the garbage collector may die while some thread holds the
HBM allocator's (non-reentrant) lock: the collector runs wherever Python
allocates, including inside that lock. Such frees are queued and given back at
the next allocation, free or statistics query instead of re-entering the lock.
"""

from __future__ import annotations

import collections
import gc
from typing import Any

from torchneuron.runtime import get_core

STORAGE_TAG = "tensor storage"

_pending: collections.deque = collections.deque()
_collecting = False


def _track_collection(phase: str, info: dict) -> None:
    global _collecting
    _collecting = phase == "start"


gc.callbacks.append(_track_collection)


def release_pending() -> None:
    """Give back the frees queued while the garbage collector ran."""
    while _pending:
        try:
            hbm, block = _pending.popleft()
        except IndexError:
            return
        hbm.free(block)


def allocate_hook(device: int, nbytes: int) -> tuple[Any, int]:
    """Charge ``nbytes`` to core ``device``; raises ``NeuronOutOfMemoryError`` when full."""
    if _pending:
        release_pending()
    hbm = get_core(device).hbm
    # Keep the allocator itself: the core may be rebuilt (topology change) before the free.
    return hbm, hbm.allocate(nbytes, STORAGE_TAG)


def free_hook(handle: tuple[Any, int]) -> None:
    if _collecting:
        _pending.append(handle)
        return
    if _pending:
        release_pending()
    hbm, block = handle
    hbm.free(block)
