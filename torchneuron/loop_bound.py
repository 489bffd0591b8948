"""The proof of a counted loop's trip count: one copy for the compiler, the cost model
and the runtime's program verifier.

A ``stablehlo.while`` is admitted only in the form our compiler writes
(``lowering/loops.py``): a signless integer counter carried from a constant start,
compared ``LT`` (signed) with a constant in the condition (nothing else there), and handed
on by the body as itself plus a positive constant, without overflow. Anything else has no
bound a reader could trust: a changed byte could make it run for hours.

The verifier's child process imports nothing of ours (it starts in a third of a second
and must not run our package's code on untrusted input); it loads this file by its path.
So this module imports nothing either: the MLIR bindings' ``ir`` is passed in.
"""

from __future__ import annotations


class UncountedLoop(ValueError):
    """A ``stablehlo.while`` whose trip count its form does not prove; the message says why."""


def loop_iterations(operation, ir) -> int:
    """How many times the ``stablehlo.while`` ``operation``'s body runs in one run of the
    program: its trip count times those of the loops around it."""
    total, enclosing = loop_trip_count(operation, ir), operation.parent
    while enclosing is not None:
        enclosing = enclosing.operation
        if enclosing.name == "stablehlo.while":
            total *= loop_trip_count(enclosing, ir)
        enclosing = enclosing.parent
    return total


def loop_trip_count(operation, ir) -> int:
    """How many times the ``stablehlo.while`` ``operation`` runs its body; ``UncountedLoop``
    unless its form (the module's docstring) proves it."""
    condition, body = (region.blocks[0] for region in operation.regions)
    refusal = "a stablehlo.while whose trip count the runtime cannot prove: "
    returned = list(condition.operations)[-1].operation
    compare = _defining(returned.operands[0], condition) if len(returned.operands) == 1 else None
    if compare is None or compare.name != "stablehlo.compare":
        raise UncountedLoop(refusal + "its condition is not a comparison of its own")
    if any(op.operation.name not in _CONDITION_OPS for op in condition.operations):
        raise UncountedLoop(refusal + "its condition computes more than a comparison")
    direction = str(compare.attributes["comparison_direction"])
    kind = str(compare.attributes["compare_type"]) if "compare_type" in compare.attributes else ""
    if "LT" not in direction.split() and not direction.endswith("LT>"):
        raise UncountedLoop(refusal + f"its condition compares {direction}, not LT")
    if kind and "SIGNED" not in kind.replace("UNSIGNED", ""):
        raise UncountedLoop(refusal + f"its condition compares as {kind}, not SIGNED")
    counter = _argument_number(compare.operands[0], condition)
    bound = _constant_integer(compare.operands[1], ir)
    if counter is None or bound is None:
        raise UncountedLoop(
            refusal + "its condition does not compare a carried value with a constant"
        )
    counter_type = ir.RankedTensorType(operation.operands[counter].type)
    element = counter_type.element_type
    if counter_type.rank != 0 or not isinstance(element, ir.IntegerType) or not element.is_signless:
        raise UncountedLoop(
            refusal + f"its counter is {counter_type}, not a signless integer scalar"
        )
    start = _constant_integer(operation.operands[counter], ir)
    body_return = list(body.operations)[-1].operation
    step = _increment(body_return.operands[counter], body, counter, ir)
    if start is None or step is None or step <= 0:
        raise UncountedLoop(
            refusal + "its counter does not start at a constant and grow by a positive one"
        )
    trips = 0 if start >= bound else -(-(bound - start) // step)
    if start + trips * step > (1 << (element.width - 1)) - 1:
        raise UncountedLoop(refusal + "its counter overflows before it reaches its bound")
    return trips


_CONDITION_OPS = frozenset({"stablehlo.constant", "stablehlo.compare", "stablehlo.return"})


def _defining(value, block):
    """The op in ``block`` that computes ``value``, or None."""
    owner = value.owner
    if not hasattr(owner, "operation") or owner.operation.block != block:
        return None
    return owner.operation


def _argument_number(value, block) -> int | None:
    owner = value.owner
    if hasattr(owner, "operation") or owner != block:
        return None
    return value.arg_number


def _constant_integer(value, ir) -> int | None:
    owner = value.owner
    if not hasattr(owner, "operation") or owner.operation.name != "stablehlo.constant":
        return None
    attribute = ir.DenseIntElementsAttr(owner.operation.attributes["value"])
    if not attribute.is_splat or ir.RankedTensorType(attribute.type).rank != 0:
        return None
    return ir.IntegerAttr(attribute.get_splat_value()).value


def _increment(value, body, counter: int, ir) -> int | None:
    """c where ``value`` is ``add(counter argument, constant c)`` in ``body``, or None."""
    add = _defining(value, body)
    if add is None or add.name != "stablehlo.add":
        return None
    first, second = add.operands
    for argument, constant in ((first, second), (second, first)):
        if _argument_number(argument, body) == counter:
            return _constant_integer(constant, ir)
    return None
