"""The dataflow graph of a function: its top-level operations as nodes, its values as refs.

``Dataflow.of_function(f)`` lists the top-level operations of ``f`` in program order
as ``Node``s (op kind from ``torchneuron.target.engines``, operand refs, result
types as ``TensorInfo``, users, whether a result is returned); values captured by
a region count as operands of the op that owns the region. A value is a
``ValueRef``: (producing node index, result number), or (``ARGUMENT``, argument
number). The analysis reads the IR and never changes it.

Used by the ``fuse-kernels`` and ``assign-engines`` passes and by the cost model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch_mlir import ir

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
    """One top-level operation of a function body."""

    index: int
    op: ir.Operation
    name: str
    kind: str
    operands: list[ValueRef]
    results: list[TensorInfo]
    users: list[int] = field(default_factory=list)  # node indices, in order, no repeats
    returned: bool = False  # a result is returned by the function
    splat: bool = False  # a constant whose elements are all equal


@dataclass
class Dataflow:
    """The top-level operations of one function as a graph of nodes and values."""

    function: ir.Operation
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
        block = function.regions[0].blocks[0]
        ops = [op.operation for op in block.operations]
        terminator = ops.pop() if ops and ops[-1].name in ("func.return", "return") else None
        index = {op: i for i, op in enumerate(ops)}

        def ref_of(value: ir.Value) -> ValueRef:
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
                for captured in _captured_values(region, index):
                    if captured not in seen:
                        seen.add(captured)
                        node.operands.append((captured, 0))
                        nodes[captured].users.append(node.index)
        returns = [ref_of(v) for v in terminator.operands] if terminator is not None else []
        for producer, _ in returns:
            if producer != ARGUMENT:
                nodes[producer].returned = True
        arguments = [tensor_info(a.type) for a in block.arguments]
        return cls(function, nodes, arguments, returns)


def _is_splat(op: ir.Operation) -> bool:
    try:
        attr = op.attributes["value"]
    except (KeyError, TypeError):
        return False
    try:
        return ir.DenseElementsAttr(attr).is_splat
    except (TypeError, ValueError):
        return False


def _captured_values(region: ir.Region, top_level: dict) -> list[int]:
    """Top-level nodes whose results are used inside ``region`` (regions may capture)."""
    found = []
    for block in region.blocks:
        for op in block.operations:
            for value in op.operation.operands:
                owner = value.owner
                if not isinstance(owner, ir.Block) and owner.operation in top_level:
                    found.append(top_level[owner.operation])
            for nested in op.operation.regions:
                found.extend(_captured_values(nested, top_level))
    return found


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
