"""Field checks for the values of a hostile trace file (``torch_trace`` reads with them).

A JSON number may be any size: an int of 400 digits, a float of 1e308. A time is a
number whose magnitude fits the trace (``MAX_TIME_US``), so arithmetic on it stays finite
and exact enough; an id or count is an int; a text is a ``str`` that UTF-8 can encode
(JSON's ``"\\ud800"`` escape makes a lone surrogate, which printing later fails on).
"""

from __future__ import annotations

import math
import re

# About 31 years in microseconds: past any trace, far below where floats stop being exact.
MAX_TIME_US = 1e15
# JSON numbers a JavaScript viewer (Perfetto, chrome://tracing) still reads exactly.
MAX_EXACT_INT = 1 << 53
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def json_type(value: object) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), "a number")


def brief(value: object) -> str:
    """A value of the file as a message shows it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_time(value: object) -> bool:
    """A finite number of microseconds, at most ``MAX_TIME_US`` in magnitude."""
    if is_int(value):
        return abs(value) <= MAX_TIME_US  # compared as ints: no overflow however long
    return isinstance(value, float) and math.isfinite(value) and abs(value) <= MAX_TIME_US


def is_id(value: object) -> bool:
    return is_int(value) and abs(value) < MAX_EXACT_INT


def is_text(value: object) -> bool:
    """A string UTF-8 can encode: no lone surrogate."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def readable(value: str) -> str:
    """``value`` with each lone surrogate replaced by U+FFFD."""
    return value if is_text(value) else _LONE_SURROGATE.sub("\ufffd", value)


def count(facts: dict, key: str, bad) -> int:
    value = facts.get(key)
    if not is_id(value) or value < 0:
        raise bad(f"args.neuron.{key} is {brief(value)}, not a count >= 0")
    return value


def text(facts: dict, key: str, bad) -> str:
    value = facts.get(key)
    if not is_text(value):
        raise bad(f"args.neuron.{key} is {brief(value)}, not a string (UTF-8 text)")
    return value
