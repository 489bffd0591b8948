"""torchneuron: a PyTorch backend for AWS Trainium2/Trainium3 running on emulated NeuronCores.

The layers, each importing only those before it (docs/architecture.md):
``errors``/``settings``/``lru`` -> ``target`` -> ``lowering`` -> ``passes`` ->
``estimate`` -> ``neff`` -> ``runtime`` -> ``compiler`` -> ``device`` -> front ends
(``backend``, ``cli``, ``golden``, ``profiler``, ``conformance``, ``distributed``).

Importing this package is cheap: it loads no stage. It registers the ``neuron``
device when torch is already imported (``import torch`` normally registers it
itself, through the ``torch.backends`` entry point; with
``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` an explicit ``import torchneuron`` after
``import torch`` does). ``import torchneuron.neff`` or ``torchneuron.runtime`` alone
loads neither torch's device registration nor the compiler.
"""

import importlib
import os
import sys

from torchneuron.version import __version__ as __version__

# jaxlib's XLA logs each client start at INFO level to stderr; it reads this once, when
# the library loads, so it is set before anything here imports jaxlib.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

# Names loaded on first use, so that importing a stage does not import the device.
_LAZY = {
    "profiler": ("torchneuron.profiler", None),
    "get_fallback_ops": ("torchneuron.device", "get_fallback_ops"),
}


def report():
    """What this process compiled for the neuron device, what Dynamo recompiled and why,
    and what ran on the CPU and why (graphs and eager ops): a ``Report``; print it."""
    from torchneuron.compiler import observe
    from torchneuron.device.fallback import fallback_reasons

    return observe.report(fallback_reasons())


def __getattr__(name: str):
    found = _LAZY.get(name)
    if found is None:
        raise AttributeError(f"module 'torchneuron' has no attribute {name!r}")
    module = importlib.import_module(found[0])
    value = module if found[1] is None else getattr(module, found[1])
    globals()[name] = value
    return value


if "torch" in sys.modules:
    # `import torch` came first: register now (a no-op when the autoload already did).
    from torchneuron.autoload import autoload as _autoload

    _autoload()
