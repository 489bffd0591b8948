"""Running cases: PyTorch CPU as the reference, eager on ``neuron``, and torch.compile.

``run_case`` evaluates one case in every mode and gives each mode a status:

- ``pass``: same value, dtype and shape as PyTorch (or both raised);
- ``wrong``: a different value, dtype, shape or aliasing, or a value where PyTorch raises;
- ``refused``: PyTorch gave a value and we raised a ``TorchNeuronError`` (a fallback
  forbidden by ``TORCHNEURON_NO_FALLBACK=1``, a ``LoweringError``, ...): not wrong;
- ``error``: we raised any other exception where PyTorch gave a value;
- ``lenient``: PyTorch raised ``NotImplementedError`` (its CPU has no kernel for the
  dtype, e.g. ``gelu`` of int64) and we returned a value: a gap in PyTorch's CPU
  coverage, not an invalid input, so not counted as wrong (and not shrunk, so it does
  not hide value bugs of the same op);
- ``untested``: compile mode handed no graph with an op to the backend (Dynamo ran
  the function itself), so nothing of ours ran;
- ``denormal``: a difference in a case whose inputs or expected results hold float32,
  float64 or bfloat16 subnormals. XLA's CPU client runs every program with
  flush-to-zero and denormals-are-zero set (docs/numerics.md), so these differ by
  design; they are counted apart from ``wrong`` (and not shrunk) so that they do not
  hide an op's other differences.

``fuzz_op`` drives one op with hypothesis, reproducibly: ``@given`` with an explicit
``@seed`` derived from the run's seed and the op's name, no example database, and
``report_multiple_bugs=False``. The first wrong case stops generation and is shrunk
(for at most ``shrink_seconds``; after that, unseen candidates count as passing and
seen ones keep their verdict, so the shrinker ends consistently); the minimal case
is reported as a snippet.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from torch.utils import _pytree as pytree

from torchneuron.errors import TorchNeuronError, one_line

from ..compare import Mismatch, check_close
from .cases import Case, FuzzOp, make_function
from .inputs import SOURCE_NAMES
from .repro import snippet

MODES = ("compile", "eager")
STATUSES = ("pass", "wrong", "refused", "error", "lenient", "untested", "denormal")
# dtypes whose subnormals the numbers engine flushes (float16 is computed in float32,
# where its subnormals are normal numbers)
_FLUSHED = (torch.float32, torch.float64, torch.bfloat16)


@dataclass
class Observation:
    """What one mode did with a case: a CPU copy of its state, or the exception."""

    state: Any = None
    error: BaseException | None = None
    graphs: int = -1  # compile mode: graphs with ops handed to the backend


def observe(case: Case, op: FuzzOp | None, mode: str) -> Observation:
    """Run ``case`` in ``mode`` ("reference", "eager" or "compile")."""
    device = {"reference": "cpu", "eager": "neuron", "compile": case.compile_device}[mode]
    source = case.source if mode == "reference" or op is None else op.device_source
    graphs = [0]
    with _default_dtype(case.default_dtype):
        try:
            scope = {"torch": torch, "device": device, **SOURCE_NAMES}
            inputs = [eval(text, scope) for text in case.input_sources("device")]
            # a copy: an in-place op may overwrite a subnormal input
            before = pytree.tree_map(
                lambda x: x.detach().to("cpu", copy=True) if isinstance(x, torch.Tensor) else x,
                inputs,
            )
            fn = make_function(source or case.source)
            if mode == "compile":
                torch._dynamo.reset()
                fn = torch.compile(fn, backend=_counting_backend(graphs), dynamic=False)
            result = fn(*inputs)
            aliased = None
            if case.aliases is not None:
                first = pytree.tree_leaves(result)[0]
                aliased = first.data_ptr() == inputs[case.aliases].data_ptr()
            state = {
                "result": _to_cpu(result),
                "inputs after": _to_cpu(inputs),
                "inputs before": before,
            }
            if aliased is not None:
                state["result aliases its input"] = aliased
        except Exception as error:  # noqa: BLE001 - any exception is an observation
            return Observation(error=error, graphs=graphs[0] if mode == "compile" else -1)
    return Observation(state=state, graphs=graphs[0] if mode == "compile" else -1)


# FX node kinds that compute (Dynamo records tensor methods as call_method).
_OP_NODES = ("call_function", "call_method", "call_module")


def _counting_backend(graphs: list[int]):
    from torchneuron.backend import neuron_backend

    def backend(gm, example_inputs):
        if any(node.op in _OP_NODES for node in gm.graph.nodes):
            graphs[0] += 1
        return neuron_backend(gm, example_inputs)

    return backend


@contextlib.contextmanager
def _default_dtype(name: str | None):
    if name is None:
        yield
        return
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, name))
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _to_cpu(value):
    return pytree.tree_map(
        lambda leaf: leaf.detach().to("cpu") if isinstance(leaf, torch.Tensor) else leaf, value
    )


def is_refusal(error: BaseException) -> bool:
    """``error`` is, or was caused by, a ``TorchNeuronError`` (Dynamo wraps backend errors)."""
    seen = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, TorchNeuronError):
            return True
        stack += [
            current.__cause__,
            current.__context__,
            getattr(current, "inner_exception", None),
        ]
    return False


def verdict(reference: Observation, got: Observation, op: FuzzOp, mode: str) -> tuple[str, str]:
    """(status, detail) of one mode against the reference."""
    if reference.error is not None:
        if got.error is not None:
            return "pass", ""
        if mode == "compile" and got.graphs == 0:
            return "untested", "Dynamo ran the function itself"
        if isinstance(reference.error, NotImplementedError):
            return "lenient", f"PyTorch's CPU has no kernel: {one_line(reference.error)[:200]}"
        return "wrong", f"PyTorch raises {type(reference.error).__name__}: " + one_line(
            reference.error
        )[:200] + "; we return a value"
    if got.error is not None:
        kind = "refused" if is_refusal(got.error) else "error"
        return kind, f"{_innermost_name(got.error)}: {one_line(got.error)[:300]}"
    if mode == "compile" and got.graphs == 0:
        return "untested", "Dynamo ran the function itself"
    try:
        check_close(got.state, reference.state, rules=op.compare, leaf="state leaf")
    except Mismatch as difference:
        if has_subnormals(reference.state):  # (inputs before the call included)
            return "denormal", str(difference)
        return "wrong", str(difference)
    return "pass", ""


def has_subnormals(state: Any) -> bool:
    """Whether any float32/float64/bfloat16 tensor in ``state`` holds a subnormal number."""
    for leaf in pytree.tree_leaves(state):
        if isinstance(leaf, torch.Tensor) and leaf.dtype in _FLUSHED and leaf.numel():
            magnitude = leaf.detach().abs()
            if bool(((magnitude > 0) & (magnitude < torch.finfo(leaf.dtype).tiny)).any()):
                return True
    return False


def _innermost_name(error: BaseException) -> str:
    inner = getattr(error, "inner_exception", None) or error.__cause__
    return type(inner or error).__name__


def run_case(
    case: Case,
    op: FuzzOp,
    modes: tuple[str, ...],
    on_mode: Callable[[str], None] | None = None,
) -> dict[str, tuple[str, str]]:
    """mode -> (status, detail) for one case; ``on_mode(mode)`` is called before each mode."""
    reference = observe(case, None, "reference")
    verdicts = {}
    for mode in modes:
        if on_mode is not None:
            on_mode(mode)
        verdicts[mode] = verdict(reference, observe(case, op, mode), op, mode)
    return verdicts


@dataclass
class Failure:
    """A wrong (shrunk) or error (first seen) case of one op in one mode."""

    op: str
    mode: str
    status: str
    detail: str
    snippet: str

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class OpResult:
    """Tallies of one op's generated cases per mode, and its failures."""

    op: str
    family: str
    cases: int = 0
    counts: dict[str, Counter] = field(default_factory=dict)
    refusals: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    crash: str = ""  # set by the parent when the worker died on this op
    seconds: float = 0.0

    def total(self, status: str) -> int:
        return sum(counter[status] for counter in self.counts.values())

    def to_json(self) -> dict:
        return {
            "op": self.op,
            "family": self.family,
            "cases": self.cases,
            "counts": {mode: dict(counter) for mode, counter in self.counts.items()},
            "refusals": dict(self.refusals),
            "failures": [failure.to_json() for failure in self.failures],
            "crash": self.crash,
            "seconds": round(self.seconds, 2),
        }

    @classmethod
    def from_json(cls, data: dict) -> OpResult:
        return cls(
            op=data["op"],
            family=data["family"],
            cases=data["cases"],
            counts={mode: Counter(counts) for mode, counts in data["counts"].items()},
            refusals=Counter(data.get("refusals", {})),
            failures=[Failure(**failure) for failure in data.get("failures", [])],
            crash=data.get("crash", ""),
            seconds=data.get("seconds", 0.0),
        )


