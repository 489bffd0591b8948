"""The CPU fallback of sparse neuron tensors: an op with no native kernel runs its CPU
kernel on CPU copies of its neuron operands; results and in-place changes come back.

It is recorded like the dense fallback (``torchneuron.get_fallback_ops()``, one warning
per op) and raises ``NeuronFallbackError`` under ``TORCHNEURON_NO_FALLBACK=1``
(``record_fallback``). ``torchneuron.device.sparse`` registers it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._pytree import tree_map

from torchneuron.device.fallback import record_fallback
from torchneuron.device.plan import DEVICE_TYPE

aten = torch.ops.aten


def run_on_cpu(op: torch._ops.OpOverload, args: tuple, kwargs: dict):
    """Run ``op`` on CPU copies of its neuron arguments; results and mutations go back."""
    record_fallback(op.name(), "no lowering of this op for sparse neuron tensors")
    devices = []

    def to_cpu(value):
        if isinstance(value, torch.Tensor) and value.device.type == DEVICE_TYPE:
            devices.append(value.device)
            return value.cpu()
        return value

    cpu_args, cpu_kwargs = tree_map(to_cpu, args), tree_map(to_cpu, kwargs)
    result = op(*cpu_args, **cpu_kwargs)
    device = devices[0] if devices else torch.device(DEVICE_TYPE)
    written = {}
    for position, argument in enumerate(op._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        if argument.kwarg_only or position >= len(args):
            original, copied = kwargs.get(argument.name), cpu_kwargs.get(argument.name)
        else:
            original, copied = args[position], cpu_args[position]
        if isinstance(original, torch.Tensor) and copied is not original:
            original.copy_(copied)
            written[id(copied)] = original

    def to_device(value):
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in written:
            return written[id(value)]
        return value.to(device)

    return tree_map(to_device, result)


def fallback(op, *args, **kwargs):
    return run_on_cpu(op, args, kwargs)


def direct_fallback(op: torch._ops.OpOverload) -> Callable:
    def kernel(*args, **kwargs):
        return run_on_cpu(op, args, kwargs)

    return kernel


def ops_with_kernel(key: str, without: str) -> list[torch._ops.OpOverload]:
    """ATen ops with a kernel for ``key`` and none for ``without``."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    ops = []
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::") or not has(name, key) or has(name, without):
            continue
        base, _, overload = name[len("aten::") :].partition(".")
        packet = getattr(aten, base, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if op is not None:
            ops.append(op)
    return ops
