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

from torchneuron import loop_bound
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
    unless its form proves it (``torchneuron/loop_bound.py``: the runtime's verifier runs
    the same proof)."""
    try:
        return loop_bound.loop_trip_count(loop, ir)
    except loop_bound.UncountedLoop as error:
        raise UncountedLoopError(str(error)) from None


def loop_iterations(loop: ir.Operation) -> int:
    """How many times ``loop``'s body runs in one run of the program: its trip count times
    those of the loops around it (the runtime's bound, ``MAX_LOOP_TRIPS``, is on this)."""
    try:
        return loop_bound.loop_iterations(loop, ir)
    except loop_bound.UncountedLoop as error:
        raise UncountedLoopError(str(error)) from None
