"""The JSON of NEFF members: the one parser and the schema nodes the member schemas are made of.

``parse_json`` is the one JSON parser for NEFF members: oversized integers, NaN, infinities,
duplicate keys, too many values and too deep nesting become ``NeffError`` (never the
``ValueError``, ``RecursionError`` or ``MemoryError`` that ``json.loads`` raises).

A schema is data: nested ``Record``, ``Table``, ``Array``, ``Integer``, ``Number``,
``Text``, ``Choice`` and ``AnyJson`` nodes, each bounding what it accepts (integers
within int64 or tighter, finite floats, string lengths, list sizes, nesting depth).
``check_member`` applies one to a parsed member and turns the first violation into one
``NeffError`` line naming the member and the JSON path of the bad field. The members'
schemas, built from these nodes, are in ``schema.py``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchneuron.neff.dynamic import check_dynamic
from torchneuron.neff.errors import NeffError
from torchneuron.neff.tarball import MAX_JSON_MEMBER_BYTES

# Limits on a JSON member as text (the tarball's, which refuses larger ones before
# decompressing them) and as values.
MAX_JSON_BYTES = MAX_JSON_MEMBER_BYTES
MAX_JSON_VALUES = 1 << 22  # numbers, strings, lists and objects in one member
# Limits on one value.
MAX_DEPTH = 32  # nesting of lists and objects (the compiler writes at most 5)
MAX_ITEMS = 1 << 20  # items of one list, keys of one object
MAX_TEXT = 1 << 16  # characters of one string
MAX_NAME = 1024  # characters of a name (variable, engine, key)
MAX_RANK = 64  # dimensions of one shape
INT64_MAX = 2**63 - 1
# Digits of an integer literal that is parsed exactly; longer ones are too large anyway.
_MAX_INTEGER_DIGITS = 100


# -- parsing --------------------------------------------------------------------------


class HugeInteger:
    """An integer literal too long to convert (Python refuses beyond 4,300 digits): kept
    as its digit count so the schema can name the field that holds it."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


def parse_json(data: bytes | bytearray | memoryview, member: str) -> Any:
    """The JSON value of ``member``'s bytes, parsed within the limits above."""
    if len(data) > MAX_JSON_BYTES:
        raise NeffError(f"{member} is {len(data)} bytes, more than the {MAX_JSON_BYTES}-byte limit")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise NeffError(
            f"{member} is not valid JSON: not UTF-8 ({error.reason} at byte {error.start})"
        ) from None
    # Strings, lists and objects are counted from the text (an upper bound, cheap in C),
    # numbers as they are parsed, so no member can expand to gigabytes of Python objects.
    containers = text.count("[") + text.count("{") + text.count('"') // 2
    if containers > MAX_JSON_VALUES:
        raise NeffError(f"{member} holds more than {MAX_JSON_VALUES} JSON values")
    numbers = 0

    def parse_int(literal: str) -> int | HugeInteger:
        nonlocal numbers
        numbers += 1
        if numbers + containers > MAX_JSON_VALUES:
            raise NeffError(f"{member} holds more than {MAX_JSON_VALUES} JSON values")
        digits = len(literal) - literal.startswith("-")
        return int(literal) if digits <= _MAX_INTEGER_DIGITS else HugeInteger(digits)

    def parse_float(literal: str) -> float:
        nonlocal numbers
        numbers += 1
        if numbers + containers > MAX_JSON_VALUES:
            raise NeffError(f"{member} holds more than {MAX_JSON_VALUES} JSON values")
        return float(literal)  # 1e999 is inf: the schema refuses it with its path

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict:
        value = dict(pairs)
        if len(value) != len(pairs):
            seen: set[str] = set()
            twice = next(key for key, _ in pairs if key in seen or seen.add(key))
            raise NeffError(f"{member} is not valid JSON: an object has key {twice!r:.80} twice")
        return value

    try:
        return json.loads(
            text,
            parse_int=parse_int,
            parse_float=parse_float,
            parse_constant=float,  # NaN and Infinity: the schema refuses them with their path
            object_pairs_hook=unique_keys,
        )
    except RecursionError:
        raise NeffError(
            f"{member} is not valid JSON: nested more than {MAX_DEPTH} levels deep"
        ) from None
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        raise NeffError(f"{member} is not valid JSON: {error}") from None


