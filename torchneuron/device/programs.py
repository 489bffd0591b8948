"""Eager programs resident on the device's cores: which cores hold each compiled op loaded.

``compile_resident`` compiles one op call (``torchneuron.compiler.eager.compile_op``) and
loads it on the caller's core as part of the cache lookup, so a cached NEFF that does
not load is recompiled. A ``ResidentProgram`` loads on any other core on first use;
``forget`` (the op's cache entry was evicted) and ``unload_all``
(``torch.neuron.empty_cache``) give the cores' HBM back. The compiler hands over NEFF
bytes only; residency is the device's business.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class ResidentProgram:
    """A compiled op (``compiler.eager.CompiledOp``) and the cores it is loaded on."""

    __slots__ = ("_lock", "compiled", "loaded")

    def __init__(self, compiled: Any):
        self.compiled = compiled
        self.loaded: dict[int, Any] = {}  # core index -> LoadedNeff
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.compiled.name

    @property
    def key(self) -> str:
        """The NEFF cache key of the compiled op."""
        return self.compiled.key

    def program_on(self, core: int):
        """The ``LoadedNeff`` for device ``core``, loading it there on first use."""
        program = self.loaded.get(core)
        if program is None:
            with self._lock:
                program = self.loaded.get(core)
                if program is None:
                    from torchneuron.compiler import eager
                    from torchneuron.device.profiler_events import ensure_hook
                    from torchneuron.runtime import load_neff

                    ensure_hook()

                    start = time.perf_counter()
                    compiled = self.compiled
                    neff = compiled.parsed if compiled.parsed is not None else compiled.neff
                    program = load_neff(neff, core=core)
                    eager.last_timings.load = time.perf_counter() - start
                    self.loaded[core] = program
        return program

    def execute(self, core: int, flat_inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run on ``core`` with the call's flat inputs (the program takes them in order)."""
        program = self.loaded.get(core) or self.program_on(core)
        # Inputs and outputs are device tensors, charged to HBM already.
        return program.execute(flat_inputs, resident=True)

    def unload(self) -> None:
        with self._lock:
            for program in self.loaded.values():
                program.unload()
            self.loaded.clear()


# NEFF cache key -> the program last loaded for it (what ``unload_all`` unloads)
_resident: dict[str, ResidentProgram] = {}
_resident_lock = threading.Lock()


def compile_resident(
    op_name: str,
    key_parts: tuple,
    specs: Sequence[Any],
    traced_fn: Callable[..., tuple],
    output_count: int,
    core: int,
) -> ResidentProgram:
    """``compile_op``'s program for one call, loaded on device ``core``."""
    from torchneuron.compiler import eager

    def load(compiled) -> ResidentProgram:
        resident = ResidentProgram(compiled)
        resident.program_on(core)
        return resident

    resident = eager.compile_op(op_name, key_parts, specs, traced_fn, output_count, load=load)
    with _resident_lock:
        _resident[resident.key] = resident
    return resident


def unload_all() -> None:
    """Unload every resident program from every core (``torch.neuron.empty_cache``)."""
    with _resident_lock:
        programs = list(_resident.values())
    for program in programs:
        program.unload()


def forget(program: ResidentProgram) -> None:
    """Drop ``program`` (evicted from the caller's cache): unload it everywhere."""
    with _resident_lock:
        if _resident.get(program.key) is program:
            del _resident[program.key]
    program.unload()