class _WrongFound(Exception):
    def __init__(self, case: Case, verdicts: dict[str, tuple[str, str]]):
        super().__init__("wrong result")
        self.case = case
        self.verdicts = verdicts


def op_seed(run_seed: int, name: str) -> int:
    """The hypothesis seed of one op: the same for the same run seed and op name."""
    digest = hashlib.sha256(f"{run_seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def fuzz_op(
    op: FuzzOp,
    run_seed: int = 0,
    examples: int = 10,
    modes: tuple[str, ...] = MODES,
    seconds: float = 120.0,
    shrink_seconds: float = 60.0,
    on_case: Callable[[Case], None] | None = None,
    on_mode: Callable[[str], None] | None = None,
) -> OpResult:
    """Generate up to ``examples`` cases of ``op`` (for at most ``seconds``) and shrink a wrong one."""
    result = OpResult(op.name, op.family, counts={mode: Counter() for mode in modes})
    start = time.monotonic()
    memo: dict[str, dict[str, tuple[str, str]]] = {}
    shrink_until: list[float] = []  # set when the first wrong case is found
    first_error: set[str] = set()

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        report_multiple_bugs=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @seed(op_seed(run_seed, op.name))
    @given(op.cases())
    def trial(case: Case) -> None:
        key = repr(case)
        verdicts = memo.get(key)
        if verdicts is None:
            now = time.monotonic()
            if shrink_until and now > shrink_until[0]:
                return  # shrinking out of time: unseen candidates pass
            if not shrink_until and now - start > seconds:
                return  # generation out of time
            if on_case is not None:
                on_case(case)
            verdicts = run_case(case, op, modes, on_mode)
            memo[key] = verdicts
            if not shrink_until:
                _tally(result, case, op, verdicts, first_error)
        if any(status == "wrong" for status, _ in verdicts.values()):
            if not shrink_until:
                shrink_until.append(time.monotonic() + shrink_seconds)
            raise _WrongFound(case, verdicts)

    try:
        trial()
    except _WrongFound as found:
        for mode, (status, detail) in found.verdicts.items():
            if status == "wrong":
                result.failures.insert(
                    0, Failure(op.name, mode, "wrong", detail, snippet(found.case, op, mode))
                )
    result.seconds = time.monotonic() - start
    return result


def _tally(result: OpResult, case: Case, op: FuzzOp, verdicts, first_error: set[str]) -> None:
    result.cases += 1
    for mode, (status, detail) in verdicts.items():
        result.counts[mode][status] += 1
        if status == "refused":
            result.refusals[detail.split(":", 1)[0]] += 1
        if status == "error" and mode not in first_error:
            first_error.add(mode)
            result.failures.append(Failure(op.name, mode, status, detail, snippet(case, op, mode)))
