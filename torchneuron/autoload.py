"""The ``torch.backends`` entry point: what ``import torch`` registers.

PyTorch calls ``autoload()`` at the end of ``import torch``
(``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns that off; ``import torchneuron`` then does
it). It registers the ``neuron`` device (``torchneuron.device``) and, when the device
registered, the ``neuron`` process-group backend (``torchneuron.distributed``). It
never breaks ``import torch``: a failure becomes a warning.
"""

from __future__ import annotations

import warnings


def autoload() -> None:
    # The registration submodule, not the package: ``import torchneuron.device`` imports
    # torch, whose autoload lands here while that package is still half-initialised.
    from torchneuron.device.registration import autoload as autoload_device
    from torchneuron.device.registration import is_registered

    autoload_device()
    if not is_registered():
        return
    _eager_check_from_environment()
    try:
        from torchneuron import distributed

        distributed.register()
    except Exception as error:  # never break `import torch`
        warnings.warn(
            f"torchneuron: the 'neuron' process-group backend could not be registered "
            f"({type(error).__name__}: {error}); torch.distributed cannot use it in this "
            "process.",
            RuntimeWarning,
            stacklevel=2,
        )


def _eager_check_from_environment() -> None:
    """``TORCHNEURON_CHECK=1``: eager ops are checked against the CPU from the start."""
    try:
        from torchneuron import settings

        if settings.env_flag(settings.CHECK):
            from torchneuron.check import set_eager_check

            set_eager_check(True)
    except Exception as error:  # never break `import torch`
        warnings.warn(
            f"torchneuron: check mode is off: {type(error).__name__}: {error}",
            RuntimeWarning,
            stacklevel=2,
        )
