"""Device memory accounting: every neuron storage is charged to its core's HBM allocator.

The bytes themselves are host memory owned by the native allocator (``_C``);
on each allocation it calls ``allocate_hook`` and on each free ``free_hook``, so
capacity, out-of-memory errors and statistics are those of
``torchneuron.runtime.get_core(i).hbm``. A storage freed by the garbage collector
in the middle of an allocation is handled by the HBM allocator itself (it defers
re-entrant frees).
"""

from __future__ import annotations

from typing import Any

from torchneuron.runtime import get_core

STORAGE_TAG = "tensor storage"


def allocate_hook(device: int, nbytes: int) -> tuple[Any, int]:
    """Charge ``nbytes`` to core ``device``; raises ``NeuronOutOfMemoryError`` when full."""
    hbm = get_core(device).hbm
    # Keep the allocator itself: the core may be rebuilt (topology change) before the free.
    return hbm, hbm.allocate(nbytes, STORAGE_TAG)


def free_hook(handle: tuple[Any, int]) -> None:
    hbm, block = handle
    hbm.free(block)