# -- schema nodes -----------------------------------------------------------------------


class Invalid(Exception):
    """A field breaks the schema: raised inside the checks, turned into ``NeffError``."""

    def __init__(self, path: tuple, text: str) -> None:
        super().__init__(text)
        self.path = path
        self.text = text


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def render_path(path: tuple) -> str:
    """``('variables', 2, 'shape', 1)`` -> ``variables[2].shape[1]``."""
    text = ""
    for key in path:
        if isinstance(key, int):
            text += f"[{key}]"
        elif _IDENTIFIER.fullmatch(key) and len(key) <= 64:
            text += f".{key}" if text else key
        else:
            text += f"[{key[:64]!r}]"
    return text or "the top level"


def show(value: Any) -> str:
    """A short description of a JSON value for a message (never its whole text)."""
    if isinstance(value, HugeInteger):
        return f"an integer of {value.digits} digits"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"{value[:40]!r}... ({len(value)} characters)"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object with {len(value)} keys"
    return f"a {type(value).__name__}"


class Node:
    """One schema node: ``check`` raises ``Invalid`` naming the path of what is wrong."""

    def check(self, value: Any, path: tuple) -> None:
        raise NotImplementedError


def _kind_error(value: Any, path: tuple, expected: str) -> Invalid:
    return Invalid(path, f"is {show(value)}, expected {expected}")


@dataclass(frozen=True)
class Integer(Node):
    low: int = 0
    high: int = INT64_MAX

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is not int:  # bool is not an integer here
            if isinstance(value, HugeInteger):
                raise Invalid(path, f"is {show(value)}, more than {self.high}")
            raise _kind_error(value, path, "an integer")
        if value < self.low:
            raise Invalid(path, f"is {show(value)}, less than {self.low}")
        if value > self.high:
            raise Invalid(path, f"is {show(value)}, more than {self.high}")


@dataclass(frozen=True)
class Number(Node):
    """A finite float, or an integer within int64 (JSON writes 2.0 as 2.0, 2 as 2)."""

    low: float = 0.0
    high: float = math.inf

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is int:
            if abs(value) > INT64_MAX:
                raise Invalid(path, f"is {show(value)}, beyond the int64 range")
        elif type(value) is float:
            if not math.isfinite(value):
                raise Invalid(path, f"is {show(value)}, not a finite number")
        elif isinstance(value, HugeInteger):
            raise Invalid(path, f"is {show(value)}, beyond the int64 range")
        else:
            raise _kind_error(value, path, "a number")
        if value < self.low:
            raise Invalid(path, f"is {show(value)}, less than {self.low}")
        if value > self.high:
            raise Invalid(path, f"is {show(value)}, more than {self.high}")


# Control characters (terminal escapes among them) have no place in a NEFF's text; names
# may not even hold a tab or a newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Text(Node):
    """A string of at most ``max_length`` characters; ``pattern`` must match it whole.
    ``name`` text (names, keys) must not be empty or hold control characters."""

    max_length: int = MAX_TEXT
    pattern: re.Pattern | None = None
    name: bool = False
    meaning: str = ""  # what ``pattern`` stands for, in messages

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is not str:
            raise _kind_error(value, path, "a string")
        if len(value) > self.max_length:
            raise Invalid(path, f"is {show(value)}, longer than {self.max_length} characters")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise Invalid(path, f"is {show(value)}, not valid Unicode text") from None
        if (_NAME_CONTROL if self.name else _CONTROL).search(value):
            raise Invalid(path, f"is {show(value)}, which holds control characters")
        if self.name and not value:
            raise Invalid(path, "is empty, expected a name")
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise Invalid(path, f"is {show(value)}, not {self.meaning or self.pattern.pattern}")


