"""A chain of launches held back for fusion: how their inputs are wired, which outputs live.

``fusion.Fuser`` appends launches to a ``Chain`` while they fuse. ``add`` wires each
input to an output of the chain (the very tensor object an earlier launch returned,
laid out as it was then) or to an outside tensor (equal ones are one input), and
refuses an input that reads the chain's memory otherwise (a view of an intermediate,
an output reshaped in place since). ``live`` tells which outputs anything besides
the chain may read, from reference counts: the fused program writes only those.
"""

from __future__ import annotations

import sys
import sysconfig
import weakref
from typing import Any

import torch

# Liveness is judged from reference counts, exact only with the GIL (``Chain.live``).
REFERENCE_COUNTS_EXACT = sys.implementation.name == "cpython" and not sysconfig.get_config_var(
    "Py_GIL_DISABLED"
)


class Chain:
    """Launches held back for one device, and how their inputs are wired."""

    __slots__ = (
        "device",
        "stream",
        "launches",
        "wiring",
        "outside",
        "_produced",
        "_storages",
        "_storage_uses",
        "_outside",
    )

    def __init__(self, device: int, stream: Any):
        self.device = device
        self.stream = stream
        self.launches: list = []
        # per launch, per input: an outside index (int) or (launch index, output index)
        self.wiring: list[tuple] = []
        # the outside tensors' host views, by outside index (what the program reads)
        self.outside: list = []
        # id of each output tensor -> ((launch index, output index), its layout); the
        # chain holds the tensors, so an id names one tensor while the chain lives (and
        # the dispatcher hands an op the very tensor object an earlier op returned)
        self._produced: dict[int, tuple[tuple[int, int], tuple]] = {}
        self._storages: set[int] = set()  # the outputs' storages
        # (launch index, output index) -> [the use count its storage has if only the
        # chain holds it: the tensor, what each launch's capture of it holds, and
        # ``_storage_use_count``'s own; what one capture holds] (None: unknown, live)
        self._storage_uses: dict[tuple[int, int], list[int] | None] = {}
        # (id, data pointer, shape, strides) of an outside tensor -> its index
        self._outside: dict[tuple, int] = {}

    def add(self, launch) -> bool:
        """Append ``launch``; False (nothing changed) when an input reads memory of the
        chain other than one of its outputs as such (a view of an intermediate)."""
        wiring: list = []
        new: dict[tuple, int] | None = None
        new_views: list = []
        produced = self._produced
        outside = self._outside
        for position, tensor in enumerate(launch.inputs):
            found = produced.get(id(tensor))
            if found is not None:
                link, layout = found
                if _layout(tensor) != layout:  # reshaped in place (t_, unsqueeze_) since
                    return False
                wiring.append(link)
                continue
            if self._storages and tensor.untyped_storage().data_ptr() in self._storages:
                return False
            key = (id(tensor), *_layout(tensor))
            index = outside.get(key)
            if index is None:
                if new is None:
                    new = {}
                index = new.get(key)
                if index is None:
                    index = new[key] = len(self.outside) + len(new_views)
                    new_views.append(launch.host_inputs[position])
            wiring.append(index)
        if new:
            outside.update(new)
            self.outside.extend(new_views)
        index = len(self.launches)
        storage_uses = self._storage_uses
        for link in wiring:
            if type(link) is tuple:
                expected = storage_uses[link]
                if expected is not None:
                    expected[0] += expected[1]  # what this launch's capture holds
        for position, output in enumerate(launch.outputs):
            produced[id(output)] = ((index, position), _layout(output))
            self._storages.add(output.untyped_storage().data_ptr())
            # Just captured, nothing else can hold it yet: the tensor, this count's own,
            # and what one capture holds (one host view, or none if captures keep the
            # memory otherwise): each later capture of it adds as much (a capture that
            # held less would hide another holder: test_fusion's detach test pins it).
            count = _storage_use_count(output)
            storage_uses[(index, position)] = [count, count - 2] if count in (2, 3) else None
        self.launches.append(launch)
        self.wiring.append(tuple(wiring))
        return True

    def live(self) -> tuple[bool, ...]:
        """Per output of the chain (launch by launch), whether anything beyond the chain
        may read it; the program need not write the others.

        An output is dead when the only references to it are the chain's own: to the
        Python object, its launch's ``outputs`` and each later launch's ``inputs`` and
        arguments (counted by identity); to the tensor, its Python object alone (a view's
        base, any C++ holder adds one); to its storage, the tensor and the launches'
        captures of it (a ``detach()``ed alias, an output autograd saved for the backward
        pass add one); no weak reference; and it does not require grad. Any other
        reference, even a transient one, keeps it live.
        """
        if not REFERENCE_COUNTS_EXACT:
            return (True,) * sum(len(launch.outputs) for launch in self.launches)
        held = _references_held(self.launches, self._produced)
        storage_uses = self._storage_uses
        mask = []
        for index, launch in enumerate(self.launches):
            outputs = launch.outputs
            for position in range(len(outputs)):  # (enumerate's reused tuple would hold one)
                tensor = outputs[position]
                expected_storage = storage_uses[(index, position)]
                # getrefcount's argument, the name ``tensor``, the ``outputs`` list
                referenced = sys.getrefcount(tensor) != 3 + held.get(id(tensor), 0)
                mask.append(
                    referenced
                    or tensor._use_count() != 1
                    or tensor.requires_grad  # autograd may have saved it
                    or expected_storage is None
                    or _storage_use_count(tensor) != expected_storage[0]
                    or weakref.getweakrefcount(tensor) != 0
                )
        if not any(mask):  # nothing reads the chain's results: keep the last launch's
            mask[-len(self.launches[-1].outputs) :] = [True] * len(self.launches[-1].outputs)
        return tuple(mask)

    def structure(self) -> tuple:
        return (tuple(launch.key for launch in self.launches), tuple(self.wiring))


def _references_held(launches: list, produced: dict) -> dict[int, int]:
    """id of each output -> the references later launches hold to it (``inputs`` and
    arguments, once per occurrence). A function of its own: a loop variable left bound
    to a tensor would be one more reference."""
    held: dict[int, int] = {}
    for launch in launches:
        for tensor in launch.inputs:
            if id(tensor) in produced:
                held[id(tensor)] = held.get(id(tensor), 0) + 1
        for value in launch.values:
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, torch.Tensor) and id(item) in produced:
                    held[id(item)] = held.get(id(item), 0) + 1
    return held


def _layout(tensor: torch.Tensor) -> tuple:
    """Where and how ``tensor`` lies in memory (an op may change it in place)."""
    return (tensor.data_ptr(), tensor.shape, tensor.stride())


def _storage_use_count(tensor: torch.Tensor) -> int:
    """References to ``tensor``'s storage (counting the one this call makes)."""
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata)
