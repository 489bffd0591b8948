"""The compiled program's @main: its signature, and its serialization for the NEFF.

Arguments of ``func.func @main`` carry ``neuron.weight = "<name>"`` (data stored in the
NEFF) or ``neuron.input = "<name>"`` (supplied at run time); ``signature_of`` reads
them with each argument's shape and dtype. Results that are run-time checks (a 0-d
bool that must be true, ``lowering.checks``) carry ``neuron.check = "<message>"`` and
``neuron.check_error = "<kind>"``; ``checks_of`` reads them. ``portable_artifact`` writes
the program as the StableHLO portable artifact the executor reads, without our
bookkeeping attributes, and registers its bytes as trusted with the runtime's program
verifier (``runtime/verifier.py``), so loading it in this process starts no child.
"""

from __future__ import annotations

import numpy as np
from torch_mlir import ir

from torchneuron.lowering.errors import DynamicShapeError, LoweringError
from torchneuron.target import dtypes

from .versions import stablehlo_target_version

WEIGHT_ATTR = "neuron.weight"
INPUT_ATTR = "neuron.input"
CHECK_ATTR = "neuron.check"
CHECK_ERROR_ATTR = "neuron.check_error"
# Discardable attributes of ours that stay out of the serialized program.
ANNOTATION_ATTRS = ("neuron.kernel", "neuron.engine", "neuron.activation")


def find_main(module: ir.Module):
    """The module's ``func.func @main``, or None."""
    for op in module.body.operations:
        if (
            op.operation.name == "func.func"
            and "sym_name" in op.attributes
            and ir.StringAttr(op.attributes["sym_name"]).value == "main"
        ):
            return op
    return None


def main_function(module: ir.Module):
    """The module's ``func.func @main``; ``LoweringError`` if it has none."""
    found = find_main(module)
    if found is None:
        raise LoweringError("the lowered module has no func.func @main")
    return found


def mark_arguments(module: ir.Module, marks: list[tuple[str, str]]) -> None:
    """Name every @main argument: ``marks[i]`` is ``(kind, name)``, kind weight or input."""
    func = main_function(module)
    with module.context:
        attrs = [
            ir.DictAttr.get(
                {WEIGHT_ATTR if kind == "weight" else INPUT_ATTR: ir.StringAttr.get(name)}
            )
            for kind, name in marks
        ]
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def mark_checks(module: ir.Module, checks) -> None:
    """Mark the last ``len(checks)`` results of @main as the run-time checks ``checks``
    (``lowering.checks.Check``: error kind, message), in order. Nothing when none."""
    if not checks:
        return
    func = main_function(module)
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    count = len(function_type.results)
    if len(checks) > count:
        raise LoweringError(f"@main has {count} results, fewer than its {len(checks)} checks")
    first = count - len(checks)
    with module.context:
        attrs = [ir.DictAttr.get({}) for _ in range(first)] + [
            ir.DictAttr.get(
                {
                    CHECK_ATTR: ir.StringAttr.get(check.message),
                    CHECK_ERROR_ATTR: ir.StringAttr.get(check.error),
                }
            )
            for check in checks
        ]
        func.attributes["res_attrs"] = ir.ArrayAttr.get(attrs)


def checks_of(module: ir.Module) -> list[dict]:
    """The run-time checks of @main: result (its position), error (kind) and message."""
    func = main_function(module)
    if "res_attrs" not in func.attributes:
        return []
    checks = []
    for position, attr in enumerate(ir.ArrayAttr(func.attributes["res_attrs"])):
        attrs = ir.DictAttr(attr)
        if CHECK_ATTR in attrs:
            error = (
                ir.StringAttr(attrs[CHECK_ERROR_ATTR]).value if CHECK_ERROR_ATTR in attrs else ""
            )
            message = ir.StringAttr(attrs[CHECK_ATTR]).value
            checks.append({"result": position, "error": error, "message": message})
    return checks


def signature_of(module: ir.Module) -> tuple[list[dict], list[dict]]:
    """Arguments (name, kind, shape, dtype) and results (shape, dtype) of @main.

    An argument without a mark is input ``input<i>``.
    """
    func = main_function(module)
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    arg_attrs = func.attributes["arg_attrs"] if "arg_attrs" in func.attributes else None
    arguments = []
    for i, arg_type in enumerate(function_type.inputs):
        name, kind = f"input{i}", "input"
        if arg_attrs is not None:
            attrs = ir.DictAttr(ir.ArrayAttr(arg_attrs)[i])
            if WEIGHT_ATTR in attrs:
                name, kind = ir.StringAttr(attrs[WEIGHT_ATTR]).value, "weight"
            elif INPUT_ATTR in attrs:
                name = ir.StringAttr(attrs[INPUT_ATTR]).value
        arguments.append({"name": name, "kind": kind, **_tensor_type(arg_type, f"argument {i}")})
    results = [_tensor_type(t, f"result {i}") for i, t in enumerate(function_type.results)]
    return arguments, results


