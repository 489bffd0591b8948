"""``nki.profile``: run a kernel, schedule it, and show where the time goes.

``nki.profile(kernel, trace_file="k.json")(*arrays)`` returns a ``KernelProfile`` (the
outputs, the schedule, the memory plan and ``summary()``) and, given ``trace_file``, writes a
Chrome/Perfetto trace (open it in https://ui.perfetto.dev): one process for the kernel, one
lane per engine and DMA queue, one slice per instruction named after it, with its kernel
line and operand shapes as arguments.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from torchneuron.files import write_atomically
from torchneuron.nki import trace as _trace
from torchneuron.nki.kernel import KernelRun, _as_kernel

_LANES = (_trace.TENSOR, _trace.VECTOR, _trace.SCALAR, _trace.GPSIMD)


@dataclass
class KernelProfile:
    run: KernelRun

    @property
    def outputs(self):
        return self.run.outputs

    @property
    def seconds(self) -> float:
        return self.run.seconds

    def summary(self) -> str:
        """Estimated time, per-engine busy time and utilization, instruction counts, SBUF and
        PSUM high-water marks."""
        schedule = self.run.schedule
        chip = schedule.chip
        counts: dict[str, int] = {}
        for slot in schedule.slots:
            key = _trace.DMA if slot.lane.startswith(_trace.DMA) else slot.lane
            counts[key] = counts.get(key, 0) + 1
        busy = schedule.busy_seconds()
        lines = [
            f"kernel {self.run.kernel_name} on {chip.name}: {len(schedule.slots)} instructions, "
            f"estimated {schedule.seconds * 1e6:.3f} us",
            f"{'engine':<8} {'instrs':>7} {'busy us':>10} {'util':>6}",
        ]
        for lane in (*_LANES, _trace.DMA):
            if lane in counts:
                seconds = busy.get(lane, 0.0)
                share = seconds / schedule.seconds if schedule.seconds else 0.0
                lines.append(f"{lane:<8} {counts[lane]:>7} {seconds * 1e6:>10.3f} {share:>6.1%}")
        plan = self.run.plan
        lines.append(
            f"SBUF high water: {plan.sbuf_high_water} of {chip.sbuf_bytes_per_partition} bytes "
            f"per partition; PSUM high water: {plan.psum_high_water} of {chip.psum_banks} banks"
        )
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        schedule = self.run.schedule
        pid = 1
        lanes = list(_LANES) + [
            f"{_trace.DMA}{k}" for k in range(schedule.chip.dma_engines_per_core)
        ]
        used = {slot.lane for slot in schedule.slots}
        lanes = [lane for lane in lanes if lane in used or lane in _LANES]
        tids = {lane: i + 1 for i, lane in enumerate(lanes)}
        events: list[dict] = [
            {
                "name": "process_name",
                "ph": "M",
                "pid": pid,
                "args": {"name": f"nki kernel {self.run.kernel_name} (estimated)"},
            },
        ]
        for lane, tid in tids.items():
            events.append(
                {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": lane}}
            )
            events.append(
                {
                    "name": "thread_sort_index",
                    "ph": "M",
                    "pid": pid,
                    "tid": tid,
                    "args": {"sort_index": tid},
                }
            )
        for slot in schedule.slots:
            instr = slot.instruction
            start = round(slot.start * 1e6, 3)
            end = round(slot.end * 1e6, 3)
            events.append(
                {
                    "name": instr.name,
                    "cat": "instruction",
                    "ph": "X",
                    "pid": pid,
                    "tid": tids[slot.lane],
                    "ts": start,
                    "dur": round(end - start, 3),
                    "args": {
                        "index": instr.index,
                        "line": instr.location,
                        "operands": instr.operands(),
                    },
                }
            )
        return {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {"producer": "torchneuron.nki.profile", "summary": self.summary()},
        }

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        write_atomically(path, json.dumps(self.chrome_trace()).encode())


def profile(kernel, *, trace_file: str | os.PathLike[str] | None = None, target=None):
    """``nki.profile(kernel)(*arrays)`` -> ``KernelProfile`` (outputs, schedule, summary)."""
    k = _as_kernel(kernel, target)

    def call(*args, **kwargs) -> KernelProfile:
        result = KernelProfile(k.run(args, kwargs, execute=True, estimate=True))
        if trace_file is not None:
            result.export_chrome_trace(trace_file)
        return result

    return call
