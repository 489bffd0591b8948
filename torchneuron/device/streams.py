"""Asynchronous execution: one execution thread per device, fed in stream order.

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

The user's objects (``torch.neuron.Stream``, ``Event``, the current stream) are in
``stream_api``; a stream only needs ``_last``, the sequence number of its last item
on the device's queue, which ``put`` keeps up to date.

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
from typing import Any

import torch

from torchneuron import settings
from torchneuron.device import _C
from torchneuron.errors import TorchNeuronError, describe_error
from torchneuron.target.topology import DEVICE_TYPE


class NeuronAsyncError(TorchNeuronError):
    """An op that ran asynchronously failed; raised at the next synchronization.

    ``op`` names the op, ``device`` its device, ``original`` the error it raised (also
    its ``__cause__``); the raised error is an instance of the original's class too."""

    op: str = ""
    device: int = 0
    original: BaseException | None = None

    def __str__(self) -> str:
        # The message made when the error was caught: the original class's own __str__
        # may need state its constructor (never run here) sets, and then raises.
        return self.args[0] if self.args else ""


_deferred_types: dict[type, type] = {}


def _deferred(original: BaseException, name: str, device: int) -> NeuronAsyncError:
    """A ``NeuronAsyncError`` for ``original``, of a class deriving from both, with a
    plain message computed now (never raises: the execution thread must survive it)."""
    message = (
        f"{name} failed on {DEVICE_TYPE}:{device}, raised here at the next synchronization "
        f"because ops run asynchronously (set {settings.LAUNCH_BLOCKING}=1 to raise it at "
        f"the op): {describe_error(original)}"
    )
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
    try:
        error = cls.__new__(cls)
    except Exception:  # a class whose __new__ wants its own arguments
        error = NeuronAsyncError.__new__(NeuronAsyncError)
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


def runs_here() -> bool:
    """Whether an op must run on the calling thread now: launch blocking, or the caller
    is an execution thread (an op issued there would otherwise queue behind itself)."""
    return launch_blocking() or getattr(_local, "execution_thread", False)


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
            with _submit_lock:
                items = previous.flush(device)
                _queue_items(items)
            _release_tensors(items)
    _fuser = fuser


# Held from the fuser's answer to the queues: two threads submitting to one device
# must not queue the items of a closed chain in the other order than they were closed
# (a later chain reading an earlier one's output would run first).
_submit_lock = threading.RLock()


def _queue_items(items: list) -> None:
    """Queue ``items`` in order; the caller holds ``_submit_lock`` since it asked the
    fuser for them. Their Python tensors are let go of by ``_release_tensors``."""
    for item in items:
        _queue_for(item.device).put(item)


def _release_tensors(items: list) -> None:
    """Queued launches run on their captured views: their Python tensors go now
    (``Launch.release_tensors``), not when the execution thread reaches them."""
    for item in items:
        release = getattr(item, "release_tensors", None)
        if release is not None:
            release()


def flush(device: int) -> None:
    """Queue what the fuser holds for ``device`` (nothing without a fuser)."""
    fuser = _fuser
    if fuser is None:
        return
    with _submit_lock:
        items = fuser.flush(device)
        _queue_items(items)
    _release_tensors(items)


# -- the per-device queues -----------------------------------------------------------


