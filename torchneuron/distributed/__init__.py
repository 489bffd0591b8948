"""The ``neuron`` process group: torch.distributed on emulated NeuronCores.

``register()`` (run by the ``torch.backends`` autoload, see ``torchneuron.autoload``)
registers the backend ``"neuron"`` with ``dist.Backend.register_backend`` for the
``neuron`` and ``cpu`` devices, so ``dist.init_process_group("neuron")`` serves both,
and ``dist.init_process_group()`` picks it for ``neuron`` tensors (the device ->
backend map). Nothing else happens until a group is created.

How it works (``process_group.py``, ``kernels.py``):

- The transport is gloo (TCP), the engine torch.distributed itself ships: each group's
  backend is a ``ProcessGroupGloo``. A neuron tensor's memory is host memory, so gloo
  runs on zero-copy CPU aliases of the device tensors, after the ops queued on their
  device have run; the same scripts run across real hosts (``GLOO_SOCKET_IFNAME``).
- The c10d ops' ``neuron`` (PrivateUse1) kernels are ours: they swap neuron tensors
  for their aliases and redispatch to the CPU kernels (gloo), so ``dist.*``, the
  functional collectives, DDP, FSDP2, DTensor and DeviceMesh all reach them through
  PyTorch's own ``ProcessGroup``. Reductions gloo lacks (``AVG``, ``PREMUL_SUM``) are
  built from ``SUM`` and a scaling on the device.
- Each rank binds to one logical NeuronCore when its first group is created: the
  current device, or ``LOCAL_RANK``'s when the process has not chosen one; two ranks of
  a group on one core of one host is an error naming both.
- Every collective is reported to ``torchneuron.profiler`` with its estimated time on
  the real interconnect (``torchneuron.estimate.collectives``).
"""

from __future__ import annotations

BACKEND_NAME = "neuron"

_registered = False


def register() -> None:
    """Register the ``neuron`` process-group backend with torch.distributed (idempotent)."""
    global _registered
    if _registered:
        return
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        return  # a torch build without distributed or gloo: nothing to register
    from torchneuron.distributed.process_group import create_backend

    dist.Backend.register_backend(
        BACKEND_NAME, create_backend, extended_api=True, devices=["neuron", "cpu"]
    )
    _registered = True


def is_registered() -> bool:
    return _registered


__all__ = ["BACKEND_NAME", "is_registered", "register"]
