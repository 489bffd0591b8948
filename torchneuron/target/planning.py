"""The chips and instances the planner prices: ``hardware``'s, and Trainium1 (``trainium1``).

The compiler and the runtime look chips up in ``hardware.CHIPS`` (Trainium2, Trainium3);
the estimates of collectives and parallel plans look them up here, so a plan can also be
made for trn1, the chip of the published training runs we check plans against.
"""

from __future__ import annotations

from torchneuron.target import hardware, trainium1


def chip(target: str) -> hardware.ChipSpec:
    """The ``ChipSpec`` of ``target`` ("trn1", "trn2" or "trn3")."""
    found = hardware.CHIPS.get(target) or trainium1.CHIPS.get(target)
    if found is None:
        raise hardware.UnknownTargetError(
            f"unknown Neuron target {target!r}; known targets: {targets()}"
        )
    return found


def instance(name: str) -> hardware.InstanceSpec:
    """The ``InstanceSpec`` of an instance type or UltraServer name."""
    found = hardware.INSTANCES.get(name) or trainium1.INSTANCES.get(name)
    if found is None:
        raise hardware.UnknownTargetError(
            f"unknown instance {name!r}; known instances: {instances()}"
        )
    return found


def default_instance(target: str) -> str:
    """The instance a target's ranks are placed on unless told otherwise."""
    return {**hardware.DEFAULT_INSTANCE, **trainium1.DEFAULT_INSTANCE}[chip(target).name]


def targets() -> list[str]:
    return sorted([*hardware.CHIPS, *trainium1.CHIPS])


def instances() -> list[str]:
    return sorted([*hardware.INSTANCES, *trainium1.INSTANCES])
