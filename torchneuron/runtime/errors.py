"""Error types the runtime raises.

``NeuronOutOfMemoryError`` subclasses ``torch.OutOfMemoryError`` as well, so PyTorch
code that handles CUDA's OOM handles ours. Building that class imports torch, and
importing torch registers the ``neuron`` device, which imports the runtime: so the
class is made on first use (``out_of_memory(...)`` or the attribute), never when the
runtime is imported.
"""

from __future__ import annotations

import threading

from torchneuron.errors import TorchNeuronError, describe_error
from torchneuron.neff.errors import NeffError


class NeuronRuntimeError(TorchNeuronError):
    """A NEFF could not be loaded or executed: bad inputs, a malformed program, a wrong target."""


class InvalidNeffError(NeffError, NeuronRuntimeError):
    """A NEFF cannot be loaded: its parts disagree (def.json against its program or its
    weights), its program is refused or does not compile, or it was built for another
    chip. A ``NeffError`` (the one error type for a NEFF that is wrong) and, for callers
    of the loader, a ``NeuronRuntimeError``."""


class NeuronCheckError(TorchNeuronError):
    """A run-time check of a program failed: it was given what PyTorch refuses (an index
    out of range), and PyTorch raises a ``RuntimeError`` for it (``gather``, ``scatter``)."""


class NeuronIndexError(NeuronCheckError, IndexError):
    """A run-time check failed where PyTorch raises ``IndexError`` (``x[i]``,
    ``index_select``, ``embedding``, ...)."""


# The manifest's name of each error kind a check may raise -> the class raised.
CHECK_ERRORS: dict[str, type[NeuronCheckError]] = {
    "IndexError": NeuronIndexError,
    "RuntimeError": NeuronCheckError,
}


_out_of_memory_type: type[NeuronRuntimeError] | None = None
_out_of_memory_lock = threading.Lock()


def out_of_memory_error_type() -> type[NeuronRuntimeError]:
    """``NeuronOutOfMemoryError``: made once, the first time it is needed (imports torch).

    Made under a lock: two threads that hit their first OOM together must get the same
    class, or an ``except`` written against one would miss the other."""
    global _out_of_memory_type
    if _out_of_memory_type is None:
        with _out_of_memory_lock:
            if _out_of_memory_type is None:
                _out_of_memory_type = _make_out_of_memory_error_type()
    return _out_of_memory_type


def _make_out_of_memory_error_type() -> type[NeuronRuntimeError]:
    import torch

    class NeuronOutOfMemoryError(torch.OutOfMemoryError, NeuronRuntimeError):
        """An allocation did not fit in a NeuronCore's HBM.

        A subclass of ``torch.OutOfMemoryError`` so code that handles CUDA's OOM handles ours.
        """

    # Named as if defined at module level, so it prints and pickles under its own name.
    NeuronOutOfMemoryError.__module__ = __name__
    NeuronOutOfMemoryError.__qualname__ = NeuronOutOfMemoryError.__name__
    return NeuronOutOfMemoryError


def out_of_memory(message: str) -> NeuronRuntimeError:
    """A ``NeuronOutOfMemoryError`` carrying ``message``, for the allocator to raise."""
    return out_of_memory_error_type()(message)


def __getattr__(name: str):
    if name == "NeuronOutOfMemoryError":
        return out_of_memory_error_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def host_memory_exhausted(error: BaseException) -> bool:
    """Whether an error out of XLA's execution says host memory ran out (the emulator's
    device memory is host RAM): a ``MemoryError``, or XLA's RESOURCE_EXHAUSTED status.
    jaxlib carries the status code as ``error_code_string``; an error made from its text
    alone reports UNKNOWN there, and keeps the code only as the text's ``CODE:`` prefix."""
    if isinstance(error, MemoryError):
        return True
    if getattr(error, "error_code_string", None) == "RESOURCE_EXHAUSTED":
        return True
    if not isinstance(error, RuntimeError) or isinstance(error, TorchNeuronError):
        return False
    return describe_error(error).split(": ", 1)[-1].startswith("RESOURCE_EXHAUSTED")
