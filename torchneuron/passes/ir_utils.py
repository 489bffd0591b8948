"""Small helpers over the MLIR Python bindings shared by our passes.

Contexts and parsing (a context with the StableHLO dialect loaded), program-order
iteration, constant lookup, and the replace-then-erase step every rewrite ends
with. Operations are always handled as ``ir.Operation`` (not ``OpView``) so
that identity comparisons work.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch_mlir import ir
from torch_mlir._mlir_libs import _mlir, _stablehlo

from torchneuron.mlir_context import new_context
from torchneuron.passes.ir_constants import is_dense_elements

_DIALECT_MODULES = "torchneuron.passes.dialect_modules"
if _DIALECT_MODULES not in _mlir.globals.dialect_search_modules:
    _mlir.globals.append_dialect_search_prefix(_DIALECT_MODULES)

# Ops whose "value" attribute is the constant payload of their single result.
CONSTANT_OP_NAMES = frozenset(["stablehlo.constant", "arith.constant"])


def make_context() -> ir.Context:
    """A torch-mlir Context with the StableHLO dialect registered and loaded."""
    context = new_context()
    _stablehlo.register_dialect(context)
    return context


def parse_module(text: str, context: ir.Context | None = None) -> ir.Module:
    """Parse MLIR text (StableHLO, func, arith, shape, tensor ...) into a module."""
    context = context or make_context()
    _stablehlo.register_dialect(context)
    return ir.Module.parse(text, context=context)


def as_operation(op: ir.Operation | ir.OpView) -> ir.Operation:
    """The plain Operation behind an OpView (identity comparisons need this form)."""
    return op.operation


def ops_in_program_order(root: ir.Operation | ir.OpView) -> list[ir.Operation]:
    """Every operation nested under ``root`` (not ``root`` itself), parents before children."""
    root = as_operation(root)
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        found.append(as_operation(op))
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [op for op in found if op != root]


def count_ops(module: ir.Module) -> int:
    """Number of operations inside the module (the module op excluded)."""
    return len(ops_in_program_order(module.operation))


def find_function(module: ir.Module, name: str = "main") -> ir.Operation:
    """The ``func.func @name`` at the top level of ``module``; KeyError names the ones there."""
    names = []
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        symbol = ir.StringAttr(op.operation.attributes["sym_name"]).value
        if symbol == name:
            return as_operation(op)
        names.append(symbol)
    raise KeyError(f"module has no func.func @{name}; functions: {', '.join(names) or 'none'}")


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The operation producing ``value``, or None for a block argument."""
    if isinstance(value, ir.OpResult):
        return as_operation(value.owner)
    return None


def constant_attr(value: ir.Value) -> ir.Attribute | None:
    """The ``dense<...>`` payload of ``value`` if a constant op makes it, else None.

    ``dense_resource`` payloads and payloads the bindings cannot represent
    (complex element types raise TypeError on access) count as unknown.
    """
    op = defining_op(value)
    if op is None or op.name not in CONSTANT_OP_NAMES:
        return None
    try:
        attr = op.attributes["value"]
    except TypeError:
        return None
    if not isinstance(value.type, ir.RankedTensorType) or not is_dense_elements(attr):
        return None
    return attr


def has_uses(value: ir.Value) -> bool:
    """True when anything uses ``value``."""
    return next(iter(value.uses), None) is not None


def is_unused(op: ir.Operation) -> bool:
    """True when none of the op's results has a use (ops without results are never unused)."""
    results = list(op.results)
    return bool(results) and not any(has_uses(result) for result in results)


def replace_op(op: ir.Operation, replacements: Sequence[ir.Value]) -> None:
    """Redirect every use of ``op``'s results to ``replacements`` and erase ``op``."""
    for result, replacement in zip(op.results, replacements, strict=True):
        result.replace_all_uses_with(replacement)
    op.erase()


def create_op(
    name: str,
    operands: Sequence[ir.Value],
    result_types: Sequence[ir.Type],
    attributes: dict[str, ir.Attribute] | None = None,
    *,
    before: ir.Operation,
) -> ir.Operation:
    """Create ``name`` just before ``before``, at ``before``'s location."""
    return ir.Operation.create(
        name,
        results=list(result_types),
        operands=list(operands),
        attributes=attributes or {},
        loc=before.location,
        ip=ir.InsertionPoint(before),
    )


def create_constant(attr: ir.Attribute, *, before: ir.Operation) -> ir.Value:
    """A ``stablehlo.constant`` of ``attr`` placed just before ``before``."""
    return create_op("stablehlo.constant", [], [attr.type], {"value": attr}, before=before).result


def static_tensor_type(value_type: ir.Type) -> ir.RankedTensorType | None:
    """``value_type`` as a RankedTensorType if it is one with a fully static shape."""
    if isinstance(value_type, ir.RankedTensorType) and value_type.has_static_shape:
        return value_type
    return None


def i64_array(op: ir.Operation, name: str) -> list[int]:
    """An ``array<i64: ...>`` attribute of ``op`` as a list."""
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))
