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
3. check the NEFF's signature against the call: a per-op program takes the call's flat
   inputs in call order, each with the spec's shape and dtype (a NEFF from the cache
   that does not is a miss, recompiled), then hand it to the caller's ``load`` (the
   device loads it on a core: ``torchneuron.device.programs``). Loading is part of the
   cache lookup: an entry the caller cannot load is recompiled.

``CompiledOp`` is what the compiler produced, nothing more: which cores hold it loaded
is the device's business.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch

from torchneuron.compiler.cache import NeffCache, get_default_cache, key_for
from torchneuron.errors import TorchNeuronError

# what a caller's ``load`` makes of a compiled op (the device: a program loaded on a core)
Loaded = TypeVar("Loaded")


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


@dataclass(frozen=True)
class CompiledOp:
    """One op call compiled: the NEFF and its key. Its inputs are the call's flat inputs
    in call order (``compile_op`` checks the signature), its outputs ``output_count``."""

    name: str
    key: str
    neff: bytes
    output_count: int
    # the ``Neff`` read from ``neff`` (by the cache's check or the signature's), which a
    # load takes instead of reading the bytes a third time
    parsed: Any = field(default=None, compare=False, repr=False)


last_timings = CompileTimings()


def compile_op(
    op_name: str,
    key_parts: tuple,
    specs: Sequence[TensorSpec],
    traced_fn: Callable[..., tuple[torch.Tensor, ...]],
    output_count: int,
    *,
    target: str | None = None,
    cache: NeffCache | None = None,
    load: Callable[[CompiledOp], Loaded] | None = None,
) -> CompiledOp | Loaded:
    """Compile ``traced_fn`` (flat tensors -> tuple of tensors) for inputs like ``specs``;
    ``load(compiled)``'s result when ``load`` is given (the device loads the program on a
    core), else the ``CompiledOp``.

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

    def checked(neff: bytes, parsed: Any) -> CompiledOp | Loaded:
        if parsed is None:  # from memory, or just compiled
            from torchneuron.neff import read_neff

            parsed = read_neff(neff)
        _check_signature(op_name, parsed, specs)
        compiled = CompiledOp(op_name, key, neff, output_count, parsed)
        return load(compiled) if load is not None else compiled

    return cache.get_or_compile(key, compile_now, load_checked=checked)


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


def _check_signature(op_name: str, neff: Any, specs: Sequence[TensorSpec]) -> None:
    """Refuse a NEFF (a read ``Neff``) whose inputs are not the call's flat inputs in
    call order."""
    inputs = neff.manifest.get("signature", {}).get("inputs", [])
    expected = [(list(spec.shape), str(spec.dtype).removeprefix("torch.")) for spec in specs]
    found = [(entry.get("shape"), entry.get("dtype")) for entry in inputs]
    if found != expected:
        raise OpCompileError(
            op_name, f"the NEFF's inputs {found} are not the op's inputs {expected}"
        )
