"""torch dialect -> StableHLO, through torch-mlir's pass pipelines.

Two steps, each a stage of its own: the raw import is simplified to torch-mlir's
"backend contract" form (``torch`` stage), then converted to StableHLO
(``stablehlo`` stage). A failure to legalize an ATen op becomes an
``UnsupportedOpError`` naming the op, its operands and the user's source line.

Some forms crash torch-mlir's native code (a segfault: the process dies, nothing can
catch it) or send it into an endless loop. The lowering rules rewrite them before import; what still reaches a
pipeline in such a form (from torch-mlir's own decompositions, or a graph built
without our rules) is refused first, with an ``UnsupportedOpError`` naming the form
(``CRASHING_FORMS``).

torch-mlir folds a constant unsigned tensor (``zeros(3, dtype=torch.uint8)``, ``fill_`` of
a uint8 tensor) into a ``torch.vtensor.literal`` of ``ui8`` that its StableHLO conversion
cannot legalize; such a literal is rewritten first into a signed literal of the same bits
and a ``view.dtype`` back to the unsigned type, which converts to ``bitcast_convert``
(``unsigned_literals_as_bitcasts``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import types

import numpy as np
import torch.fx
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d
from torch_mlir.passmanager import PassManager

from .errors import LoweringError, UnsupportedOpError, describe_value, node_source
from .loops import loops_as_while

TORCH_BACKEND_PIPELINE = (
    "builtin.module(func.func(torch-match-quantized-custom-ops),"
    "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})"
)
STABLEHLO_PIPELINE = "builtin.module(torch-backend-to-stablehlo-backend-pipeline)"

# torch-mlir ops whose lowering crashes (or never ends) on a 0-d first operand: name ->
# the index of the keepdim operand (crashes only when it is a constant true), or None
# (always). Found by running each form in a subprocess: var/std crash in the torch
# stage, the keepdim reductions in the stablehlo stage (torch-mlir's var decomposes
# into them), softmax and log_softmax loop forever in the torch stage.
CRASHING_FORMS: dict[str, int | None] = {
    "torch.aten.var.correction": None,
    "torch.aten.var.dim": None,
    "torch.aten.var_mean.correction": None,
    "torch.aten.var_mean.dim": None,
    "torch.aten.std.correction": None,
    "torch.aten.std.dim": None,
    "torch.aten.std_mean.correction": None,
    "torch.aten.std_mean.dim": None,
    "torch.aten.sum.dim_IntList": 2,
    "torch.aten.mean.dim": 2,
    "torch.aten.linalg_vector_norm": 3,
    "torch.aten._softmax": None,
    "torch.aten._log_softmax": None,
}

_ILLEGAL_OP = re.compile(r"failed to legalize operation '([\w.]+)'")
# an op torch-mlir imported without knowing it: ``torch.operator`` named by its
# namespace and name, any namespace (aten, prims, or a custom op's: torch_nn, mylib...);
# generic form in diagnostics, custom form in the printed module
_OPAQUE_OP = re.compile(
    r'"torch\.operator"\([^)]*\)\s*<\{name = "(torch\.[\w.]+)"'
    r'|\btorch\.operator "(torch\.[\w.]+)"'
)
_LEFTOVER_ATEN_OP = re.compile(r"\b(torch\.aten\.[\w.]+)\b")


def lower_to_torch_backend(module: ir.Module, graph: torch.fx.Graph | None = None) -> None:
    """Raw torch dialect -> torch backend contract, in place."""
    _run(module, TORCH_BACKEND_PIPELINE, "torch", graph)


def lower_to_stablehlo(module: ir.Module, graph: torch.fx.Graph | None = None) -> None:
    """Torch backend contract -> StableHLO, in place."""
    unsigned_literals_as_bitcasts(module)
    loops_as_while(module)
    _run(module, STABLEHLO_PIPELINE, "stablehlo", graph)


# torch's ScalarType codes of the unsigned integer dtypes, by bit width (view.dtype's operand)
_UNSIGNED_SCALAR_TYPE = {8: 0, 16: 27, 32: 28, 64: 29}
_UNSIGNED_ELEMENT = re.compile(r",ui(8|16|32|64)>$")


def unsigned_literals_as_bitcasts(module: ir.Module) -> None:
    """Rewrite, in place, every unsigned tensor literal that torch-mlir cannot convert.

    ``torch.vtensor.literal(dense<200> : tensor<3xui8>)`` ->
    ``torch.aten.view.dtype(torch.vtensor.literal(dense<-56> : tensor<3xsi8>), uint8)``
    (the same bits; torch-mlir does not fold a ``view.dtype`` of a literal).
    """
    literals: list[ir.Operation] = []

    def visit(op) -> ir.WalkResult:
        op = op.operation
        if op.name == "torch.vtensor.literal" and _UNSIGNED_ELEMENT.search(str(op.results[0].type)):
            literals.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    for op in literals:
        with module.context, op.location, ir.InsertionPoint(op):
            result_type = op.results[0].type
            signed_type = ir.Type.parse(re.sub(r",ui(\d+)>$", r",si\1>", str(result_type)))
            value = _as_signed(ir.DenseIntElementsAttr(op.attributes["value"]))
            signed = torch_d.ValueTensorLiteralOp(value, results=[signed_type]).result
            width = ir.IntegerType(value.type.element_type).width
            code = torch_d.ConstantIntOp(_UNSIGNED_SCALAR_TYPE[width]).result
            viewed = torch_d.AtenViewDtypeOp(result_type, signed, code).result
        op.results[0].replace_all_uses_with(viewed)
        op.erase()


def _as_signed(value: ir.DenseIntElementsAttr) -> ir.DenseElementsAttr:
    """The signed integer elements attribute with the same bits as unsigned ``value``."""
    shaped = ir.RankedTensorType(value.type)
    width = ir.IntegerType(shaped.element_type).width
    element = ir.IntegerType.get_signed(width)
    if value.is_splat:
        bits = ir.IntegerAttr(value.get_splat_value()).value % (1 << width)
        signed = bits - (1 << width) if bits >= 1 << (width - 1) else bits
        splat = ir.IntegerAttr.get(element, signed)
        return ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get(shaped.shape, element), splat)
    array = np.array(value).view(f"int{width}")
    return ir.DenseElementsAttr.get(array, signless=False, shape=shaped.shape)


def _run(module: ir.Module, pipeline: str, stage: str, graph: torch.fx.Graph | None) -> None:
    refuse_crashing_forms(module, graph)
    with captured_native_stderr() as captured:
        try:
            with module.context as ctx:
                ctx.emit_error_diagnostics = True
                PassManager.parse(pipeline).run(module.operation)
            return
        except MemoryError:  # std::bad_alloc thrown by the pass itself, not a missing lowering
            error = None
        except Exception as exc:  # the bindings raise a generic MLIRError
            error = exc
    if error is None:
        raise LoweringError(
            f"torch-mlir's lowering to the {stage} stage ran out of memory (std::bad_alloc) "
            "in its own code: a form in this graph makes it allocate without bound; no "
            "particular op lacks a lowering"
        )
    diagnostics = f"{captured.text}\n{error}"
    raise _explain(diagnostics, stage, module, graph) from None


def refuse_crashing_forms(module: ir.Module, graph: torch.fx.Graph | None = None) -> None:
    """Raise ``UnsupportedOpError`` if ``module`` holds a form torch-mlir crashes on."""
    found: list[str] = []

    def visit(op) -> ir.WalkResult:
        op = op.operation
        if op.name in CRASHING_FORMS and _crashes(op, CRASHING_FORMS[op.name]):
            found.append(op.name)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    if found:
        op = found[0].removeprefix("torch.")
        node = _find_node(graph, op)
        values = [a.meta.get("val") for a in node.all_input_nodes] if node is not None else []
        raise UnsupportedOpError(
            str(node.target) if node is not None else op,
            [describe_value(v) for v in values] or ["a 0-d tensor"],
            node_source(node) if node is not None else None,
            detail="refused before torch-mlir, whose lowering of this form crashes the process",
        )


def _crashes(op: ir.Operation, keepdim_index: int | None) -> bool:
    operands = list(op.operands)
    if not operands or not str(operands[0].type).startswith("!torch.vtensor<[],"):
        return False
    if keepdim_index is None:
        return True
    if keepdim_index >= len(operands):
        return False
    owner = operands[keepdim_index].owner
    owner = getattr(owner, "operation", owner)
    if not isinstance(owner, ir.Operation) or owner.name != "torch.constant.bool":
        return True  # not a constant: it may be true
    return ir.BoolAttr(owner.attributes["value"]).value


@contextlib.contextmanager
def captured_native_stderr():
    """Capture what native code writes to file descriptor 2 (MLIR diagnostics).

    Yields an object whose ``text`` holds the capture once the block exits.
    """
    result = types.SimpleNamespace(text="")
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield result
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            result.text = sink.read().decode("utf-8", "replace")


def _explain(diagnostics: str, stage: str, module: ir.Module, graph) -> LoweringError:
    # The op named in the diagnostic may be a by-product (a stray torch.constant)
    # of the real culprit: an ATen op still in the partly converted module.
    text = str(module)
    match = (
        _OPAQUE_OP.search(diagnostics)
        or _OPAQUE_OP.search(text)
        or _LEFTOVER_ATEN_OP.search(text)
        or _ILLEGAL_OP.search(diagnostics)
    )
    if match:
        mlir_name = next(g for g in match.groups() if g)  # e.g. torch.aten.foo
        op = mlir_name.removeprefix("torch.")
        node = _find_node(graph, op)
        if node is not None:
            values = [a.meta.get("val") for a in node.all_input_nodes]
            return UnsupportedOpError(
                str(node.target),
                [describe_value(v) for v in values],
                node_source(node),
                detail=_first_error_line(diagnostics),
            )
        return UnsupportedOpError(op, detail=_first_error_line(diagnostics))
    return LoweringError(f"lowering to the {stage} stage failed:\n{diagnostics.strip()}")


def _find_node(graph, op: str):
    """The first FX node calling ``op`` (``aten.foo`` matches ``aten.foo.default``)."""
    if graph is None:
        return None
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        target = str(node.target)
        if target == op or target.rsplit(".", 1)[0] == op:
            return node
    return None


def _first_error_line(diagnostics: str) -> str:
    for line in diagnostics.splitlines():
        if "error:" in line:
            return line.strip()[:300]
    return diagnostics.strip().splitlines()[0] if diagnostics.strip() else ""
