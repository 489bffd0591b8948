"""The ``neuron`` device: PyTorch's PrivateUse1 backend renamed, on emulated NeuronCores.

``register()`` (called by the ``torch.backends`` autoload entry point at the end
of ``import torch``, or by ``import torchneuron``) installs everything:

- ``_C`` (csrc/neuron_device.cpp): device storage allocator accounted against
  each core's HBM, device guard (several devices per process), generators,
  metadata and copy kernels;
- ``module``: ``torch.neuron`` (device count, memory statistics, RNG, ...);
- ``dispatch``: every other ATen op, routed by its ``plan`` to the ``compiled``
  route (compiled per call signature to a NEFF through ``torchneuron.compiler.eager``,
  output shapes from ``shapes``, numpy views of the tensors from ``arrays``) or to
  the ``host`` routes (random ops, data-dependent ops, and the CPU fallback for ops
  without a lowering, see ``fallback``);
- ``autocast``: ``torch.autocast("neuron", dtype=torch.bfloat16)``;
- ``streams``, ``launch``, ``stream_api``: compiled calls run asynchronously, queued as
  ``Launch``es on one execution thread per device, in stream order; ``torch.neuron``'s
  ``Stream``, ``Event`` and the current stream (``NEURON_LAUNCH_BLOCKING=1``: synchronous).
"""

# torch first: importing torch runs the torch.backends autoload entry point
# (``torchneuron.autoload:autoload``, which imports ``torchneuron.device.registration``,
# a submodule, so it works while this package is still being initialised).
import torch  # noqa: F401  isort: skip

from torchneuron.device.fallback import get_fallback_ops
from torchneuron.device.registration import autoload, is_registered, register

__all__ = ["autoload", "get_fallback_ops", "is_registered", "register"]
