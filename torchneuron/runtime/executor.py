"""Executors compute a loaded NEFF's outputs; ``EXECUTORS`` maps a mode name to one.

The ``"xla"`` executor compiles the StableHLO program with XLA's CPU compiler
(jaxlib's PJRT client) and runs it. Compiled programs are cached in one bounded
LRU keyed by executor and the sha256 of the program bytes: any two NEFFs with the
same program (same NEFF hash, or the same program with other weights) compile once.
Each executable is also kept in the disk cache (``executable_cache.py``), so the
next process deserializes it (about a millisecond) instead of verifying and compiling.

An executor offers three things, so a new mode (a timing-only "null" executor)
is one more class in the table:

- ``prepare(program, label, declared) -> PreparedProgram``: the executable from the
  disk cache, else verify (``verifier.verified_program``: a NEFF's program is parsed
  in a child process, and XLA compiles only the canonical bytes the verifier wrote),
  compile and keep it; ``declared`` is the signature the NEFF states (a cached
  executable recorded with another is a bad entry);
- ``upload_weight(array)``: a device-resident copy of a weight, made once at load;
- ``make_runner(prepared, argument_plan, input_types, weight_buffers)``: a function
  from the input arrays (already validated) to the output arrays, with everything
  that does not depend on the inputs bound in advance. It is the per-call hot path.

Compiled programs live in ``PROGRAM_CACHE``, a ``torchneuron.lru.LRU``.

XLA threading: XLA's CPU runtime runs a program on one pool of threads, made when
its CPU client starts; the pool's size, not ``--xla_cpu_multi_thread_eigen``, is what
bounds the threads a program uses (XLA reads it from ``PJRT_NPROC``). By default the
pool has one thread per core this process may run on. ``TORCHNEURON_XLA_THREADS=N``
asks for N threads, and ``TORCHNEURON_XLA_SINGLE_THREADED=1`` (or
``set_single_threaded(True)``) for one, for fair single-threaded comparisons (this
wins over ``TORCHNEURON_XLA_THREADS``); then
``--xla_cpu_multi_thread_eigen=false`` is added to ``XLA_FLAGS`` too. Either must be
set before the first NEFF is loaded: XLA reads both once, when its CPU backend
starts, so they cannot change afterwards (nor take effect if the process already used
JAX's CPU backend). With nothing asked, a ``PJRT_NPROC`` or ``NPROC`` the user set is
left to XLA.

No path our dtypes take imports jax itself (~0.45 s, most of a warm process's first
step): the executor drives jaxlib's PJRT client (``jaxlib.xla_client``, what jax
drives XLA through) and supplies the little jax would: a placement
(``_device_sharding``), avals made from the program's signature, result handlers for
the outputs (jaxlib's default wrapping imports jax to make avals), and
``host_buffers.output_reader`` to read outputs. If this process's JAX has already started its CPU client, that client is
shared instead; a JAX started after us makes a client of its own, with its own thread
pool, sized by the ``PJRT_NPROC`` this process has by then.

Outputs: ``make_runner``'s runner returns numpy arrays over the memory of XLA's own
output buffers (no copy): each buffer was allocated for that one execution, is
referenced by nothing else, and lives as long as the array does, so the arrays are
handed over writable. Fed back in as inputs (the activations a forward saves for
its backward), they are aligned as XLA wants and go back in without a copy.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from torchneuron import settings
from torchneuron.lru import LRU
from torchneuron.runtime import heap
from torchneuron.runtime.cache_entry import BadEntry
from torchneuron.runtime.errors import InvalidNeffError, NeuronRuntimeError
from torchneuron.runtime.executable_cache import (
    decode_payload,
    default_executable_cache,
    encode_payload,
    executable_key,
)
from torchneuron.runtime.host_buffers import host_arrays, output_reader
from torchneuron.runtime.program import ProgramSignature, TensorType
from torchneuron.runtime.verifier import verified_program
from torchneuron.target.dtypes import numpy_dtype

SINGLE_THREADED_XLA_FLAGS = ("--xla_cpu_multi_thread_eigen=false",)
# XLA's CPU client sizes its thread pool from this variable (then NPROC, then the cores).
XLA_POOL_SIZE_VARIABLE = "PJRT_NPROC"
XLA_POOL_SIZE_FALLBACK_VARIABLE = "NPROC"
DEFAULT_CACHE_CAPACITY = 512

# What make_runner returns: validated input arrays in, output arrays (caller-owned) out.
Runner = Callable[[Sequence[np.ndarray]], list]


@dataclass
class PreparedProgram:
    """A program checked and compiled once, shared by every NEFF that carries it."""

    digest: str  # sha256 hex of the program bytes
    signature: ProgramSignature
    executable: Any
    compile_seconds: float  # XLA's compile, or the deserialization of a cached executable


# (executor name, program sha256) -> PreparedProgram, shared by every executor.
PROGRAM_CACHE: LRU[tuple[str, str], PreparedProgram] = LRU(DEFAULT_CACHE_CAPACITY)


def executable_cache_info() -> dict[str, int]:
    """Hits, misses, size and capacity of the compiled-program cache."""
    info = PROGRAM_CACHE.info()
    return {
        "hits": info["hits"],
        "misses": info["misses"],
        "size": info["entries"],
        "capacity": info["capacity"],
    }


def clear_executable_cache() -> None:
    """Forget every compiled program (NEFFs already loaded keep theirs)."""
    PROGRAM_CACHE.clear()


def set_executable_cache_capacity(capacity: int) -> None:
    """Bound the compiled-program cache to ``capacity`` entries (LRU eviction)."""
    PROGRAM_CACHE.set_capacity(capacity)


_single_threaded_request: bool | None = None


def set_single_threaded(enabled: bool = True) -> None:
    """Ask for single-threaded XLA (``False``: the thread count the environment asks for);
    effective only before the XLA CPU backend starts."""
    global _single_threaded_request
    _single_threaded_request = enabled
    if _XLA.started:
        warnings.warn(
            "torchneuron: the XLA CPU backend has already started; the thread setting "
            "applies from the next process",
            stacklevel=2,
        )


def requested_xla_threads() -> int | None:
    """The size of XLA's thread pool that this process asks for: 1 when single-threaded,
    else ``TORCHNEURON_XLA_THREADS``; None when neither is set."""
    single = _single_threaded_request
    if single is None:
        single = settings.env_flag(settings.XLA_SINGLE_THREADED)
    if single:
        return 1
    return settings.env_count(settings.XLA_THREADS)


def default_xla_threads() -> int:
    """One thread per core this process may run on (its CPU affinity)."""
    return len(os.sched_getaffinity(0))


class _MemoryOnly(Exception):
    """A program compiled that is not to be kept on disk (XLA cannot serialize its
    executable, or its NEFF declares another signature and will be refused)."""


class _Aval:
    """The shape and dtype XLA's ``batched_device_put`` records on a new buffer (what a
    ``jax.core.ShapedArray`` gives it)."""

    __slots__ = ("dtype", "shape", "weak_type")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = False


def _device_sharding(xla_client: Any, device: Any) -> Any:
    """A placement on ``device`` for ``batched_device_put``. jaxlib's C++ sharding asks its
    Python subclass for two things that jax otherwise supplies: the memory kind (None:
    the device's default memory) and the HLO sharding (one device: replicated)."""
    replicated = xla_client.HloSharding.replicate()

    class DeviceSharding(xla_client.SingleDeviceSharding):
        memory_kind = None

        def _to_xla_hlo_sharding(self, num_dimensions: int) -> Any:
            return replicated

    return DeviceSharding(device)


def _started_jax_cpu_backend() -> Any:
    """JAX's CPU client when this process's JAX has already started it, else None
    (without importing jax)."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    backends = getattr(bridge, "_backends", None)
    if not backends or "cpu" not in backends:
        return None
    return backends["cpu"]


class XlaCpuExecutor:
    """Numerics through XLA's CPU compiler, one PJRT CPU device."""

    name = "xla"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = False
        # The size of XLA's thread pool, once started (None: XLA was started elsewhere
        # first, or the user's PJRT_NPROC/NPROC decides, so the count is not ours).
        self.threads: int | None = None

    @property
    def single_threaded(self) -> bool:
        return self.threads == 1

    def _start(self) -> None:
        with self._lock:
            if self.started:
                return
            # jaxlib's PJRT client directly, not through ``jax``: importing jax costs
            # ~0.45 s, the largest part of a warm process's first step, and nothing here
            # needs it. jaxlib.xla_client is the module jax itself drives XLA through.
            from jaxlib import xla_client

            requested = requested_xla_threads()
            jax_backend = _started_jax_cpu_backend()
            if jax_backend is not None:
                # JAX's CPU client already runs here: share it (one thread pool, not two).
                if requested is not None:
                    warnings.warn(
                        f"torchneuron: {settings.XLA_SINGLE_THREADED}/{settings.XLA_THREADS} "
                        "is set but JAX's backends were already initialised in this process, "
                        "so XLA keeps its thread settings",
                        stacklevel=3,
                    )
                self._backend = jax_backend
            else:
                self.threads = self._configure_threads(requested)
                # Custom-call targets (LAPACK's, which jax registers process-wide when
                # imported) do not matter: the verifier refuses custom calls.
                self._backend = xla_client.make_cpu_client(asynchronous=True)
            self._xla_client = xla_client
            self._device = self._backend.devices()[0]
            self._sharding = _device_sharding(xla_client, self._device)
            self._zero_copy = xla_client.HostBufferSemantics.ZERO_COPY
            self._result_handler = xla_client._xla.array_result_handler
            self.started = True

    @staticmethod
    def _configure_threads(requested: int | None) -> int | None:
        # PJRT_NPROC and XLA_FLAGS are XLA's own variables, not ours: XLA reads them (and
        # nothing else) once, when the CPU backend starts, which is just after this.
        # Writing them here is the only way to pass the settings.
        if requested is None:
            user_sized = (XLA_POOL_SIZE_VARIABLE, XLA_POOL_SIZE_FALLBACK_VARIABLE)
            if any(os.environ.get(name) for name in user_sized):
                return None  # the user sized XLA's pool directly
            threads = default_xla_threads()
        else:
            threads = requested
        os.environ[XLA_POOL_SIZE_VARIABLE] = str(threads)
        if requested == 1:
            flags = os.environ.get("XLA_FLAGS", "")
            missing = [f for f in SINGLE_THREADED_XLA_FLAGS if f not in flags.split()]
            os.environ["XLA_FLAGS"] = " ".join([flags, *missing]).strip()
        return threads

    def prepare(
        self, program: bytes, label: str, declared: ProgramSignature | None = None
    ) -> PreparedProgram:
        """The program compiled (or its executable from the disk cache). ``declared``: the
        signature the NEFF says the program has; a cached executable recorded with another
        is a bad entry (a fresh compile is returned as it is, for the caller to refuse)."""
        digest = hashlib.sha256(program).hexdigest()
        key = (self.name, digest)
        cached = PROGRAM_CACHE.get(key)
        if cached is not None:
            return cached
        self._start()
        compiled: dict[str, Any] = {}

        def compile_entry() -> bytes:
            verified = verified_program(program, label)
            started = time.perf_counter()
            executable = self._compile(verified.program, label)
            seconds = time.perf_counter() - started
            compiled["prepared"] = PreparedProgram(digest, verified.signature, executable, seconds)
            heap.after_compile(seconds)
            if declared is not None and verified.signature != declared:
                raise _MemoryOnly()  # the caller refuses this NEFF; keep nothing on disk
            try:
                serialized = self._backend.serialize_executable(executable)
            except Exception:  # XLA raises its own runtime error types
                raise _MemoryOnly() from None  # runs; the next process compiles it again
            compiled["payload"] = encode_payload(verified.signature, serialized)
            return compiled["payload"]

        def load(payload: bytes) -> PreparedProgram:
            if payload is compiled.get("payload"):
                return compiled["prepared"]
            started = time.perf_counter()
            signature, serialized = decode_payload(payload)
            if declared is not None and signature != declared:
                raise BadEntry("its signature is not the one the NEFF declares")
            executable = self._backend.deserialize_executable(
                serialized, self._backend.devices()[:1], self._xla_client.CompileOptions()
            )
            return PreparedProgram(digest, signature, executable, time.perf_counter() - started)

        try:
            prepared = default_executable_cache().get_or_compile(
                executable_key(digest), compile_entry, load=load
            )
        except _MemoryOnly:
            prepared = compiled["prepared"]
        PROGRAM_CACHE.put(key, prepared)
        return prepared

    def _compile(self, program: bytes, label: str) -> Any:
        try:
            return self._backend.compile_and_load(
                program, self._backend.devices()[:1], self._xla_client.CompileOptions()
            )
        except Exception as error:  # XLA raises its own runtime error types
            raise InvalidNeffError(
                f"{label}: XLA could not compile the program: {str(error).strip()}"
            ) from None

    def _put(self, array: np.ndarray, force_copy: bool) -> Any:
        aval = _Aval(array.shape, array.dtype)
        # batched_device_put is what jax.device_put ends in, minus ~50 us of Python;
        # enable_x64=True keeps 64-bit values without flipping JAX's global x64 switch.
        return self._xla_client.batched_device_put(
            aval, self._sharding, [array], [self._device], True, force_copy, self._zero_copy, True
        )

    def upload_weight(self, array: np.ndarray) -> Any:
        self._start()
        # A private copy: the caller's array (often a view of a NEFF file buffer) may change.
        return self._put(np.asarray(array), force_copy=True)

    def output_plan(self, signature: ProgramSignature) -> tuple[list, list]:
        """Per result of ``signature``: the handler XLA wraps its buffer with, and how the
        buffer is read (``host_buffers.output_reader``).

        The handlers' avals come from the signature: XLA's default way of wrapping
        outputs imports all of jax (~0.45 s) to make their avals, and its checks are jax
        Python. Host arrays take their shape and dtype from the buffers XLA wrote; for
        bfloat16 and float8, whose dtype the buffer protocol cannot carry, the DLPack
        export's type code is checked against the signature's."""
        self._start()
        handlers, readers = [], []
        for result in signature.results:
            dtype = numpy_dtype(result.dtype)
            aval = _Aval(result.shape, dtype)
            handlers.append(self._result_handler(aval, self._sharding, True, _skip_checks=True))
            readers.append(output_reader(dtype))
        return handlers, readers

    def make_runner(
        self,
        prepared: PreparedProgram,
        argument_plan: Sequence[int | None],
        input_types: Sequence[TensorType],
        weight_buffers: Sequence[Any],
    ) -> Runner:
        """``argument_plan[k]`` is the input index feeding @main argument k, or None for the
        next weight buffer in order."""
        self._start()
        put = self._xla_client.batched_device_put
        sharding, devices, zero_copy = self._sharding, [self._device], self._zero_copy
        execute_sharded = prepared.executable.execute_sharded
        avals = [_Aval(t.shape, numpy_dtype(t.dtype)) for t in input_types]
        handlers, readers = self.output_plan(prepared.signature)
        weights = list(weight_buffers)
        inputs_first = list(argument_plan) == list(range(len(input_types))) + [None] * len(weights)

        if inputs_first:

            def run(arrays: Sequence[np.ndarray], copy: bool = True) -> list:
                args = [
                    put(aval, sharding, [array], devices, True, False, zero_copy, True)
                    for aval, array in zip(avals, arrays)
                ]
                args += weights
                return host_arrays(
                    execute_sharded(args).consume_with_handlers(handlers), readers, copy
                )

            return run

        template: list[Any] = []
        input_slots: list[tuple[int, int]] = []
        weight_iter = iter(weights)
        for position, source in enumerate(argument_plan):
            if source is None:
                template.append(next(weight_iter))
            else:
                template.append(None)
                input_slots.append((position, source))

        def run_interleaved(arrays: Sequence[np.ndarray], copy: bool = True) -> list:
            args = list(template)
            for position, source in input_slots:
                args[position] = put(
                    avals[source], sharding, [arrays[source]], devices, True, False, zero_copy, True
                )
            return host_arrays(execute_sharded(args).consume_with_handlers(handlers), readers, copy)

        return run_interleaved


_XLA = XlaCpuExecutor()

EXECUTORS: dict[str, Any] = {_XLA.name: _XLA}
DEFAULT_EXECUTOR = _XLA.name


def get_executor(name: str = DEFAULT_EXECUTOR) -> Any:
    try:
        return EXECUTORS[name]
    except KeyError:
        raise NeuronRuntimeError(
            f"unknown executor {name!r}; available: {', '.join(sorted(EXECUTORS))}"
        ) from None
