"""``LoadedNeff.execute`` hands over XLA's output buffers as writable arrays the caller owns."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

from torchneuron.runtime import load_neff

from .conftest import binary_neff, make_neff, tensor_type, variable


def test_outputs_are_writable_and_independent_of_later_executions():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((2, 3), np.float32)
    with load_neff(binary_neff("add", "float32")) as loaded:
        (first,) = loaded.execute([x, y])
        assert first.flags.writeable
        first += 100  # the caller's memory: no later execution sees it
        (second,) = loaded.execute([x, y])
        np.testing.assert_array_equal(second, x + y)
        np.testing.assert_array_equal(first, x + y + 100)
        np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))
        assert not np.shares_memory(first, second)


def test_an_output_fed_back_as_an_input_then_written_leaves_the_result_alone():
    with load_neff(binary_neff("multiply", "float32")) as loaded:
        (a,) = loaded.execute([np.full((2, 3), 2, np.float32), np.full((2, 3), 3, np.float32)])
        (b,) = loaded.execute([a, a])
        a[...] = -1
        np.testing.assert_array_equal(b, np.full((2, 3), 36, np.float32))


def test_outputs_outlive_the_loaded_neff():
    with load_neff(binary_neff("add", "float32", (64, 64))) as loaded:
        (out,) = loaded.execute([np.ones((64, 64), np.float32)] * 2)
    del loaded
    gc.collect()
    np.testing.assert_array_equal(out, np.full((64, 64), 2, np.float32))
    out[0, 0] = 5
    assert out.sum() == 2 * 64 * 64 + 3


def test_outputs_of_every_kind_keep_their_dtype_and_are_writable():
    t = tensor_type((2, 3), "float32")
    types = {
        "b": tensor_type((2, 3), "bfloat16"),
        "p": tensor_type((2, 3), "bool"),
        "s": tensor_type((), "float32"),
        "e": tensor_type((0, 3), "float32"),
    }
    body = (
        f"  %b = stablehlo.convert %x : ({t}) -> {types['b']}\n"
        f"  %zero = stablehlo.constant dense<0.0> : {t}\n"
        f"  %p = stablehlo.compare GT, %x, %zero : ({t}, {t}) -> {types['p']}\n"
        f"  %init = stablehlo.constant dense<0.0> : {types['s']}\n"
        f"  %s = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = "
        f"[0, 1] : ({t}, {types['s']}) -> {types['s']}\n"
        f"  %e = stablehlo.slice %x [0:0, 0:3] : ({t}) -> {types['e']}\n"
        f"  return %b, %p, %s, %e : {', '.join(types.values())}"
    )
    neff = make_neff(
        "kinds",
        body,
        [
            variable("x", "input", (2, 3), "float32"),
            variable("b", "output", (2, 3), "bfloat16"),
            variable("p", "output", (2, 3), "bool"),
            variable("s", "output", (), "float32"),
            variable("e", "output", (0, 3), "float32"),
        ],
    )
    x = np.array([[-1, 0, 1], [2, 3, 4]], np.float32)
    with load_neff(neff) as loaded:
        b, p, s, e = loaded.execute([x])
    assert b.dtype == np.dtype(ml_dtypes.bfloat16) and p.dtype == np.bool_
    np.testing.assert_array_equal(b.astype(np.float32), x)
    np.testing.assert_array_equal(p, x > 0)
    assert s.shape == () and s == 9 and e.shape == (0, 3)
    for array in (b, p, s, e):
        assert array.flags.writeable
    b[0, 0] = 7
    s[()] = 1
    assert float(b[0, 0]) == 7 and s == 1


def test_a_dlpack_export_of_another_type_is_copied_out_with_a_warning():
    # An export whose type code is not the one the signature's dtype has is never
    # viewed as that dtype: it is read through jaxlib's copy, after a warning.
    from jaxlib import xla_client

    from torchneuron.runtime import host_buffers
    from torchneuron.runtime.executor import get_executor

    values = np.arange(6, dtype=np.float32).reshape(2, 3).astype(ml_dtypes.bfloat16)
    buffer = get_executor().upload_weight(values)
    bfloat16 = np.dtype(ml_dtypes.bfloat16)
    export = xla_client._xla.buffer_to_dlpack_managed_tensor
    viewed = host_buffers._dlpack_view(buffer, bfloat16, 4, export)  # kDLBfloat: a view
    assert viewed.dtype == bfloat16 and (viewed == values).all()
    with pytest.warns(UserWarning, match="bfloat16 output's DLPack export is not"):
        copied = host_buffers._dlpack_view(buffer, bfloat16, 99, export)
    assert copied.dtype == bfloat16 and (copied == values).all()
