"""Liveness-based HBM planning: where each intermediate buffer lives, and the peak a program needs.

A program's HBM holds, while it runs: its weights (resident since load), its inputs
and outputs (the runtime's execution buffers), and the temporaries that pass values
between kernels. Values that stay inside a fused kernel live in SBUF and need no HBM.

Each temporary is live from the start of the kernel that writes it to the end of the
last kernel that reads it (times from the list schedule, so kernels running at the
same time on different engines hold their buffers at the same time). Offsets in one
temporaries arena are assigned greedily, largest buffer first, each at the lowest
offset that overlaps no buffer live at the same time (the "greedy by size" strategy
of tensor arena planners); the arena's size is what the program asks the runtime for
on top of its inputs and outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from torchneuron.target.topology import format_bytes

# Each buffer starts at a multiple of this (the runtime's allocation granularity, memory.py).
BUFFER_ALIGNMENT = 512


@dataclass
class Buffer:
    """One temporary: a value written to HBM by one kernel and read by later ones."""

    name: str
    size_bytes: int
    start_s: float  # when its producing kernel starts
    end_s: float  # when its last reader ends
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    offset: int = -1  # in the temporaries arena, after planning


@dataclass
class MemoryPlan:
    """Peak HBM of one execution, by category, with the temporaries' placement."""

    weights_bytes: int
    inputs_bytes: int
    outputs_bytes: int
    temporaries_bytes: int  # arena size after offset assignment
    temporaries_live_peak_bytes: int  # max over time of live temporaries (lower bound)
    buffers: list[Buffer]
    peak_time_s: float  # when the live temporaries peak
    program_bytes: int = 0

    @property
    def peak_hbm_bytes(self) -> int:
        """Everything this program holds in HBM at its peak (weights included)."""
        return (
            self.program_bytes
            + self.weights_bytes
            + self.inputs_bytes
            + self.outputs_bytes
            + self.temporaries_bytes
        )

    @property
    def execution_bytes(self) -> int:
        """What one execution allocates on top of the resident program and weights."""
        return self.inputs_bytes + self.outputs_bytes + self.temporaries_bytes

    def live_at_peak(self) -> list[Buffer]:
        """Temporaries live when the live set peaks, largest first."""
        live = [b for b in self.buffers if b.start_s <= self.peak_time_s < b.end_s]
        return sorted(live, key=lambda b: (-b.size_bytes, b.name))

    def to_json(self) -> dict:
        return {
            "peak_hbm_bytes": self.peak_hbm_bytes,
            "program_bytes": self.program_bytes,
            "weights_bytes": self.weights_bytes,
            "inputs_bytes": self.inputs_bytes,
            "outputs_bytes": self.outputs_bytes,
            "temporaries_bytes": self.temporaries_bytes,
            "temporaries_live_peak_bytes": self.temporaries_live_peak_bytes,
            "alignment": BUFFER_ALIGNMENT,
            "temporaries": [
                {
                    "name": b.name,
                    "shape": list(b.shape),
                    "dtype": b.dtype,
                    "size_bytes": b.size_bytes,
                    "offset": b.offset,
                    "live_us": [round(b.start_s * 1e6, 4), round(b.end_s * 1e6, 4)],
                }
                for b in self.buffers
            ],
        }

    @classmethod
    def from_json(cls, data: object) -> MemoryPlan:
        """A plan from ``to_json()`` output; ``ValueError`` naming the field if malformed."""
        data = json_object(data, "memory_plan")
        buffers = []
        for position, item in enumerate(json_list(data, "temporaries", "memory_plan")):
            where = f"memory_plan.temporaries[{position}]"
            item = json_object(item, where)
            live = json_list(item, "live_us", where, required=True)
            if len(live) != 2:
                raise ValueError(f"{where}.live_us has {len(live)} items, expected 2")
            start, end = (as_number(t, f"{where}.live_us") for t in live)
            buffers.append(
                Buffer(
                    json_text(item, "name", where, required=True),
                    json_int(item, "size_bytes", where, required=True),
                    start / 1e6,
                    end / 1e6,
                    [as_int(d, f"{where}.shape") for d in json_list(item, "shape", where)],
                    json_text(item, "dtype", where),
                    json_int(item, "offset", where, default=-1),
                )
            )
        plan = cls(
            *(
                json_int(data, key, "memory_plan")
                for key in (
                    "weights_bytes",
                    "inputs_bytes",
                    "outputs_bytes",
                    "temporaries_bytes",
                    "temporaries_live_peak_bytes",
                )
            ),
            buffers,
            0.0,
            json_int(data, "program_bytes", "memory_plan"),
        )
        plan.peak_time_s = _peak_time(buffers)[0]
        return plan

    def describe_largest(self, tensors: list[tuple[str, int]] | None = None, count: int = 5) -> str:
        """The largest tensors live at the peak (temporaries and the given others), as text."""
        entries = [(f"{b.name} {b.dtype}{b.shape}", b.size_bytes) for b in self.live_at_peak()]
        entries += list(tensors or [])
        entries.sort(key=lambda e: -e[1])
        return ", ".join(f"{name} ({format_bytes(size)})" for name, size in entries[:count])


