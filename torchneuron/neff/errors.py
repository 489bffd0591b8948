"""The one error type raised for every NEFF problem: bad input at write time, and
truncated, corrupted or foreign files at read time."""

from torchneuron.errors import TorchNeuronError


class NeffError(TorchNeuronError):
    """A NEFF could not be written or read; the message says what is wrong and where."""
