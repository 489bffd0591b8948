"""The @main signature of a program: its types, and reading it from trusted bytes.

The runtime checks the signature against ``sg00/def.json`` at load time, so a NEFF
whose metadata disagrees with its program fails with a message naming the argument,
instead of an opaque XLA error at the first execution.

``program_signature`` parses the program in this process: it is for bytes our own
serializer wrote in this process only (``verifier.trust_program``). A NEFF's program
from anywhere else is parsed by the verifier's child process (``runtime/verifier.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from torchneuron.runtime.errors import NeuronRuntimeError
from torchneuron.target.dtypes import NEFF_DTYPES, from_mlir

MLIR_BYTECODE_MAGIC = b"ML\xefR"


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str  # torch-style name

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


@dataclass(frozen=True)
class ProgramSignature:
    arguments: tuple[TensorType, ...]
    results: tuple[TensorType, ...]


def program_signature(program: bytes, label: str) -> ProgramSignature:
    """The argument and result types of ``@main`` of trusted bytes; NeuronRuntimeError
    if unreadable."""
    # Imported here: the MLIR bindings are only needed when a program is first prepared.
    from torch_mlir import ir
    from torch_mlir._mlir_libs import _stablehlo

    from torchneuron.mlir_context import new_context

    with new_context() as context:
        _stablehlo.register_dialect(context)
        try:
            if bytes(program[:4]) == MLIR_BYTECODE_MAGIC:
                module = _stablehlo.deserialize_portable_artifact(context, bytes(program))
            else:
                module = ir.Module.parse(bytes(program).decode("utf-8"))
        except Exception as error:  # the bindings raise several types for malformed input
            raise NeuronRuntimeError(
                f"{label}: the program is neither a readable StableHLO portable artifact nor "
                f"MLIR text: {str(error).strip() or type(error).__name__}"
            ) from None
        for op in module.body.operations:
            operation = op.operation
            if operation.name != "func.func":
                continue
            if ir.StringAttr(operation.attributes["sym_name"]).value != "main":
                continue
            return function_signature(operation, label, ir)
    raise NeuronRuntimeError(f"{label}: the program has no func.func @main")


def function_signature(function, label: str, ir) -> ProgramSignature:
    """The signature of ``function`` (an MLIR ``func.func`` operation), as the runtime
    reads it; NeuronRuntimeError naming the first type it cannot run. The compiler calls
    it on the module it serializes (``verifier.trust_program``), the runtime on the
    bytes: one reading, so the two agree."""
    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    arguments = tuple(
        _tensor_type(t, f"{label}: @main argument {i}", ir)
        for i, t in enumerate(function_type.inputs)
    )
    results = tuple(
        _tensor_type(t, f"{label}: @main result {i}", ir)
        for i, t in enumerate(function_type.results)
    )
    return ProgramSignature(arguments, results)


def _tensor_type(mlir_type, where: str, ir) -> TensorType:
    try:
        ranked = ir.RankedTensorType(mlir_type)
    except ValueError:
        raise NeuronRuntimeError(f"{where} has type {mlir_type}, not a ranked tensor") from None
    if not ranked.has_static_shape:
        raise NeuronRuntimeError(
            f"{where} has type {mlir_type} with a dynamic dimension; "
            "the runtime needs static shapes"
        )
    element = str(ranked.element_type)
    row = from_mlir(element)
    if row is None or not row.in_neff:
        raise NeuronRuntimeError(
            f"{where} has element type {element}, which the runtime does not support "
            f"(supported: {', '.join(sorted(row.mlir for row in NEFF_DTYPES.values()))})"
        )
    return TensorType(tuple(int(d) for d in ranked.shape), row.name)
