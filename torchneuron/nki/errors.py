"""The one error of the NKI emulator, and the kernel source line it names.

Every refusal (a hardware limit, an engine reading a buffer it cannot reach, a dtype an
engine does not take, an index out of bounds, an argument of the wrong kind) raises
``NKIError`` with a one-line message: the instruction, the kernel's ``file:line`` and
the limit, e.g. ``nki.isa.nc_matmul at kernel.py:12: stationary free size 256 exceeds
TensorE's 128``.
"""

from __future__ import annotations

import os
import sys

from torchneuron.errors import TorchNeuronError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_DIR = os.path.join(_PACKAGE_DIR, "kernels")  # the kernel library's lines are kernel lines


class NKIError(TorchNeuronError, ValueError):
    """A kernel asks for something the emulated NeuronCore cannot do."""


def kernel_location() -> str:
    """``file:line`` of the innermost caller outside this package (the kernel's line)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        module = frame.f_globals.get("__name__", "")
        in_torch = module == "torch" or module.startswith("torch.")  # its custom-op layers
        ours = path.startswith(_PACKAGE_DIR + os.sep) and not path.startswith(_LIBRARY_DIR + os.sep)
        if not ours and not in_torch:
            return f"{os.path.basename(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>:0"


def refuse(instruction: str, message: str, location: str | None = None) -> NKIError:
    """The error for ``instruction`` at the kernel's current line (or ``location``)."""
    where = location if location is not None else kernel_location()
    return NKIError(f"{instruction} at {where}: {message}")
