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
