"""Calls PyTorch refuses are refused on the neuron device too, with PyTorch's error.

The shape functions the eager device consults let some calls through that the CPU
kernels refuse (an in-place result that cannot be cast back, subtraction of a bool,
a fill value that overflows an integer dtype); those calls returned plausible values.
And an error raised while a temporary device tensor was freed surfaced as
"SystemError: error return without exception set".
"""

from __future__ import annotations

import pytest
import torch

REFUSED = {
    "mul_-float-scalar-into-int": lambda d: torch.tensor([1, 2], device=d).mul_(-2.5),
    "mul_-float-tensor-into-int": lambda d: torch.tensor([1, 2], device=d).mul_(
        torch.tensor([1.5, 2.0], device=d)
    ),
    "div_-int": lambda d: torch.tensor([1, 2], device=d).div_(2),
    "sub-bool": lambda d: torch.sub(
        torch.tensor([1.0, 2.0], device=d), torch.tensor([True, False], device=d)
    ),
    "sub_-bool": lambda d: torch.tensor([1.0, 2.0], device=d).sub_(
        torch.tensor([True, False], device=d)
    ),
    "fill_-nan-into-int64": lambda d: torch.zeros(3, dtype=torch.int64, device=d).fill_(
        float("nan")
    ),
    "fill_-300-into-int8": lambda d: torch.zeros(3, dtype=torch.int8, device=d).fill_(300),
    "masked_fill-inf-into-int64": lambda d: torch.zeros(3, dtype=torch.int64, device=d).masked_fill(
        torch.tensor([True, False, True], device=d), float("inf")
    ),
    "copy_-shape-mismatch": lambda d: torch.zeros(3, device=d).copy_(torch.ones(2, device=d)),
    "relu-of-bool": lambda d: torch.relu(torch.tensor([True, False], device=d)),
    "max-of-an-empty-tensor": lambda d: torch.tensor([], device=d).max(),
    "argsort-of-an-empty-vector-along-dim-1": lambda d: torch.argsort(
        torch.tensor([], device=d), dim=1, stable=True
    ),
    "heaviside-of-mixed-dtypes": lambda d: torch.heaviside(
        torch.tensor([1.0, -1.0], device=d), torch.tensor([1], device=d)
    ),
    "int-to-a-negative-power": lambda d: torch.pow(torch.tensor([1, 2], device=d), -3),
    "argmax-of-bool": lambda d: torch.tensor([True, False], device=d).argmax(),
    "var-of-int64": lambda d: torch.tensor([1, 2, 3], device=d).var(),
    "uint8-to-an-overflowing-power": lambda d: (
        torch.tensor([2, 3], dtype=torch.uint8, device=d) ** 300
    ),
}

NOT_IMPLEMENTED = {
    "clamp-of-bool-by-a-python-bool": lambda d: torch.clamp(
        torch.tensor([True, False], device=d), True
    ),
}

ACCEPTED = {
    "add_-int-into-float-with-alpha": lambda d: torch.tensor([1.0, 2.0], device=d).add_(
        torch.tensor([1, 3], device=d), alpha=2
    ),
    "pow_-int-by-int": lambda d: torch.tensor([1, 2], device=d).pow_(2),
    "clamp-of-bool-by-a-bool-tensor": lambda d: torch.clamp(
        torch.tensor([True, False], device=d), torch.tensor(True, device=d)
    ),
    "fill_-2.7-into-int64": lambda d: torch.zeros(3, dtype=torch.int64, device=d).fill_(2.7),
    "masked_fill-5-into-int64": lambda d: torch.zeros(3, dtype=torch.int64, device=d).masked_fill(
        torch.tensor([True, False, True], device=d), 5
    ),
}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.mark.parametrize("case", REFUSED)
def test_call_pytorch_refuses_raises_pytorchs_error_on_the_device(case):
    with pytest.raises((RuntimeError, IndexError)) as on_cpu:
        REFUSED[case]("cpu")
    with pytest.raises((RuntimeError, IndexError)) as on_device:
        REFUSED[case]("neuron")
    assert type(on_device.value) is type(on_cpu.value)
    assert str(on_device.value) == str(on_cpu.value)


@pytest.mark.parametrize("case", NOT_IMPLEMENTED)
def test_call_pytorchs_cpu_has_no_kernel_for_raises_not_implemented_on_the_device(case):
    with pytest.raises(NotImplementedError):
        NOT_IMPLEMENTED[case]("cpu")
    with pytest.raises(NotImplementedError):
        NOT_IMPLEMENTED[case]("neuron")


@pytest.mark.parametrize("case", ACCEPTED)
def test_neighbouring_calls_pytorch_accepts_still_run_natively(case):
    got = ACCEPTED[case]("neuron")
    expected = ACCEPTED[case]("cpu")
    assert got.dtype == expected.dtype
    assert torch.equal(got.cpu(), expected)


DIVISIONS = {
    "floor-divide-by-zero-scalar": lambda a, z: a // 0,
    "floor_divide-by-tensor-with-zero": lambda a, z: torch.floor_divide(a, z),
    "div-trunc-by-zero": lambda a, z: torch.div(a, 0, rounding_mode="trunc"),
    "div-floor-by-tensor-with-zero": lambda a, z: torch.div(a, z, rounding_mode="floor"),
    "remainder-by-zero": lambda a, z: torch.remainder(a, 0),
    "remainder_-by-zero": lambda a, z: a.clone().remainder_(0),
    "fmod-by-tensor-with-zero": lambda a, z: torch.fmod(a, z),
}