def _tensor_type(mlir_type: ir.Type, what: str) -> dict:
    tensor_type = ir.RankedTensorType(mlir_type)
    if not tensor_type.has_static_shape:
        raise DynamicShapeError(f"{what} of @main has a dynamic shape: {mlir_type}")
    element = str(tensor_type.element_type)
    row = dtypes.from_mlir(element)
    if row is None or not row.in_neff:
        raise LoweringError(f"{what} of @main has element type {element}, not supported")
    return {"shape": list(tensor_type.shape), "dtype": row.name}


def spec(entry: dict) -> dict:
    return {"name": entry["name"], "shape": list(entry["shape"]), "dtype": entry["dtype"]}


def size_bytes(entry: dict) -> int:
    count = int(np.prod(entry["shape"], dtype=np.int64)) if entry["shape"] else 1
    return count * dtypes.NEFF_DTYPES[entry["dtype"]].itemsize


def portable_artifact(module: ir.Module) -> bytes:
    """The module as a StableHLO portable artifact the executor's jaxlib can read."""
    from torch_mlir._mlir_libs import _stablehlo

    check_allowed_ops(module)
    func = main_function(module)
    text = str(module)
    if (
        "arg_attrs" in func.attributes
        or "res_attrs" in func.attributes
        or any(name in text for name in ANNOTATION_ATTRS)
    ):
        # Our argument attributes and kernel/engine annotations are bookkeeping (the
        # schedule is stored beside the program), not part of the portable program.
        clone = ir.Module.parse(text, module.context)
        clone_main = main_function(clone)
        for name in ("arg_attrs", "res_attrs"):
            if name in clone_main.attributes:
                del clone_main.attributes[name]
        strip_annotations(clone)
        text = str(clone)
    try:
        artifact = _stablehlo.serialize_portable_artifact_str(text, stablehlo_target_version())
    except Exception as exc:
        raise LoweringError(
            f"could not serialize the program as a StableHLO {stablehlo_target_version()} "
            f"portable artifact: {exc}"
        ) from None
    # Bytes our serializer wrote from a module our pipeline built: the runtime may read
    # them in this process without its verifier's child process.
    from torchneuron.runtime.verifier import trust_program

    trust_program(artifact, _runtime_signature(func))
    return artifact


def _runtime_signature(func):
    """@main's signature as the runtime reads it (None where the runtime would refuse a
    type: it then parses the bytes and says why)."""
    from torchneuron.runtime.errors import NeuronRuntimeError
    from torchneuron.runtime.program import function_signature

    try:
        return function_signature(func, "program", ir)
    except NeuronRuntimeError:
        return None


def check_allowed_ops(module: ir.Module) -> None:
    """``LoweringError`` naming every op of ``module`` that the runtime's program verifier
    refuses, so the compiler never writes a NEFF that another process would not load
    (the in-process runtime trusts what the compiler serialised without re-verifying)."""
    from torchneuron.passes.dataflow import UncountedLoopError, loop_iterations
    from torchneuron.runtime.verifier_allowlist import (
        ALLOWED_CUSTOM_CALL_TARGETS,
        ALLOWED_OPS,
        EXCLUDED_OPS,
        MAX_LOOP_TRIPS,
    )

    refused: dict[str, str] = {}

    def visit(op) -> ir.WalkResult:
        operation = op.operation
        name = operation.name
        if name == "stablehlo.while":
            try:
                iterations = loop_iterations(operation)
            except UncountedLoopError as refusal:
                refused[name] = str(refusal)
                return ir.WalkResult.ADVANCE
            if iterations > MAX_LOOP_TRIPS:
                refused[name] = (
                    f"its body runs {iterations} times (with the loops around it), more "
                    f"than the {MAX_LOOP_TRIPS} the runtime allows"
                )
        if name == "stablehlo.custom_call":
            target = ir.StringAttr(operation.attributes["call_target_name"]).value
            if target not in ALLOWED_CUSTOM_CALL_TARGETS:
                refused[f"{name} @{target}"] = EXCLUDED_OPS[name]
        elif name not in ALLOWED_OPS:
            refused[name] = EXCLUDED_OPS.get(name, "it is not in the runtime's op allowlist")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if refused:
        foreign = sorted(
            {name.split(".", 1)[0] for name in refused} - {"stablehlo", "func", "builtin"}
        )
        if foreign:
            # Ops of other dialects are leftovers of the import that the pass pipeline
            # did not rewrite (a custom --passes without legalize-to-stablehlo).
            raise LoweringError(
                f"the program still holds {', '.join(sorted(refused))}: a NEFF holds "
                f"StableHLO only, and the pass pipeline left {', '.join(foreign)} ops; "
                "put legalize-to-stablehlo first in the pipeline"
            )
        first = next(iter(refused))
        raise LoweringError(
            f"the program uses {', '.join(sorted(refused))}, which the runtime's program "
            f"verifier refuses ({first}: {refused[first]}; "
            "torchneuron/runtime/verifier_allowlist.py)"
        )


def strip_annotations(module: ir.Module) -> None:
    """Delete our discardable scheduling attributes from every operation of ``module``."""

    def strip(op) -> ir.WalkResult:
        attributes = op.operation.attributes
        for name in ANNOTATION_ATTRS:
            if name in attributes:
                del attributes[name]
        return ir.WalkResult.ADVANCE

    module.operation.walk(strip)
