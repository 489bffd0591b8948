"""Registering the ``neuron`` device with PyTorch.

``autoload()`` is the ``torch.backends`` entry point PyTorch calls at the end
of ``import torch`` (``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns that off; an
explicit ``import torchneuron`` registers then). It must never break
``import torch``: any error becomes a warning and the device stays unregistered.

``register()`` is idempotent and does, in order: check every switch and count of
``settings`` (a malformed one fails the registration, so it is reported at import
rather than at the first op that reads it); load the native layer and
tell it how many cores the topology has; rename PrivateUse1 to ``neuron``;
install the native hooks (generators, pinned memory, storage resize) and the
allocator's HBM accounting; generate ``Tensor.neuron()``/``Module.neuron()``;
register ``torch.neuron``; install the queues' sync hook, the fuser, the op kernels, the
sparse kernels and autocast.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
import warnings

import torch

from torchneuron import settings
from torchneuron.settings import SettingsError
from torchneuron.target.topology import DEVICE_TYPE

_lock = threading.RLock()
_registered = False
_error: BaseException | None = None


def is_registered() -> bool:
    return _registered


def _load_native():
    try:
        from torchneuron.device import _C
    except ImportError as error:
        raise ImportError(
            "torchneuron's native layer (torchneuron.device._C) is not built. It is built by "
            "`pip install .` (or `pip install -e .`); from a source tree run "
            f"`python setup.py build_ext --inplace`. Import error: {error}"
        ) from error
    return _C


def register() -> None:
    """Register the ``neuron`` device (PrivateUse1) with PyTorch; safe to call again."""
    global _registered, _error
    with _lock:
        if _registered:
            return
        try:
            _register()
        except BaseException as error:
            _error = error
            raise
        _registered = True
        _error = None


def _register() -> None:
    settings.check_environment()  # every switch and count, now rather than at first use
    current_name = torch._C._get_privateuse1_backend_name()
    if current_name not in ("privateuseone", DEVICE_TYPE):
        raise RuntimeError(
            f"cannot register the neuron device: PrivateUse1 is already taken by "
            f"{current_name!r} in this process"
        )
    native = _load_native()
    from torchneuron.target.topology import topology

    native.set_device_count(topology().device_count)
    from torchneuron.device import memory

    native.set_memory_hooks(memory.allocate_hook, memory.free_hook)
    atexit.register(native.mark_shutdown)
    if current_name != DEVICE_TYPE:
        torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
    native.register_hooks()
    if not hasattr(torch.Tensor, "is_neuron"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
    from torchneuron.device import module

    module.bind_registration(is_registered)
    if getattr(torch, DEVICE_TYPE, None) is not module:
        torch._register_device_module(DEVICE_TYPE, module)
    from torchneuron.device import autocast, dispatch, fusion, sparse, stream_api, streams

    streams.install()
    stream_api.install()
    fusion.install()
    dispatch.install()
    sparse.install()
    autocast.install()


def autoload() -> None:
    """``torch.backends`` entry point: register, turning any failure into a warning."""
    if _error is not None:
        return  # already failed and warned in this process
    try:
        register()
    except Exception as error:  # never break `import torch`
        warnings.warn(_unavailable_message(error), RuntimeWarning, stacklevel=_user_stacklevel())


def _unavailable_message(error: Exception) -> str:
    """One line: what is wrong and how to fix it. PyTorch turns an exception here into a
    failed ``import torch``, so this warning is all the user sees until ``device="neuron"``
    fails with PyTorch's own "Expected one of cpu, cuda, ..." error, which names nothing."""
    consequence = (
        "the 'neuron' device is not registered in this process, and device='neuron' fails "
        "with PyTorch's 'Expected one of cpu, cuda, ... device type' error"
    )
    variable = getattr(error, "variable", None)
    if isinstance(error, SettingsError) and variable is not None:
        return f"torchneuron: {error}. Fix or unset {variable}; until then {consequence}."
    return (
        f"torchneuron: the neuron device could not be registered "
        f"({type(error).__name__}: {error}); {consequence}. "
        "Set TORCH_DEVICE_BACKEND_AUTOLOAD=0 to silence this."
    )


def _user_stacklevel() -> int:
    """The ``warnings`` stacklevel, seen from ``autoload``, of the first frame outside
    torch, torchneuron and the import machinery: the user's ``import torch`` line."""
    inside = (
        os.path.dirname(importlib.__file__) + os.sep,  # entry points load through it
        os.path.dirname(torch.__file__) + os.sep,
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
    )
    frame, level = sys._getframe(1), 1  # autoload's frame is stacklevel 1
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib"):
            pass  # ``warnings`` does not count the import system's frames either
        elif name.startswith(inside):
            level += 1
        else:
            return level
        frame = frame.f_back
    return 1
