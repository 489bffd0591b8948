"""Executors compute a loaded NEFF's outputs; ``EXECUTORS`` maps a mode name to one.

The ``"xla"`` executor compiles the StableHLO program with XLA's CPU compiler
(jaxlib's PJRT client) and runs it. Compiled programs are cached in one bounded
LRU keyed by executor and the sha256 of the program bytes: any two NEFFs with the
same program (same NEFF hash, or the same program with other weights) compile once.

An executor offers three things, so a new mode (a timing-only "null" executor)
is one more class in the table:

- ``prepare(program, label) -> PreparedProgram``: verify (``verifier.verified_program``:
  a NEFF's program is parsed in a child process, and XLA compiles only the canonical
  bytes the verifier wrote) and compile (cached);
- ``upload_weight(array)``: a device-resident copy of a weight, made once at load;
- ``make_runner(prepared, argument_plan, input_types, weight_buffers)``: a function
  from the input arrays (already validated) to the output arrays, with everything
  that does not depend on the inputs bound in advance. It is the per-call hot path.

Compiled programs live in ``PROGRAM_CACHE``, a ``torchneuron.lru.LRU``.

XLA threading: by default XLA may use several threads per op. Set
``TORCHNEURON_XLA_SINGLE_THREADED=1`` (or call ``set_single_threaded(True)``)
before the first NEFF is loaded to add ``--xla_cpu_multi_thread_eigen=false`` to
``XLA_FLAGS``, for steadier timings on shared machines. XLA reads its flags once,
when the CPU backend starts, so the setting cannot change afterwards (nor take
effect if the process already used JAX's CPU backend).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from torchneuron import settings
from torchneuron.lru import LRU
from torchneuron.runtime.errors import InvalidNeffError, NeuronRuntimeError
from torchneuron.runtime.program import ProgramSignature, TensorType
from torchneuron.runtime.verifier import start_verifier_for, verified_program
from torchneuron.target.dtypes import numpy_dtype

SINGLE_THREADED_XLA_FLAGS = ("--xla_cpu_multi_thread_eigen=false",)
DEFAULT_CACHE_CAPACITY = 512

# What make_runner returns: validated input arrays in, output arrays (caller-owned) out.
Runner = Callable[[Sequence[np.ndarray]], list]


@dataclass
class PreparedProgram:
    """A program checked and compiled once, shared by every NEFF that carries it."""

    digest: str  # sha256 hex of the program bytes
    signature: ProgramSignature
    executable: Any
    compile_seconds: float


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
    """Ask for single-threaded XLA; effective only before the XLA CPU backend starts."""
    global _single_threaded_request
    _single_threaded_request = enabled
    if _XLA.started:
        warnings.warn(
            "torchneuron: the XLA CPU backend has already started; the thread setting "
            "applies from the next process",
            stacklevel=2,
        )


def _single_threaded_wanted() -> bool:
    if _single_threaded_request is not None:
        return _single_threaded_request
    return settings.env_flag(settings.XLA_SINGLE_THREADED)


class XlaCpuExecutor:
    """Numerics through XLA's CPU compiler, one PJRT CPU device."""

    name = "xla"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = False
        self.single_threaded = False

    def _start(self) -> None:
        with self._lock:
            if self.started:
                return
            from jax._src import xla_bridge

            if _single_threaded_wanted():
                if xla_bridge._backends:
                    warnings.warn(
                        f"torchneuron: {settings.XLA_SINGLE_THREADED} is set but JAX's backends were "
                        "already initialised in this process, so XLA keeps its thread settings",
                        stacklevel=3,
                    )
                else:
                    # XLA_FLAGS is XLA's own variable, not ours: XLA reads its flags from
                    # it (and nowhere else) once, when the CPU backend starts, which is
                    # just below. Writing it here is the only way to pass the flag.
                    flags = os.environ.get("XLA_FLAGS", "")
                    missing = [f for f in SINGLE_THREADED_XLA_FLAGS if f not in flags.split()]
                    os.environ["XLA_FLAGS"] = " ".join([flags, *missing]).strip()
                    self.single_threaded = True
            from jax._src import core as jax_core
            from jax._src.lib import xla_client
            from jax.extend.backend import get_backend
            from jax.sharding import SingleDeviceSharding

            self._xla_client = xla_client
            self._shaped_array = jax_core.ShapedArray
            self._backend = get_backend("cpu")
            self._device = self._backend.devices()[0]
            self._sharding = SingleDeviceSharding(self._device)
            self._zero_copy = xla_client.HostBufferSemantics.ZERO_COPY
            self.started = True

    def prepare(self, program: bytes, label: str) -> PreparedProgram:
        digest = hashlib.sha256(program).hexdigest()
        key = (self.name, digest)
        cached = PROGRAM_CACHE.get(key)
        if cached is not None:
            return cached
        if not self.started:
            start_verifier_for(program)  # the child starts up while XLA does
            self._start()
        verified = verified_program(program, label)
        started = time.perf_counter()
        try:
            executable = self._backend.compile_and_load(
                verified.program, self._backend.devices()[:1], self._xla_client.CompileOptions()
            )
        except Exception as error:  # XLA raises its own runtime error types
            raise InvalidNeffError(
                f"{label}: XLA could not compile the program: {str(error).strip()}"
            ) from None
        prepared = PreparedProgram(
            digest, verified.signature, executable, time.perf_counter() - started
        )
        PROGRAM_CACHE.put(key, prepared)
        return prepared

    def _put(self, array: np.ndarray, force_copy: bool) -> Any:
        aval = self._shaped_array(array.shape, array.dtype)
        # batched_device_put is what jax.device_put ends in, minus ~50 us of Python;
        # enable_x64=True keeps 64-bit values without flipping JAX's global x64 switch.
        return self._xla_client.batched_device_put(
            aval, self._sharding, [array], [self._device], True, force_copy, self._zero_copy, True
        )

    def upload_weight(self, array: np.ndarray) -> Any:
        self._start()
        # A private copy: the caller's array (often a view of a NEFF file buffer) may change.
        return self._put(np.asarray(array), force_copy=True)

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
        execute = prepared.executable.execute
        avals = [self._shaped_array(t.shape, numpy_dtype(t.dtype)) for t in input_types]
        weights = list(weight_buffers)
        inputs_first = list(argument_plan) == list(range(len(input_types))) + [None] * len(weights)
        # np.array: a copy the caller owns and may write (jax arrays are read-only);
        # np.asarray: a read-only view, for a caller that copies the values out at once.
        to_host = {True: np.array, False: np.asarray}

        if inputs_first:

            def run(arrays: Sequence[np.ndarray], copy: bool = True) -> list:
                args = [
                    put(aval, sharding, [array], devices, True, False, zero_copy, True)
                    for aval, array in zip(avals, arrays)
                ]
                args += weights
                convert = to_host[copy]
                return [convert(out) for out in execute(args)]

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
            convert = to_host[copy]
            return [convert(out) for out in execute(args)]

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
