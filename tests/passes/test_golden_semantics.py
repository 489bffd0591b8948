"""The golden cases compute the same before and after their pass, on XLA.

Every static-shape case of the golden files of value-preserving passes runs
on XLA before (only legalized) and after its pipeline, on random inputs that
include NaN, infinities, signed zeros and integer extremes. A case marked
``// NO-EXECUTE: <reason>`` is not run.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from torch_mlir import ir

from tests.passes.execute import assert_same_values, entry_function, execute
from tests.passes.golden_runner import GOLDEN_DIR
from torchneuron.passes import DEFAULT_PIPELINE, PassContext, PassManager, parse_module
from torchneuron.passes.ir_constants import numpy_dtype_of

VALUE_PRESERVING = [
    "fold_constants",
    "algebraic_simplify",
    "dce",
    "default_pipeline",
]
_SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)
_MAX_RESULT_ELEMENTS = 1 << 16


def _cases() -> list[tuple[str, int, str, str]]:
    cases = []
    for stem in VALUE_PRESERVING:
        text = (GOLDEN_DIR / f"{stem}.mlir").read_text()
        pipeline = re.search(r"^// RUN: (.+)$", text, re.MULTILINE).group(1).strip()
        pipeline = pipeline.replace("$DEFAULT_PIPELINE", DEFAULT_PIPELINE)
        for index, case in enumerate(_SPLIT.split(text)):
            cases.append((stem, index, pipeline, case))
    return cases


def _runnable(module: ir.Module) -> bool:
    function = entry_function(module)
    signature = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    for t in list(signature.inputs) + list(signature.results):
        if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
            return False
        if int(np.prod(t.shape)) > _MAX_RESULT_ELEMENTS:
            return False
    return "custom_call" not in str(module)


def _input(tensor_type: ir.RankedTensorType, rng: np.random.Generator) -> np.ndarray:
    dtype = numpy_dtype_of(tensor_type.element_type)
    shape = tuple(tensor_type.shape)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        values.reshape(-1)[:2] = [info.min, info.max][: values.size]
        return values
    values = (rng.standard_normal(shape) * 100).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0]).astype(dtype)
    count = min(values.size, specials.size)
    values.reshape(-1)[:count] = specials[:count]
    return values


@pytest.mark.parametrize(
    "stem,index,pipeline,case", _cases(), ids=[f"{c[0]}-{c[1]}" for c in _cases()]
)
def test_golden_case_is_value_preserving(stem: str, index: int, pipeline: str, case: str):
    marker = re.search(r"^// NO-EXECUTE: (.+)$", case, re.MULTILINE)
    if marker:
        pytest.skip(marker.group(1))
    before = parse_module(case)
    if not _runnable(before):
        pytest.skip("dynamic shapes, custom calls or huge results: XLA cannot run it here")
    PassManager.from_pipeline("legalize-to-stablehlo").run(before, PassContext())
    after = parse_module(case)
    PassManager.from_pipeline(pipeline).run(after, PassContext())
    function = entry_function(before)
    signature = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    rng = np.random.default_rng(index)
    inputs = [_input(ir.RankedTensorType(t), rng) for t in signature.inputs]
    expected = execute(before, inputs)
    got = execute(after, inputs)
    for position, (a, e) in enumerate(zip(got, expected, strict=True)):
        assert_same_values(a, e, f"{stem} case {index} result {position}")
