"""A NEFF that holds a dynamic program: the manifest's ``dynamic`` entry, checked as input
from strangers (``docs/neff-format.md`` section 3.1, ``docs/dynamic-shapes.md``).

A dynamic NEFF stores one StableHLO program whose input dimensions may be symbolic
(``tensor<?x16xf32>``), once, with what it takes to run it at any admitted shape::

    manifest.json  "dynamic": {
                     "signature": {"inputs": [{"name", "dtype", "shape": [int | size expr]}],
                                   "symbols": {name: {"min": int, "max": int | null}}},
                     "guards": [relation, ...],     # e.g. "s0 != 1", checked at each call
                     "outputs": {"count": n, "names": [...] | null, "none": [i, ...],
                                 "constants": {"i": number}, "sizes": {"i": size expr}}}
                   "signature": {"inputs": [], "outputs": []}   (no static signature)
    sg00/def.json  no "variables": a loader of static programs refuses it
    sg00/program.mlirbc  the dynamic program as StableHLO *text* (UTF-8), its arguments
                   marked neuron.input / neuron.weight, unrealized casts reconciled
    sg00/weights/  its weights, as in any NEFF

A size expression is an int, a symbol, ``+ - * //`` and parentheses; a guard is one
comparison (``== != < <= > >=``) of two size expressions. Both are parsed with ``ast`` and
walked by our own code, never evaluated by Python. Every failure here is a ``ValueError``
saying what is malformed; the schema turns it into the one ``NeffError`` line naming the
field. NEFFs with this entry carry NEFF version 1.1 (``DYNAMIC_NEFF_VERSION``).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from torchneuron.neff.container import PROGRAM_PATH
from torchneuron.neff.errors import NeffError
from torchneuron.target.dtypes import NEFF_DTYPES

SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# the most a symbol's range may say (the NEFF's limit on any dimension)
MAX_DIMENSION = 2**40
MAX_INPUTS = 4096
MAX_RANK = 16
MAX_EXPRESSION = 256
MAX_GUARDS = 1024
MAX_OUTPUTS = 1 << 16
# The program is MLIR text: bounded, UTF-8, no NUL, a module.
MAX_PROGRAM_BYTES = 256 << 20
PROGRAM_FORMAT = "stablehlo-text"
# Brackets nested deeper than this are refused before the MLIR parser sees them; our
# programs nest about 10 deep (regions, dense<[[...]]> of rank <= 16).
MAX_NESTING = 256

_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)
_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_DIMENSION


def _parse(text: Any, what: str) -> ast.Expression:
    if not isinstance(text, str) or len(text) > MAX_EXPRESSION:
        raise ValueError(f"dynamic signature: a {what} must be a string of at most 256 characters")
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"dynamic signature: {text!r} is not a {what}") from None


def _walk_size(node: ast.AST, text: str, found: set[str]) -> None:
    if isinstance(node, ast.Name):
        if not SYMBOL.match(node.id):
            raise ValueError(f"dynamic signature: bad symbol {node.id!r}")
        found.add(node.id)
    elif isinstance(node, ast.Constant):
        if type(node.value) is not int:
            raise ValueError(f"dynamic signature: {text!r} holds a non-integer")
    elif isinstance(node, ast.BinOp) and isinstance(node.op, _OPS):
        _walk_size(node.left, text, found)
        _walk_size(node.right, text, found)
    else:
        raise ValueError(f"dynamic signature: {text!r} is not a size expression")


def expression_symbols(text: Any) -> set[str]:
    """The symbols of a size expression (ints, symbols, ``+ - * //``, parentheses);
    ``ValueError`` for anything else. Parsed, never evaluated by Python."""
    found: set[str] = set()
    _walk_size(_parse(text, "size expression").body, text, found)
    return found


def guard_symbols(text: Any) -> set[str]:
    """The symbols of a guard: one comparison of two size expressions."""
    body = _parse(text, "guard").body
    if (
        not isinstance(body, ast.Compare)
        or len(body.ops) != 1
        or not isinstance(body.ops[0], _COMPARISONS)
    ):
        raise ValueError(f"dynamic signature: guard {text!r} is not one comparison of sizes")
    found: set[str] = set()
    _walk_size(body.left, text, found)
    _walk_size(body.comparators[0], text, found)
    return found


def _name(value: Any, what: str) -> str:
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= 255
        or not value.isprintable()
        or "/" in value
        or "\\" in value
        or value in (".", "..")
    ):
        raise ValueError(f"dynamic signature: {what} {value!r:.80} is not a plain name")
    return value


def parse_signature(data: Any) -> tuple[tuple[dict, ...], dict[str, tuple[int, int | None]]]:
    """The inputs and symbol ranges of a signature's JSON form, checked."""
    if not isinstance(data, dict) or set(data) != {"inputs", "symbols"}:
        raise ValueError("dynamic signature must be an object with inputs and symbols")
    symbols_data = data["symbols"]
    if not isinstance(symbols_data, dict) or not 0 < len(symbols_data) <= MAX_INPUTS:
        raise ValueError("dynamic signature: symbols must be a non-empty object")
    symbols: dict[str, tuple[int, int | None]] = {}
    for name, bounds in symbols_data.items():
        if not isinstance(name, str) or not SYMBOL.match(name):
            raise ValueError(f"dynamic signature: bad symbol name {name!r:.80}")
        if not isinstance(bounds, dict) or set(bounds) != {"min", "max"}:
            raise ValueError(f"dynamic signature: symbol {name} needs min and max")
        low, high = bounds["min"], bounds["max"]
        if not is_count(low) or not (high is None or is_count(high)):
            raise ValueError(f"dynamic signature: symbol {name}'s range is not integers")
        if high is not None and high < low:
            raise ValueError(f"dynamic signature: symbol {name} has max {high} < min {low}")
        symbols[name] = (low, high)
    inputs = data["inputs"]
    if not isinstance(inputs, list) or len(inputs) > MAX_INPUTS:
        raise ValueError("dynamic signature: inputs must be a list")
    checked = []
    used: set[str] = set()
    names: set[str] = set()
    for spec in inputs:
        if not isinstance(spec, dict) or set(spec) != {"name", "dtype", "shape"}:
            raise ValueError("dynamic signature: an input needs exactly name, dtype, shape")
        name = _name(spec["name"], "input name")
        if name in names:
            raise ValueError(f"dynamic signature: input name {name!r} given twice")
        names.add(name)
        if not isinstance(spec["dtype"], str) or spec["dtype"] not in NEFF_DTYPES:
            raise ValueError(
                f"dynamic signature: input {name!r} has unknown dtype {spec['dtype']!r:.40}"
            )
        if not isinstance(spec["shape"], list) or len(spec["shape"]) > MAX_RANK:
            raise ValueError(f"dynamic signature: input {name!r} has a bad shape")
        for dim in spec["shape"]:
            if isinstance(dim, str):
                used |= expression_symbols(dim)
            elif not is_count(dim):
                raise ValueError(f"dynamic signature: input {name!r} has bad dimension {dim!r:.40}")
        checked.append({"name": name, "dtype": spec["dtype"], "shape": list(spec["shape"])})
    unknown = used - set(symbols)
    if unknown:
        raise ValueError(f"dynamic signature: undeclared symbol(s) {sorted(unknown)}")
    bare = {d for s in checked for d in s["shape"] if isinstance(d, str) and d in symbols}
    if bare != set(symbols):
        raise ValueError("dynamic signature: every symbol must be the size of some input dimension")
    return tuple(checked), symbols


def _position(key: Any, count: int, what: str) -> int:
    if not isinstance(key, str) or not re.fullmatch(r"[0-9]{1,6}", key) or int(key) >= count:
        raise ValueError(f"dynamic outputs: {what} key {key!r:.40} is not an output position")
    return int(key)


def check_outputs(data: Any, symbols: set[str]) -> None:
    """``{"count", "names", "none", "constants", "sizes"}``: which of the graph's outputs
    the program does not compute (None, a constant number, a size of the symbols)."""
    keys = {"count", "names", "none", "constants", "sizes"}
    if not isinstance(data, dict) or set(data) != keys:
        raise ValueError(f"dynamic outputs must be an object with {', '.join(sorted(keys))}")
    count = data["count"]
    if type(count) is not int or not 0 <= count <= MAX_OUTPUTS:
        raise ValueError(f"dynamic outputs: count {count!r:.40} is not a count")
    names = data["names"]
    if names is not None:
        if not isinstance(names, list) or len(names) > MAX_OUTPUTS:
            raise ValueError("dynamic outputs: names must be a list or null")
        for name in names:
            _name(name, "output name")
    taken: set[int] = set()
    none = data["none"]
    if not isinstance(none, list) or len(none) > count:
        raise ValueError("dynamic outputs: none must be a list of output positions")
    for position in none:
        if type(position) is not int or not 0 <= position < count or position in taken:
            raise ValueError(f"dynamic outputs: none holds {position!r:.40}, not a new position")
        taken.add(position)
    for what in ("constants", "sizes"):
        table = data[what]
        if not isinstance(table, dict) or len(table) > count:
            raise ValueError(f"dynamic outputs: {what} must be an object of positions")
        for key, value in table.items():
            position = _position(key, count, what)
            if position in taken:
                raise ValueError(f"dynamic outputs: output {position} is given twice")
            taken.add(position)
            if what == "constants":
                if type(value) not in (bool, int, float) or value != value:
                    raise ValueError(f"dynamic outputs: constant {position} is not a number")
            elif not expression_symbols(value) <= symbols:
                raise ValueError(f"dynamic outputs: size {position} uses an undeclared symbol")


def check_dynamic(data: Any) -> None:
    """The manifest's ``dynamic`` entry, checked (``ValueError`` saying what is wrong)."""
    keys = {"format", "signature", "guards", "outputs"}
    if not isinstance(data, dict) or set(data) != keys:
        raise ValueError(f"dynamic entry must be an object with {', '.join(sorted(keys))}")
    if data["format"] != PROGRAM_FORMAT:
        raise ValueError(f"dynamic format {data['format']!r:.40} is not {PROGRAM_FORMAT!r}")
    _, symbols = parse_signature(data["signature"])
    guards = data["guards"]
    if not isinstance(guards, list) or len(guards) > MAX_GUARDS:
        raise ValueError("dynamic guards must be a list")
    for guard in guards:
        unknown = guard_symbols(guard) - set(symbols)
        if unknown:
            raise ValueError(f"dynamic guard {guard!r} uses undeclared symbol(s) {sorted(unknown)}")
    check_outputs(data["outputs"], set(symbols))


def check_program_text(program: Any) -> str:
    """The dynamic program's text: UTF-8 MLIR, no NUL, bounded; ``ValueError`` otherwise.
    (Its parse and its ops are checked where MLIR is at hand, compiler/dynamic.py.)"""
    if not isinstance(program, (bytes, bytearray, memoryview)):
        raise ValueError("the dynamic program must be bytes")
    data = bytes(program)
    if len(data) > MAX_PROGRAM_BYTES:
        raise ValueError(f"the dynamic program is {len(data)} bytes, more than {MAX_PROGRAM_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"the dynamic program is not UTF-8 text (byte {error.start})") from None
    if "\x00" in text:
        raise ValueError("the dynamic program holds a NUL character")
    if not text.lstrip().startswith("module"):
        raise ValueError("the dynamic program is not an MLIR module (StableHLO text)")
    depth = _nesting(text)
    if depth > MAX_NESTING:
        raise ValueError(
            f"the dynamic program nests brackets {depth} deep, more than {MAX_NESTING} "
            "(the MLIR parser recurses on each level)"
        )
    return text


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_BRACKET = re.compile(r"[\[\](){}<>]")


def _nesting(text: str) -> int:
    """The deepest nesting of brackets (``[ ( { <``) outside string literals, ``->``
    not counted: a bound on the MLIR parser's recursion, which a deep enough program
    overflows (a crash, not an error)."""
    if sum(text.count(c) for c in "[({<") <= MAX_NESTING:
        return 0  # cannot nest deeper than it has brackets
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text).replace("->", "")):
        if match.group() in "[({<":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def check_dynamic_program(program: Any) -> None:
    """A dynamic NEFF's program member, checked by the writer and the reader (``NeffError``)."""
    try:
        check_program_text(program)
    except ValueError as error:
        raise NeffError(f"{PROGRAM_PATH}: {error}") from None
