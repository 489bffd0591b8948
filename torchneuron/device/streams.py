"""Asynchronous execution: one execution thread per device, streams and events.

Compiled op calls (``launch.Launch``) are queued and run ahead of Python on a
per-device execution thread, started on the first submission. Each device has ONE
FIFO queue, fed by every stream of the device: it runs each stream's work in the
order it was issued, and the work of different streams in the order it was
submitted. That is one valid serialization of CUDA's stream semantics (streams may
overlap but need not), so ``Stream.wait_stream`` and ``Event.wait`` are satisfied
by construction; they are still recorded on the waiting stream, whose ``query`` and
``synchronize`` then cover the awaited work too.

Synchronization. Every host access to device memory waits for the device's queue:
the native layer calls ``_host_sync`` from its host alias (copies to and from the
device, ``item()``, the host and random routes), from storage resizes and from
``set_``, so ``.cpu()``, ``.item()`` and ``print`` synchronize. The execution thread
never waits for itself. Waiting releases the GIL.

Memory is freed in stream order: a queued item holds its tensors until it has run,
and ``Tensor.record_stream(s)`` keeps a tensor until the work queued on ``s`` so far
has run.

Errors. An op that fails on the execution thread is remembered and raised, as a
``NeuronAsyncError`` naming the op (and still an instance of the original error's
class), at the device's next synchronization or op submission. With
``NEURON_LAUNCH_BLOCKING=1`` (read once) every op runs synchronously on the calling
thread and raises at the op.

Fusion. ``install_fuser(fuser)`` puts a fuser between submission and the queue:
``fuser.offer(launch)`` returns the items to queue now (it may hold launches back);
``fuser.flush(device)`` returns the held ones, and is called at the start of every
synchronization and before any op that does not take the compiled route. Items have
``.device``, ``.stream``, ``.name`` and ``.run()``. In launch-blocking mode no launch is
built and the fuser is never consulted.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from torchneuron import settings
from torchneuron.device import _C
from torchneuron.errors import TorchNeuronError

DEVICE_TYPE = "neuron"
_PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1, the neuron device's type


class NeuronAsyncError(TorchNeuronError):
    """An op that ran asynchronously failed; raised at the next synchronization.

    ``op`` names the op, ``device`` its device, ``original`` the error it raised (also
    its ``__cause__``); the raised error is an instance of the original's class too."""

    op: str = ""
    device: int = 0
    original: BaseException | None = None


_deferred_types: dict[type, type] = {}


def _deferred(original: BaseException, name: str, device: int) -> NeuronAsyncError:
    """A ``NeuronAsyncError`` for ``original``, of a class deriving from both."""
    kind = type(original)
    cls = _deferred_types.get(kind)
    if cls is None:
        cls = NeuronAsyncError
        if not issubclass(NeuronAsyncError, kind):
            try:
                cls = type(f"NeuronAsync{kind.__name__}", (NeuronAsyncError, kind), {})
                cls.__module__ = __name__
            except TypeError:  # an error class that cannot be combined
                cls = NeuronAsyncError
        _deferred_types[kind] = cls
    error = cls.__new__(cls)
    message = (
        f"{name} failed on {DEVICE_TYPE}:{device}, raised here at the next synchronization "
        f"because ops run asynchronously (set {settings.LAUNCH_BLOCKING}=1 to raise it at "
        f"the op): {type(original).__name__}: {original}"
    )
    Exception.__init__(error, message)
    error.op, error.device, error.original = name, device, original
    error.__cause__ = original
    return error


# -- launch blocking ---------------------------------------------------------------

_blocking: bool | None = None


def launch_blocking() -> bool:
    """Whether ops run synchronously (``NEURON_LAUNCH_BLOCKING``, read on first use)."""
    global _blocking
    if _blocking is None:
        _blocking = settings.env_flag(settings.LAUNCH_BLOCKING)
    return _blocking


def set_launch_blocking(blocking: bool | None) -> None:
    """Switch launch-blocking mode (None: read the variable again); synchronizes first."""
    global _blocking
    synchronize_all()
    _blocking = blocking


# -- the fuser hook ----------------------------------------------------------------

_fuser: Any = None


def install_fuser(fuser: Any) -> None:
    """Put ``fuser`` (``offer(launch)``, ``flush(device)``) before the queues; None removes it.

    The previous fuser's held launches are flushed first."""
    global _fuser
    previous = _fuser
    if previous is not None:
        for device in range(len(_queues)):
            _queue_items(previous.flush(device))
    _fuser = fuser


def _queue_items(items) -> None:
    for item in items:
        _queue_for(item.device).put(item)


def flush(device: int) -> None:
    """Queue what the fuser holds for ``device`` (nothing without a fuser)."""
    fuser = _fuser
    if fuser is not None:
        items = fuser.flush(device)
        if items:
            _queue_items(items)


# -- streams -----------------------------------------------------------------------

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
        queue_ = _queues[self.index] if self.index < len(_queues) else None
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
        other = _as_stream(stream)
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
_local = threading.local()


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
    index = _device_index(device)
    current = getattr(_local, "streams", None)
    if current is not None:
        found = current.get(index)
        if found is not None:
            return found
    return default_stream(index)


def set_stream(stream: torch.Stream) -> None:
    """Make ``stream`` this thread's current stream on its device."""
    stream = _as_stream(stream)
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
    stream = _as_stream(stream)
    previous_device = _C.current_device()
    previous = current_stream(stream.index)
    _C.set_device(stream.index)
    set_stream(stream)
    try:
        yield
    finally:
        set_stream(previous)
        _C.set_device(previous_device)


