"""Ops that ran on the CPU because they have no lowering, and the switch that forbids it.

An op without a lowering runs its CPU kernel on host aliases of the device
tensors (device memory is host memory, so "copy in, compute, copy back" costs
no copy), with one warning per op. ``get_fallback_ops()`` lists them; with
``TORCHNEURON_NO_FALLBACK=1`` such an op raises ``NeuronFallbackError`` naming it.
"""

from __future__ import annotations

import threading
import warnings

from torchneuron import settings
from torchneuron.errors import CpuFallbackWarning, TorchNeuronError

_lock = threading.Lock()
# op name -> why it could not be compiled (the first reason seen)
_fallback_ops: dict[str, str] = {}


class NeuronFallbackError(TorchNeuronError):
    """An op would have run on the CPU while ``TORCHNEURON_NO_FALLBACK=1``."""


def fallback_forbidden() -> bool:
    """``TORCHNEURON_NO_FALLBACK`` is on (a malformed value raises ``SettingsError``)."""
    return settings.env_flag(settings.NO_FALLBACK, False)


def record_fallback(op_name: str, reason: str) -> None:
    """Note that ``op_name`` runs on the CPU (warn the first time); raise if forbidden."""
    if fallback_forbidden():
        raise NeuronFallbackError(
            f"{op_name} has no lowering for the neuron device and CPU fallback is disabled "
            f"({settings.NO_FALLBACK}=1). Reason: {reason}"
        )
    with _lock:
        first = op_name not in _fallback_ops
        if first:
            _fallback_ops[op_name] = reason
    if first:
        warnings.warn(
            CpuFallbackWarning(
                f"torchneuron: {op_name} is not supported on the neuron device and runs on the "
                f"CPU instead (copy in, compute, copy back). Reason: {reason}. "
                f"Set {settings.NO_FALLBACK}=1 to make this an error; "
                "torchneuron.get_fallback_ops() lists every such op.",
                where=op_name,
                reason=reason,
            ),
            stacklevel=2,
        )


def get_fallback_ops() -> list[str]:
    """Names of the ATen ops (``aten::foo.overload``) that ran on the CPU in this process."""
    with _lock:
        return sorted(_fallback_ops)


def fallback_reasons() -> dict[str, str]:
    """``{op name: why it was not compiled}`` for every op in ``get_fallback_ops()``."""
    with _lock:
        return dict(_fallback_ops)


def clear_fallback_ops() -> None:
    """Forget the list (tests)."""
    with _lock:
        _fallback_ops.clear()
