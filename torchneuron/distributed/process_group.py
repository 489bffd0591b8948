"""Creating a ``neuron`` process group: gloo as the transport, each rank bound to a core.

``create_backend`` is what ``dist.Backend.register_backend`` calls for every group
whose backend is ``"neuron"`` (the world group and each ``new_group``/``DeviceMesh``
sub-group). For each it:

1. installs the c10d kernels (``kernels.install``; once per process);
2. binds this rank to a logical NeuronCore (first group only): the current ``neuron``
   device, or, while that is still device 0 and ``LOCAL_RANK`` is set, device
   ``LOCAL_RANK`` (with ``NEURON_RT_VISIBLE_CORES`` naming one core, that core) — as the
   real runtime gives each local rank its core;
3. creates the group's ``ProcessGroupGloo`` on the group's store;
4. exchanges each rank's place — (host, node, logical core) — through the store, and
   refuses two ranks on one core of one node with an error naming both. A node is a
   torchrun node (``GROUP_RANK``), so two "nodes" run on one host are two emulated
   instances. The places give each rank's position on the emulated machine (instance,
   chip, core), which the collectives' cost estimates use.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

import torch

from torchneuron.distributed import positions
from torchneuron.errors import TorchNeuronError


class DistributedSetupError(TorchNeuronError):
    """A process group the emulated machine cannot hold (no core for a rank, two ranks
    on one core)."""


_lock = threading.Lock()
# This process's logical NeuronCore, once bound: (device index, logical core id).
_bound: tuple[int, int] | None = None


def create_backend(options: Any, backend_options: Any = None) -> Any:
    """The backend of one ``neuron`` group (``register_backend(..., extended_api=True)``)."""
    import torch.distributed as dist

    from torchneuron.distributed import kernels

    kernels.install()
    device, core = bind_to_core()
    backend = dist.ProcessGroupGloo(
        options.store, options.group_rank, options.group_size, timeout=options.timeout
    )
    backend.options.global_ranks_in_group = list(options.global_ranks_in_group)
    backend.options.group_name = options.group_id
    _check_places(options, backend, core)
    return backend


def bind_to_core() -> tuple[int, int]:
    """Bind this process to its logical NeuronCore (once); returns (device index, core id)."""
    global _bound
    with _lock:
        if _bound is not None:
            return _bound
        from torchneuron.target.topology import topology

        neuron = torch.neuron  # type: ignore[attr-defined]
        cores = topology().cores
        device = neuron.current_device()
        local_rank = os.environ.get("LOCAL_RANK")
        if device == 0 and local_rank is not None and len(cores) > 1:
            try:
                wanted = int(local_rank)
            except ValueError:
                raise DistributedSetupError(
                    f"LOCAL_RANK={local_rank!r} is not a rank number"
                ) from None
            if not 0 <= wanted < len(cores):
                raise DistributedSetupError(
                    f"LOCAL_RANK={wanted} has no logical NeuronCore: this process sees "
                    f"{len(cores)} ({_cores_text(cores)}). Run at most {len(cores)} ranks per "
                    "node, or make more cores visible with NEURON_RT_VISIBLE_CORES (a "
                    f"{topology().target} chip has {topology().logical_cores_per_chip} logical "
                    f"cores at LNC={topology().lnc}; ids go up to the node's chips)"
                )
            device = wanted
            neuron.set_device(device)
        _bound = (device, cores[device])
        return _bound


def _cores_text(cores: tuple[int, ...]) -> str:
    return "logical core " + ", ".join(str(c) for c in cores)


def _node() -> str:
    return os.environ.get("GROUP_RANK", "0")


def _check_places(options: Any, backend: Any, core: int) -> None:
    """Share each rank's (host, node, core); refuse two ranks on one core."""
    store = options.store
    rank, size = options.group_rank, options.group_size
    host = socket.gethostname()
    store.set(f"torchneuron/place/{rank}", f"{host}\t{_node()}\t{core}")
    places = []
    for other in range(size):
        text = store.get(f"torchneuron/place/{other}").decode()
        other_host, node, other_core = text.split("\t")
        places.append((other_host, node, int(other_core)))
    seen: dict[tuple[str, str, int], int] = {}
    for other, place in enumerate(places):
        if place in seen:
            first = seen[place]
            global_ranks = list(options.global_ranks_in_group) or list(range(size))
            raise DistributedSetupError(
                f"ranks {global_ranks[first]} and {global_ranks[other]} are both on logical "
                f"NeuronCore {place[2]} of host {place[0]} (node {place[1]}): each rank needs "
                "its own core. Call torch.neuron.set_device(LOCAL_RANK) in each process (or "
                "give each its own NEURON_RT_VISIBLE_CORES)"
            )
        seen[place] = other
    positions.record(options.group_id, places)
