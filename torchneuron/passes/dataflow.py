"""The dataflow graph of a block: its operations as nodes, its values as refs.

``Dataflow.of_function(f)`` lists the top-level operations of ``f`` in program order
as ``Node``s (op kind from ``torchneuron.target.engines``, operand refs, result
types as ``TensorInfo``, users, whether a result is returned); values captured by
a region count as operands of the op that owns the region. A value is a
``ValueRef``: (producing node index, result number), or (``ARGUMENT``, argument
number). The analysis reads the IR and never changes it.

``Dataflow.of_loop_body(w)`` is the same graph of the body of the ``stablehlo.while``
``w``: its arguments are the body's block arguments (the carried values), then the
values it captures from outside that are not constants; the constants it captures
are its first nodes, so a body is costed like a function (splats are immediates,
other constants are read). ``loop_flows(f)`` gives the graph of ``f`` and of every
loop body in it, nested ones included. ``loop_trip_count(w)`` proves how many times
``w`` runs its body, or raises ``UncountedLoopError``.

Used by the ``fuse-kernels`` and ``assign-engines`` passes and by the cost model.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.target import engines
from torchneuron.target.engines import op_kind

ARGUMENT = -1  # ValueRef producer of a block argument

# A value: (producing node index, result number), or (ARGUMENT, argument number).
ValueRef = tuple[int, int]


@dataclass(frozen=True)
class TensorInfo:
    """Static type of one value: shape, dtype name, bytes per element."""

    shape: tuple[int, ...]
    dtype: str
    itemsize: int

    @property
    def elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    @property
    def nbytes(self) -> int:
        return self.elements * self.itemsize


def tensor_info(value_type: ir.Type) -> TensorInfo:
    """The TensorInfo of a ranked tensor type; tokens, tuples and dynamic shapes count 0 bytes."""
    try:
        ranked = ir.RankedTensorType(value_type)
    except ValueError:
        return TensorInfo((0,), str(value_type), 0)
    dtype, itemsize = engines.element_type(str(ranked.element_type))
    if ranked.has_static_shape:
        return TensorInfo(tuple(int(d) for d in ranked.shape), dtype, itemsize)
    return TensorInfo((0,), dtype, itemsize)


@dataclass
class Node:
    """One operation of a block (a function's or a loop's body), or a constant the block
    uses from outside it."""

    index: int
    op: ir.Operation
    name: str
    kind: str
    operands: list[ValueRef]
    results: list[TensorInfo]
    users: list[int] = field(default_factory=list)  # node indices, in order, no repeats
    returned: bool = False  # a result is returned by the block (or handed to the next trip)
    splat: bool = False  # a constant whose elements are all equal


@dataclass
class Dataflow:
    """The operations of one block as a graph of nodes and values."""

    owner: ir.Operation  # the func.func, or the stablehlo.while whose body this is
    nodes: list[Node]
    arguments: list[TensorInfo]
    returns: list[ValueRef]

    def info(self, ref: ValueRef) -> TensorInfo:
        producer, number = ref
        if producer == ARGUMENT:
            return self.arguments[number]
        return self.nodes[producer].results[number]

    @classmethod
    def of_function(cls, function: ir.Operation) -> Dataflow:
        return cls._of_block(function, function.regions[0].blocks[0])

    @classmethod
    def of_loop_body(cls, loop: ir.Operation) -> Dataflow:
        """The body (``do`` region) of the ``stablehlo.while`` ``loop``."""
        return cls._of_block(loop, loop.regions[1].blocks[0])

    @classmethod
    def _of_block(cls, owner: ir.Operation, block: ir.Block) -> Dataflow:
        ops = [op.operation for op in block.operations]
        terminator = ops.pop() if ops and ops[-1].name in _TERMINATORS else None
        captured_constants, captured_values = _captures(block)
        ops = captured_constants + ops
        index = {op: i for i, op in enumerate(ops)}
        outer = {value: len(block.arguments) + i for i, value in enumerate(captured_values)}

        def ref_of(value: ir.Value) -> ValueRef:
            if value in outer:
                return (ARGUMENT, outer[value])
            owner = value.owner
            if isinstance(owner, ir.Block):
                return (ARGUMENT, ir.BlockArgument(value).arg_number)
            return (index[owner.operation], ir.OpResult(value).result_number)

        nodes = []
        for i, op in enumerate(ops):
            name = op.name
            kind = op_kind(name)
            node = Node(
                i,
                op,
                name,
                kind,
                [ref_of(v) for v in op.operands],
                [tensor_info(r.type) for r in op.results],
            )
            if kind == engines.CONSTANT:
                node.splat = _is_splat(op)
            nodes.append(node)
        for node in nodes:
            seen = set()
            for producer, _ in node.operands:
                if producer != ARGUMENT and producer not in seen:
                    seen.add(producer)
                    nodes[producer].users.append(node.index)
            # Values used inside a region (implicit captures) count as operands too.
            for region in node.op.regions:
                for value in _values_used_in(region):
                    if not _defined_in(value, region):
                        ref = ref_of(value)
                        if ref not in node.operands:
                            node.operands.append(ref)
                        if ref[0] != ARGUMENT and ref[0] not in seen:
                            seen.add(ref[0])
                            nodes[ref[0]].users.append(node.index)
        returns = [ref_of(v) for v in terminator.operands] if terminator is not None else []
        for producer, _ in returns:
            if producer != ARGUMENT:
                nodes[producer].returned = True
        arguments = [tensor_info(a.type) for a in block.arguments]
        arguments += [tensor_info(v.type) for v in captured_values]
        return cls(owner, nodes, arguments, returns)


_TERMINATORS = frozenset(["func.return", "return", "stablehlo.return"])


def _values_used_in(region: ir.Region) -> Iterator[ir.Value]:
    """Every operand of every operation in ``region``, nested regions included."""
    for block in region.blocks:
        for op in block.operations:
            yield from op.operation.operands
            for nested in op.operation.regions:
                yield from _values_used_in(nested)


def _defined_in(value: ir.Value, region: ir.Region) -> bool:
    """Whether ``value`` is a block argument or a result of an operation inside ``region``."""
    owner = value.owner
    block = owner if isinstance(owner, ir.Block) else owner.operation.block
    while block is not None:
        if block.region == region:
            return True
        parent = block.owner
        if parent is None or parent.operation.name == "func.func":
            return False
        block = parent.operation.block
    return False


def _captures(block: ir.Block) -> tuple[list[ir.Operation], list[ir.Value]]:
    """The constant operations, and the other values, that ``block`` uses from outside
    it (a loop body reads what it closes over); none for a function's body."""
    constants: list[ir.Operation] = []
    values: list[ir.Value] = []
    for op in block.operations:
        operands = list(op.operation.operands)
        for nested in op.operation.regions:
            operands.extend(_values_used_in(nested))
        for value in operands:
            if _defined_in(value, block.region):
                continue
            owner = value.owner
            if not isinstance(owner, ir.Block) and op_kind(owner.operation.name) == (
                engines.CONSTANT
            ):
                if owner.operation not in constants:
                    constants.append(owner.operation)
            elif value not in values:
                values.append(value)
    return constants, values


