"""``torch.profiler`` device events: every NEFF execution as a PrivateUse1 kernel event.

``csrc/neuron_profiler.cpp`` registers a Kineto activity profiler for the ``neuron``
backend; while a ``torch.profiler.profile(activities=[..., ProfilerActivity.PrivateUse1])``
session records, each execution is handed to it (``_C.profiler_record``) with:

- its name (the op, ``aten::add.Tensor``, a fused chain, or a compiled graph's NEFF);
- its start (when the host ran it) and length (the cost model's estimate of its device
  time, ``LoadedNeff.schedule``; the host time where a NEFF carries no schedule);
- the correlation id of the CPU op that launched it. Ops run on the device's execution
  thread after their CPU op returned, so the id is taken when the launch is queued
  (``streams.submit``); a fused chain carries the id of the op whose submission closed
  it. A synchronous execution takes the id of the op running it;
- its engine breakdown (busiest engine, estimated microseconds, HBM bytes, FLOPs).

Kineto then links each event to its CPU op, so ``prof.key_averages().table()`` shows the
device time per op and ``export_chrome_trace`` the device lane. ``torchneuron.profiler``
stays the richer view (engine lanes, collectives). The hook below costs one call per
execution when no session records.
"""

from __future__ import annotations

import json
import threading
import time

from torchneuron.device import _C, streams
from torchneuron.estimate.scheduler import busiest_engine

_installed = False
_lock = threading.Lock()


def ensure_hook() -> None:
    """Install the execution hook once (the runtime is loaded by then)."""
    global _installed
    if _installed:
        return
    with _lock:
        if not _installed:
            from torchneuron.runtime.loaded_neff import add_execute_hook

            add_execute_hook(_on_execute)
            _installed = True


def _on_execute(loaded, host_start: float, host_seconds: float) -> None:
    if not _C.profiler_recording():
        return
    correlation = streams.launch_correlation()
    if correlation < 0:
        correlation = _C.profiler_correlation()
    schedule = loaded.schedule
    device_seconds = schedule.latency_s if schedule is not None else host_seconds
    facts = {"estimated": schedule is not None, "core": loaded.core.description}
    if schedule is not None:
        busy = schedule.engine_busy_seconds()
        facts.update(
            engine=busiest_engine(busy),
            engines_us={e: round(t * 1e6, 3) for e, t in busy.items() if t},
            hbm_bytes=int(schedule.hbm_bytes),
            flops=int(schedule.flops),
        )
    members = json.dumps(facts)[1:-1]  # the object's members: the plugin wraps them
    ago = time.perf_counter() - host_start
    _C.profiler_record(
        loaded.name, ago, device_seconds, int(correlation), int(loaded.core.index), members
    )
