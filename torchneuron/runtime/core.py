"""Emulated logical NeuronCores: one HBM allocator each, looked up by device index.

A core lives as long as the topology it was built for: ``get_core(i)`` returns
the same object until the topology changes (``set_topology``, or ``reset()`` and a
changed environment), which gives fresh cores with empty HBM; NEFFs loaded before
stay on, and keep accounting against, the cores they were loaded on.
"""

from __future__ import annotations

import threading

from torchneuron.runtime.memory import HbmAllocator
from torchneuron.target import topology as topology_module
from torchneuron.target.hardware import ChipSpec
from torchneuron.target.topology import Topology


class NeuronCore:
    """One visible logical NeuronCore: ``lnc`` physical cores sharing one slice of HBM."""

    def __init__(self, topo: Topology, index: int) -> None:
        self.topology = topo
        self.index = index
        self.logical_core_id = topo.cores[index]
        self.chip: ChipSpec = topo.chip
        self.target = topo.target
        self.lnc = topo.lnc
        self.physical_core_ids = tuple(
            range(self.logical_core_id * topo.lnc, (self.logical_core_id + 1) * topo.lnc)
        )
        self.description = self._describe()
        self.hbm = HbmAllocator(topo.hbm_bytes_per_core, self.description)

    def _describe(self) -> str:
        where = f"{self.target}, LNC={self.lnc}"
        if self.logical_core_id != self.index:
            where += f", logical core {self.logical_core_id}"
        return f"NeuronCore {self.index} ({where})"

    def __repr__(self) -> str:
        return f"<{self.description}: HBM {self.hbm.allocated}/{self.hbm.capacity} bytes allocated>"


_lock = threading.Lock()
_cores: dict[tuple[Topology, int], NeuronCore] = {}


# The cores of the topology seen last, by index: the lookup every device allocation makes.
_recent: tuple[Topology, dict[int, NeuronCore]] | None = None


def get_core(index: int = 0) -> NeuronCore:
    """The visible core at device ``index`` (0-based) of the current topology."""
    global _recent
    topo = topology_module.topology()
    recent = _recent
    if recent is not None and recent[0] is topo:
        core = recent[1].get(index)
        if core is not None:
            return core
    else:
        recent = _recent = (topo, {})
    core = _cores.get((topo, index))
    if core is not None:
        recent[1][index] = core
        return core
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"NeuronCore index must be an int, got {type(index).__name__}")
    if not 0 <= index < topo.device_count:
        raise IndexError(
            f"NeuronCore index {index} is out of range: {topo.device_count} cores are visible "
            f"(logical cores {list(topo.cores)}; {topology_module.VISIBLE_CORES_VAR}="
            f"{_setting_repr(topo.visible_cores_setting)})"
        )
    with _lock:
        core = _cores.get((topo, index))
        if core is None:
            core = NeuronCore(topo, index)
            _cores[(topo, index)] = core
    recent[1][index] = core
    return core


def _setting_repr(value: str | None) -> str:
    return "unset" if value is None else repr(value)


def reset() -> None:
    """Drop the topology and every core built so far: the next ``get_core`` reads the
    environment again (tests use this)."""
    global _recent
    with _lock:
        _cores.clear()
        _recent = None
    topology_module.reset_topology()
