"""Loading and executing NEFFs: numerics per dtype, weights, caching, validation."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

from torchneuron.neff import Neff, write_neff
from torchneuron.runtime import (
    LoadedNeff,
    NeuronRuntimeError,
    RuntimeError_,
    clear_executable_cache,
    executable_cache_info,
    get_core,
    load_neff,
    reset_runtime,
)

from .conftest import binary_neff, make_neff, portable_artifact, tensor_type, variable

RNG = np.random.default_rng(1234)


def run(neff, *inputs):
    with load_neff(neff) as loaded:
        return loaded.execute(list(inputs))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_float_add_and_multiply(dtype):
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    # small multiples of 1/4: every sum and product is exact in each format
    x = (RNG.integers(-16, 16, (2, 3)) / 4).astype(np_dtype)
    y = (RNG.integers(-16, 16, (2, 3)) / 4).astype(np_dtype)
    (total,) = run(binary_neff("add", dtype), x, y)
    (product,) = run(binary_neff("multiply", dtype), x, y)
    assert total.dtype == np_dtype and product.dtype == np_dtype
    np.testing.assert_array_equal(
        total.astype(np.float64), x.astype(np.float64) + y.astype(np.float64)
    )
    np.testing.assert_array_equal(
        product.astype(np.float64), x.astype(np.float64) * y.astype(np.float64)
    )


def test_bfloat16_rounds_like_torch():
    x = RNG.standard_normal((4, 8)).astype(ml_dtypes.bfloat16)
    y = RNG.standard_normal((4, 8)).astype(ml_dtypes.bfloat16)
    (out,) = run(binary_neff("add", "bfloat16", (4, 8)), x, y)
    expected = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16) + torch.from_numpy(
        y.view(np.int16)
    ).view(torch.bfloat16)
    np.testing.assert_array_equal(out.view(np.int16), expected.view(torch.int16).numpy())


def test_int64_keeps_values_beyond_32_bits():
    x = np.array([[2**40 + 3, -(2**62), 2**31], [2**63 - 2, -1, 0]], np.int64)
    y = np.array([[1, -5, 2**31], [1, 2**33, -(2**35)]], np.int64)
    (out,) = run(binary_neff("add", "int64"), x, y)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, x + y)


def test_int32_wraps_like_numpy():
    x = np.array([[2**31 - 1, -7, 100], [5, 6, -(2**31)]], np.int32)
    y = np.array([[1, 3, -200], [5, 6, -1]], np.int32)
    (out,) = run(binary_neff("add", "int32"), x, y)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, x + y)


def test_bool_and_or():
    x = np.array([[True, False, True], [False, False, True]])
    y = np.array([[True, True, False], [False, True, True]])
    (both,) = run(binary_neff("and", "bool"), x, y)
    (either,) = run(binary_neff("or", "bool"), x, y)
    assert both.dtype == np.bool_
    np.testing.assert_array_equal(both, x & y)
    np.testing.assert_array_equal(either, x | y)


def test_mixed_dtypes_and_several_results():
    """int64 in, f32 in; results: converted bf16, a comparison (bool), the int64 unchanged."""
    i64, f32 = tensor_type([3], "int64"), tensor_type([3], "float32")
    bf16, i1 = tensor_type([3], "bfloat16"), tensor_type([3], "bool")
    body = (
        f"  %0 = stablehlo.convert %f : ({f32}) -> {bf16}\n"
        f"  %1 = stablehlo.convert %i : ({i64}) -> {f32}\n"
        f"  %2 = stablehlo.compare GT, %1, %f : ({f32}, {f32}) -> {i1}\n"
        f"  return %0, %2, %i : {bf16}, {i1}, {i64}"
    )
    neff = make_neff(
        "mixed",
        body,
        [
            variable("i", "input", [3], "int64"),
            variable("f", "input", [3], "float32"),
            variable("as_bf16", "output", [3], "bfloat16"),
            variable("greater", "output", [3], "bool"),
            variable("same", "output", [3], "int64"),
        ],
    )
    i = np.array([2**45, -3, 7], np.int64)
    f = np.array([1.0, 1.5, 100.0], np.float32)
    as_bf16, greater, same = run(neff, i, f)
    assert [a.dtype for a in (as_bf16, greater, same)] == [
        np.dtype(ml_dtypes.bfloat16),
        np.dtype(np.bool_),
        np.dtype(np.int64),
    ]
    np.testing.assert_array_equal(as_bf16, f.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(greater, [True, False, False])
    np.testing.assert_array_equal(same, i)


def linear_neff(name="linear", weights=None, order=("x", "w", "b")):
    """out = x @ w + b with w, b weights; ``order`` sets the @main argument order."""
    x_t, w_t, o_t = (tensor_type(s, "float32") for s in ([2, 4], [4, 3], [2, 3]))
    body = (
        f"  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]"
        f" : ({x_t}, {w_t}) -> {o_t}\n"
        f"  %1 = stablehlo.add %0, %b : {o_t}\n"
        f"  return %1 : {o_t}"
    )
    declared = {
        "x": variable("x", "input", [2, 4], "float32"),
        "w": variable("w", "weight", [4, 3], "float32"),
        "b": variable("b", "weight", [2, 3], "float32"),
    }
    if weights is None:
        weights = {
            "w": RNG.standard_normal((4, 3)).astype(np.float32),
            "b": RNG.standard_normal((2, 3)).astype(np.float32),
        }
    variables = [declared[n] for n in order] + [variable("out", "output", [2, 3], "float32")]
    return make_neff(name, body, variables, weights), weights


@pytest.mark.parametrize("order", [("x", "w", "b"), ("w", "x", "b"), ("b", "w", "x")])
def test_weights_come_from_the_neff_in_declared_order(order):
    neff, weights = linear_neff(order=order)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    with load_neff(neff) as loaded:
        assert [s.name for s in loaded.input_specs] == ["x"]
        assert [s.name for s in loaded.weight_specs] == [n for n in order if n != "x"]
        (out,) = loaded.execute([x])
        (again,) = loaded.execute([x + 1])
    np.testing.assert_allclose(out, x @ weights["w"] + weights["b"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(again, (x + 1) @ weights["w"] + weights["b"], rtol=1e-5, atol=1e-6)


def aligned_array(values: np.ndarray, alignment: int = 64) -> np.ndarray:
    """A copy of ``values`` at an address XLA could use without copying (64-byte aligned)."""
    raw = np.empty(values.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    out = raw[start : start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def test_weights_are_copied_at_load():
    t = tensor_type([1024], "float32")
    weight = aligned_array(np.ones(1024, np.float32))
    neff = make_neff(
        "bias",
        f"  %0 = stablehlo.add %x, %w : {t}\n  return %0 : {t}",
        [
            variable("x", "input", [1024], "float32"),
            variable("w", "weight", [1024], "float32"),
            variable("out", "output", [1024], "float32"),
        ],
        {"w": weight},
        roundtrip=False,
    )
    loaded = load_neff(neff)
    x = np.zeros(1024, np.float32)
    (before,) = loaded.execute([x])
    weight[...] = 0  # the NEFF's array changes; the resident copy must not
    (after,) = loaded.execute([x])
    np.testing.assert_array_equal(before, np.ones(1024, np.float32))
    np.testing.assert_array_equal(after, before)


def test_outputs_are_writable_copies():
    t = tensor_type([3], "float32")
    neff = make_neff(
        "identity",
        f"  return %x : {t}",
        [variable("x", "input", [3], "float32"), variable("out", "output", [3], "float32")],
    )
    x = np.arange(3, dtype=np.float32)
    with load_neff(neff) as loaded:
        (out,) = loaded.execute([x])
        out[0] = 42
        assert x[0] == 0
        (again,) = loaded.execute([x])
    assert again[0] == 0 and out.flags.writeable


def test_zero_dim_tensors_and_numpy_scalars():
    t = tensor_type([], "float32")
    neff = make_neff(
        "scalar",
        f"  %0 = stablehlo.add %x, %x : {t}\n  return %0 : {t}",
        [variable("x", "input", [], "float32"), variable("out", "output", [], "float32")],
    )
    with load_neff(neff) as loaded:
        (out,) = loaded.execute([np.float32(1.25)])
    assert out.shape == () and out == 2.5


def test_non_contiguous_inputs():
    x = np.arange(6, dtype=np.float32).reshape(3, 2).T  # (2, 3), Fortran order
    y = np.ones((2, 3), np.float32)
    (out,) = run(binary_neff("add", "float32"), x, y)
    np.testing.assert_array_equal(out, x + 1)


def test_loads_from_bytes_and_path(tmp_path):
    neff = binary_neff("subtract", "int32")
    data = write_neff(neff)
    path = tmp_path / "sub.neff"
    path.write_bytes(data)
    x = np.array([[5, 6, 7], [8, 9, 10]], np.int32)
    for source in (data, path, str(path)):
        with load_neff(source) as loaded:
            np.testing.assert_array_equal(loaded.execute([x, x])[0], np.zeros((2, 3), np.int32))


def test_compiles_once_per_program():
    clear_executable_cache()
    neff = binary_neff("maximum", "float32", name="max_a")
    first = load_neff(neff)
    second = load_neff(write_neff(neff))
    assert executable_cache_info()["misses"] == 1 and executable_cache_info()["hits"] == 1
    assert first.prepared is second.prepared
    # the same program under another name and weights: still one compile
    renamed = binary_neff("maximum", "float32", name="max_b")
    assert load_neff(renamed).prepared.executable is first.prepared.executable
    # a different program compiles
    load_neff(binary_neff("minimum", "float32"))
    info = executable_cache_info()
    assert (info["misses"], info["hits"], info["size"]) == (2, 2, 2)


def test_load_on_another_core_accounts_there():
    loaded = load_neff(binary_neff("add", "float32"), core=2)
    assert loaded.core is get_core(2)
    assert get_core(2).hbm.allocated > 0 and get_core(0).hbm.allocated == 0


# -- errors ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def add_i64():
    return binary_neff("add", "int64")


def test_wrong_input_count(add_i64):
    loaded = load_neff(add_i64)
    with pytest.raises(
        NeuronRuntimeError, match=r"NEFF 'add_int64' takes 2 inputs \('x', 'y'\), got 1"
    ):
        loaded.execute([np.zeros((2, 3), np.int64)])


def test_wrong_dtype_is_not_converted(add_i64):
    loaded = load_neff(add_i64)
    x = np.zeros((2, 3), np.int64)
    with pytest.raises(
        NeuronRuntimeError, match=r"input 1 \('y'\) has dtype int32, expected int64"
    ):
        loaded.execute([x, np.zeros((2, 3), np.int32)])
    with pytest.raises(
        NeuronRuntimeError, match=r"input 0 \('x'\) has dtype float64, expected int64"
    ):
        loaded.execute([[[0.0] * 3] * 2, x])


def test_wrong_shape(add_i64):
    loaded = load_neff(add_i64)
    with pytest.raises(
        NeuronRuntimeError, match=r"input 0 \('x'\) has shape \[3, 2\], expected \[2, 3\]"
    ):
        loaded.execute([np.zeros((3, 2), np.int64), np.zeros((2, 3), np.int64)])


def test_torch_tensor_input_is_refused_clearly(add_i64):
    loaded = load_neff(add_i64)
    with pytest.raises(NeuronRuntimeError, match="is a torch tensor; pass a numpy array"):
        loaded.execute([torch.zeros(2, 3, dtype=torch.int64), np.zeros((2, 3), np.int64)])


def test_execute_after_unload(add_i64):
    loaded = load_neff(add_i64)
    loaded.unload()
    assert not loaded.is_loaded
    with pytest.raises(NeuronRuntimeError, match="was unloaded"):
        loaded.execute([np.zeros((2, 3), np.int64)] * 2)


def test_target_mismatch_names_both(monkeypatch):
    t = tensor_type([2], "float32")
    variables = [variable("x", "input", [2], "float32"), variable("out", "output", [2], "float32")]
    trn3 = make_neff("for_trn3", f"  return %x : {t}", variables, target="trn3")
    with pytest.raises(
        NeuronRuntimeError, match="compiled for trn3, but NeuronCore 0 .* is a trn2"
    ):
        load_neff(trn3)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")
    reset_runtime()
    assert load_neff(trn3).core.target == "trn3"
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    reset_runtime()
    with pytest.raises(NeuronRuntimeError, match="compiled for LNC=2, .* runs at LNC=1"):
        load_neff(trn3)
    assert get_core(0).hbm.allocated == 0


def raw_neff(variables, program_text, weights=None):
    return Neff(
        name="raw",
        manifest={"target": "trn2", "lnc": 2},
        definition={"variables": variables},
        program=portable_artifact(program_text),
        weights=weights or {},
        lnc_size=2,
    )


IDENTITY_2x3 = (
    "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n  return %x : tensor<2x3xf32>\n}"
)


def test_definition_disagreeing_with_program():
    variables = [
        variable("x", "input", [3, 2], "float32"),
        variable("out", "output", [3, 2], "float32"),
    ]
    with pytest.raises(
        NeuronRuntimeError,
        match=r"@main argument 0 is float32\[2, 3\], "
        r"but def.json declares input 'x': float32\[3, 2\]",
    ):
        load_neff(raw_neff(variables, IDENTITY_2x3))
    extra = [
        variable("x", "input", [2, 3], "float32"),
        variable("y", "input", [2, 3], "float32"),
        variable("out", "output", [2, 3], "float32"),
    ]
    with pytest.raises(NeuronRuntimeError, match="@main has 1 arguments, but def.json declares 2"):
        load_neff(raw_neff(extra, IDENTITY_2x3))


def test_bad_definitions_are_named():
    out = variable("out", "output", [2, 3], "float32")
    missing = [variable("x", "weight", [2, 3], "float32"), out]
    with pytest.raises(
        NeuronRuntimeError, match="weight 'x' is declared in def.json but the NEFF holds no data"
    ):
        load_neff(raw_neff(missing, IDENTITY_2x3))
    wrong_weight = {"x": np.zeros((2, 3), np.float64)}
    with pytest.raises(
        NeuronRuntimeError,
        match=r"weight 'x' holds float64\[2, 3\], but def.json declares float32\[2, 3\]",
    ):
        load_neff(raw_neff(missing, IDENTITY_2x3, wrong_weight))
    bad_size = [dict(variable("x", "input", [2, 3], "float32"), size_bytes=7), out]
    with pytest.raises(
        NeuronRuntimeError,
        match=r"input 'x' declares size_bytes 7, but float32\[2, 3\] takes 24 bytes",
    ):
        load_neff(raw_neff(bad_size, IDENTITY_2x3))
    bad_dtype = [dict(variable("x", "input", [2, 3], "float32"), dtype="quaternion"), out]
    with pytest.raises(NeuronRuntimeError, match="unsupported dtype 'quaternion'"):
        load_neff(raw_neff(bad_dtype, IDENTITY_2x3))
    assert get_core(0).hbm.allocated == 0


def test_unreadable_program():
    neff = raw_neff([variable("x", "input", [2, 3], "float32")], IDENTITY_2x3)
    neff.program = b"ML\xefR not really bytecode"
    with pytest.raises(
        NeuronRuntimeError, match="NEFF 'raw': the program is neither a readable StableHLO"
    ):
        load_neff(neff)


def test_contract_names():
    assert RuntimeError_ is NeuronRuntimeError
    assert isinstance(load_neff(binary_neff("add", "int32")), LoadedNeff)
    with pytest.raises(TypeError, match="load_neff expects a Neff, NEFF bytes or a file path"):
        load_neff(12)


def test_float8_conversion_matches_ml_dtypes():
    f32, f8 = tensor_type([6], "float32"), tensor_type([6], "float8_e4m3fn")
    body = f"  %0 = stablehlo.convert %x : ({f32}) -> {f8}\n  return %0 : {f8}"
    neff = make_neff(
        "to_fp8",
        body,
        [variable("x", "input", [6], "float32"), variable("out", "output", [6], "float8_e4m3fn")],
    )
    x = np.array([0.0, 1.0, -2.5, 0.3, 448.0, 1e-3], np.float32)
    (out,) = run(neff, x)
    assert out.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(
        out.view(np.uint8), x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    )
