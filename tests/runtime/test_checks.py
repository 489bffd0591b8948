"""Run-time checks: outputs the manifest's ``checks`` names raise when false, then vanish.

A program whose results include 0-d bools named by the manifest's ``checks`` raises the
recorded error (``NeuronIndexError``, an ``IndexError``; ``NeuronCheckError``, a
``RuntimeError``) when one is false, and returns its other outputs only. A malformed
``checks`` field is a ``NeffError``, never a crash or a silent pass.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from torchneuron.neff import NeffError, read_neff, write_neff
from torchneuron.runtime import load_neff
from torchneuron.runtime.errors import NeuronCheckError, NeuronIndexError

from .conftest import make_neff, signature, variable

MESSAGE = "index out of bounds for dimension 0 with size 3"


def checked_neff(checks, *, check_shape=(), check_dtype="bool", roundtrip=True):
    """out = x, and the input ``ok`` returned as a second output named by ``checks``."""
    body = "  return %x, %ok : tensor<3xf32>, " + (
        "tensor<i1>" if check_shape == () and check_dtype == "bool" else "tensor<2xi1>"
    )
    variables = [
        variable("x", "input", (3,), "float32"),
        variable("ok", "input", check_shape, check_dtype),
        variable("out", "output", (3,), "float32"),
        variable("check0", "output", check_shape, check_dtype),
    ]
    neff = make_neff("checked", body, variables, roundtrip=False)
    # Every well-formed check here names output 1 (check0): it leaves the signature.
    outputs = signature(variables, checks=(1,) if checks else ())
    neff = dataclasses.replace(
        neff, manifest={**neff.manifest, "checks": checks, "signature": outputs}
    )
    return read_neff(write_neff(neff)) if roundtrip else neff


def run(neff, ok: bool, executor: str = "xla"):
    x = np.arange(3, dtype=np.float32)
    return load_neff(neff, executor=executor).execute([x, np.array(ok)])


def test_passing_check_returns_the_other_outputs_only():
    neff = checked_neff([{"output": 1, "error": "IndexError", "message": MESSAGE}])
    loaded = load_neff(neff)
    assert [spec.name for spec in loaded.output_specs] == ["out"]
    outputs = run(neff, True)
    assert len(outputs) == 1
    np.testing.assert_array_equal(outputs[0], np.arange(3, dtype=np.float32))


def test_failing_index_check_raises_index_error_with_its_message():
    neff = checked_neff([{"output": 1, "error": "IndexError", "message": MESSAGE}])
    with pytest.raises(NeuronIndexError) as caught:
        run(neff, False)
    assert isinstance(caught.value, IndexError)
    assert str(caught.value) == MESSAGE


def test_failing_runtime_check_raises_a_runtime_error_that_is_no_index_error():
    neff = checked_neff([{"output": 1, "error": "RuntimeError", "message": MESSAGE}])
    with pytest.raises(NeuronCheckError) as caught:
        run(neff, False)
    assert isinstance(caught.value, RuntimeError)
    assert not isinstance(caught.value, IndexError)


def test_null_executor_does_not_evaluate_checks():
    # it returns zeros (a false check) without computing: timing only
    neff = checked_neff([{"output": 1, "error": "IndexError", "message": MESSAGE}])
    assert len(run(neff, False, executor="null")) == 1


def test_neff_without_checks_returns_every_output():
    neff = checked_neff([])
    assert len(run(neff, False)) == 2


@pytest.mark.parametrize(
    "checks",
    [
        {"output": 1},  # not a list
        [{"output": 1, "error": "IndexError"}],  # no message
        [{"output": 1, "error": "IndexError", "message": MESSAGE, "extra": 1}],
        [{"output": 2, "error": "IndexError", "message": MESSAGE}],  # no such output
        [{"output": -1, "error": "IndexError", "message": MESSAGE}],
        [{"output": True, "error": "IndexError", "message": MESSAGE}],
        [{"output": "1", "error": "IndexError", "message": MESSAGE}],
        [{"output": 1, "error": "KeyError", "message": MESSAGE}],  # unknown kind
        [{"output": 1, "error": "IndexError", "message": 7}],
        [{"output": 0, "error": "IndexError", "message": MESSAGE}],  # a float32[3] output
        [
            {"output": 1, "error": "IndexError", "message": MESSAGE},
            {"output": 1, "error": "RuntimeError", "message": MESSAGE},
        ],
        ["output"],
    ],
)
def test_malformed_checks_field_is_a_neff_error(checks):
    with pytest.raises(NeffError):
        checked_neff(checks)
    # a Neff given as an object (never read) is checked the same way when loaded
    with pytest.raises(NeffError):
        load_neff(checked_neff(checks, roundtrip=False))


def test_check_naming_a_non_scalar_output_is_a_neff_error():
    with pytest.raises(NeffError):
        checked_neff([{"output": 1, "error": "IndexError", "message": MESSAGE}], check_shape=(2,))


def test_describe_lists_the_checks():
    from torchneuron.neff import describe

    neff = checked_neff([{"output": 1, "error": "IndexError", "message": MESSAGE}])
    assert f"output 1: IndexError: {MESSAGE}" in describe(neff)