def _as_stream(stream: torch.Stream) -> Stream:
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


# -- events ------------------------------------------------------------------------


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
        stream = current_stream() if stream is None else _as_stream(stream)
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
        stream = current_stream() if stream is None else _as_stream(stream)
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


# -- the per-device queues -----------------------------------------------------------


class _DeviceQueue:
    """The FIFO of one device and the execution thread that empties it."""

    def __init__(self, device: int) -> None:
        self.device = device
        self.items: queue.SimpleQueue = queue.SimpleQueue()
        self.submitted = 0
        self.completed = 0
        self.error: NeuronAsyncError | None = None
        self._lock = threading.Lock()
        self._done = threading.Condition(threading.Lock())
        self._waiting = 0
        self.thread = threading.Thread(
            target=self._work, name=f"torchneuron-neuron:{device}-execution", daemon=True
        )
        self.thread.start()

    def put(self, item: Any) -> int:
        """Queue ``item``; returns its sequence number."""
        with self._lock:
            self.submitted = sequence = self.submitted + 1
            stream = item.stream
            if stream is not None:
                stream._last = sequence
            self.items.put(item)
        return sequence

    def wait_for(self, sequence: int) -> None:
        """Block (the GIL released) until item ``sequence`` has run."""
        if self.completed >= sequence or _on_execution_thread():
            return
        with self._done:
            self._waiting += 1
            try:
                while self.completed < sequence:
                    self._done.wait()
            finally:
                self._waiting -= 1

    def raise_error(self) -> None:
        error = self.error
        if error is not None:
            self.error = None
            raise error

    def _work(self) -> None:
        _local.execution_thread = True
        _C.mark_execution_thread()
        get = self.items.get
        while True:
            item = get()
            if item is None:
                return
            try:
                item.run()
            except BaseException as error:  # kept for the next synchronization
                if self.error is None:
                    self.error = _deferred(error, item.name, self.device)
            item = None  # the item's tensors are freed here, in queue order
            self.completed += 1
            if self._waiting:
                with self._done:
                    self._done.notify_all()

    def stop(self) -> None:
        self.items.put(None)
        self.thread.join()


# device index -> its queue (None until the first submission)
_queues: list[_DeviceQueue | None] = []
_queues_lock = threading.Lock()


def _on_execution_thread() -> bool:
    return getattr(_local, "execution_thread", False)


def _existing_queue(device: int) -> _DeviceQueue | None:
    return _queues[device] if device < len(_queues) else None


def _queue_for(device: int) -> _DeviceQueue:
    if device < len(_queues):
        found = _queues[device]
        if found is not None:
            return found
    with _queues_lock:
        while len(_queues) <= device:
            _queues.append(None)
        found = _queues[device]
        if found is None:
            if not _started:
                _start()
            found = _queues[device] = _DeviceQueue(device)
    return found


def submit(item: Any) -> None:
    """Queue ``item`` (a ``Launch``) for its device, through the fuser if one is installed.

    Raises the device's pending asynchronous error first."""
    device = item.device
    queue_ = _queue_for(device)
    if queue_.error is not None:
        queue_.raise_error()
    fuser = _fuser
    if fuser is None:
        queue_.put(item)
    else:
        for ready in fuser.offer(item):
            _queue_for(ready.device).put(ready)


def synchronize(device: int) -> None:
    """Wait for every op queued on ``device``; raises an asynchronous error."""
    if _on_execution_thread():
        return
    flush(device)
    queue_ = _existing_queue(device)
    if queue_ is not None:
        queue_.wait_for(queue_.submitted)
        queue_.raise_error()


def synchronize_all() -> None:
    for device in range(len(_queues)):
        synchronize(device)


def idle(device: int) -> bool:
    """True when nothing is queued or held for ``device``."""
    queue_ = _existing_queue(device)
    return queue_ is None or queue_.completed >= queue_.submitted


def _host_sync(device: int, block: bool) -> bool:
    """The native layer's sync hook: before a host access to ``device``'s memory."""
    if block:
        synchronize(device)
        return True
    return idle(device)


def keep_until_run(device: int, stream: Stream, objects: Any) -> None:
    """Hold ``objects`` until the work queued on ``stream`` so far has run."""
    if launch_blocking() or _on_execution_thread():
        return
    flush(device)
    queue_ = _existing_queue(device)
    if queue_ is None or queue_.completed >= stream._last:
        return
    queue_.put(_Keep(device, objects))


class _Keep:
    """A queue item that only holds references (``record_stream``) until it is reached."""

    __slots__ = ("device", "name", "objects", "stream")

    def __init__(self, device: int, objects: Any) -> None:
        self.device = device
        self.stream = None
        self.name = "record_stream"
        self.objects = objects

    def run(self) -> None:
        self.objects = None


# -- process life ------------------------------------------------------------------

_started = False


def _start() -> None:
    """Once per process, before the first execution thread: hooks for exit and fork."""
    global _started
    _started = True
    atexit.register(_shutdown)


def _shutdown() -> None:
    """At exit: run what is queued, then stop the execution threads."""
    for device in range(len(_queues)):
        queue_ = _queues[device]
        if queue_ is not None:
            try:
                queue_.wait_for(queue_.submitted)
            finally:
                queue_.stop()
                _queues[device] = None


def _after_fork_in_child() -> None:
    # The execution threads do not exist in the child: start afresh.
    global _queues_lock
    _queues.clear()
    _queues_lock = threading.Lock()


def install() -> None:
    """Tell the native layer to wait for the queues before host accesses."""
    _C.set_sync_hook(_host_sync)


os.register_at_fork(after_in_child=_after_fork_in_child)
