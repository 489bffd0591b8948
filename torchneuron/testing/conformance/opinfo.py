"""Running PyTorch's OpInfo entries on the ``neuron`` backend, one entry at a time.

PyTorch's wheel carries its operator test database
(``torch.testing._internal.common_methods_invocations.op_db``): ~700 entries,
each an operator (or a variant of one) with a generator of sample inputs. An
entry is named ``name`` or ``name.variant`` (``"nn.functional.conv2d"``,
``"norm.fro"``).

``run_entry`` runs an entry's first samples in one of two modes and compares
each result with eager PyTorch on the CPU:

- ``compile``: ``torch.compile(op, backend="neuron", fullgraph=True, dynamic=False)``;
  the whole graph must compile to a NEFF (a CPU fallback is reported as such). An
  entry's samples are first compiled together, one graph calling the op once per
  sample; only where that graph does not pass is each sample compiled alone, and those
  outcomes decide;
- ``eager``: inputs moved to the ``neuron`` device, the op called directly (each
  ATen op compiled to a NEFF); ops that ran on the CPU are reported as fallback.

This runs in whatever process calls it; ``torchneuron.testing.conformance.pool`` runs it
in worker processes so that a crash in native code only costs one entry.
"""

from __future__ import annotations

import functools
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchneuron.errors import CpuFallbackWarning
from torchneuron.target import dtypes

from ..compare import Mismatch, check_close
from . import sparse_samples

MODES = ("compile", "eager")
# The dtypes conformance runs in (rows of the one dtype table, and complex32, which
# the table has no row for: no program holds it, the complex route carries it as
# float16 pairs).
DTYPES = {
    **{
        name: dtypes.BY_NAME[name].torch
        for name in ("float32", "bfloat16", "complex64", "complex128")
    },
    "complex32": torch.complex32,
}
# Every name the dtype column may hold: the dense dtypes and the sparse variants.
ALL_DTYPES = (*DTYPES, *sparse_samples.VARIANTS)

# Statuses, from best to worst; an entry's status is its worst sample's.
# pass      every sample ran natively and matched the CPU
# skip      not applicable: dtype unsupported by the op, random output, no sample
#           the CPU accepts, or Dynamo itself cannot capture the op in one graph
# fallback  matched, but (part of) it ran on the CPU instead of a NeuronCore
# error     compiling or running raised (a loud failure)
# fail      a wrong answer: it ran and the result differs from the CPU
# timeout   took longer than the pool's limit
# crash     the process died (native code)
STATUSES = ("pass", "skip", "fallback", "error", "fail", "timeout", "crash")
_RANK = {status: rank for rank, status in enumerate(STATUSES)}

# Samples per entry in the gating run and the expectations file. In compile mode the
# second sample often exercises another branch (ceil_mode, a 0-d input, a broadcast) of
# the lowering. Eager mode on dense real values runs the first sample only: its ops go
# through the same lowering rules as compile mode's (each op its own program), so the
# second sample's branches are compile mode's to check, and what eager mode adds, the
# device's dispatch (registration, output shapes, fallbacks), the first sample
# exercises. A second eager float32 sample cost the gating run a fifth of its time
# (~170 s of one core) and decided no expectation line (randomness is still looked
# for in two samples, below). Complex and
# sparse values keep two in eager mode: their eager routes (real pairs, the sparse
# kernels) are the device's own, and a second sample finds fallbacks there (sparse CSR
# ``sum`` with a ``dim``). ``--samples N`` runs N everywhere.
DEFAULT_SAMPLES = 2
_ONE_SAMPLE = {("eager", "float32"), ("eager", "bfloat16")}


def default_samples(mode: str, dtype: str) -> int:
    """Samples per entry the expectations file was made with, in ``mode`` and ``dtype``."""
    return 1 if (mode, dtype) in _ONE_SAMPLE else DEFAULT_SAMPLES


# How many samples the CPU may reject before an entry is skipped.
_SAMPLE_SEARCH_LIMIT = 12