def _is_splat(op: ir.Operation) -> bool:
    try:
        attr = op.attributes["value"]
    except (KeyError, TypeError):
        return False
    try:
        return ir.DenseElementsAttr(attr).is_splat
    except (TypeError, ValueError):
        return False


def functions_of(module: ir.Module) -> list[ir.Operation]:
    """Every ``func.func`` with a body at the top level of ``module``."""
    return [
        op.operation
        for op in module.body.operations
        if op.operation.name == "func.func" and len(op.operation.regions[0].blocks) > 0
    ]


def main_function(module: ir.Module) -> ir.Operation:
    """``@main``, or the only function when there is one; KeyError otherwise."""
    functions = functions_of(module)
    for function in functions:
        if ir.StringAttr(function.attributes["sym_name"]).value == "main":
            return function
    if len(functions) == 1:
        return functions[0]
    raise KeyError("the module has no func.func @main")


def loop_flows(function: ir.Operation) -> Iterator[Dataflow]:
    """The dataflow of ``function``'s top level, then of every ``stablehlo.while`` body in
    it, nested ones included (a body after the block holding its loop)."""
    pending = [Dataflow.of_function(function)]
    while pending:
        flow = pending.pop(0)
        yield flow
        pending += [Dataflow.of_loop_body(n.op) for n in flow.nodes if n.kind == engines.LOOP]


# -- the trip count of a counted loop ------------------------------------------------------


class UncountedLoopError(TorchNeuronError, ValueError):
    """A ``stablehlo.while`` whose trip count its form does not prove."""


