"""``torch.neuron``: the device module, modelled on ``torch.cuda``.

Registered by ``torchneuron.device.register()`` with
``torch._register_device_module("neuron", ...)``; ``torch.accelerator`` and
``torch.get_device_module("neuron")`` resolve to it. Devices are the emulated
logical NeuronCores of ``torchneuron.target.topology()``, fixed when the
device is registered (as ``CUDA_VISIBLE_DEVICES`` is read once).

Memory functions report the core's HBM allocator, which accounts every device
storage and every resident compiled program (``empty_cache`` unloads the
cached programs of idle ops). Ops run asynchronously on a per-device execution
thread (``torchneuron.device.streams``): ``synchronize``, ``Stream``, ``Event``,
``stream(...)`` work as ``torch.cuda``'s do, and ``NEURON_LAUNCH_BLOCKING=1`` makes
every op synchronous.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import torch

from torchneuron.device.stream_api import Event, Stream, set_stream
from torchneuron.target.topology import DEVICE_TYPE


def _not_registered() -> bool:
    return False


# Whether the device is registered: registration.py hands its ``is_registered`` in when
# it makes this module ``torch.neuron`` (it imports this module, so this one cannot
# import it back).
_is_registered: Callable[[], bool] = _not_registered


def bind_registration(is_registered: Callable[[], bool]) -> None:
    """Answer ``is_available`` from ``is_registered`` (registration.py calls this)."""
    global _is_registered
    _is_registered = is_registered


def _native():
    from torchneuron.device import _C

    return _C


def _index(device: Any = None, *, optional: bool = True) -> int:
    """Device index of ``device`` (int, "neuron:1", torch.device); None -> current."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        device = torch.device(device)
        if device.type != DEVICE_TYPE:
            raise ValueError(f"expected a neuron device, got {device}")
        if device.index is None:
            return current_device()
        index = device.index
    if not 0 <= index < device_count():
        raise ValueError(
            f"invalid neuron device index {index}: {device_count()} device(s) are visible"
        )
    return index


# -- devices -------------------------------------------------------------------


def is_available() -> bool:
    """True once the neuron device is registered and at least one core is visible."""
    return _is_registered() and device_count() > 0


def is_initialized() -> bool:
    return is_available()


def _is_in_bad_fork() -> bool:
    return False


def _lazy_init() -> None:
    """Nothing to initialise lazily: cores are created on first use."""


def init() -> None:
    _lazy_init()


def device_count() -> int:
    """Number of visible logical NeuronCores (one Trainium2 at LNC=2: 4)."""
    return _native().device_count()


def current_device() -> int:
    return _native().current_device()


def set_device(device: Any) -> None:
    """Make ``device`` the current neuron device of this thread."""
    _native().set_device(_index(device))


class device:
    """Context manager that makes ``index`` the current device (``torch.cuda.device``)."""

    def __init__(self, device: Any):
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self) -> device:
        self.previous = current_device()
        if self.index >= 0:
            set_device(self.index)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.index >= 0:
            set_device(self.previous)


class device_of(device):
    """Context manager that makes the device of ``tensor`` current (no-op for CPU tensors)."""

    def __init__(self, tensor: torch.Tensor):
        super().__init__(tensor.get_device() if tensor.device.type == DEVICE_TYPE else None)


@dataclasses.dataclass(frozen=True)
class NeuronDeviceProperties:
    """What ``get_device_properties`` returns; field names follow ``torch.cuda``'s."""

    name: str
    total_memory: int
    target: str
    core_version: str
    lnc: int
    logical_core_id: int
    physical_core_ids: tuple[int, ...]
    multi_processor_count: int  # physical NeuronCores behind this logical core

    def __repr__(self) -> str:
        return (
            f"NeuronDeviceProperties(name='{self.name}', total_memory="
            f"{self.total_memory // (1024 * 1024)}MB, target='{self.target}', lnc={self.lnc}, "
            f"logical_core_id={self.logical_core_id})"
        )


def get_device_properties(device: Any = None) -> NeuronDeviceProperties:
    from torchneuron.runtime import get_core

    core = get_core(_index(device))
    chip = core.chip
    return NeuronDeviceProperties(
        name=f"{chip.marketing_name} {chip.core_version} (LNC={core.lnc})",
        total_memory=core.hbm.capacity,
        target=core.target,
        core_version=chip.core_version,
        lnc=core.lnc,
        logical_core_id=core.logical_core_id,
        physical_core_ids=tuple(core.physical_core_ids),
        multi_processor_count=core.lnc,
    )


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> dict[str, Any]:
    properties = get_device_properties(device)
    return {"target": properties.target, "core_version": properties.core_version}