@dataclass
class Outcome:
    """The result of one entry in one mode and dtype."""

    entry: str
    mode: str
    dtype: str
    status: str
    reason: str = ""
    samples: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Outcome:
        return cls(**data)


class _SampleSkipped(Exception):
    """This sample says nothing about the backend (the reason is the message)."""


class _FellBack(Exception):
    """The sample's answer was right, but it did not run natively."""


# -- the database ----------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def op_database() -> dict[str, Any]:
    """``{entry name: OpInfo}`` for every entry of PyTorch's op database."""
    import torch.testing._internal.common_methods_invocations as invocations

    # Random ops' OpInfo wrappers reseed the RNG inside the call, which Dynamo
    # refuses to trace (and which hides randomness from our seed check); the
    # runner seeds around each call itself.
    invocations.wrapper_set_seed = _call_without_seeding
    return {entry_name(op): op for op in invocations.op_db}


def _call_without_seeding(function, *args, **kwargs):
    return function(*args, **kwargs)


def entry_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def entry_names() -> list[str]:
    return list(op_database())


def find_entry(name: str):
    try:
        return op_database()[name]
    except KeyError:
        raise KeyError(f"no OpInfo entry named {name!r}") from None


# -- running an entry ----------------------------------------------------------------


def run_entry(name: str, mode: str, dtype: str, samples: int | None = None) -> Outcome:
    """Run up to ``samples`` samples (default: ``default_samples(mode, dtype)``) of entry
    ``name`` in ``mode`` and ``dtype``.

    ``dtype`` is a dense dtype (``DTYPES``) or a sparse variant (``VARIANTS``:
    ``sparse_coo.float32``, ``sparse_csr.float32``), whose samples have that layout.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes are {', '.join(MODES)}")
    if dtype not in ALL_DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; dtypes are {', '.join(ALL_DTYPES)}")
    if samples is None:
        samples = default_samples(mode, dtype)
    layout, value_dtype = sparse_samples.split_variant(dtype)
    start = time.perf_counter()
    outcome = _run_entry(name, mode, DTYPES[value_dtype], samples, layout)
    outcome.entry, outcome.mode, outcome.dtype = name, mode, dtype
    outcome.seconds = round(time.perf_counter() - start, 3)
    return outcome


def _run_entry(
    name: str, mode: str, dtype: torch.dtype, samples: int, layout: torch.layout = torch.strided
) -> Outcome:
    op = find_entry(name)
    if dtype not in op.supported_dtypes("cpu"):
        return Outcome(name, mode, str(dtype), "skip", f"the op does not support {dtype} on CPU")
    if layout != torch.strided and not sparse_samples.supports(op, layout):
        return Outcome(
            name, mode, str(dtype), "skip", f"the OpInfo entry does not support {layout}"
        )
    runner = _compile_sample if mode == "compile" else _eager_sample
    try:
        usable = _usable_samples(op, dtype, samples, layout)
    except sparse_samples.NoSparseSamples as none:
        return Outcome(name, mode, str(dtype), "skip", str(none))
    except _SampleSkipped as skipped:
        return Outcome(name, mode, str(dtype), "skip", str(skipped))
    except Exception as error:
        return Outcome(
            name,
            mode,
            str(dtype),
            "skip",
            f"its sample inputs cannot be made on CPU: {_describe_error(error)}",
        )

    def outcome(run_one: Callable[[int, dict], tuple[str, str]]) -> Outcome:
        worst = Outcome(name, mode, str(dtype), "skip", "no sample input runs on the CPU")
        for index, sample in enumerate(usable):
            status, reason = run_one(index, sample)
            if worst.status == "skip" or _RANK[status] > _RANK[worst.status]:
                worst = Outcome(name, mode, str(dtype), status, reason)
        worst.samples = len(usable)
        return worst

    if mode == "compile" and len(usable) > 1:
        results = _compile_together(op, usable)
        if results is not None:
            together = outcome(lambda i, s: _run_sample(op, s, lambda _op, _s: results[i]))
            if together.status == "pass":
                return together
    return outcome(lambda _i, sample: _run_sample(op, sample, runner))


# Entries whose index output is unspecified among equal values: indices are right when
# they point at the right values (topk's order of ties is implementation-defined).
_TIES_ANY_ORDER = {"topk"}


def _check_tied_indices(op, actual, sample: dict) -> None:
    values, indices = actual
    check_close(values, sample["expected"][0])
    source = sample["args"][0]
    dim = sample["args"][2] if len(sample["args"]) > 2 else sample["kwargs"].get("dim", -1)
    picked = torch.gather(source, dim if source.dim() else 0, indices) if source.dim() else source
    check_close(picked, sample["expected"][0])


# Entries whose eigenvectors are defined up to sign (LAPACK's choice is unspecified):
# each column is right when it, or its negation, matches the CPU's.
_EIGENVECTOR_SIGNS = {"linalg.eigh"}


def _check_eigenvectors_up_to_sign(actual, sample: dict) -> None:
    values, vectors = actual
    expected_values, expected_vectors = sample["expected"]
    check_close(values, expected_values)
    vectors = vectors.detach().cpu()
    alignment = (vectors * expected_vectors).sum(-2, keepdim=True)
    signs = torch.where(alignment < 0, -1.0, 1.0).to(vectors.dtype)
    check_close(vectors * signs, expected_vectors)


def _run_sample(op, sample, runner: Callable) -> tuple[str, str]:
    try:
        actual = runner(op, sample)
        if entry_name(op) in _TIES_ANY_ORDER:
            _check_tied_indices(op, actual, sample)
        elif entry_name(op) in _EIGENVECTOR_SIGNS:
            _check_eigenvectors_up_to_sign(actual, sample)
        else:
            _check_against_references(actual, sample, rules=_rules(op))
    except _FellBack as fell_back:
        return "fallback", str(fell_back)
    except _SampleSkipped as skipped:
        return "skip", str(skipped)
    except Mismatch as mismatch:
        return "fail", f"wrong answer: {mismatch}"
    except Exception as error:
        return "error", _describe_error(error)
    return "pass", ""


def _usable_samples(
    op, dtype: torch.dtype, wanted: int, layout: torch.layout = torch.strided
) -> list[dict]:
    """The first ``wanted`` samples the CPU runs, with their CPU results.

    Raises ``_SampleSkipped`` for an op whose result changes with the RNG seed:
    random output has no single right answer to compare with.
    """
    found: list[dict] = []
    source = (
        op.sample_inputs("cpu", dtype, requires_grad=False)
        if layout == torch.strided
        else sparse_samples.sparse_samples(op, layout, dtype)
    )
    # Randomness is looked for in at least DEFAULT_SAMPLES accepted samples, however
    # few are kept: a random op's first sample may be a deterministic corner (dropout
    # with p=0, attention with training=False), and passing it says nothing of the op.
    probed = 0
    for index, sample in enumerate(source):
        if probed >= max(wanted, DEFAULT_SAMPLES) or index >= _SAMPLE_SEARCH_LIMIT:
            break
        arguments = (sample.input, *sample.args)
        try:
            expected = _cpu_result(op, arguments, sample.kwargs, seed=0)
        except Exception:
            continue
        probed += 1
        if not op.has_nondeterministic_output:
            try:
                check_close(_cpu_result(op, arguments, sample.kwargs, seed=1), expected)
            except Mismatch:
                raise _SampleSkipped("random: the CPU result depends on the RNG seed") from None
        if len(found) >= wanted:
            continue
        sample_case = {"args": arguments, "kwargs": dict(sample.kwargs), "expected": expected}
        if dtype in _WIDER:
            sample_case["also_right"] = _wide_result(op, arguments, sample.kwargs, dtype)
        found.append(sample_case)
    return found


# The precision a result may also be checked against: the same computation done wider.
_WIDER = {
    torch.bfloat16: torch.float32,
    torch.float16: torch.float32,
    torch.float32: torch.float64,
    torch.complex32: torch.complex64,
    torch.complex64: torch.complex128,
}


def _wide_result(op, args: tuple, kwargs: dict, dtype: torch.dtype):
    """The op computed in a wider dtype on the same (already rounded) inputs, rounded to ``dtype``.

    PyTorch's CPU kernels differ in where they round half-precision intermediates (some
    compute in float32 and round once, some round every step), so a half-precision result
    is right if it matches either that kernel or the float32 computation of its inputs.
    Likewise a float32 result is right if it matches the float64 computation: for
    ill-conditioned ops (matrix_exp of a matrix with norm 28) the CPU kernel's own
    float32 result is farther from the exact value than the tolerance.
    """
    wide_dtype = _WIDER[dtype]

    def widen(value):
        return (
            value.to(wide_dtype)
            if isinstance(value, torch.Tensor) and value.dtype == dtype
            else value
        )

    def narrow(value):
        return (
            value.to(dtype)
            if isinstance(value, torch.Tensor) and value.dtype == wide_dtype
            else value
        )

    try:
        wide = _cpu_result(op, pytree.tree_map(widen, args), pytree.tree_map(widen, kwargs), seed=0)
    except Exception:
        return None
    return pytree.tree_map(narrow, wide)


def _rules(op) -> str:
    """How ``op``'s results are compared: values are unspecified for nondeterministic ops."""
    return "metadata" if op.has_nondeterministic_output else "approx"


