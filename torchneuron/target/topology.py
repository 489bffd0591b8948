"""Which NeuronCores this process sees, from the environment variables the real runtime reads.

- ``NEURON_PLATFORM_TARGET_OVERRIDE``: ``trn2`` (default) or ``trn3``.
- ``NEURON_LOGICAL_NC_CONFIG``: physical cores per logical core, 1 or 2 (default: the
  chip's default LNC, 2 on both chips).
- ``NEURON_RT_VISIBLE_CORES``: logical core ids this process may use, as ``"0-3"``,
  ``"1,3"``, ``"2"`` or a mix (``"0-1,4"``); default all logical cores of one chip.
  Ids may reach past one chip, up to the cores of one node (``ChipSpec.chips_per_node``).
- ``TORCHNEURON_HBM_BYTES_PER_CORE`` (ours): HBM capacity of each logical core, in bytes or
  with a unit (``"64MiB"``, ``"1.5GiB"``, ``"500MB"``); default chip HBM / logical cores per chip.
  Lets tests exercise out-of-memory handling on small machines.

``topology()`` re-reads the variables on every call (a few dictionary look-ups) and
returns a cached ``Topology`` while they are unchanged; ``reset()`` drops the cache.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field

from torchneuron.target import hardware
from torchneuron.target.hardware import ChipSpec

TARGET_VAR = "NEURON_PLATFORM_TARGET_OVERRIDE"
LNC_VAR = "NEURON_LOGICAL_NC_CONFIG"
VISIBLE_CORES_VAR = "NEURON_RT_VISIBLE_CORES"
HBM_VAR = "TORCHNEURON_HBM_BYTES_PER_CORE"
ENV_VARS = (TARGET_VAR, LNC_VAR, VISIBLE_CORES_VAR, HBM_VAR)

DEFAULT_TARGET = "trn2"


@dataclass(frozen=True)
class Topology:
    """The emulated cores visible to this process."""

    target: str
    lnc: int
    cores: tuple[int, ...]  # visible logical core ids; device index i is cores[i]
    hbm_bytes_per_core: int
    hbm_overridden: bool = False
    chip: ChipSpec = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @property
    def device_count(self) -> int:
        return len(self.cores)

    @property
    def logical_cores_per_chip(self) -> int:
        return self.chip.logical_cores_per_chip(self.lnc)


def _env_error(var: str, value: str, expected: str) -> ValueError:
    return ValueError(f"invalid {var}={value!r}: expected {expected}")


def parse_target(value: str | None) -> ChipSpec:
    if value is None or not value.strip():
        return hardware.CHIPS[DEFAULT_TARGET]
    target = value.strip().lower()
    if target not in hardware.CHIPS:
        raise _env_error(TARGET_VAR, value, f"one of {sorted(hardware.CHIPS)}")
    return hardware.CHIPS[target]


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


def build_topology(environ: dict[str, str] | os._Environ) -> Topology:
    """A ``Topology`` from a mapping of environment variables (``os.environ`` or a test's dict)."""
    chip = parse_target(environ.get(TARGET_VAR))
    lnc = parse_lnc(environ.get(LNC_VAR), chip)
    cores = parse_visible_cores(environ.get(VISIBLE_CORES_VAR), chip, lnc)
    hbm_value = environ.get(HBM_VAR)
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
    )


_lock = threading.Lock()
_cached: tuple[tuple[str | None, ...], Topology] | None = None


# os.environ keeps the encoded process environment in ``_data``; reading it there
# skips the per-lookup encoding, which matters on the per-op path (every device
# allocation asks for its core).
_encode = getattr(os.environ, "encodekey", None)
_ENV_KEYS = tuple(_encode(var) for var in ENV_VARS) if _encode is not None else ()


def _environment_key() -> tuple:
    data = getattr(os.environ, "_data", None)
    if data is not None and _ENV_KEYS:
        get = data.get
        return tuple([get(k) for k in _ENV_KEYS])
    return tuple([os.environ.get(var) for var in ENV_VARS])


def topology() -> Topology:
    """The current topology; re-read whenever one of ``ENV_VARS`` changed."""
    global _cached
    environ = os.environ
    key = _environment_key()
    cached = _cached
    if cached is not None and cached[0] == key:
        return cached[1]
    built = build_topology(environ)
    with _lock:
        _cached = (key, built)
    return built


def reset() -> None:
    """Forget the cached topology (and, through ``core.reset_cores``, the cores built on it)."""
    global _cached
    with _lock:
        _cached = None
