"""Where each rank of a ``neuron`` process group sits on the emulated machine.

``process_group._check_places`` learns every rank's place (host, node, logical core)
when a group is created and records the group's positions here; the c10d kernels
(``kernels._report``) read them for the profiler's collective records. Both import this
module, neither imports the other for it.
"""

from __future__ import annotations

from typing import Any

from torchneuron.target.topology import topology

# group name -> positions of the group's ranks on the emulated machine (by group rank)
_positions: dict[str, tuple[int, ...]] = {}


def machine_positions(places: list[tuple[str, str, int]]) -> tuple[int, ...]:
    """Each rank's logical core numbered across the emulated machine: nodes (hosts and
    torchrun nodes, in order of first appearance) times the cores of one node."""
    current = topology()
    per_node = current.logical_cores_per_chip * current.chip.chips_per_node
    nodes: dict[tuple[str, str], int] = {}
    positions = []
    for host, node, core in places:
        index = nodes.setdefault((host, node), len(nodes))
        positions.append(index * per_node + core)
    return tuple(positions)


def record(group_name: str, places: list[tuple[str, str, int]]) -> None:
    """Keep the positions of group ``group_name``'s ranks, placed at ``places``."""
    _positions[str(group_name)] = machine_positions(places)


def group_positions(process_group: Any) -> tuple[int, ...]:
    """Positions (``machine_positions``) of ``process_group``'s ranks, by group rank."""
    found = _positions.get(str(process_group.group_name))
    if found is not None:
        return found
    return tuple(range(process_group.size()))
