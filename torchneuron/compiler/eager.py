"""Eager mode's per-op compiler: one ATen op call -> FX graph -> NEFF -> program on a core.

``compile_op`` turns a traceable function of flat tensor inputs (built by
``torchneuron.device.dispatch`` from one op call) into a ``CompiledOp``:

1. trace it with ``make_fx`` over fake CPU tensors of the call's shapes, strides
   and dtypes, functionalized (in-place and ``out=`` ops become their functional
   form; mutated inputs are returned as extra outputs) and decomposed with the
   lowering's decomposition table — the same FX form torch.compile produces;
2. compile it with ``torchneuron.compiler.pipeline.compile_graph`` (FX ->
   StableHLO -> passes -> NEFF), through the shared ``NeffCache`` (memory LRU +
   disk), keyed on the op and everything about the call that shapes the program;
   on a disk hit nothing is traced at all;
3. load the NEFF on the caller's core before returning it (``torchneuron.runtime.load_neff``),
   on any other core on first use there. Loading is part of the cache lookup: an entry
   from the cache that does not load (or whose inputs do not match the op) is recompiled.

The program's inputs are named after the trace's placeholders (``arg<i>_1``),
which is how a cached NEFF's inputs are matched back to the call's tensors.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from torchneuron.compiler.cache import NeffCache, get_default_cache, key_for
from torchneuron.errors import TorchNeuronError

_PLACEHOLDER_NAME = re.compile(r"arg(\d+)_1")


class OpCompileError(TorchNeuronError):
    """An op could not be traced or compiled for the device; ``reason`` says why."""

    def __init__(self, op_name: str, reason: str, unsupported: bool = False):
        super().__init__(f"{op_name}: {reason}")
        self.op_name = op_name
        self.reason = reason
        self.unsupported = unsupported


@dataclass(frozen=True)
class TensorSpec:
    """What a compiled program needs to know about one input tensor."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype


@dataclass
class CompileTimings:
    """Seconds spent per step of the last compiles (the benchmark reads them)."""

    trace: float = 0.0
    compile: float = 0.0
    load: float = 0.0