def _check_against_references(actual, sample: dict, rules: str) -> None:
    try:
        check_close(actual, sample["expected"], rules=rules)
    except Mismatch:
        also_right = sample.get("also_right")
        if also_right is None:
            raise
        try:
            check_close(actual, also_right, rules=rules)
        except Mismatch:
            raise Mismatch(
                f"{_first_line_of_mismatch(actual, sample, rules)} (and differs from "
                "the wider computation too)"
            ) from None


def _first_line_of_mismatch(actual, sample: dict, rules: str) -> str:
    try:
        check_close(actual, sample["expected"], rules=rules)
    except Mismatch as mismatch:
        return str(mismatch)
    return ""


def _cpu_result(op, args: tuple, kwargs: dict, seed: int):
    torch.manual_seed(seed)
    result = op.op(*_cloned(args), **_cloned(kwargs))
    return pytree.tree_map(_detached_copy, result)


def _cloned(value):
    return pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, value)


def _detached_copy(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    return value


# -- compile mode --------------------------------------------------------------------


def _compile_sample(op, sample: dict):
    import torch._dynamo

    torch._dynamo.reset()
    function = op.op

    def call(*args, **kwargs):
        return function(*args, **kwargs)

    compiled = torch.compile(call, backend="neuron", fullgraph=True, dynamic=False)
    args, kwargs = _cloned(sample["args"]), _cloned(sample["kwargs"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.manual_seed(0)
            result = compiled(*args, **kwargs)
        except torch._dynamo.exc.BackendCompilerFailed:
            raise
        except Exception as failure:
            if _dynamo_alone_fails(call, sample):
                raise _SampleSkipped(
                    "Dynamo cannot capture it in one graph with any backend: "
                    + _first_line(failure)
                ) from None
            raise
        finally:
            torch._dynamo.reset()
    result = pytree.tree_map(_detached_copy, result)
    fallbacks = [w.message for w in caught if isinstance(w.message, CpuFallbackWarning)]
    if fallbacks:
        _check_against_references(result, sample, rules=_rules(op))
        raise _FellBack(fallbacks[0].reason)
    return result


def _compile_together(op, samples: list[dict]) -> list | None:
    """Each sample's result from one compiled graph that calls the op once per sample;
    None where that graph raises or falls back to the CPU.

    Compiling a one-op graph is mostly fixed cost (Dynamo, AOTAutograd, the lowering's
    set-up, XLA's), so one graph of two calls costs much less than two graphs of one.
    Only a pass is taken from it: any other outcome comes from each sample compiled
    alone (``_compile_sample``), so an expectation line's status and reason are always
    those of the sample's own program.
    """
    import torch._dynamo

    function = op.op

    def call(every_args, every_kwargs):
        return [function(*a, **k) for a, k in zip(every_args, every_kwargs)]

    torch._dynamo.reset()
    compiled = torch.compile(call, backend="neuron", fullgraph=True, dynamic=False)
    args = [_cloned(sample["args"]) for sample in samples]
    kwargs = [_cloned(sample["kwargs"]) for sample in samples]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.manual_seed(0)
            results = compiled(args, kwargs)
        except Exception:
            return None
        finally:
            torch._dynamo.reset()
    if any(isinstance(w.message, CpuFallbackWarning) for w in caught):
        return None
    return [pytree.tree_map(_detached_copy, result) for result in results]


def _dynamo_alone_fails(call: Callable, sample: dict) -> bool:
    """Whether Dynamo with the do-nothing backend also fails to capture one graph."""
    import torch._dynamo

    torch._dynamo.reset()
    try:
        torch.compile(call, backend="eager", fullgraph=True, dynamic=False)(
            *_cloned(sample["args"]), **_cloned(sample["kwargs"])
        )
    except Exception:
        return True
    return False


# -- eager mode ----------------------------------------------------------------------


# Arguments PyTorch requires on the CPU whatever the device (the OpInfo sample
# generators create them without a device): entry -> positions in (input, *args).
_HOST_ARGUMENTS = {"tensor_split": (1,)}


def _eager_sample(op, sample: dict):
    from torchneuron.device import fallback

    device = torch.device("neuron")
    to_device = functools.partial(_moved, device=device)
    host_positions = _HOST_ARGUMENTS.get(op.name, ())
    args = tuple(
        value if position in host_positions else pytree.tree_map(to_device, value)
        for position, value in enumerate(_cloned(sample["args"]))
    )
    kwargs = pytree.tree_map(to_device, _cloned(sample["kwargs"]))
    fallback.clear_fallback_ops()
    torch.manual_seed(0)
    result = op.op(*args, **kwargs)
    torch.neuron.synchronize()
    wrong_device = [
        str(t.device)
        for t in pytree.tree_leaves(result)
        if isinstance(t, torch.Tensor) and t.device.type != "neuron"
    ]
    result = pytree.tree_map(_detached_copy, result)
    fell_back = fallback.fallback_reasons()
    if wrong_device:
        raise Mismatch(f"a result tensor is on {wrong_device[0]}, not on the neuron device")
    if fell_back:
        _check_against_references(result, sample, rules=_rules(op))
        name, why = next(iter(sorted(fell_back.items())))
        raise _FellBack(f"{name} ran on the CPU: {why}"[:300])
    return result


def _moved(value, device: torch.device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, torch.device) and value.type == "cpu":
        return device
    if isinstance(value, str) and value == "cpu":
        return str(device)
    return value


# -- reporting errors ----------------------------------------------------------------


def _describe_error(error: BaseException) -> str:
    """One line: the innermost meaningful error type and its first line."""
    inner = error
    seen = set()
    while id(inner) not in seen:
        seen.add(id(inner))
        nested = getattr(inner, "inner_exception", None) or inner.__cause__
        if nested is None:
            break
        inner = nested
    text = f"{type(inner).__name__}: {_first_line(inner)}"
    if type(inner).__name__ in ("AssertionError", "KeyError", "IndexError", "TypeError"):
        # Bare internal errors say little; name the frame they came from.
        frames = traceback.extract_tb(inner.__traceback__)
        if frames:
            last = frames[-1]
            text += f" (at {last.name} in {last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
    return text[:400]


def _first_line(error: BaseException) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0].strip() if lines else ""