def synchronize(device: Any = None) -> None:
    """Wait for every op queued on the device; raises an error an op raised asynchronously."""
    from torchneuron.device import streams

    streams.end_round()
    streams.synchronize(_index(device))


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Lower-precision dtypes ``torch.autocast("neuron", dtype=...)`` accepts."""
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


# -- random numbers ------------------------------------------------------------
#
# Dynamo must not trace these (as it skips torch.cuda's): PyTorch calls them from
# code it runs eagerly inside a compiled function, e.g. freeze_rng_state under
# no_dispatch(), and a frame Dynamo compiled there would make fake tensors with
# dispatch off (an AssertionError). A compiled function that calls one of them
# breaks its graph there and runs it eagerly, as for torch.cuda.manual_seed.
#
# torch._disable_dynamo does this by importing torch._dynamo at the first call (about a
# second): every `torch.manual_seed` of every process would pay it, CPU-only scripts
# included, since `import torch` loads the device. Dynamo's frame hook lives in torch's
# C extension, so `_not_traced` does what torch._dynamo.disable does without the import:
# the wrapper's frame is one the hook skips, and it runs the function with the hook off.


def _not_traced(fn):
    from torch._C._dynamo import eval_frame as frames

    @functools.wraps(fn)
    def call(*args, **kwargs):
        prior = frames.set_eval_frame(None)
        try:
            return fn(*args, **kwargs)
        finally:
            frames.set_eval_frame(prior)

    skip = frames._FrameExecStrategy(frames._FrameAction.SKIP, frames._FrameAction.DEFAULT)
    frames.set_code_exec_strategy(call.__code__, skip)
    return call


@_not_traced
def default_generator(device: Any = None) -> torch.Generator:
    """The default ``torch.Generator`` of a neuron device."""
    return _native().default_generator(_index(device))


@_not_traced
def manual_seed(seed: int) -> None:
    """Seed the current device's generator."""
    default_generator().manual_seed(int(seed))


@_not_traced
def manual_seed_all(seed: int) -> None:
    """Seed every neuron device's generator (``torch.manual_seed`` calls this)."""
    for index in range(device_count()):
        default_generator(index).manual_seed(int(seed))


@_not_traced
def seed() -> None:
    """Seed the current device's generator with a non-deterministic number."""
    default_generator().seed()


@_not_traced
def seed_all() -> None:
    first = default_generator(0)
    first.seed()
    for index in range(1, device_count()):
        default_generator(index).manual_seed(first.initial_seed())


@_not_traced
def initial_seed() -> int:
    return default_generator().initial_seed()


@_not_traced
def get_rng_state(device: Any = DEVICE_TYPE) -> torch.Tensor:
    """The generator state of ``device`` as a CPU ``uint8`` tensor."""
    return default_generator(device).get_state()


@_not_traced
def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


@_not_traced
def set_rng_state(new_state: torch.Tensor, device: Any = DEVICE_TYPE) -> None:
    default_generator(device).set_state(new_state.detach().cpu())


@_not_traced
def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


# -- memory ----------------------------------------------------------------------


def _hbm(device: Any):
    from torchneuron.runtime import get_core

    return get_core(_index(device)).hbm


def memory_allocated(device: Any = None) -> int:
    """Bytes of the core's HBM in use: tensor storages plus resident compiled programs."""
    return _hbm(device).allocated


def max_memory_allocated(device: Any = None) -> int:
    return _hbm(device).peak


def memory_reserved(device: Any = None) -> int:
    return _hbm(device).reserved


def max_memory_reserved(device: Any = None) -> int:
    return _hbm(device).peak


def memory_stats(device: Any = None) -> dict[str, Any]:
    """Counters under ``torch.cuda.memory_stats`` key names, plus ``capacity_bytes``."""
    return _hbm(device).stats()


def reset_peak_memory_stats(device: Any = None) -> None:
    _hbm(device).reset_peak()


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """``(free, total)`` bytes of the core's HBM."""
    hbm = _hbm(device)
    return hbm.capacity - hbm.allocated, hbm.capacity


def empty_cache() -> None:
    """Unload every cached compiled op from the cores, giving their HBM back.

    Tensors are freed as soon as they die (there is no caching allocator), so
    the programs are what is left to give back; they reload on next use.
    """
    from torchneuron.device import programs

    programs.unload_all()


# -- streams -----------------------------------------------------------------------


def stream(stream: torch.Stream | None):
    """Context manager: work inside is issued on ``stream`` (None: no change)."""
    from torchneuron.device.stream_api import stream_context

    return stream_context(stream)


class StreamContext:
    """``torch.cuda.StreamContext``: the class form of ``stream(...)``."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self._context = None

    def __enter__(self):
        self._context = stream(self.stream)
        self._context.__enter__()
        return self.stream

    def __exit__(self, *exc_info: object) -> None:
        self._context.__exit__(*exc_info)


def current_stream(device: Any = None) -> Stream:
    """This thread's current stream on ``device``."""
    from torchneuron.device import stream_api

    return stream_api.current_stream(_index(device))


def default_stream(device: Any = None) -> Stream:
    from torchneuron.device import stream_api

    return stream_api.default_stream(_index(device))


def get_fallback_ops() -> list[str]:
    from torchneuron.device.fallback import get_fallback_ops as listed

    return listed()


__all__ = [
    "Event",
    "NeuronDeviceProperties",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_generator",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_fallback_ops",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]