@dataclass
class CompiledOp:
    """One op call compiled: NEFF bytes plus the mapping of its inputs and outputs."""

    name: str
    key: str
    neff: bytes
    # input_order[j] = index into the call's flat inputs of the program's j-th input
    input_order: tuple[int, ...]
    output_count: int
    loaded: dict[int, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def program_on(self, core: int):
        """The ``LoadedNeff`` for device ``core``, loading it there on first use."""
        program = self.loaded.get(core)
        if program is None:
            with self._lock:
                program = self.loaded.get(core)
                if program is None:
                    from torchneuron.runtime import load_neff

                    start = time.perf_counter()
                    program = load_neff(self.neff, core=core)
                    last_timings.load = time.perf_counter() - start
                    self.loaded[core] = program
        return program

    def execute(self, core: int, flat_inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        program = self.loaded.get(core) or self.program_on(core)
        order = self.input_order
        # Inputs and outputs are device tensors, charged to HBM already.
        return program.execute([flat_inputs[i] for i in order], resident=True)

    def unload(self) -> None:
        with self._lock:
            for program in self.loaded.values():
                program.unload()
            self.loaded.clear()


last_timings = CompileTimings()
_live_ops: dict[str, CompiledOp] = {}
_live_lock = threading.Lock()


def compile_op(
    op_name: str,
    key_parts: tuple,
    specs: Sequence[TensorSpec],
    traced_fn: Callable[..., tuple[torch.Tensor, ...]],
    output_count: int,
    *,
    target: str | None = None,
    cache: NeffCache | None = None,
    core: int = 0,
) -> CompiledOp:
    """Compile ``traced_fn`` (flat tensors -> tuple of tensors) for inputs like ``specs``,
    loaded on device ``core`` (other cores load it on first use).

    Raises ``OpCompileError`` (``unsupported=True`` when the lowering has no rule
    for an op in the graph) so the caller can run the op on the CPU instead. A NEFF
    from the cache that does not fit the op or does not load is recompiled (the cache
    warns); a freshly compiled one that does not load raises the runtime's error.
    """
    if target is None:
        from torchneuron.target.topology import topology

        target = topology().target
    cache = cache if cache is not None else get_default_cache()
    key = key_for("eager-op", target, key_parts)

    def compile_now() -> bytes:
        def trace_and_compile() -> bytes:
            gm, fake_inputs = trace(op_name, specs, traced_fn)
            return _compile_graph(op_name, gm, fake_inputs, target)

        return in_clean_thread(trace_and_compile)

    def load(neff: bytes) -> CompiledOp:
        input_order = _input_order(op_name, neff, len(specs))
        compiled = CompiledOp(op_name, key, neff, input_order, output_count)
        compiled.program_on(core)
        return compiled

    compiled = cache.get_or_compile(key, compile_now, load=load)
    with _live_lock:
        _live_ops[key] = compiled
    return compiled


def in_clean_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` run on a fresh thread, its exception re-raised here.

    Tracing keeps its state in thread-locals: dispatch and function modes, the
    functionalization and autocast keys, grad mode, Dynamo's frame hook. An eager op
    can be reached while the caller's thread is itself tracing (torch.compile's fake
    mode runs the real op on a device constant, ``torch.tensor(1.0, device="neuron")``
    inside a compiled function), and tracing the op's program under that state
    crashed the process. A new thread starts with none of it, so the op's program is
    traced the same way whoever asked for it.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as error:  # re-raised on the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=run, name="torchneuron-op-compile")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def trace(
    op_name: str, specs: Sequence[TensorSpec], traced_fn: Callable[..., Any]
) -> tuple[torch.fx.GraphModule, list[torch.Tensor]]:
    """The functionalized, decomposed ATen FX graph of ``traced_fn`` on fake inputs."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from torchneuron.lowering import decomposition_table

    start = time.perf_counter()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        fake_inputs = [
            torch.empty_strided(spec.shape, spec.stride, dtype=spec.dtype, device="cpu")
            for spec in specs
        ]

    def positional(*flat):  # placeholders are then named arg<i>_1, whatever traced_fn calls them
        return traced_fn(*flat)

    try:
        gm = make_fx(
            torch.func.functionalize(positional, remove="mutations_and_views"),
            decomposition_table=decomposition_table(),
            tracing_mode="real",
        )(*fake_inputs)
    except Exception as error:
        raise OpCompileError(
            op_name, f"could not be traced ({type(error).__name__}: {error})"
        ) from error
    finally:
        last_timings.trace = time.perf_counter() - start
    return gm, fake_inputs


def _compile_graph(op_name: str, gm, fake_inputs, target: str) -> bytes:
    start = time.perf_counter()
    try:
        from torchneuron.compiler.pipeline import compile_graph
        from torchneuron.lowering import UnsupportedOpError
    except Exception as error:  # the compiler itself is unusable in this install
        raise OpCompileError(op_name, f"the compiler is unavailable ({error})") from error
    try:
        compiled = compile_graph(gm, fake_inputs, name=_program_name(op_name), target=target)
    except UnsupportedOpError as error:
        raise OpCompileError(op_name, str(error).splitlines()[0], unsupported=True) from error
    except Exception as error:
        first_line = (str(error).splitlines() or [""])[0]
        raise OpCompileError(
            op_name, f"compilation failed ({type(error).__name__}: {first_line})"
        ) from error
    finally:
        last_timings.compile = time.perf_counter() - start
    if compiled.neff is None:
        raise OpCompileError(op_name, "the compiler produced no NEFF")
    return compiled.neff


def _program_name(op_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", op_name.replace("::", "."))


def _input_order(op_name: str, neff: bytes, input_count: int) -> tuple[int, ...]:
    from torchneuron.neff import read_neff

    manifest = read_neff(neff).manifest
    order = []
    for entry in manifest.get("signature", {}).get("inputs", []):
        match = _PLACEHOLDER_NAME.fullmatch(str(entry.get("name")))
        if match is None or int(match.group(1)) >= input_count:
            raise OpCompileError(
                op_name, f"the NEFF's input {entry.get('name')!r} matches no input of the op"
            )
        order.append(int(match.group(1)))
    return tuple(order)


def unload_all() -> None:
    """Unload every compiled op from every core (``torch.neuron.empty_cache``)."""
    with _live_lock:
        ops = list(_live_ops.values())
    for op in ops:
        op.unload()


def forget(compiled: CompiledOp) -> None:
    """Drop ``compiled`` (evicted from the caller's cache): unload it everywhere."""
    with _live_lock:
        if _live_ops.get(compiled.key) is compiled:
            del _live_ops[compiled.key]
    compiled.unload()
