"""Error types the runtime raises."""

from __future__ import annotations

import torch


class NeuronRuntimeError(RuntimeError):
    """A NEFF could not be loaded or executed: bad inputs, a malformed program, a wrong target."""


class NeuronOutOfMemoryError(torch.OutOfMemoryError, NeuronRuntimeError):
    """An allocation did not fit in a NeuronCore's HBM.

    A subclass of ``torch.OutOfMemoryError`` so code that handles CUDA's OOM handles ours.
    """
