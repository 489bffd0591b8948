"""What the compiler did, where PyTorch users look: ``TORCH_LOGS``, ``TORCH_TRACE``, one report.

- ``TORCH_LOGS="+neuron"`` (or ``"neuron"`` for INFO): the ``torchneuron`` logger, a log
  registered with PyTorch's logging (``autoload._register_log``), prints each graph's compile:
  its route, the seconds of every stage, cache hits and misses, and each CPU fallback.
- ``TORCH_TRACE=/dir``: each compiled graph adds artifacts to Dynamo's structured trace
  (so ``tlparse`` shows them beside Dynamo's for the same frame): the StableHLO before
  and after the pass pipeline (``neuron_stablehlo``, ``neuron_optimized``), the pass
  timings, the cost model's estimate and the NEFF's summary (``neuron_compile``, JSON).
- ``torchneuron.report()`` (this module's ``report`` with the eager device's fallbacks):
  every graph compiled in this process (route, seconds, cache),
  every recompile with Dynamo's reason, every CPU fallback (graphs and eager ops) with
  its reason, the way ``torch._dynamo.explain`` lists graph breaks.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
from dataclasses import dataclass, field

LOG = logging.getLogger("torchneuron")
EVENTS_KEPT = 10_000  # a long-running process keeps the latest

_lock = threading.Lock()
_compiles: collections.deque = collections.deque(maxlen=EVENTS_KEPT)
_graph_fallbacks: collections.deque = collections.deque(maxlen=EVENTS_KEPT)


@dataclass
class GraphCompile:
    name: str
    route: str
    seconds: float
    cache: str  # "hit (memory)", "hit (disk)", "miss", or "" where no cache applies
    stage_seconds: dict = field(default_factory=dict)
    frame: str = ""  # Dynamo's compile id ("0/1": frame 0, its second compile)


def _compile_id() -> str:
    try:
        from torch._guards import CompileContext

        found = CompileContext.current_compile_id()
    except Exception:  # outside Dynamo (neuronc, the eager device)
        return ""
    return str(found) if found is not None else ""


_programs = threading.local()  # what compile_graph did for the graph being compiled


def program_compiled(cache: str, stages: dict) -> None:
    """``compile_graph`` made (or found) one program of the graph being compiled."""
    made = getattr(_programs, "made", None)
    if made is None:
        made = _programs.made = collections.deque(maxlen=64)
    made.append((cache, dict(stages)))


def _take_programs() -> tuple[str, dict]:
    """The cache outcome and summed stage seconds of the programs made since the last call."""
    made = getattr(_programs, "made", None) or ()
    caches = {cache for cache, _ in made}
    stages: dict[str, float] = {}
    for _, seconds in made:
        for stage, value in seconds.items():
            stages[stage] = stages.get(stage, 0.0) + value
    if made:
        _programs.made.clear()
    cache = caches.pop() if len(caches) == 1 else ("mixed" if caches else "")
    return cache, stages


def begin_graph() -> None:
    """A graph's compile starts: forget programs made outside one (the eager device's)."""
    _take_programs()


def graph_compiled(name: str, route: str, seconds: float, cache: str | None = None) -> None:
    """Record (and log) one graph's compile, with what ``compile_graph`` did for it
    (``cache`` given: the graph was not compiled again, e.g. Dynamo's same graph)."""
    made, stages = _take_programs()
    cache = made if cache is None else cache
    event = GraphCompile(name, route, seconds, cache, stages, _compile_id())
    with _lock:
        _compiles.append(event)
    staged = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in stages.items())
    LOG.info(
        "graph %s: %s route, %.1f ms%s%s",
        name,
        route,
        seconds * 1e3,
        f", cache {cache}" if cache else "",
        f" ({staged})" if staged else "",
    )


def graph_fell_back(name: str, reason: str) -> None:
    """Record (and log) a graph that runs on the CPU."""
    with _lock:
        _graph_fallbacks.append((name, _compile_id(), reason))
    LOG.warning("graph %s runs on the CPU: %s", name, reason)


def trace_artifacts(result) -> None:
    """Add a compiled graph's stages to Dynamo's structured trace (``TORCH_TRACE``)."""
    try:
        from torch._logging import trace_structured
    except ImportError:
        return
    artifacts = result.artifacts
    for stage, name in (("stablehlo", "neuron_stablehlo"), ("optimized", "neuron_optimized")):
        if stage in artifacts:
            trace_structured(
                "artifact",
                metadata_fn=lambda name=name: {"name": name, "encoding": "string"},
                payload_fn=lambda stage=stage: artifacts[stage],
            )
    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": "neuron_compile", "encoding": "json"},
        payload_fn=lambda: json.dumps(_summary(result)),
    )


def _summary(result) -> dict:
    return {
        "name": result.name,
        "target": result.target,
        "cache_hit": result.cache_hit,
        "stage_seconds": result.stage_seconds,
        "pass_seconds": result.pass_timings,
        "pass_counters": result.pass_counters,
        "estimated_device_seconds": result.estimate_seconds,
        "neff_bytes": len(result.neff or b""),
        "inputs": result.inputs,
        "outputs": result.outputs,
        "weights": [
            {k: w[k] for k in ("name", "shape", "dtype") if k in w} for w in result.weights
        ],
    }


@dataclass
class Report:
    """``torchneuron.report()``: what this process compiled, recompiled and ran on the CPU."""

    compiles: list[GraphCompile]
    recompiles: list[tuple[str, str, str]]  # (function, compile id, Dynamo's reason)
    graph_fallbacks: list[tuple[str, str, str]]  # (graph, compile id, reason)
    op_fallbacks: dict[str, str]  # eager op -> reason

    def __str__(self) -> str:
        lines = [f"{len(self.compiles)} graph(s) compiled for the neuron device"]
        for c in self.compiles:
            lines.append(
                f"  {c.name} [{c.frame or '-'}]: {c.route}, {c.seconds * 1e3:.1f} ms"
                + (f", cache {c.cache}" if c.cache else "")
            )
        lines.append(f"{len(self.recompiles)} recompile(s)")
        lines += [f"  {fn} [{cid}]: {reason}" for fn, cid, reason in self.recompiles]
        fallbacks = len(self.graph_fallbacks) + len(self.op_fallbacks)
        lines.append(f"{fallbacks} CPU fallback(s)")
        lines += [f"  graph {g} [{cid or '-'}]: {r}" for g, cid, r in self.graph_fallbacks]
        lines += [f"  op {op}: {r}" for op, r in sorted(self.op_fallbacks.items())]
        return "\n".join(lines)


def report(op_fallbacks: dict[str, str]) -> Report:
    """What this process compiled, recompiled and ran on the CPU, with the reasons
    (``op_fallbacks``: the eager device's, ``device.fallback.fallback_reasons()``)."""
    recompiles = []
    try:
        from torch._dynamo.utils import get_compilation_metrics

        for m in get_compilation_metrics():
            if m.recompile_reason:
                recompiles.append((m.co_name or "?", str(m.compile_id or ""), m.recompile_reason))
    except ImportError:
        pass
    with _lock:
        return Report(list(_compiles), recompiles, list(_graph_fallbacks), dict(op_fallbacks))


def clear() -> None:
    """Forget what was recorded (tests)."""
    with _lock:
        _compiles.clear()
        _graph_fallbacks.clear()
