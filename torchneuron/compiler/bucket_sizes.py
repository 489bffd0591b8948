"""The bucket sizes of dynamic dimensions: the ``buckets`` option and ``TORCHNEURON_BUCKETS``.

Apart from ``compiler/buckets.py`` (which pads graphs to them, and imports the lowering
and torch-mlir): the eager device reads the setting on every new shape class, and a
process that finds all its programs in the disk cache need not import the compiler
for that (~0.18 s on the 2-core machine).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchneuron import settings

MAX_BUCKETS = 64

# ``"auto"``: a ladder of two sizes per power of two (1, 2, 3, 4, 6, 8, 12, ..., 65536), so
# a padded size is at most 1.5x the true one and each octave of sizes costs at most two
# specializations; sizes above the last run exactly.
AUTO = "auto"
OFF = "off"  # TORCHNEURON_BUCKETS=off; the option's None
AUTO_BUCKETS = (1, 2) + tuple(
    size for power in range(1, 16) for size in (3 << (power - 1), 2 << power)
)


def parse_buckets(value: Any, where: str = "option 'buckets'") -> tuple[int, ...] | None:
    """The bucket sizes of ``value`` (a list of sizes, ``"auto"`` for ``AUTO_BUCKETS``,
    or None for no bucketing); ``ValueError`` naming ``where`` unless they are
    increasing positive ints."""
    if value is None:
        return None
    if value == AUTO:
        return AUTO_BUCKETS
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Sequence):
        raise ValueError(
            f"{where} must be a list of increasing positive sizes, e.g. [32, 64, 128], "
            f"not {type(value).__name__}"
        )
    if not value or len(value) > MAX_BUCKETS:
        raise ValueError(f"{where} must hold 1 to {MAX_BUCKETS} sizes, not {len(value)}")
    for size in value:
        if type(size) is not int or not 1 <= size <= 2**31:
            raise ValueError(f"{where}: {size!r} is not a positive int size")
    if any(b <= a for a, b in zip(value, value[1:])):
        raise ValueError(f"{where} must be strictly increasing, not {list(value)}")
    return tuple(value)


def buckets_from_env() -> tuple[int, ...] | None:
    """``TORCHNEURON_BUCKETS``: comma-separated sizes, ``auto``, or ``off``; unset is
    ``auto`` (``AUTO_BUCKETS``). ``SettingsError`` when malformed."""
    text = settings.env_text(settings.BUCKETS)
    if text is None or text.strip() == AUTO:
        return AUTO_BUCKETS
    if text.strip() == OFF:
        return None
    where = f"{settings.BUCKETS}={text!r}"
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise settings.SettingsError(
            f"{where} is not a comma-separated list of sizes (e.g. 32,64,128), auto or off",
            settings.BUCKETS,
        ) from None
    try:
        return parse_buckets(sizes, where)
    except ValueError as error:
        raise settings.SettingsError(str(error), settings.BUCKETS) from None
