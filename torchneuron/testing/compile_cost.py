"""What compiling thousands of one-off graphs may leave out of PyTorch's own work.

Dynamo times every new set of guards once when it builds them: it flushes the CPU
cache and evaluates them (``profile_guard_manager`` in ``torch/_dynamo/guards.py``),
to log the figure as the compile metric ``guard_latency_us``. On the 2-core machine
that is ~21 ms of every ``torch.compile`` of a one-op graph, about 18% of it (20
OpInfo entries compiled twice each: 4.4-4.6 s of CPU with it, 3.7 s without). The
OpInfo conformance worker and the test suite compile each graph once and never read
the metric, so they skip the measurement; the guards are still built and checked
against the frame, as before.
"""

from __future__ import annotations


def _unmeasured(*args, **kwargs) -> float:
    return 0.0


def skip_guard_latency_profiling() -> bool:
    """Stop Dynamo from timing each new guard set in this process; whether it did (False
    where this PyTorch has no such step)."""
    from torch._dynamo import guards

    if not callable(getattr(guards, "profile_guard_manager", None)):
        return False
    guards.profile_guard_manager = _unmeasured
    return True