def _aligned(nbytes: int) -> int:
    return -(-nbytes // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT


def _peak_time(buffers: list[Buffer]) -> tuple[float, int]:
    """(time, bytes) at which the sum of live buffer sizes is largest."""
    events = []
    for b in buffers:
        events.append((b.start_s, 1, b.size_bytes))
        events.append((b.end_s, 0, -b.size_bytes))  # frees sort before allocations at a tie
    events.sort()
    live = best = 0
    best_time = 0.0
    for time, _, delta in events:
        live += delta
        if live > best:
            best, best_time = live, time
    return best_time, best


def assign_offsets(buffers: list[Buffer]) -> int:
    """Give every buffer an offset (greedy by size, first fit); returns the arena size."""
    placed: list[Buffer] = []
    arena = 0
    for buffer in sorted(buffers, key=lambda b: (-b.size_bytes, b.start_s, b.name)):
        size = _aligned(buffer.size_bytes)
        overlapping = sorted(
            (p for p in placed if p.start_s < buffer.end_s and buffer.start_s < p.end_s),
            key=lambda p: p.offset,
        )
        offset = 0
        for other in overlapping:
            if offset + size <= other.offset:
                break
            offset = max(offset, other.offset + _aligned(other.size_bytes))
        buffer.offset = offset
        placed.append(buffer)
        arena = max(arena, offset + size)
    return arena


def plan_memory(
    buffers: list[Buffer], *, weights_bytes: int, inputs_bytes: int, outputs_bytes: int
) -> MemoryPlan:
    """Place ``buffers`` (their liveness already set) and total the program's HBM needs."""
    arena = assign_offsets(buffers)
    peak_time, live_peak = _peak_time(buffers)
    ordered = sorted(buffers, key=lambda b: (b.offset, b.name))
    return MemoryPlan(
        weights_bytes, inputs_bytes, outputs_bytes, arena, live_peak, ordered, peak_time
    )


# Reading fields of a JSON object for ``from_json`` (here and in scheduler.py): a field of
# the wrong type is a ValueError naming it, never a TypeError, KeyError or AttributeError.

_MISSING = object()


def _get(data: dict, key: str, where: str, required: bool, default: object) -> object:
    if key in data:
        return data[key]
    if required:
        raise ValueError(f"{where} lacks {key!r}")
    return default


def json_object(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where} is a {type(value).__name__}, expected an object")
    return value


def as_int(value: object, where: str) -> int:
    if type(value) is not int or not -(2**63) <= value < 2**63:
        raise ValueError(f"{where} is {value!r:.40}, expected an int64")
    return value


def as_number(value: object, where: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise ValueError(f"{where} is {value!r:.40}, expected a finite number")
    return float(value)


def json_int(data: dict, key: str, where: str, *, required: bool = False, default: int = 0) -> int:
    return as_int(_get(data, key, where, required, default), f"{where}.{key}")


def json_number(
    data: dict, key: str, where: str, *, required: bool = False, default: float = 0.0
) -> float:
    return as_number(_get(data, key, where, required, default), f"{where}.{key}")


def json_text(data: dict, key: str, where: str, *, required: bool = False) -> str:
    value = _get(data, key, where, required, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key} is {value!r:.40}, expected a string")
    return value


def json_list(data: dict, key: str, where: str, *, required: bool = False) -> list:
    value = _get(data, key, where, required, [])
    if not isinstance(value, list):
        raise ValueError(f"{where}.{key} is {value!r:.40}, expected a list")
    return value
