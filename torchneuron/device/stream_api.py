"""``torch.neuron.Stream`` and ``Event``, the current stream: the user's view of ``streams``.

Every stream of a device feeds the device's one queue (``streams``), so a stream is
a position on that queue: ``_last``, the sequence number of its last item, raised by
``wait_stream``/``wait_event`` to cover the work it waits for. ``query`` compares it
with the queue's count of items run; ``synchronize`` waits for it. An event is a
marker item that stamps the time the execution thread reached it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from torchneuron.device import _C
from torchneuron.device.streams import (
    _existing_queue,
    _on_execution_thread,
    _queue_for,
    end_round,
    flush,
    launch_blocking,
    queue_copy,
)
from torchneuron.target.topology import DEVICE_TYPE

_PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1, the neuron device's type


# stream id -> Stream, so a torch.Stream that reaches a kernel (record_stream) finds it
_streams_by_id: weakref.WeakValueDictionary[tuple[int, int], Stream] = weakref.WeakValueDictionary()
_next_stream_id = 1
_ids_lock = threading.Lock()


class Stream(torch.Stream):
    """A sequence of work on one neuron device, in order (``torch.cuda.Stream``'s API).

    ``priority`` is accepted and recorded; the device runs every stream's work through
    one queue (see the module docstring)."""

    def __new__(cls, device: Any = None, priority: int = 0, *, _stream_id: int | None = None):
        global _next_stream_id
        index = _device_index(device)
        if _stream_id is None:
            with _ids_lock:
                _stream_id = _next_stream_id
                _next_stream_id += 1
        return super().__new__(
            cls, stream_id=_stream_id, device_index=index, device_type=_PRIVATEUSE1
        )

    def __init__(self, device: Any = None, priority: int = 0, *, _stream_id: int | None = None):
        self.index = self.device_index
        self.priority = priority
        self._last = 0  # sequence number (on the device's queue) of its last item
        _streams_by_id[(self.index, self.stream_id)] = self

    # the position up to which this stream's work (and what it waits for) is queued
    def _target(self) -> int:
        return self._last

    def query(self) -> bool:
        """True when all work issued on this stream has run."""
        flush(self.index)  # launches a fuser holds are work not yet run
        queue_ = _existing_queue(self.index)
        return queue_ is None or queue_.completed >= self._target()

    def synchronize(self) -> None:
        """Wait for all work issued on this stream; raises an asynchronous error."""
        flush(self.index)
        queue_ = _existing_queue(self.index)
        if queue_ is not None:
            queue_.wait_for(self._target())
            queue_.raise_error()

    def wait_event(self, event: Event) -> None:
        """Work issued on this stream from now on runs after ``event``'s work."""
        if event._queued > self._last:
            self._last = event._queued

    def wait_stream(self, stream: torch.Stream) -> None:
        """Work issued on this stream from now on runs after ``stream``'s work so far."""
        other = as_stream(stream)
        if other._last > self._last:
            self._last = other._last

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, torch.Stream)
            and other.device.type == DEVICE_TYPE
            and other.device_index == self.device_index
            and other.stream_id == self.stream_id
        )

    def __hash__(self) -> int:
        return hash((self.device_index, self.stream_id))

    def __repr__(self) -> str:
        return f"<torch.neuron.Stream device=neuron:{self.index} stream_id={self.stream_id}>"


def _device_index(device: Any) -> int:
    if device is None:
        return _C.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    device = torch.device(device)
    if device.type != DEVICE_TYPE:
        raise ValueError(f"expected a neuron device, got {device}")
    return _C.current_device() if device.index is None else device.index


_default_streams: dict[int, Stream] = {}
_local = threading.local()  # .streams: device -> this thread's current stream


def default_stream(device: Any = None) -> Stream:
    index = _device_index(device)
    found = _default_streams.get(index)
    if found is None:
        with _ids_lock:
            found = _default_streams.get(index)
            if found is None:
                found = Stream(index, _stream_id=0)
                _default_streams[index] = found
    return found


def current_stream(device: Any = None) -> Stream:
    """This thread's current stream on ``device`` (the default stream unless set)."""
    index = device if type(device) is int else _device_index(device)
    current = getattr(_local, "streams", None)
    if current is not None:
        found = current.get(index)
        if found is not None:
            return found
    found = _default_streams.get(index)
    return found if found is not None else default_stream(index)


