"""Giving the C heap's free memory back to the system after a compile.

A compile (Dynamo's and AOTAutograd's traces, torch-mlir, our passes, XLA's compiler)
frees most of what it allocated, but glibc's allocator keeps freed blocks inside the
process for reuse: on GPT-2 124M inference about 150 MB stayed resident after the
first call, more than the program ever uses again, and it counts in the process's
peak RSS. ``release_free_memory`` asks the allocator to return its free pages
(glibc's ``malloc_trim``); it costs a few milliseconds, so it runs only after a
compile that took long enough to have left that much behind.

Elsewhere (another C library, another system) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from typing import Any

# A compile shorter than this has not left enough behind to be worth a trim (a trim
# walks the whole heap: 4-12 ms on a 1.3 GB process).
WORTH_TRIMMING_S = 0.25

_lock = threading.Lock()
_trim: Any = None
_looked_up = False


def _malloc_trim() -> Any:
    global _trim, _looked_up
    with _lock:
        if not _looked_up:
            _looked_up = True
            name = ctypes.util.find_library("c")
            try:
                _trim = ctypes.CDLL(name).malloc_trim if name else None
            except (OSError, AttributeError):  # no such library or function: not glibc
                _trim = None
            if _trim is not None:
                _trim.argtypes = [ctypes.c_size_t]
                _trim.restype = ctypes.c_int
        return _trim


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; False where it cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def after_compile(seconds: float) -> None:
    """Called when a compile that took ``seconds`` has finished."""
    if seconds >= WORTH_TRIMMING_S:
        release_free_memory()
