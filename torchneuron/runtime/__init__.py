"""runtime stage: emulated Trainium NeuronCores that load and execute NEFFs.

- ``get_core(i)``: a ``NeuronCore`` with an ``HbmAllocator`` (``core.hbm``), on the
  visible cores of ``topology()`` (``torchneuron.target.topology``, read once).
- ``load_neff(neff, core=0)``: a ``LoadedNeff`` whose ``execute(inputs)`` returns numpy
  arrays; ``LoadedNeff.schedule`` is the schedule the NEFF carries (or None).
- ``reset_runtime()``: forget the topology and every core (tests; the next use re-reads
  the environment).

The runtime loads and executes only: it reads what the compiler wrote into the NEFF and
never re-runs passes or the cost model. Numerics run through XLA's CPU compiler (see
``executor``); memory is accounted against each core's HBM (see ``memory``).

Importing this package imports neither torch nor XLA nor the compiler: the names
below that need them load on first use.
"""

from torchneuron.lazy import lazy_names
from torchneuron.runtime.core import NeuronCore, get_core
from torchneuron.runtime.core import reset as reset_runtime
from torchneuron.runtime.errors import NeuronRuntimeError
from torchneuron.runtime.memory import HbmAllocator, format_bytes
from torchneuron.target import hardware
from torchneuron.target.hardware import CHIPS, ChipSpec
from torchneuron.target.topology import Topology, topology

# Loading and executing NEFFs pulls in XLA and ml_dtypes (about a second), and the
# out-of-memory error subclasses torch's: the device registration that runs inside
# `import torch` needs only cores and memory, so these names load on first use.
_LAZY = {
    "EXECUTORS": "executor",
    "clear_executable_cache": "executor",
    "executable_cache_info": "executor",
    "set_executable_cache_capacity": "executor",
    "set_single_threaded": "executor",
    "LoadedNeff": "loaded_neff",
    "VariableSpec": "loaded_neff",
    "load_neff": "loaded_neff",
    "NeuronOutOfMemoryError": "errors",
}


__getattr__ = lazy_names(__name__, _LAZY)


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
    "Topology",
    "VariableSpec",
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