@dataclass(frozen=True)
class Choice(Node):
    """One of a fixed set of strings or integers."""

    values: tuple

    def check(self, value: Any, path: tuple) -> None:
        if type(value) not in (str, int) or value not in self.values:
            choices = ", ".join(map(str, self.values))
            raise Invalid(path, f"is {show(value)}, not one of {choices}")


@dataclass(frozen=True)
class Array(Node):
    item: Node
    max_items: int = MAX_ITEMS
    min_items: int = 0

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is not list:
            raise _kind_error(value, path, "a list")
        if not self.min_items <= len(value) <= self.max_items:
            bound = (
                f"exactly {self.min_items}"
                if self.min_items == self.max_items
                else f"{self.min_items} to {self.max_items}"
            )
            raise Invalid(path, f"is {show(value)}, expected {bound} items")
        check = self.item.check
        for position, item in enumerate(value):
            check(item, (*path, position))


@dataclass(frozen=True)
class Table(Node):
    """An object used as a map: every key matches ``key``, every value ``value``."""

    key: Node
    value: Node
    max_items: int = MAX_ITEMS

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is not dict:
            raise _kind_error(value, path, "an object")
        if len(value) > self.max_items:
            raise Invalid(path, f"is {show(value)}, more than {self.max_items} keys")
        for key, item in value.items():
            self.key.check(key, (*path, key))
            self.value.check(item, (*path, key))


@dataclass(frozen=True)
class AnyJson(Node):
    """Any JSON value within the generic bounds (depth counted from the member's root)."""

    def check(self, value: Any, path: tuple) -> None:
        if len(path) > MAX_DEPTH:
            raise Invalid(path, f"is nested more than {MAX_DEPTH} levels deep")
        if value is None or type(value) is bool:
            return
        if type(value) is list:
            _ANY_LIST.check(value, path)
        elif type(value) is dict:
            _ANY_OBJECT.check(value, path)
        elif type(value) is str:
            _ANY_TEXT.check(value, path)
        else:
            _ANY_NUMBER.check(value, path)


ANY = AnyJson()
_ANY_LIST = Array(ANY)
_ANY_TEXT = Text()
_ANY_NUMBER = Number(low=-math.inf)
_ANY_OBJECT = Table(Text(MAX_NAME), ANY)


@dataclass(frozen=True)
class Record(Node):
    """An object with known keys. ``others`` checks unknown keys (``None``: refused);
    ``then`` checks what concerns several fields once each field has passed."""

    required: Mapping[str, Node]
    optional: Mapping[str, Node] = field(default_factory=dict)
    others: Node | None = ANY
    then: Callable[[dict, tuple], None] | None = None

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is not dict:
            raise _kind_error(value, path, "an object")
        if len(value) > MAX_ITEMS:
            raise Invalid(path, f"is {show(value)}, more than {MAX_ITEMS} keys")
        for key, item in value.items():
            node = self.required.get(key) or self.optional.get(key)
            if node is None:
                if self.others is None:
                    known = ", ".join(sorted({*self.required, *self.optional}))
                    raise Invalid(path, f"has the unknown key {key!r:.80} (known: {known})")
                _ANY_KEY.check(key, (*path, key))
                node = self.others
            node.check(item, (*path, key))
        for key in self.required:
            if key not in value:
                raise Invalid(path, f"lacks the required key {key!r}")
        if self.then is not None:
            self.then(value, path)


_ANY_KEY = Text(MAX_NAME)


class DynamicEntry(Node):
    """The manifest's ``dynamic`` entry (``neff/dynamic.py``): a dynamic program's
    symbolic signature, guards and outputs."""

    def check(self, value: Any, path: tuple) -> None:
        ANY.check(value, path)  # the generic bounds first: depth, sizes, no NaN
        try:
            check_dynamic(value)
        except ValueError as error:
            raise Invalid(path, f"is malformed: {error}") from None


def check_member(member: str, node: Node, value: Any) -> None:
    """``NeffError`` naming ``member`` and the field when ``value`` breaks ``node``."""
    try:
        node.check(value, ())
    except Invalid as error:
        raise NeffError(f"{member}: {render_path(error.path)} {error.text}") from None