@pytest.mark.parametrize("case", DIVISIONS)
def test_integer_division_by_zero_raises_zero_division_error_like_pytorch(case):
    a, z = torch.tensor([3, -4]), torch.tensor([0, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        DIVISIONS[case](a, z)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        DIVISIONS[case](a.to("neuron"), z.to("neuron"))


@pytest.mark.parametrize("dim", [1, -2])
def test_sorting_a_0d_tensor_along_a_dim_it_lacks_raises_index_error(dim):
    with pytest.raises(IndexError):
        torch.sort(torch.tensor(1.5), dim=dim)
    with pytest.raises(IndexError):
        torch.sort(torch.tensor(1.5).to("neuron"), dim=dim)
    values, indices = torch.sort(torch.tensor(1.5).to("neuron"), dim=0)
    assert (values.cpu().item(), indices.cpu().item()) == (1.5, 0)


def test_true_and_float_division_by_zero_still_give_infinities():
    a = torch.tensor([3, -4])
    for fn in (lambda t: t / 0, lambda t: t.float() // 0, lambda t: torch.fmod(t.float(), 0)):
        got, expected = fn(a.to("neuron")).cpu(), fn(a)
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, equal_nan=True)


COMPILED_REFUSED = {
    "argmax-of-bool": lambda x: (x > 0).argmax(),
    "sort-of-0d-along-dim-1": lambda x: torch.sort(x.sum(), dim=1)[0],
    "var-of-int64": lambda x: x.long().var(),
    "relu-of-bool": lambda x: torch.relu(x > 0),
}


@pytest.mark.parametrize("case", COMPILED_REFUSED)
def test_compiled_call_pytorch_refuses_is_refused_not_computed(case):
    from torchneuron.lowering.refusals import RefusedCallError

    x = torch.tensor([1.5, -2.0])
    with pytest.raises((RuntimeError, IndexError)):
        COMPILED_REFUSED[case](x)
    torch._dynamo.reset()
    with pytest.raises(Exception) as raised:
        torch.compile(COMPILED_REFUSED[case], backend="neuron")(x)
    chain, error = [], raised.value
    while error is not None:
        chain.append(error)
        error = getattr(error, "inner_exception", None) or error.__cause__
    # refused by our check, or by PyTorch's own while tracing: never a value
    refused_by_us = any(isinstance(e, RefusedCallError) for e in chain)
    refused_by_pytorch = not isinstance(raised.value, torch._dynamo.exc.BackendCompilerFailed)
    assert refused_by_us or refused_by_pytorch, chain


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32])
def test_an_int_scalar_too_wide_for_the_tensor_is_cast_like_pytorch_or_refused(dtype, monkeypatch):
    # PyTorch casts the scalar to the tensor's dtype first (wrapping): remainder(1, 2**53 + 1)
    # of an int32 is 0. Eager mode either gives that value or refuses (fallback forbidden).
    from torchneuron.device.fallback import NeuronFallbackError

    a = torch.tensor([1, 100], dtype=dtype)
    for fn in (lambda t: torch.remainder(t, 2**53 + 1), lambda t: t + 300):
        expected = fn(a)
        try:
            got = fn(a.to("neuron")).cpu()
        except NeuronFallbackError:
            continue
        assert got.dtype == expected.dtype
        assert torch.equal(got, expected)
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "0")
    got = torch.remainder(a.to("neuron"), 2**53 + 1).cpu()  # (warns once per process)
    assert torch.equal(got, torch.remainder(a, 2**53 + 1))


# Advanced indexing with no index tensor, or more indices than dims: the shape functions
# let these through and torch-mlir's index_put decomposition crashed the process.
BAD_INDICES = {
    "index_put-0d-no-indices": (
        "torch.rand([], device=d).index_put([], torch.tensor([1.0], device=d), True)",
        RuntimeError,
    ),
    "index_put-all-none": (
        "torch.ops.aten.index_put(torch.rand(3, device=d), [None], torch.ones(1, device=d))",
        RuntimeError,
    ),
    "index_put_-no-indices": (
        "torch.zeros(3, device=d).index_put_([], torch.ones(3, device=d), True)",
        RuntimeError,
    ),
    "unsafe_index_put-no-indices": (
        "torch.ops.aten._unsafe_index_put(torch.zeros(3, device=d), [], torch.ones(1, device=d))",
        RuntimeError,
    ),
    "index-all-none": (
        "torch.ops.aten.index.Tensor(torch.rand(3, device=d), [None])",
        RuntimeError,
    ),
    "index_put-0d-too-many": (
        "torch.ops.aten.index_put(torch.rand([], device=d), [None], torch.tensor(1.0, device=d))",
        IndexError,
    ),
}


def test_malformed_index_lists_raise_like_pytorch_not_crash():
    from tests.device.conftest import run_python

    lines = ["import torch", "d = 'neuron'", "results = []"]
    for case, (call, _) in BAD_INDICES.items():
        lines += [
            "try:",
            f"    {call}",
            f"    results.append(({case!r}, None, ''))",
            "except Exception as error:",
            f"    results.append(({case!r}, type(error).__name__, str(error)))",
        ]
    lines.append("print(repr(results))")
    result = run_python("\n".join(lines), env={"TORCHNEURON_NO_FALLBACK": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    outcomes = {
        case: (kind, message) for case, kind, message in eval(result.stdout.splitlines()[-1])
    }
    for case, (call, expected) in BAD_INDICES.items():
        with pytest.raises(expected):  # PyTorch on the CPU refuses the call too
            eval(call, {"torch": torch, "d": "cpu"})
        kind, message = outcomes[case]
        assert kind == expected.__name__, (case, kind, message)
        if expected is RuntimeError:
            assert "at least one index tensor" in message, (case, message)
