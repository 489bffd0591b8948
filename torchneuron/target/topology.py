"""Which NeuronCores this process sees, from the environment variables the real runtime reads.

- ``NEURON_PLATFORM_TARGET_OVERRIDE``: ``trn2`` (default) or ``trn3``, in any case.
- ``NEURON_LOGICAL_NC_CONFIG``: physical cores per logical core, 1 or 2 (default: the
  chip's default LNC, 2 on both chips).
- ``NEURON_RT_VISIBLE_CORES``: logical core ids this process may use, as ``"0-3"``,
  ``"1,3"``, ``"2"`` or a mix (``"0-1,4"``); default all logical cores of one chip.
  Ids may reach past one chip, up to the cores of one node (``ChipSpec.chips_per_node``).
- ``TORCHNEURON_HBM_BYTES_PER_CORE`` (ours): HBM capacity of each logical core, in bytes or
  with a unit (``"64MiB"``, ``"1.5GiB"``, ``"500MB"``); default chip HBM / logical cores per chip.
  Lets tests exercise out-of-memory handling on small machines.

The names are ``torchneuron.settings``' constants. ``topology()`` reads them once, at
first use, and keeps the result for the life of the process, as CUDA reads
``CUDA_VISIBLE_DEVICES``: changing the environment later has no effect until
``reset_topology()`` (``torchneuron.runtime.reset_runtime()`` calls it, with the cores).
``set_topology(build_topology({...}))`` installs one built from explicit values, for
callers that take settings as arguments (``neuronc``). A malformed value raises
``SettingsError`` (a ``TorchNeuronError`` and ``ValueError``) naming the variable.

``parse_byte_size`` and ``format_bytes`` read and write byte counts as people do
(``"64MiB"``, ``"1.50 GiB"``); every layer that prints a memory size uses the latter.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from torchneuron import settings
from torchneuron.settings import SettingsError
from torchneuron.target import hardware
from torchneuron.target.hardware import ChipSpec

TARGET_VAR = settings.TARGET
LNC_VAR = settings.LNC
VISIBLE_CORES_VAR = settings.VISIBLE_CORES
HBM_VAR = settings.HBM_BYTES_PER_CORE
ENV_VARS = (TARGET_VAR, LNC_VAR, VISIBLE_CORES_VAR, HBM_VAR)

DEFAULT_TARGET = "trn2"

# torch's name of the device these cores make (``torch.device("neuron")``, PrivateUse1
# renamed): the device layer, the backend and the front ends all spell it from here.
DEVICE_TYPE = "neuron"


@dataclass(frozen=True)
class Topology:
    """The emulated cores visible to this process."""

    target: str
    lnc: int
    cores: tuple[int, ...]  # visible logical core ids; device index i is cores[i]
    hbm_bytes_per_core: int
    hbm_overridden: bool = False
    chip: ChipSpec = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    # The NEURON_RT_VISIBLE_CORES text the cores came from (None: unset), for messages.
    visible_cores_setting: str | None = field(default=None, compare=False, repr=False)

    @property
    def device_count(self) -> int:
        return len(self.cores)

    @property
    def logical_cores_per_chip(self) -> int:
        return self.chip.logical_cores_per_chip(self.lnc)


def _env_error(var: str, value: str, expected: str) -> SettingsError:
    return SettingsError(f"invalid {var}={value!r}: expected {expected}", var)


def parse_target(value: str | None) -> ChipSpec:
    """The chip named by ``value`` (any case; unset or blank: ``DEFAULT_TARGET``)."""
    name = settings.parse_choice(TARGET_VAR, value, tuple(hardware.CHIPS), DEFAULT_TARGET)
    return hardware.CHIPS[name]


def parse_lnc(value: str | None, chip: ChipSpec) -> int:
    if value is None or not value.strip():
        return chip.default_lnc
    expected = f"one of {list(chip.supported_lnc)} for {chip.name}"
    try:
        lnc = int(value.strip())
    except ValueError:
        raise _env_error(LNC_VAR, value, expected) from None
    if lnc not in chip.supported_lnc:
        raise _env_error(LNC_VAR, value, expected)
    return lnc


def parse_visible_cores(value: str | None, chip: ChipSpec, lnc: int) -> tuple[int, ...]:
    per_chip = chip.logical_cores_per_chip(lnc)
    if value is None or not value.strip():
        return tuple(range(per_chip))
    limit = per_chip * chip.chips_per_node
    expected = (
        f'logical core ids such as "0-3", "1,3" or "2", each below {limit} '
        f"({chip.chips_per_node} {chip.name} chips x {per_chip} logical cores at LNC={lnc}), "
        "without repeats"
    )
    cores: list[int] = []
    for part in value.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if match is None:
            raise _env_error(VISIBLE_CORES_VAR, value, expected)
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise _env_error(
                VISIBLE_CORES_VAR, value, expected + f" (range {first}-{last} is empty)"
            )
        cores.extend(range(first, last + 1))
    if any(core >= limit for core in cores) or len(set(cores)) != len(cores):
        raise _env_error(VISIBLE_CORES_VAR, value, expected)
    return tuple(cores)


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kib": 1024,
    "kb": 1000,
    "m": 1024**2,
    "mib": 1024**2,
    "mb": 1000**2,
    "g": 1024**3,
    "gib": 1024**3,
    "gb": 1000**3,
    "t": 1024**4,
    "tib": 1024**4,
    "tb": 1000**4,
}


def parse_byte_size(value: str, var: str = HBM_VAR) -> int:
    """Bytes from ``"1048576"``, ``"64MiB"``, ``"1.5 GiB"`` or ``"500MB"``; must be positive."""
    expected = 'a positive byte count such as "1048576", "64MiB", "1.5GiB" or "500MB"'
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zA-Z]*)\s*", value)
    if match is None or match.group(2).lower() not in _UNITS:
        raise _env_error(var, value, expected)
    nbytes = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if nbytes <= 0:
        raise _env_error(var, value, expected)
    return nbytes


def format_bytes(nbytes: int) -> str:
    """``nbytes`` in binary units, e.g. ``"1.50 GiB"``; plain bytes below 1 KiB."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.2f} {unit}"
    raise AssertionError("unreachable")


