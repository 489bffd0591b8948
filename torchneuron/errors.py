"""The root of every error torchneuron raises on purpose.

Each stage defines its own errors (``LoweringError``, ``PassError``, ``NeffError``,
``NeuronRuntimeError``, ``CompileError``, ...) as subclasses of ``TorchNeuronError``,
keeping a standard base where callers expect one (``torch.OutOfMemoryError`` for
device OOM, ``ValueError`` for malformed values). Front ends (``neuronc``, the
torch.compile backend, the device) catch the root and speak to the user in one line.
"""

from __future__ import annotations


class TorchNeuronError(RuntimeError):
    """Something torchneuron refuses or cannot do, with a message that says what and where."""


def one_line(error: BaseException) -> str:
    """The error's message on one line (what a front end prints), never empty."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


def describe_error(error: BaseException) -> str:
    """``"Type: message"`` for ``error``, never raising: an error whose ``str()`` raises
    (one built without its constructor, a native error) is named by its type alone."""
    try:
        text = str(error)
    except Exception as failure:
        text = f"<message unavailable: str() raised {type(failure).__name__}>"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class CpuFallbackWarning(RuntimeWarning, UserWarning):
    """Work ran on the CPU, not on the NeuronCore, because it could not be compiled.

    Both a ``RuntimeWarning`` (what the eager device has always warned with) and a
    ``UserWarning`` (what the torch.compile backend has always warned with), so filters
    written for either keep working.

    ``where`` names the graph or op; ``reason`` says why, on one line. Tools (the
    conformance runner, reports) read these fields, never the message's text.
    """

    def __init__(self, message: str, where: str, reason: str):
        super().__init__(message)
        self.where = where
        self.reason = reason


class NumericsMismatchError(TorchNeuronError):
    """Check mode (``TORCHNEURON_CHECK=1``) found a value the CPU computes differently.

    ``graph`` and ``output`` say which result; ``node`` is the FX node found wrong (or,
    when none is wrong alone, the one that made the output), ``source`` the user's line
    that made it (``file:line: code``), ``max_error`` the largest absolute difference,
    ``repro`` the smallest failing program written (or None).
    """

    def __init__(
        self,
        message: str,
        *,
        graph: str,
        output: int | None = None,
        node: str | None = None,
        source: str | None = None,
        max_error: float | None = None,
        repro: str | None = None,
    ):
        super().__init__(message)
        self.graph = graph
        self.output = output
        self.node = node
        self.source = source
        self.max_error = max_error
        self.repro = repro
