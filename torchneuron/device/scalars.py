"""Python scalars as program inputs: rewriting an op call so its Scalar arguments are 0-d tensors.

A compiled op must not bake in a Python scalar that changes from call to call
(a learning rate, Adam's bias correction) or it would recompile every step. A
rewrite says which ``Scalar`` arguments of an op become 0-d program inputs and
how to perform the op with tensors in their place:

- **sibling overload**: ``add.Scalar`` -> ``add.Tensor``, ``mul_.Scalar`` ->
  ``mul_.Tensor``, ``clamp`` -> ``clamp.Tensor``, ``where.ScalarOther`` ->
  ``where.self``...: the overload of the same op whose argument list is the
  same with ``Tensor`` where this one has ``Scalar``;
- **scaling**: ``alpha`` of add/sub and ``value`` of addcmul/addcdiv multiply
  one tensor operand: ``add(x, y, alpha=a) = add(x, y * a)``,
  ``addcmul(x, t1, t2, value=v) = addcmul(x, t1 * v, t2)``;
- **foreach**: ``_foreach_<op>[_].Scalar/ScalarList`` run the single-tensor op
  once per list element, each with its own 0-d scalar input.

Scalar arguments of any other op stay compile-time constants (part of the key).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

aten = torch.ops.aten

SCALAR_TYPES = ("number", "Optional[number]")
TENSOR_FOR_SCALAR = {"number": "Tensor", "Optional[number]": "Optional[Tensor]"}
SCALED_ARGUMENTS = {
    # op name -> (scalar argument, tensor argument it scales)
    "aten::add": ("alpha", "other"),
    "aten::add_": ("alpha", "other"),
    "aten::sub": ("alpha", "other"),
    "aten::sub_": ("alpha", "other"),
    "aten::rsub": ("alpha", "other"),
    "aten::addcmul": ("value", "tensor1"),
    "aten::addcmul_": ("value", "tensor1"),
    "aten::addcdiv": ("value", "tensor1"),
    "aten::addcdiv_": ("value", "tensor1"),
}
FOREACH_ELEMENTWISE = ("add", "sub", "mul", "div", "addcmul", "addcdiv", "lerp", "pow")


@dataclass(frozen=True)
class ScalarRewrite:
    """Which argument positions are lifted, and how to call the op with tensors there.

    ``positions`` hold a Scalar (or a list of Scalars, in ``list_positions``);
    ``call(values)`` performs the op where those positions hold 0-d tensors.
    """

    positions: tuple[int, ...]
    list_positions: tuple[int, ...]
    call: Callable[[list], Any]


def _schema_types(op) -> list[tuple[str, str, bool]]:
    return [(a.name, str(a.type), a.kwarg_only) for a in op._schema.arguments]


def _caller(op) -> Callable[[list], Any]:
    kwarg_only = [a.kwarg_only for a in op._schema.arguments]
    names = [a.name for a in op._schema.arguments]

    def call(values: list) -> Any:
        args, kwargs = [], {}
        for name, keyword, value in zip(names, kwarg_only, values):
            if keyword:
                kwargs[name] = value
            else:
                args.append(value)
        return op(*args, **kwargs)

    return call


def _sibling(op) -> tuple[Any, tuple[int, ...]] | None:
    """The overload taking Tensors where ``op`` takes Scalars, and those positions."""
    mine = _schema_types(op)
    returns = [str(r.type) for r in op._schema.returns]
    packet = getattr(aten, op._schema.name.split("::")[1])
    for overload in packet.overloads():
        other = getattr(packet, overload)
        if other is op or [str(r.type) for r in other._schema.returns] != returns:
            continue
        theirs = _schema_types(other)
        if len(theirs) != len(mine):
            continue
        lifted = []
        for position, ((name, kind, _), (their_name, their_kind, _)) in enumerate(
            zip(mine, theirs)
        ):
            if name != their_name:
                break
            if kind == their_kind:
                continue
            if TENSOR_FOR_SCALAR.get(kind) == their_kind:
                lifted.append(position)
                continue
            break
        else:
            if lifted:
                return other, tuple(lifted)
    return None


def rewrite_for(op) -> ScalarRewrite | None:
    """How to lift ``op``'s Scalar arguments into program inputs, or ``None``."""
    name = op._schema.name
    if name.startswith("aten::_foreach_"):
        return _foreach_rewrite(op)
    types = _schema_types(op)
    names = [t[0] for t in types]
    target = op
    lifted: list[int] = []
    sibling = _sibling(op)
    if sibling is not None:
        target, lifted_positions = sibling
        lifted.extend(lifted_positions)
    call = _caller(target)
    scaled = SCALED_ARGUMENTS.get(name)
    if scaled is not None and scaled[0] in names and scaled[1] in names:
        scalar_position, tensor_position = names.index(scaled[0]), names.index(scaled[1])
        if types[scalar_position][1] in SCALAR_TYPES:
            lifted.append(scalar_position)
            inner = call

            def call(values: list, inner=inner) -> Any:
                values = list(values)
                factor = values[scalar_position]
                # alpha=1 (the default, kept as a constant) scales nothing; multiplying
                # anyway would turn a bool operand into int64 and hide sub's bool refusal
                if factor is not None and not (type(factor) in (int, bool) and factor == 1):
                    values[tensor_position] = values[tensor_position] * factor
                    values[scalar_position] = 1
                return inner(values)

    if not lifted:
        return None
    return ScalarRewrite(tuple(sorted(lifted)), (), call)


def _foreach_rewrite(op) -> ScalarRewrite | None:
    schema = op._schema
    base = schema.name[len("aten::_foreach_") :]
    in_place = base.endswith("_")
    single_name = base.rstrip("_")
    if single_name not in FOREACH_ELEMENTWISE or schema.overload_name not in (
        "Scalar",
        "ScalarList",
    ):
        return None
    types = _schema_types(op)
    scalar_positions = [i for i, (_, kind, _) in enumerate(types) if kind in SCALAR_TYPES]
    list_positions = [i for i, (_, kind, _) in enumerate(types) if kind == "List[number]"]
    if len(scalar_positions) + len(list_positions) != 1:
        return None
    packet = getattr(aten, single_name + ("_" if in_place else ""), None)
    if packet is None:
        return None
    single = None
    for overload in ("Tensor", "default", "Tensor_Tensor"):
        candidate = getattr(packet, overload, None) if overload in packet.overloads() else None
        if candidate is not None:
            single = candidate
            break
    if single is None:
        return None
    single_rewrite = rewrite_for(single)
    single_call = single_rewrite.call if single_rewrite is not None else _caller(single)
    tensor_list_positions = [i for i, (_, kind, _) in enumerate(types) if kind == "List[Tensor]"]
    single_arguments = single._schema.arguments
    if len(types) > len(single_arguments):
        return None
    # Arguments the foreach op lacks take the single op's defaults (alpha=1, ...).
    defaults = [a.default_value for a in single_arguments[len(types) :]]
    returns_list = [str(r.type) for r in schema.returns] == ["List[Tensor]"]
    per_element = set(tensor_list_positions) | set(list_positions)

    def call(values: list) -> Any:
        results = []
        for index in range(len(values[tensor_list_positions[0]])):
            element = [
                value[index] if position in per_element else value
                for position, value in enumerate(values)
            ]
            results.append(single_call(element + defaults))
        return results if returns_list else None

    return ScalarRewrite(tuple(scalar_positions), tuple(list_positions), call)
