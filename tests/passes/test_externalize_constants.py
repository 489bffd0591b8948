"""externalize-constants: weight data, dtypes, names and argument attributes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from torch_mlir import ir

from tests.passes.execute import assert_same_values, execute
from torchneuron.passes import PassContext, PassError, PassManager, make_context, parse_module
from torchneuron.passes.externalize_constants import weight_names
from torchneuron.passes.ir_constants import numpy_to_elements_attr
from torchneuron.passes.ir_utils import find_function

WEIGHTS = {
    "bf16": np.arange(40, dtype=np.float32).astype(ml_dtypes.bfloat16) / 3,
    "f8E4M3FN": (np.arange(40, dtype=np.float32) / 7).astype(ml_dtypes.float8_e4m3fn),
    "i1": np.arange(40) % 3 == 0,
    "f16": (np.arange(40) / 9).astype(np.float16),
    "i64": np.arange(40, dtype=np.int64) * -12345678901,
    "ui8": np.arange(40, dtype=np.uint8) * 6,
}


def _module_returning(arrays: dict[str, np.ndarray]) -> ir.Module:
    context = make_context()
    with context, ir.Location.unknown(context):
        lines, types = [], []
        for i, (element, array) in enumerate(arrays.items()):
            attr = numpy_to_elements_attr(array, ir.Type.parse(element))
            lines.append(f"%c{i} = stablehlo.constant {attr}")
            types.append(str(attr.type))
        body = "\n  ".join(lines)
        values = ", ".join(f"%c{i}" for i in range(len(arrays)))
        text = f"func.func @main() -> ({', '.join(types)}) {{\n  {body}\n  return {values} : {', '.join(types)}\n}}"
        return parse_module(text, context)


def test_weights_keep_exact_dtype_and_bits():
    module = _module_returning(WEIGHTS)
    ctx = PassContext()
    report = PassManager.from_pipeline("externalize-constants{threshold-bytes=16}").run(module, ctx)
    assert report.counters == {"externalize-constants.externalized": len(WEIGHTS)}
    assert list(ctx.weights) == [f"const_{i}" for i in range(len(WEIGHTS))]
    for (element, expected), (_, got) in zip(WEIGHTS.items(), ctx.weights.items()):
        assert got.dtype == expected.dtype, element
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8), err_msg=element)
    assert weight_names(find_function(module)) == list(ctx.weights)
    # XLA reads the weights back as program arguments and returns them unchanged.
    for (name, weight), output in zip(ctx.weights.items(), execute(module, [], ctx.weights)):
        assert_same_values(output, weight, name)


def test_names_skip_taken_ones_and_count_in_program_order():
    module = parse_module(
        """
        func.func @main(%arg0: tensor<8xf32> {neuron.weight = "const_1"}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
          %a = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
          %b = stablehlo.constant dense<[8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]> : tensor<8xf32>
          return %arg0, %b, %a : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
        }"""
    )
    ctx = PassContext(weights={"const_0": np.zeros(1, np.float32)})
    PassManager.from_pipeline("externalize-constants{threshold-bytes=16}").run(module, ctx)
    assert weight_names(find_function(module)) == ["const_1", "const_2", "const_3"]
    np.testing.assert_array_equal(ctx.weights["const_2"], np.arange(1, 9, dtype=np.float32))
    np.testing.assert_array_equal(ctx.weights["const_3"], np.arange(8, 0, -1, dtype=np.float32))


def test_threshold_is_exclusive_and_configurable():
    text = """
        func.func @main() -> tensor<4xf32> {
          %a = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
          return %a : tensor<4xf32>
        }"""
    at_threshold = PassContext()
    PassManager.from_pipeline("externalize-constants{threshold-bytes=16}").run(
        parse_module(text), at_threshold
    )
    assert at_threshold.weights == {}
    below = PassContext()
    PassManager.from_pipeline("externalize-constants{threshold-bytes=15 name-prefix=w}").run(
        parse_module(text), below
    )
    assert list(below.weights) == ["w0"]


def test_missing_function_is_a_clear_error(tmp_path):
    module = parse_module("func.func @forward() { return }")
    with pytest.raises(PassError, match="no func.func @main; functions: forward"):
        PassManager.from_pipeline("externalize-constants", repro_dir=tmp_path).run(module)
