"""runtime stage: emulated Trainium NeuronCores that load and execute NEFFs.

- ``hardware``: the one cited table of chip figures (``CHIPS["trn2"]``, ``CHIPS["trn3"]``).
- ``topology()``: the visible cores, from ``NEURON_*`` environment variables.
- ``get_core(i)``: a ``NeuronCore`` with an ``HbmAllocator`` (``core.hbm``).
- ``load_neff(neff, core=0)``: a ``LoadedNeff`` whose ``execute(inputs)`` returns numpy arrays.

Numerics run through XLA's CPU compiler (see ``executor``); memory is accounted
against each core's HBM (see ``memory``).
"""

import importlib

from torchneuron.runtime.core import NeuronCore, get_core
from torchneuron.runtime.core import reset as reset_runtime
from torchneuron.runtime.errors import NeuronOutOfMemoryError, NeuronRuntimeError
from torchneuron.runtime.memory import HbmAllocator, format_bytes
from torchneuron.target import hardware
from torchneuron.target.hardware import CHIPS, ChipSpec
from torchneuron.target.topology import Topology, topology

# Loading and executing NEFFs pulls in XLA and ml_dtypes (about a second); the device
# registration that runs inside `import torch` needs only cores and memory, so these
# names load on first use.
_LAZY = {
    "EXECUTORS": "executor",
    "clear_executable_cache": "executor",
    "executable_cache_info": "executor",
    "set_executable_cache_capacity": "executor",
    "set_single_threaded": "executor",
    "LoadedNeff": "loaded_neff",
    "TensorSpec": "loaded_neff",
    "load_neff": "loaded_neff",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchneuron.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"torchneuron.runtime.{module}"), name)
    globals()[name] = value
    return value


# The contract's short name for the runtime error class.
RuntimeError_ = NeuronRuntimeError

__all__ = [
    "CHIPS",
    "EXECUTORS",
    "ChipSpec",
    "HbmAllocator",
    "LoadedNeff",
    "NeuronCore",
    "NeuronOutOfMemoryError",
    "NeuronRuntimeError",
    "RuntimeError_",
    "TensorSpec",
    "Topology",
    "clear_executable_cache",
    "executable_cache_info",
    "format_bytes",
    "get_core",
    "hardware",
    "load_neff",
    "reset_runtime",
    "set_executable_cache_capacity",
    "set_single_threaded",
    "topology",
]
