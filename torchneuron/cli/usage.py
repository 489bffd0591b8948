"""The error a bad ``neuronc`` command line raises."""

from __future__ import annotations

from torchneuron.errors import TorchNeuronError


class UsageError(TorchNeuronError):
    """Bad command-line input; printed as one line, exit status 2."""
