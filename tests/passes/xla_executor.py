"""Execute a StableHLO module on XLA's CPU client (jaxlib), for before/after checks.

The module is serialized to a portable artifact at the newer StableHLO
version both torch-mlir and jaxlib understand, compiled, and run. Arguments
tagged ``neuron.weight`` are fed from ``weights`` by name, the others from
``inputs`` in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from torch_mlir import ir
from torch_mlir._mlir_libs import _stablehlo as torch_mlir_stablehlo

from torchneuron.passes.externalize_constants import weight_names
from torchneuron.passes.ir_utils import find_function


@cache
def _cpu_backend():
    import jax
    from jax.extend.backend import get_backend
    from jaxlib.mlir._mlir_libs import _stablehlo as jaxlib_stablehlo

    # Without x64, jax truncates 64-bit inputs and the program rejects them.
    jax.config.update("jax_enable_x64", True)
    version = torch_mlir_stablehlo.get_smaller_version(
        torch_mlir_stablehlo.get_current_version(), jaxlib_stablehlo.get_current_version()
    )
    return jax, get_backend("cpu"), version


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
    """Run the entry function of ``module`` on XLA CPU; returns its results as numpy arrays."""
    from jax._src.lib import xla_client

    jax, backend, version = _cpu_backend()
    remaining_inputs = iter(inputs)
    arguments = []
    function = entry_function(module)
    if ir.StringAttr(function.attributes["sym_name"]).value != "main":
        # XLA runs @main; rename a lone golden-case function.
        function.attributes["sym_name"] = ir.StringAttr.get("main", context=module.context)
    for name in weight_names(function):
        arguments.append((weights or {})[name] if name is not None else next(remaining_inputs))
    leftover = list(remaining_inputs)
    if leftover:
        raise ValueError(f"{len(leftover)} more inputs than @main has non-weight arguments")
    artifact = torch_mlir_stablehlo.serialize_portable_artifact_str(str(module), version)
    device = backend.devices()[0]
    executable = backend.compile_and_load(artifact, [device], xla_client.CompileOptions())
    outputs = executable.execute([jax.device_put(np.asarray(a), device) for a in arguments])
    return [np.asarray(o) for o in outputs]


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