def loop_trip_count(loop: ir.Operation) -> int:
    """How many times the ``stablehlo.while`` ``loop`` runs its body; ``UncountedLoopError``
    unless its form proves it: a counter carried from a constant start, compared ``LT``
    (signed) with a constant in the condition (nothing else there), and handed on as
    itself plus a positive constant, without overflow.

    The same proof as the runtime's program verifier (``runtime/verifier_child.py``
    ``loop_trip_count``, which runs in a process of its own and imports nothing of ours);
    ``tests/estimate/test_loops.py`` checks that the two agree on every form.
    """
    condition, body = (region.blocks[0] for region in loop.regions)
    why = "its trip count is not proved: "
    returned = list(condition.operations)[-1].operation
    compare = _defining(returned.operands[0], condition) if len(returned.operands) == 1 else None
    if compare is None or compare.name != "stablehlo.compare":
        raise UncountedLoopError(why + "its condition is not a comparison of its own")
    if any(op.operation.name not in _CONDITION_OPS for op in condition.operations):
        raise UncountedLoopError(why + "its condition computes more than a comparison")
    direction = str(compare.attributes["comparison_direction"])
    kind = str(compare.attributes["compare_type"]) if "compare_type" in compare.attributes else ""
    if "LT" not in direction.split() and not direction.endswith("LT>"):
        raise UncountedLoopError(why + f"its condition compares {direction}, not LT")
    if kind and "SIGNED" not in kind.replace("UNSIGNED", ""):
        raise UncountedLoopError(why + f"its condition compares as {kind}, not SIGNED")
    counter = _argument_number(compare.operands[0], condition)
    bound = _constant_integer(compare.operands[1])
    if counter is None or bound is None:
        raise UncountedLoopError(
            why + "its condition does not compare a carried value with a constant"
        )
    counter_type = ir.RankedTensorType(loop.operands[counter].type)
    element = counter_type.element_type
    if counter_type.rank != 0 or not isinstance(element, ir.IntegerType) or not element.is_signless:
        raise UncountedLoopError(
            why + f"its counter is {counter_type}, not a signless integer scalar"
        )
    start = _constant_integer(loop.operands[counter])
    body_return = list(body.operations)[-1].operation
    step = _increment(body_return.operands[counter], body, counter)
    if start is None or step is None or step <= 0:
        raise UncountedLoopError(
            why + "its counter does not start at a constant and grow by a positive one"
        )
    trips = 0 if start >= bound else -(-(bound - start) // step)
    if start + trips * step > (1 << (element.width - 1)) - 1:
        raise UncountedLoopError(why + "its counter overflows before it reaches its bound")
    return trips


def loop_iterations(loop: ir.Operation) -> int:
    """How many times ``loop``'s body runs in one run of the program: its trip count
    times those of the loops around it (the runtime's bound, ``MAX_LOOP_TRIPS``, is on
    this number)."""
    total, enclosing = loop_trip_count(loop), loop.parent
    while enclosing is not None:
        enclosing = enclosing.operation
        if enclosing.name == "stablehlo.while":
            total *= loop_trip_count(enclosing)
        enclosing = enclosing.parent
    return total


_CONDITION_OPS = frozenset({"stablehlo.constant", "stablehlo.compare", "stablehlo.return"})


def _defining(value: ir.Value, block: ir.Block) -> ir.Operation | None:
    """The op in ``block`` that computes ``value``, or None."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.block != block:
        return None
    return owner.operation


def _argument_number(value: ir.Value, block: ir.Block) -> int | None:
    owner = value.owner
    if not isinstance(owner, ir.Block) or owner != block:
        return None
    return ir.BlockArgument(value).arg_number


def _constant_integer(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "stablehlo.constant":
        return None
    attribute = ir.DenseIntElementsAttr(owner.operation.attributes["value"])
    if not attribute.is_splat or ir.RankedTensorType(attribute.type).rank != 0:
        return None
    return ir.IntegerAttr(attribute.get_splat_value()).value


def _increment(value: ir.Value, body: ir.Block, counter: int) -> int | None:
    """c where ``value`` is ``add(counter argument, constant c)`` in ``body``, or None."""
    add = _defining(value, body)
    if add is None or add.name != "stablehlo.add":
        return None
    first, second = add.operands
    for argument, constant in ((first, second), (second, first)):
        if _argument_number(argument, body) == counter:
            return _constant_integer(constant)
    return None
