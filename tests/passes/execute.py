"""Run a pass test's StableHLO module on the runtime's executor, for before/after checks.

The module is serialized as a portable artifact at the compiler's StableHLO version and
marked trusted, as the compiler's own serializer does; the runtime's executor
(``runtime.executor.get_executor()``) then prepares it and makes its runner, as it does
for a loaded NEFF. The serializer's op allowlist is not applied: a pass's input is only
legalized and may hold ops (``dynamic_iota`` of static shape) that only its output is
rid of. Arguments tagged ``neuron.weight`` are fed from ``weights`` by name, the others
from ``inputs`` in order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from torch_mlir import ir
from torch_mlir._mlir_libs import _stablehlo

from torchneuron.compiler.versions import stablehlo_target_version
from torchneuron.passes.externalize_constants import weight_names
from torchneuron.passes.ir_utils import find_function
from torchneuron.runtime.executor import get_executor
from torchneuron.runtime.verifier import trust_program
from torchneuron.target.dtypes import numpy_dtype


def entry_function(module: ir.Module) -> ir.Operation:
    """``@main``, or the module's only function (golden cases name theirs after the case)."""
    try:
        return find_function(module)
    except KeyError:
        functions = [
            op.operation for op in module.body.operations if op.operation.name == "func.func"
        ]
        if len(functions) != 1:
            raise
        return functions[0]


def execute(
    module: ir.Module, inputs: Sequence[np.ndarray], weights: dict[str, np.ndarray] | None = None
) -> list[np.ndarray]:
    """Run the entry function of ``module``; returns its results as numpy arrays."""
    function = entry_function(module)
    if ir.StringAttr(function.attributes["sym_name"]).value != "main":
        # The executor runs @main; rename a lone golden-case function.
        function.attributes["sym_name"] = ir.StringAttr.get("main", context=module.context)
    names = weight_names(function)
    plan = []
    for name in names:
        plan.append(None if name is not None else sum(p is not None for p in plan))
    input_count = sum(p is not None for p in plan)
    if len(inputs) != input_count:
        raise ValueError(f"{len(inputs)} inputs for the {input_count} non-weight arguments")
    program = _stablehlo.serialize_portable_artifact_str(str(module), stablehlo_target_version())
    trust_program(program)  # written here from a module of ours: read in this process
    executor = get_executor()
    prepared = executor.prepare(program, "the module under test")
    input_types = [
        t for t, p in zip(prepared.signature.arguments, plan, strict=True) if p is not None
    ]
    arrays = []
    for position, (array, expected) in enumerate(zip(inputs, input_types, strict=True)):
        # The runner takes inputs the runtime already checked, as LoadedNeff.run does.
        array = np.ascontiguousarray(array)
        if (array.shape, array.dtype) != (expected.shape, numpy_dtype(expected.dtype)):
            raise ValueError(
                f"input {position} is {array.dtype}{list(array.shape)}, not {expected}"
            )
        arrays.append(array)
    weight_buffers = [executor.upload_weight(weights[name]) for name in names if name is not None]
    run = executor.make_runner(prepared, plan, input_types, weight_buffers)
    # copy=False: read-only views of XLA's output buffers, all a comparison needs (the
    # writable arrays of copy=True cannot be made over float8 outputs).
    return run(arrays, copy=False)


def assert_same_values(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Same dtype, shape and values; NaN matches NaN, -0.0 matches 0.0."""
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.dtype == np.bool_ or actual.dtype.kind in "iu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    assert same.all(), (
        f"{what}: differs at {np.argwhere(~same)[:5].tolist()}: {a[~same][:5]} vs {e[~same][:5]}"
    )
