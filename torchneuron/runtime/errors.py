"""Error types the runtime raises.

``NeuronOutOfMemoryError`` subclasses ``torch.OutOfMemoryError`` as well, so PyTorch
code that handles CUDA's OOM handles ours. Building that class imports torch, and
importing torch registers the ``neuron`` device, which imports the runtime: so the
class is made on first use (``out_of_memory(...)`` or the attribute), never when the
runtime is imported.
"""

from __future__ import annotations

import functools

from torchneuron.errors import TorchNeuronError


class NeuronRuntimeError(TorchNeuronError):
    """A NEFF could not be loaded or executed: bad inputs, a malformed program, a wrong target."""


@functools.cache
def out_of_memory_error_type() -> type[NeuronRuntimeError]:
    """``NeuronOutOfMemoryError``: made once, the first time it is needed (imports torch)."""
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