def build_topology(values: Mapping[str, str | None]) -> Topology:
    """A ``Topology`` from explicit values of the ``ENV_VARS``, by variable name (absent,
    None or blank: the default)."""
    chip = parse_target(values.get(TARGET_VAR))
    lnc = parse_lnc(values.get(LNC_VAR), chip)
    visible = values.get(VISIBLE_CORES_VAR)
    cores = parse_visible_cores(visible, chip, lnc)
    hbm_value = values.get(HBM_VAR)
    if hbm_value is not None and hbm_value.strip():
        hbm_bytes, overridden = parse_byte_size(hbm_value), True
    else:
        hbm_bytes, overridden = chip.hbm_bytes_per_logical_core(lnc), False
    return Topology(
        target=chip.name,
        lnc=lnc,
        cores=cores,
        hbm_bytes_per_core=hbm_bytes,
        hbm_overridden=overridden,
        chip=chip,
        visible_cores_setting=visible if visible is not None and visible.strip() else None,
    )


def environment() -> dict[str, str]:
    """The ``ENV_VARS`` that are set (and not blank) in this process's environment."""
    found = {var: settings.env_text(var) for var in ENV_VARS}
    return {var: value for var, value in found.items() if value is not None}


_lock = threading.Lock()
_current: Topology | None = None


def topology() -> Topology:
    """The visible cores: read from the environment at first use, then kept until
    ``reset_topology()`` or ``set_topology()``."""
    global _current
    current = _current
    if current is not None:
        return current
    with _lock:
        if _current is None:
            _current = build_topology(environment())
        return _current


def hbm_bytes_per_core(target: str, lnc: int) -> int:
    """One logical core's HBM as this process emulates it: the ``HBM_VAR`` override when
    set (every emulated core has that capacity, so a compile must refuse what a run would),
    else what ``target``'s chip has at ``lnc``."""
    current = topology()
    if current.hbm_overridden:
        return current.hbm_bytes_per_core
    return hardware.chip(target).hbm_bytes_per_logical_core(lnc)


def hbm_source(target: str) -> str:
    """Where ``hbm_bytes_per_core``'s figure comes from, for messages."""
    if topology().hbm_overridden:
        return f"{HBM_VAR}={settings.env_text(HBM_VAR)!r}"
    return f"the {target} chip"


def set_topology(new: Topology) -> None:
    """Use ``new`` from now on instead of what the environment says (until a reset).

    Cores belong to the topology they were built for: ``get_core`` gives cores of
    ``new``; NEFFs loaded before stay on, and keep accounting against, their cores.
    """
    global _current
    if not isinstance(new, Topology):
        raise TypeError(f"set_topology expects a Topology, got {type(new).__name__}")
    with _lock:
        _current = new


def reset_topology() -> None:
    """Forget the topology: the next ``topology()`` reads the environment again."""
    global _current
    with _lock:
        _current = None