def set_stream(stream: torch.Stream) -> None:
    """Make ``stream`` this thread's current stream on its device."""
    stream = as_stream(stream)
    current = getattr(_local, "streams", None)
    if current is None:
        current = _local.streams = {}
    current[stream.index] = stream


@contextmanager
def stream_context(stream: torch.Stream | None) -> Iterator[None]:
    """Issue work on ``stream`` (and make its device current) inside the block."""
    if stream is None:
        yield
        return
    stream = as_stream(stream)
    previous_device = _C.current_device()
    previous = current_stream(stream.index)
    _C.set_device(stream.index)
    set_stream(stream)
    try:
        yield
    finally:
        set_stream(previous)
        _C.set_device(previous_device)


def as_stream(stream: torch.Stream) -> Stream:
    """Our ``Stream`` for a torch.Stream (a plain one made elsewhere maps by its id)."""
    if isinstance(stream, Stream):
        return stream
    if stream.device.type != DEVICE_TYPE:
        raise ValueError(f"expected a neuron stream, got {stream}")
    index = stream.device_index if stream.device_index >= 0 else _C.current_device()
    if stream.stream_id == 0:
        return default_stream(index)
    found = _streams_by_id.get((index, stream.stream_id))
    if found is None:
        found = Stream(index, _stream_id=stream.stream_id)
    return found


# -- events ----------------------------------------------------------------------------


class _Marker:
    """The queue item of an event record: stamps the time the device reached it."""

    __slots__ = ("device", "event", "name", "stream")

    def __init__(self, event: Event, stream: Stream) -> None:
        self.device = stream.index
        self.stream = stream
        self.event = event
        self.name = "event record"

    def run(self) -> None:
        self.event._time = time.perf_counter()


class Event:
    """A marker in a stream's work (``torch.cuda.Event``'s API)."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self.device: int | None = None
        self._queued = 0  # sequence number of its marker on the device's queue
        self._time: float | None = None

    def record(self, stream: torch.Stream | None = None) -> None:
        """Mark the work issued on ``stream`` (the current stream) so far."""
        stream = current_stream() if stream is None else as_stream(stream)
        self.device = stream.index
        self._time = None
        marker = _Marker(self, stream)
        if launch_blocking() or _on_execution_thread():
            marker.run()
            self._queued = 0
            return
        flush(stream.index)
        self._queued = _queue_for(stream.index).put(marker)

    def wait(self, stream: torch.Stream | None = None) -> None:
        """Work issued on ``stream`` (the current stream) from now on runs after this event."""
        stream = current_stream() if stream is None else as_stream(stream)
        stream.wait_event(self)

    def query(self) -> bool:
        """True when the work marked by this event has run (or it was never recorded)."""
        if self.device is None:
            return True
        queue_ = _existing_queue(self.device)
        return queue_ is None or queue_.completed >= self._queued

    def synchronize(self) -> None:
        """Wait for the work this event marks; raises an asynchronous error."""
        if self.device is None:
            return
        flush(self.device)
        queue_ = _existing_queue(self.device)
        if queue_ is not None:
            queue_.wait_for(self._queued)
            queue_.raise_error()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event``, as the device reached them.

        Waits for ``end_event`` first. Both events need ``enable_timing=True``."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time needs both events created with enable_timing=True")
        if self.device is None or end_event.device is None:
            raise RuntimeError("elapsed_time needs both events recorded")
        self.synchronize()
        end_event.synchronize()
        return (end_event._time - self._time) * 1e3

    def __repr__(self) -> str:
        state = "unrecorded" if self.device is None else f"neuron:{self.device}"
        return f"<torch.neuron.Event {state}>"


def device_copy(
    src: torch.Tensor, dst: torch.Tensor, src_alias: torch.Tensor, dst_alias: torch.Tensor
) -> bool:
    """The native layer's copy hook: ``dst.copy_(src)`` between tensors of one neuron
    device, queued on ``dst``'s device's current stream (``streams.queue_copy``)."""
    return queue_copy(src, dst, src_alias, dst_alias, current_stream(dst.device.index or 0))


def install() -> None:
    """Give the native layer the copy hook: device-to-device copies are queued. An
    optimizer step ends a round of the host's work (``streams.end_round``)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    _C.set_copy_hook(device_copy)
    register_optimizer_step_post_hook(_optimizer_stepped)


def _optimizer_stepped(optimizer: Any, args: Any, kwargs: Any) -> None:
    end_round()
