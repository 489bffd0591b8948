"""Schema validation of a NEFF's JSON members: the manifest, ``sg00/def.json``, the weight
index and the schedule (``docs/neff-format.md`` sections 3-5 state the same rules).

A schema is data: nested ``Record``, ``Table``, ``Array``, ``Integer``, ``Number``,
``Text``, ``Choice`` and ``AnyJson`` nodes, each bounding what it accepts (integers
within int64 or tighter, finite floats, string lengths, list sizes, nesting depth,
enumerations drawn from the dtype, engine and chip tables). ``check_json_members`` applies
the member schemas and then the cross-checks that tie members together (the signature
agrees with def.json's variables, weight variables with the weight index, run-time checks
name 0-d bool outputs, the schedule's kernels depend on earlier kernels only). The reader
runs it on everything it reads and the writer on everything it writes, so the compiler can
never write a NEFF the reader refuses and no consumer ever sees data outside the schema.

``parse_json`` is the one JSON parser for NEFF members: oversized integers, NaN, infinities,
duplicate keys, too many values and too deep nesting become ``NeffError`` (never the
``ValueError``, ``RecursionError`` or ``MemoryError`` that ``json.loads`` raises).

Every failure is one ``NeffError`` line naming the member and the JSON path of the bad
field, e.g. ``sg00/def.json: variables[2].shape[1] is 18446744073709551616, more than
154618822656``.

Why this file is long: the schema of four members and their cross-checks are one
specification; split, the rules a reader applies would no longer read in one place.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchneuron.estimate.scheduler import SCHEDULE_FORMAT, SCHEDULE_PATH, SCHEDULE_VERSION
from torchneuron.neff.container import DEFINITION_PATH, MANIFEST_PATH, WEIGHT_INDEX_PATH
from torchneuron.neff.dynamic import check_dynamic
from torchneuron.neff.errors import NeffError
from torchneuron.neff.tarball import MAX_JSON_MEMBER_BYTES
from torchneuron.neff.weights import WEIGHT_NAME_PATTERN, weight_file_path
from torchneuron.target.dtypes import NEFF_DTYPES
from torchneuron.target.engines import COMPUTE_ENGINES, ENGINES
from torchneuron.target.hardware import CHIPS

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
# No tensor can be larger than the largest HBM of any chip we know (hardware.py).
MAX_TENSOR_BYTES = max(chip.hbm_bytes_per_chip for chip in CHIPS.values())
# Digits of an integer literal that is parsed exactly; longer ones are too large anyway.
_MAX_INTEGER_DIGITS = 100

MANIFEST_FORMAT = "torchneuron-neff"
VARIABLE_KINDS = ("input", "output", "weight")
# The error kinds a run-time check may raise (as PyTorch names them).
CHECK_ERROR_KINDS = ("IndexError", "RuntimeError")


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


class _Invalid(Exception):
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
    """One schema node: ``check`` raises ``_Invalid`` naming the path of what is wrong."""

    def check(self, value: Any, path: tuple) -> None:
        raise NotImplementedError


def _kind_error(value: Any, path: tuple, expected: str) -> _Invalid:
    return _Invalid(path, f"is {show(value)}, expected {expected}")


@dataclass(frozen=True)
class Integer(Node):
    low: int = 0
    high: int = INT64_MAX

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is not int:  # bool is not an integer here
            if isinstance(value, HugeInteger):
                raise _Invalid(path, f"is {show(value)}, more than {self.high}")
            raise _kind_error(value, path, "an integer")
        if value < self.low:
            raise _Invalid(path, f"is {show(value)}, less than {self.low}")
        if value > self.high:
            raise _Invalid(path, f"is {show(value)}, more than {self.high}")


@dataclass(frozen=True)
class Number(Node):
    """A finite float, or an integer within int64 (JSON writes 2.0 as 2.0, 2 as 2)."""

    low: float = 0.0
    high: float = math.inf

    def check(self, value: Any, path: tuple) -> None:
        if type(value) is int:
            if abs(value) > INT64_MAX:
                raise _Invalid(path, f"is {show(value)}, beyond the int64 range")
        elif type(value) is float:
            if not math.isfinite(value):
                raise _Invalid(path, f"is {show(value)}, not a finite number")
        elif isinstance(value, HugeInteger):
            raise _Invalid(path, f"is {show(value)}, beyond the int64 range")
        else:
            raise _kind_error(value, path, "a number")
        if value < self.low:
            raise _Invalid(path, f"is {show(value)}, less than {self.low}")
        if value > self.high:
            raise _Invalid(path, f"is {show(value)}, more than {self.high}")


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
            raise _Invalid(path, f"is {show(value)}, longer than {self.max_length} characters")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Invalid(path, f"is {show(value)}, not valid Unicode text") from None
        if (_NAME_CONTROL if self.name else _CONTROL).search(value):
            raise _Invalid(path, f"is {show(value)}, which holds control characters")
        if self.name and not value:
            raise _Invalid(path, "is empty, expected a name")
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise _Invalid(path, f"is {show(value)}, not {self.meaning or self.pattern.pattern}")


@dataclass(frozen=True)
class Choice(Node):
    """One of a fixed set of strings or integers."""

    values: tuple

    def check(self, value: Any, path: tuple) -> None:
        if type(value) not in (str, int) or value not in self.values:
            choices = ", ".join(map(str, self.values))
            raise _Invalid(path, f"is {show(value)}, not one of {choices}")


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
            raise _Invalid(path, f"is {show(value)}, expected {bound} items")
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
            raise _Invalid(path, f"is {show(value)}, more than {self.max_items} keys")
        for key, item in value.items():
            self.key.check(key, (*path, key))
            self.value.check(item, (*path, key))


@dataclass(frozen=True)
class AnyJson(Node):
    """Any JSON value within the generic bounds (depth counted from the member's root)."""

    def check(self, value: Any, path: tuple) -> None:
        if len(path) > MAX_DEPTH:
            raise _Invalid(path, f"is nested more than {MAX_DEPTH} levels deep")
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
            raise _Invalid(path, f"is {show(value)}, more than {MAX_ITEMS} keys")
        for key, item in value.items():
            node = self.required.get(key) or self.optional.get(key)
            if node is None:
                if self.others is None:
                    known = ", ".join(sorted({*self.required, *self.optional}))
                    raise _Invalid(path, f"has the unknown key {key!r:.80} (known: {known})")
                _ANY_KEY.check(key, (*path, key))
                node = self.others
            node.check(item, (*path, key))
        for key in self.required:
            if key not in value:
                raise _Invalid(path, f"lacks the required key {key!r}")
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
            raise _Invalid(path, f"is malformed: {error}") from None


def check_member(member: str, node: Node, value: Any) -> None:
    """``NeffError`` naming ``member`` and the field when ``value`` breaks ``node``."""
    try:
        node.check(value, ())
    except _Invalid as error:
        raise NeffError(f"{member}: {render_path(error.path)} {error.text}") from None


# -- the member schemas ------------------------------------------------------------------

BYTES = Integer()
COUNT = Integer()
NAME = Text(MAX_NAME, name=True)
DTYPE = Choice(tuple(NEFF_DTYPES))
ENGINE = Choice(ENGINES)
TARGET = Choice(tuple(CHIPS))
LNC = Choice(tuple(sorted({lnc for chip in CHIPS.values() for lnc in chip.supported_lnc})))
SECONDS_US = Number()  # microseconds from the start of one execution, or a duration
DIMENSION = Integer(0, MAX_TENSOR_BYTES)
SHAPE = Array(DIMENSION, MAX_RANK)
SHA256_HEX = Text(64, re.compile(r"[0-9a-f]{64}"), meaning="64 lowercase hex digits")
WEIGHT_NAME = Text(  # a weight name becomes a file name
    128,
    WEIGHT_NAME_PATTERN,
    meaning="a safe file name (1-128 characters from [A-Za-z0-9_.-], not starting with '.')",
)


def _itemsize(dtype: str) -> int:
    return NEFF_DTYPES[dtype].itemsize


def _tensor_bytes(value: dict, path: tuple) -> int:
    """Bytes of a validated ``{"shape", "dtype"}`` object, at most ``MAX_TENSOR_BYTES``."""
    size = math.prod(value["shape"]) * _itemsize(value["dtype"])
    if size > MAX_TENSOR_BYTES:
        raise _Invalid(
            (*path, "shape"),
            f"is {value['dtype']}{value['shape']}, {size} bytes: more than the largest HBM "
            f"({MAX_TENSOR_BYTES} bytes)",
        )
    return size


def _check_size(value: dict, path: tuple) -> None:
    size = _tensor_bytes(value, path)
    if "size_bytes" in value and value["size_bytes"] != size:
        raise _Invalid(
            (*path, "size_bytes"),
            f"is {value['size_bytes']}, but {value['dtype']}{value['shape']} takes {size} bytes",
        )


TENSOR_SPEC = Record({"name": NAME, "shape": SHAPE, "dtype": DTYPE}, then=_check_size)


def _check_variable(value: dict, path: tuple) -> None:
    _check_size(value, path)
    if "file" in value and value["kind"] != "weight":
        raise _Invalid((*path, "file"), f"is given for a {value['kind']}; only weights have one")


def _check_weight_entry(value: dict, path: tuple) -> None:
    _check_size(value, path)
    expected = weight_file_path(value["name"])
    if value["file"] != expected:
        raise _Invalid((*path, "file"), f"is {show(value['file'])}, expected {expected!r}")


VARIABLE = Record(
    {"name": NAME, "kind": Choice(VARIABLE_KINDS), "shape": SHAPE, "dtype": DTYPE},
    {"size_bytes": BYTES, "file": Text(MAX_NAME)},
    then=_check_variable,
)

MEMORY_PLAN = Record(
    {"temporaries_bytes": BYTES},
    {
        "peak_hbm_bytes": BYTES,
        "program_bytes": BYTES,
        "weights_bytes": BYTES,
        "inputs_bytes": BYTES,
        "outputs_bytes": BYTES,
        "temporaries_live_peak_bytes": BYTES,
        "alignment": Integer(1, 1 << 30),
        "temporaries": Array(
            Record(
                {"name": NAME, "size_bytes": BYTES, "live_us": Array(SECONDS_US, 2, 2)},
                # dtype: the estimate's name of the element type, which may be one a NEFF
                # cannot declare (an MLIR spelling): a name, not a NEFF dtype.
                {"shape": SHAPE, "dtype": Text(MAX_NAME), "offset": BYTES},
            )
        ),
    },
)

DEFINITION = Record(
    {},
    {
        "variables": Array(VARIABLE),
        "dma_queues": Array(ANY),
        "memory_plan": MEMORY_PLAN,
    },
)

ESTIMATES = Record(
    {},
    {
        "latency_us": SECONDS_US,
        "engine_busy_percent": Table(ENGINE, Number()),
        "hbm_bytes": BYTES,
        "peak_hbm_bytes": BYTES,
        "weights_bytes": BYTES,
        "flops": COUNT,
        "mfu": Number(),
        "kernels": COUNT,
    },
)

CHECK = Record(
    {"output": COUNT, "error": Choice(CHECK_ERROR_KINDS), "message": Text()}, others=None
)

SIGNATURE = Record({"inputs": Array(TENSOR_SPEC), "outputs": Array(TENSOR_SPEC)})

MANIFEST = Record(
    {"signature": SIGNATURE},  # what a caller needs to run the program (neuronc run)
    {
        "format": Choice((MANIFEST_FORMAT,)),
        "name": Text(MAX_NAME),
        "target": TARGET,
        "lnc": LNC,
        "versions": Table(Text(MAX_NAME, name=True), Text(MAX_NAME)),
        "pipeline": Text(),
        "source_hash": SHA256_HEX,
        "weights": Array(
            Record({"name": NAME, "shape": SHAPE, "dtype": DTYPE}, {"source": Text(MAX_NAME)})
        ),
        "checks": Array(CHECK),
        "estimates": ESTIMATES,
        "dynamic": DynamicEntry(),
    },
)

WEIGHT_ENTRY = Record(
    {
        "name": WEIGHT_NAME,
        "dtype": DTYPE,
        "shape": SHAPE,
        "size_bytes": BYTES,
        "sha256": SHA256_HEX,
        "file": Text(MAX_NAME),
    },
    others=None,
    then=_check_weight_entry,
)

WEIGHT_INDEX = Record(
    {"weights": Array(WEIGHT_ENTRY)}, {"byte_order": Choice(("little",))}, others=None
)

KERNEL = Record(
    {"id": COUNT, "name": Text(MAX_NAME), "engine": ENGINE},
    {
        "bound": ENGINE,
        "ops": Array(Text(MAX_NAME)),
        "op_indices": Array(COUNT),
        "deps": Array(COUNT),
        "start_us": SECONDS_US,
        "end_us": SECONDS_US,
        "engine_us": Table(ENGINE, SECONDS_US),
        "engine_cycles": Table(ENGINE, COUNT),
        "dma_us": SECONDS_US,
        "dma_latency_us": SECONDS_US,
        "lanes_us": Table(ENGINE, Array(SECONDS_US, 2, 2)),
        "bytes_in": BYTES,
        "bytes_out": BYTES,
        "onchip_dma_bytes": BYTES,
        "sbuf_bytes": BYTES,
        "flops": COUNT,
        "notes": Array(Text()),
    },
)

SCHEDULE = Record(
    {
        "format": Choice((SCHEDULE_FORMAT,)),
        "version": Choice((SCHEDULE_VERSION,)),
        "target": TARGET,
        "lnc": LNC,
    },
    {
        "latency_us": SECONDS_US,
        "flops": COUNT,
        "peak_us": SECONDS_US,
        "clocks_hz": Table(Choice(COMPUTE_ENGINES), Number()),
        "model": Table(Text(MAX_NAME, name=True), Number(low=-math.inf)),
        "summary": ESTIMATES,
        "memory_plan": MEMORY_PLAN,
        "kernels": Array(KERNEL),
    },
)


# -- cross-checks --------------------------------------------------------------------------


def _fail(member: str, path: tuple, text: str) -> None:
    raise NeffError(f"{member}: {render_path(path)} {text}")


def _spec_text(spec: dict) -> str:
    return f"{spec['name']!r:.80}: {spec['dtype']}{spec['shape']}"


def _check_signature(manifest: dict, variables: list[dict], check_outputs: set[int]) -> None:
    """The signature's inputs are def.json's input variables and its outputs the output
    variables that are no run-time check, in order, with the same names, shapes, dtypes."""
    outputs = [v for v in variables if v["kind"] == "output"]
    declared = {
        "inputs": [v for v in variables if v["kind"] == "input"],
        "outputs": [v for i, v in enumerate(outputs) if i not in check_outputs],
    }
    for role, variables_of_role in declared.items():
        specs = manifest["signature"][role]
        if len(specs) != len(variables_of_role):
            _fail(
                MANIFEST_PATH,
                ("signature", role),
                f"lists {len(specs)} tensors, but {DEFINITION_PATH} declares "
                f"{len(variables_of_role)} {role[:-1]} variables"
                + (" (run-time checks left out)" if role == "outputs" and check_outputs else ""),
            )
        for position, (spec, variable) in enumerate(zip(specs, variables_of_role)):
            if any(spec[key] != variable[key] for key in ("name", "shape", "dtype")):
                _fail(
                    MANIFEST_PATH,
                    ("signature", role, position),
                    f"is {_spec_text(spec)}, but {DEFINITION_PATH} declares {_spec_text(variable)}",
                )


def _check_variables(variables: list[dict]) -> None:
    seen: set[str] = set()
    for position, variable in enumerate(variables):
        if variable["name"] in seen:
            _fail(
                DEFINITION_PATH,
                ("variables", position, "name"),
                f"is {variable['name']!r:.80}, a name an earlier variable has",
            )
        seen.add(variable["name"])


def _check_weight_variables(variables: list[dict], entries: dict[str, dict]) -> None:
    """A weight variable with a ``file`` names its own stored weight, of the same shape and
    dtype (the runtime binds weights by name)."""
    by_file = {entry["file"]: entry for entry in entries.values()}
    for position, variable in enumerate(variables):
        if variable["kind"] != "weight" or "file" not in variable:
            continue
        entry = by_file.get(variable["file"])
        label = f"{DEFINITION_PATH}: weight variable {variable['name']!r:.80}"
        if entry is None:
            raise NeffError(f"{label} names file {variable['file']!r:.80}, which holds no weight")
        if entry["name"] != variable["name"]:
            _fail(
                DEFINITION_PATH,
                ("variables", position, "file"),
                f"is {variable['file']!r}, the file of weight {entry['name']!r}, "
                f"expected {weight_file_path(entry['name'])!r}",
            )
        for key in ("shape", "dtype"):
            if variable[key] != entry[key]:
                raise NeffError(
                    f"{label} has {key} {variable[key]!r}, but its file holds {entry[key]!r}"
                )


def _check_manifest_weights(manifest: dict, variables: list[dict]) -> None:
    """The manifest's ``weights`` lists def.json's weight variables, in order."""
    if "weights" not in manifest:
        return
    declared = [v for v in variables if v["kind"] == "weight"]
    listed = manifest["weights"]
    if len(listed) != len(declared):
        _fail(
            MANIFEST_PATH,
            ("weights",),
            f"lists {len(listed)} weights, but {DEFINITION_PATH} declares {len(declared)}",
        )
    for position, (spec, variable) in enumerate(zip(listed, declared)):
        if any(spec[key] != variable[key] for key in ("name", "shape", "dtype")):
            _fail(
                MANIFEST_PATH,
                ("weights", position),
                f"is {_spec_text(spec)}, but {DEFINITION_PATH} declares {_spec_text(variable)}",
            )


def _check_target(member: str, value: dict, path: tuple) -> None:
    if "target" in value and "lnc" in value:
        chip = CHIPS[value["target"]]
        if value["lnc"] not in chip.supported_lnc:
            _fail(
                member,
                (*path, "lnc"),
                f"is {value['lnc']}, but {value['target']} supports LNC "
                f"{', '.join(map(str, chip.supported_lnc))}",
            )


def _check_schedule(schedule: dict) -> None:
    """Kernel ids are distinct and every dependency names an earlier kernel (ids are a
    topological order), so no consumer meets a cycle or a dangling id."""
    seen: set[int] = set()
    for position, kernel in enumerate(schedule.get("kernels", [])):
        for index, dep in enumerate(kernel.get("deps", [])):
            if dep not in seen or dep >= kernel["id"]:
                _fail(
                    SCHEDULE_PATH,
                    ("kernels", position, "deps", index),
                    f"is {dep}, not the id of an earlier kernel",
                )
        if kernel["id"] in seen:
            _fail(SCHEDULE_PATH, ("kernels", position, "id"), f"is {kernel['id']}, seen before")
        seen.add(kernel["id"])
    _check_target(SCHEDULE_PATH, schedule, ())


def _check_dynamic_manifest(manifest: dict, definition: dict) -> None:
    """A dynamic program has no static signature, no variables and no run-time checks:
    what a loader of static programs reads is empty, so it refuses the NEFF."""
    for role in ("inputs", "outputs"):
        if manifest["signature"][role]:
            _fail(
                MANIFEST_PATH,
                ("signature", role),
                "is not empty, but a dynamic program's signature is manifest.dynamic's",
            )
    if "variables" in definition:
        _fail(DEFINITION_PATH, ("variables",), "is given for a dynamic program, which has none")
    if "checks" in manifest:
        _fail(MANIFEST_PATH, ("checks",), "is given for a dynamic program, which has none")


def check_manifest_checks(manifest: dict, definition: dict) -> list[dict]:
    """The manifest's run-time checks (``[]`` when it has none), after checking that each
    is ``{"output", "error", "message"}`` naming a distinct 0-d bool output variable of
    def.json; ``NeffError`` otherwise.

    Also applied by the runtime to a ``Neff`` built in memory, so it checks types itself.
    """
    checks = manifest.get("checks", [])
    where = f"{MANIFEST_PATH} checks"
    if not isinstance(checks, list):
        raise NeffError(f"{where} must be a list, found {type(checks).__name__}")
    variables = definition.get("variables", [])
    outputs = (
        [v for v in variables if isinstance(v, dict) and v.get("kind") == "output"]
        if isinstance(variables, list)
        else []
    )
    seen: set[int] = set()
    for position, check in enumerate(checks):
        label = f"{where}[{position}]"
        if not isinstance(check, dict) or set(check) != {"output", "error", "message"}:
            raise NeffError(f"{label} must be an object with output, error and message")
        output = check["output"]
        if (
            not isinstance(output, int)
            or isinstance(output, bool)
            or not 0 <= output < len(outputs)
        ):
            raise NeffError(
                f"{label} names output {show(output)}; def.json has {len(outputs)} output variables"
            )
        if output in seen:
            raise NeffError(f"{label} names output {output} a second time")
        seen.add(output)
        if check["error"] not in CHECK_ERROR_KINDS:
            raise NeffError(
                f"{label} has error {show(check['error'])}, not one of "
                f"{', '.join(CHECK_ERROR_KINDS)}"
            )
        if not isinstance(check["message"], str):
            raise NeffError(f"{label} has a message that is not text")
        variable = outputs[output]
        if variable.get("dtype") != "bool" or variable.get("shape") not in ([], ()):
            raise NeffError(
                f"{label} names output {show(variable.get('name'))}, which is "
                f"{show(variable.get('dtype'))}{show(variable.get('shape'))}, not a 0-d bool"
            )
    return checks


# -- members ---------------------------------------------------------------------------------

# Extra files whose layout the format defines, each with its schema and cross-check.
KNOWN_EXTRA_FILES: dict[str, tuple[Node, Callable[[dict], None]]] = {
    SCHEDULE_PATH: (SCHEDULE, _check_schedule),
}


def check_json_members(
    manifest: Any, definition: Any, weight_index: Any, extra_files: Mapping[str, bytes]
) -> None:
    """Raise ``NeffError`` naming the member and field when a JSON member is malformed.

    ``manifest``, ``definition`` and ``weight_index`` are parsed values (``parse_json``);
    the extra files whose layout the format defines (``KNOWN_EXTRA_FILES``) are parsed
    here. Afterwards every consumer may index the fields the schema requires.
    """
    check_member(MANIFEST_PATH, MANIFEST, manifest)
    check_member(DEFINITION_PATH, DEFINITION, definition)
    check_member(WEIGHT_INDEX_PATH, WEIGHT_INDEX, weight_index)
    _check_target(MANIFEST_PATH, manifest, ())
    variables = definition.get("variables")
    _check_variables(variables or [])
    entries: dict[str, dict] = {}
    for position, entry in enumerate(weight_index["weights"]):
        if entry["name"] in entries:
            _fail(
                WEIGHT_INDEX_PATH,
                ("weights", position, "name"),
                f"is {entry['name']!r}, listed twice",
            )
        entries[entry["name"]] = entry
    _check_weight_variables(variables or [], entries)
    checks = check_manifest_checks(manifest, definition)
    if "dynamic" in manifest:
        _check_dynamic_manifest(manifest, definition)
    # def.json without variables declares no bindings (the runtime refuses to load such a
    # NEFF), so there is nothing for the signature to agree with.
    if variables is not None:
        _check_signature(manifest, variables, {check["output"] for check in checks})
        _check_manifest_weights(manifest, variables)
    for path, (node, cross_check) in KNOWN_EXTRA_FILES.items():
        if path in extra_files:
            value = parse_json(extra_files[path], path)
            check_member(path, node, value)
            cross_check(value)


def load_schedule(data: bytes, path: str = SCHEDULE_PATH) -> dict:
    """A schedule member parsed and checked (what ``describe`` and consumers read)."""
    value = parse_json(data, path)
    check_member(path, SCHEDULE, value)
    _check_schedule(value)
    return value
