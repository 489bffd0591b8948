"""What the fuzzer runs: an op under test (``FuzzOp``) and one generated case (``Case``).

A case is text plus tensor specs: ``source`` defines ``fn`` (a lambda or a ``def``),
``inputs`` are its positional arguments, named ``a, b, c, ...`` in the reproduction.
Scalars, dims and flags are written into ``source`` by the op's generator, so the
reproduction shows exactly the call that ran.

How results are compared (``FuzzOp.compare``): one of ``testing.compare``'s rules,
``exact`` (PyTorch's result is exact: neg, abs, relu, min/max, where, copies,
indexing, sorting, shape ops), ``ieee`` (one correctly rounded operation: add, sub,
mul, div) or ``approx`` (the dtype's tolerance); that module says what each allows.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import strategies as st

from .inputs import SOURCE_NAMES, TensorSpec

COMPARISONS = ("exact", "ieee", "approx")
ARGUMENT_NAMES = string.ascii_lowercase[:8]


@dataclass(frozen=True)
class Case:
    """One input of one op: the function's source and its input tensors."""

    source: str
    inputs: tuple[TensorSpec, ...] = ()
    compile_device: str = "cpu"  # where compile mode's inputs live
    default_dtype: str | None = None  # torch.set_default_dtype for the whole case
    aliases: int | None = None  # the result must alias inputs[aliases] (out=, in-place)

    def function(self, source: str | None = None) -> Callable:
        """``fn`` compiled from ``source`` (default: the case's own)."""
        return make_function(source or self.source)

    def input_sources(self, device: str) -> list[str]:
        return [spec.source(device) for spec in self.inputs]


def make_function(source: str) -> Callable:
    """Evaluate a lambda expression or a ``def fn`` block; returns the function."""
    import torch

    scope = {"torch": torch, **SOURCE_NAMES}
    if source.lstrip().startswith("def "):
        exec(compile(source, "<fuzz case>", "exec"), scope)
        return scope["fn"]
    return eval(compile(source, "<fuzz case>", "eval"), scope)


@dataclass(frozen=True)
class FuzzOp:
    """An op under test: a name, its family and a hypothesis strategy of cases."""

    name: str
    family: str
    cases: Callable[[], st.SearchStrategy]
    compare: str = "approx"
    # Used instead of ``Case.source`` on the device (eager and compile mode) but not
    # for the reference: the fuzzer's self-tests inject wrong or crashing
    # implementations this way.
    device_source: str | None = None
    notes: str = ""
    aten: tuple[str, ...] = field(default=())

    def __post_init__(self):
        if self.compare not in COMPARISONS:
            raise ValueError(f"{self.name}: compare must be one of {COMPARISONS}")


REGISTRY: dict[str, FuzzOp] = {}
SELFTEST_FAMILY = "selftest"


def register(op: FuzzOp) -> FuzzOp:
    if op.name in REGISTRY:
        raise ValueError(f"fuzz op {op.name!r} registered twice")
    REGISTRY[op.name] = op
    return op