# Items a device's queue holds before a submitting thread waits for it to drain by half.
MAX_QUEUED = 256


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
        """Queue ``item``; returns its sequence number.

        A caller that runs too far ahead waits (a bounded queue, as a GPU's launch
        queue is): queued items hold their tensors, and thousands of them alive make
        every garbage collection slower."""
        if self.submitted - self.completed >= MAX_QUEUED and not _on_execution_thread():
            self.wait_for(self.submitted - MAX_QUEUED // 2)
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
        # a stream's position from before a fork (the child's queue starts again at 0)
        sequence = min(sequence, self.submitted)
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
            correlated = bool(_correlations)  # a torch.profiler session queued it
            if correlated:
                _local.correlation = _correlations.pop(id(item), -1)
            try:
                item.run()
            except BaseException as error:  # kept for the next synchronization
                if self.error is None:
                    self.error = _deferred(error, item.name, self.device)
            if correlated:
                _local.correlation = -1
            item = None  # the item's tensors are freed here, in queue order
            self.completed += 1
            if self._waiting:
                with self._done:
                    self._done.notify_all()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread once what is queued has run (waiting at most ``timeout`` s)."""
        self.items.put(None)
        self.thread.join(timeout)


_local = threading.local()  # .execution_thread: True on the execution threads

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
    with _submit_lock:
        items = [item] if fuser is None else fuser.offer(item)
        if items and _C.profiler_recording():  # torch.profiler: the launching CPU op
            correlation = _C.profiler_correlation()
            for queued in items:
                _correlations[id(queued)] = correlation
        _queue_items(items)
    _release_tensors(items)


# id(queued item) -> the correlation id of the CPU op that queued it, while a
# torch.profiler session records (profiler_events.py); taken by the execution thread.
_correlations: dict[int, int] = {}


def launch_correlation() -> int:
    """The correlation id of the launch this execution thread is running (-1: none)."""
    return getattr(_local, "correlation", -1)


def enqueue(item: Any) -> int:
    """Queue any item (``.device``, ``.stream`` or None, ``.name``, ``.run()``) as it is,
    past the fuser; returns its sequence number. Tests use it to hold a device's
    execution thread (an item whose ``run`` waits) or to make an op fail there."""
    return _queue_for(item.device).put(item)


# Rounds of the host's work: a host read of device memory from outside any op on a
# Python thread (the user's ``.item()``, ``.cpu()``, ``print``),
# ``torch.neuron.synchronize()`` and an optimizer step each end one (a training step,
# a served request). The padded route (``padded.py``) takes a new shape for a change of
# size only against shapes that ran again in a later round than their first, so the
# shapes a model's layers meet inside its first step are not taken for one.
_rounds = 0


class _OpDepth(threading.local):
    depth = 0  # ops being run on this thread (``dispatch.run_op`` counts them)


op_depth = _OpDepth()


def end_round() -> None:
    global _rounds
    _rounds += 1


def rounds() -> int:
    """How many rounds of the host's work have ended in this process."""
    return _rounds


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


def drain_all() -> None:
    """Wait for every queued op of every device, leaving their errors for the next sync."""
    if _on_execution_thread():
        return
    for device in range(len(_queues)):
        flush(device)
        queue_ = _existing_queue(device)
        if queue_ is not None:
            queue_.wait_for(queue_.submitted)


def idle(device: int) -> bool:
    """True when nothing is queued for ``device`` (held launches are not looked at)."""
    queue_ = _existing_queue(device)
    return queue_ is None or queue_.completed >= queue_.submitted


def _host_sync(device: int, block: bool) -> bool:
    """The native layer's sync hook: before a host access to ``device``'s memory."""
    if block:
        # the user's read, not an op's own (a synchronous program's inputs) nor one made
        # by native code on a thread Python did not start (autograd's device threads)
        if not op_depth.depth and not isinstance(
            threading.current_thread(), threading._DummyThread
        ):
            end_round()
        synchronize(device)
        return True
    flush(device)
    return idle(device)


class _DeviceCopy:
    """A queue item that copies one neuron tensor into another (same device): the
    native layer's ``copy_`` between device tensors, in queue order, through the host
    aliases taken at the call (which keep both memories)."""

    __slots__ = ("device", "dst", "name", "src", "stream")

    def __init__(self, device: int, stream: Any, src: Any, dst: Any) -> None:
        self.device = device
        self.stream = stream
        self.name = "copy_"
        self.src = src
        self.dst = dst

    def run(self) -> None:
        # the CPU kernel converts dtypes, broadcasts and follows strides as the
        # synchronous copy did
        self.dst.copy_(self.src)
        self.src = self.dst = None


def queue_copy(src: Any, dst: Any, src_alias: Any, dst_alias: Any, stream: Any) -> bool:
    """Queue ``dst.copy_(src)`` on ``stream`` after the work queued so far, as a copy
    between their host aliases taken at the call (the native layer's copy hook,
    ``stream_api.device_copy``); False (the caller copies at once, after waiting) for
    two devices, under ``launch_blocking``, or on an execution thread."""
    device = dst.device.index or 0
    if (src.device.index or 0) != device or launch_blocking() or _on_execution_thread():
        return False
    if not _copy_cannot_fail(src, dst):
        return False  # PyTorch's error (or warning) is raised at the call, as on the CPU
    with _submit_lock:
        flush(device)
        queue_ = _queue_for(device)
        if queue_.error is not None:
            queue_.raise_error()
        queue_.put(_DeviceCopy(device, stream, src_alias, dst_alias))
    return True


def _copy_cannot_fail(src: Any, dst: Any) -> bool:
    """Whether the CPU kernel copies ``src`` into ``dst`` without an error or a warning:
    ``src`` broadcasts to ``dst``'s shape, no complex value loses its imaginary part,
    and no memory overlaps (``dst`` with itself, or the two tensors' storages)."""
    if src.dtype.is_complex and not dst.dtype.is_complex:
        return False
    try:
        if torch.broadcast_shapes(src.shape, dst.shape) != dst.shape:
            return False
    except RuntimeError:
        return False
    if torch._debug_has_internal_overlap(dst) != 0:
        return False
    return src.untyped_storage().data_ptr() != dst.untyped_storage().data_ptr()


def keep_until_run(device: int, stream: Any, objects: Any) -> None:
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


# At exit, how long the execution threads may take to finish their queues (nothing can
# read their results any more; a thread stuck in a program must not hang the exit).
EXIT_TIMEOUT_S = 10.0


def _shutdown() -> None:
    """At exit: let the execution threads run what is queued, then stop them."""
    for device in range(len(_queues)):
        queue_ = _queues[device]
        if queue_ is not None:
            queue_.stop(EXIT_TIMEOUT_S)
            _queues[device] = None


def _after_fork_in_child() -> None:
    # The execution threads do not exist in the child: start afresh.
    global _queues_lock
    _queues.clear()
    _queues_lock = threading.Lock()


def install() -> None:
    """Tell the native layer to wait for the queues before host accesses."""
    _C.set_sync_hook(_host_sync)


# Queued work is done before a fork (the child has no execution threads to finish it).
os.register_at_fork(before=drain_all, after_in_child=_after_fork_in_child)
