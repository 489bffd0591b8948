"""runtime stage: emulated Trainium NeuronCores that load and execute NEFFs.

- ``hardware``: the one cited table of chip figures (``CHIPS["trn2"]``, ``CHIPS["trn3"]``).
- ``topology()``: the visible cores, from ``NEURON_*`` environment variables.
- ``get_core(i)``: a ``NeuronCore`` with an ``HbmAllocator`` (``core.hbm``).
- ``load_neff(neff, core=0)``: a ``LoadedNeff`` whose ``execute(inputs)`` returns numpy arrays.

Numerics run through XLA's CPU compiler (see ``executor``); memory is accounted
against each core's HBM (see ``memory``).
"""

from torchneuron.runtime import hardware
from torchneuron.runtime.core import NeuronCore, get_core
from torchneuron.runtime.core import reset as reset_runtime
from torchneuron.runtime.errors import NeuronOutOfMemoryError, NeuronRuntimeError
from torchneuron.runtime.executor import (
    EXECUTORS,
    clear_executable_cache,
    executable_cache_info,
    set_executable_cache_capacity,
    set_single_threaded,
)
from torchneuron.runtime.hardware import CHIPS, ChipSpec
from torchneuron.runtime.loaded_neff import LoadedNeff, TensorSpec, load_neff
from torchneuron.runtime.memory import HbmAllocator, format_bytes
from torchneuron.runtime.topology import Topology, topology

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
