"""The symbolic signature of a dynamic program: which input dimension is which symbol.

``SymbolicSignature`` says, per runtime input of a ``DynamicProgram``, its dtype and
shape with each dimension an int or a size expression over the symbols (``"s0"``,
``"2*s0"``), each symbol's range, and the relations between symbols the program
assumes (guards, ``"s0 != 1"``). ``bind`` reads the symbols' values off concrete
shapes and checks all of it, so a shape the program was not compiled for is one
``ShapeConstraintError`` naming the input and dimension. Size expressions and guards
are checked by the NEFF format's parser (``neff/dynamic.py``: input from strangers)
and evaluated by our own walk of their syntax tree, never by Python's ``eval``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.lowering.errors import DynamicShapeError
from torchneuron.neff import dynamic as neff_dynamic

from . import program

# The JSON form's checks live with the NEFF format (input from strangers); one place.
MAX_DIMENSION = neff_dynamic.MAX_DIMENSION
expression_symbols = neff_dynamic.expression_symbols


class ShapeConstraintError(TorchNeuronError, ValueError):
    """Concrete input shapes that break a dynamic program's symbolic signature."""


@dataclass(frozen=True)
class SymbolicSignature:
    """Which input dimension is which symbol, and each symbol's range.

    ``inputs``: per runtime input (program order) its name, dtype and shape, each
    dimension an int or an expression over the symbols (``"s0"``, ``"2*s0"``).
    ``symbols``: name -> ``(min, max)``, max None when unbounded.
    """

    inputs: tuple[dict, ...]
    symbols: dict[str, tuple[int, int | None]]
    # relations between the symbols the program assumes (``"s0 != 1"``), checked at bind
    guards: tuple[str, ...] = ()

    def bind(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """The value of every symbol for inputs of ``shapes``; ``ShapeConstraintError``
        naming the input and dimension when they break the signature."""
        if len(shapes) != len(self.inputs):
            raise ShapeConstraintError(
                f"the dynamic program takes {len(self.inputs)} inputs, {len(shapes)} were given"
            )
        values: dict[str, int] = {}
        origin: dict[str, str] = {}  # symbol -> the input dimension it was bound from
        for spec, shape in zip(self.inputs, shapes):
            if len(shape) != len(spec["shape"]):
                raise ShapeConstraintError(
                    f"input {spec['name']!r} has {len(shape)} dimensions, the program's "
                    f"signature {shape_text(spec['shape'])} has {len(spec['shape'])}"
                )
            for axis, (dim, size) in enumerate(zip(spec["shape"], shape)):
                if isinstance(dim, str) and dim in self.symbols:
                    origin.setdefault(dim, f"input {spec['name']!r} dimension {axis}")
                    if values.setdefault(dim, int(size)) != size:
                        raise ShapeConstraintError(
                            f"input {spec['name']!r} dimension {axis} is {size} but symbol "
                            f"{dim} is {values[dim]} (from another input); the program's "
                            f"signature requires them equal"
                        )
        for name, (low, high) in self.symbols.items():
            if name not in values:
                raise ShapeConstraintError(f"symbol {name} is not the size of any input dimension")
            value = values[name]
            if value < low or (high is not None and value > high):
                bound = f"[{low}, {high if high is not None else 'inf'}]"
                raise ShapeConstraintError(
                    f"{origin[name]} is {value}: symbol {name} = {value} is outside its "
                    f"range {bound}; the dynamic program was compiled for sizes in that "
                    "range only"
                )
        for spec, shape in zip(self.inputs, shapes):
            for axis, (dim, size) in enumerate(zip(spec["shape"], shape)):
                expected = dim if isinstance(dim, int) else evaluate(dim, values)
                if expected != size:
                    raise ShapeConstraintError(
                        f"input {spec['name']!r} dimension {axis} is {size}, the program's "
                        f"signature {shape_text(spec['shape'])} requires "
                        + (f"{dim}" if isinstance(dim, int) else f"{dim} = {expected}")
                    )
        for guard in self.guards:
            if not holds(guard, values):
                bound = ", ".join(
                    f"{n} = {values[n]}" for n in sorted(neff_dynamic.guard_symbols(guard))
                )
                raise ShapeConstraintError(
                    f"the program's guard {guard} fails for {bound} (input shapes "
                    f"{[list(s) for s in shapes]})"
                )
        return values

    def to_json(self) -> dict:
        return {
            "inputs": [dict(spec) for spec in self.inputs],
            "symbols": {n: {"min": lo, "max": hi} for n, (lo, hi) in self.symbols.items()},
        }

    @classmethod
    def from_json(cls, data: Any) -> SymbolicSignature:
        """The signature in ``data`` (a NEFF manifest's ``dynamic`` entry, input from
        strangers); ``ValueError`` saying what is malformed."""
        inputs, symbols = neff_dynamic.parse_signature(data)
        return cls(inputs, symbols)


def shape_text(shape: Sequence) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def evaluate(text: str, values: dict[str, int]) -> int:
    """The value of size expression ``text`` (checked by ``expression_symbols``)."""
    expression_symbols(text)
    return _value(ast.parse(text, mode="eval").body, values, text)


def holds(guard: str, values: dict[str, int]) -> bool:
    """Whether guard ``guard`` (one comparison of sizes, ``neff.dynamic.guard_symbols``)
    holds for the symbols' ``values``."""
    neff_dynamic.guard_symbols(guard)
    node = ast.parse(guard, mode="eval").body
    left = _value(node.left, values, guard)
    right = _value(node.comparators[0], values, guard)
    return _COMPARE[type(node.ops[0])](left, right)


_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _value(node: ast.AST, values: dict[str, int], text: str) -> int:
    """Our walk of a checked size expression (never Python's eval)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if not isinstance(node, ast.BinOp):
        raise ShapeConstraintError(f"{text!r} is not a size expression")
    left, right = _value(node.left, values, text), _value(node.right, values, text)
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    if right == 0:
        raise ShapeConstraintError(f"size expression {text} divides by zero")
    return left // right


def expression_text(expr) -> str:
    """A sympy size expression as ``expression_symbols`` reads it; DynamicShapeError otherwise."""
    import sympy

    if isinstance(expr, sympy.Integer):
        value = int(expr)
        # the grammar has no unary minus: s0 - 1 is sympy's s0 + (-1)
        return str(value) if value >= 0 else f"(0 - {-value})"
    if isinstance(expr, sympy.Symbol):
        return expr.name
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        parts = [expression_text(arg) for arg in expr.args]
        joiner = " + " if isinstance(expr, sympy.Add) else "*"
        return "(" + joiner.join(parts) + ")"
    if type(expr).__name__ == "FloorDiv":
        return f"({expression_text(expr.args[0])} // {expression_text(expr.args[1])})"
    raise DynamicShapeError(f"size expression {expr} has no form a dynamic program can check")


def numpy_dtype_name(array) -> str:
    """The dtype of ``array`` as a NEFF names a weight's (``float32``, ``bfloat16``)."""
    from torchneuron.neff.weights import weight_dtype_name

    return weight_dtype_name(np.asarray(array).dtype) or str(np.asarray(array).dtype)


def arguments_of(module: ir.Module) -> tuple[list[tuple[str, str]], int]:
    """(kind, name) of every @main argument, read from its marks."""
    func = program.main_function(module)
    marks = []
    attrs = ir.ArrayAttr(func.attributes["arg_attrs"])
    for i in range(len(attrs)):
        entry = ir.DictAttr(attrs[i])
        if program.WEIGHT_ATTR in entry:
            marks.append(("weight", ir.StringAttr(entry[program.WEIGHT_ATTR]).value))
        else:
            marks.append(("input", ir.StringAttr(entry[program.INPUT_ATTR]).value))
    return marks, len(marks)
