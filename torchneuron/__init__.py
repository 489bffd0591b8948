"""torchneuron: a PyTorch backend for AWS Trainium2/Trainium3 running on emulated NeuronCores.

Stages (one sub-package each): ``lowering`` (FX -> torch dialect -> StableHLO),
``passes`` (pass manager and our passes), ``neff`` (the container format),
``runtime`` (emulated NeuronCores), ``compiler`` (drivers: stage table,
torch.compile backend, eager per-op compiler, NEFF cache, ``neuronc`` CLI) and
``device`` (the ``neuron`` PyTorch device, registered on import).
"""

__version__ = "0.1.0"

import os

# jaxlib's XLA logs each client start at INFO level to stderr; it reads this once, when
# the library loads, so it is set before anything here imports jaxlib.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

# torch first: `import torch` runs the torch.backends autoload entry point, which imports
# torchneuron.device. Importing torch from inside torchneuron.device instead would enter
# that entry point while torchneuron.device is half initialised.
import torch  # noqa: F401

# Importing the package registers the `neuron` device (also done by the torch.backends
# autoload entry point); a failure warns and leaves the device unregistered.
from torchneuron.device import autoload as _autoload_device
from torchneuron.device import get_fallback_ops  # noqa: F401

_autoload_device()
from torchneuron import profiler  # noqa: E402,F401
