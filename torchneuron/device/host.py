"""The host routes: an op's CPU kernel run on host aliases of the device tensors.

A neuron tensor's memory is host memory, so a CPU tensor can alias it
(``_C.host_alias``) and a CPU kernel can run on it without copying. Three kinds of
call take this route:

- **random** ops run the CPU kernel with the device generator's state (the CPU
  engine, so a seed gives the numbers it gives on CPU);
- **host** ops, whose output shape depends on the data or whose result is a
  Python value (``nonzero``, ``unique``, ``equal``...);
- calls the compiled route cannot take (no lowering: the CPU fallback).

Mutated arguments whose alias the kernel replaced or resized are written back.
These routes run on the calling thread, after the device's queued ops (``streams``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from torchneuron.device import _C, streams
from torchneuron.device.plan import (
    DEVICE_TYPE,
    GENERATOR,
    OpPlan,
    new_returns,
    pack_returns,
    unflatten,
)


def run_on_host(plan: OpPlan, values: list, tensors: list, device: int) -> Any:
    """Run the op's CPU kernel on host aliases of the device tensors; results go to ``device``.

    ``tensors`` are the call's tensors as ``flatten`` lists them. Runs after every op
    queued on ``device`` (it reads and writes their memory now).
    """
    streams.synchronize(device)
    host_values = unflatten(plan, values, iter([_host(t) for t in tensors]))
    result = plan.call(host_values)
    for position in plan.mutated:
        value, host = values[position], host_values[position]
        if isinstance(value, (list, tuple)):
            for item, host_item in zip(value, host):
                if host_item is not item:
                    _write_back(item, host_item)
        elif host is not value:
            _write_back(value, host)
    if not plan.return_aliases:
        return None
    if not plan.returns_tensors:
        return result
    target = torch.device(DEVICE_TYPE, device)
    new = [_to_device(value, target) for value in new_returns(plan, result)]
    return pack_returns(plan, values, new)


def _host(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.device.type != DEVICE_TYPE:
        return tensor
    return _C.host_alias(tensor, True)


def _to_device(value, target: torch.device):
    if value is None or not isinstance(value, torch.Tensor):
        return value
    return value.to(target)


def _write_back(device_tensor: torch.Tensor, host: torch.Tensor) -> None:
    """Make ``device_tensor`` hold what the CPU kernel left in its alias ``host``."""
    same_memory = host.untyped_storage().data_ptr() == device_tensor.untyped_storage().data_ptr()
    if host.shape != device_tensor.shape:
        device_tensor.resize_(host.shape)
    elif (
        same_memory
        and host.stride() == device_tensor.stride()
        and host.storage_offset() == device_tensor.storage_offset()
    ):
        return  # written in place
    _C.host_alias(device_tensor).copy_(host)


def run_random(plan: OpPlan, values: list, tensors: list, device: int) -> Any:
    """Draw with the device generator: the CPU engine, run with that generator's state."""
    generator = None
    generator_position = None
    if plan.has_generator:
        generator_position = plan.kinds.index(GENERATOR)
        generator = values[generator_position]
    if generator is None:
        generator = _C.default_generator(device)
    elif generator.device.type != DEVICE_TYPE:
        raise RuntimeError(
            f"Expected a '{DEVICE_TYPE}' device type for generator but found '{generator.device.type}'"
        )
    if generator_position is not None:
        values = list(values)
        values[generator_position] = None
    with _engine_state(generator):
        return run_on_host(plan, values, tensors, device)


def random_words(device: int, count: int) -> list[int]:
    """``count`` 32-bit words drawn from ``device``'s default generator, which advances.

    A compiled graph's random ops take their key from here, so ``torch.manual_seed``
    makes them reproducible as it does eager random ops.
    """
    with _engine_state(_C.default_generator(device)):
        return torch.randint(0, 2**32, (count,), dtype=torch.int64).tolist()


@contextlib.contextmanager
def _engine_state(generator: torch.Generator) -> Iterator[None]:
    """Run PyTorch's CPU engine with ``generator``'s state; ``generator`` keeps what is drawn.

    A device generator is a CPU engine bound to the device, and CPU kernels only
    draw from a CPU generator: the default one lends its engine for the call.
    """
    engine = torch.default_generator
    saved = engine.get_state()
    engine.set_state(generator.get_state())
    try:
        yield
    finally:
        generator.set_state(engine.get_state())
        engine.set_state(saved)
