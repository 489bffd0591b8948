"""Run-time checks: conditions a compiled program verifies while it runs.

StableHLO's gather and scatter clamp (or drop) an index that is out of range, so a
program given a bad index would return a plausible value where PyTorch raises. A
lowering rule therefore states what must hold with ``require`` (a call of the
``torchneuron::check`` op, which survives tracing, functionalization and AOTAutograd's
partitioning because it is marked side-effecting) and keeps its gather as before.

Before import (``fx_to_torch.prepare_graph``) each check becomes one more graph output,
a 0-d bool, and is recorded as a ``Check`` (its error kind and message). The compiler
marks those results of ``@main`` (``neuron.check``), the NEFF manifest lists them, and
the runtime raises the recorded kind when one comes back false, then strips them: a
caller sees the outputs it saw before.

A rule that re-issues its own op after checking (the checked op then takes its
ordinary path) does so inside ``reissuing(op)``, and declines while ``is_reissued(op)``.
A rule that calls an indexing op with indices it made itself, in range by construction,
calls it inside ``unchecked()`` so no redundant check is added.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.fx

# The error kinds a check may raise, as PyTorch raises them for the same bad input.
INDEX_ERROR = "IndexError"
RUNTIME_ERROR = "RuntimeError"
ERROR_KINDS = (INDEX_ERROR, RUNTIME_ERROR)


@dataclass(frozen=True)
class Check:
    """One run-time check of a program: what to raise when its output is false."""

    error: str  # one of ERROR_KINDS
    message: str


@torch.library.custom_op(
    "torchneuron::check", mutates_args=(), schema="(Tensor ok, str error, str message) -> Tensor"
)
def check(ok: torch.Tensor, error: str, message: str) -> torch.Tensor:
    """Raise ``error`` (an ``ERROR_KINDS`` name) with ``message`` unless ``ok`` (a 0-d bool)
    holds; returns ``ok``'s value (a result gives the node the metadata every traced node
    has; nothing reads it). This body runs only where the op is executed rather than
    compiled (a CPU graph)."""
    if not bool(ok.all()):
        raise (IndexError if error == INDEX_ERROR else RuntimeError)(message)
    return ok.all()


@check.register_fake
def _check_fake(ok, error, message):
    return torch.empty((), dtype=torch.bool, device=ok.device)


CHECK_OP = torch.ops.torchneuron.check.default
torch.fx.node.has_side_effect(CHECK_OP)

_state = threading.local()


def _reissued_ops() -> set:
    ops = getattr(_state, "reissued", None)
    if ops is None:
        ops = _state.reissued = set()
    return ops


@contextmanager
def reissuing(op) -> Iterator[None]:
    """While active, the rule of ``op`` declines: it is re-issuing ``op`` itself."""
    ops = _reissued_ops()
    added = op not in ops
    ops.add(op)
    try:
        yield
    finally:
        if added:
            ops.discard(op)


def is_reissued(op) -> bool:
    return op in _reissued_ops()


@contextmanager
def unchecked() -> Iterator[None]:
    """While active, ``require`` adds nothing: the indices are in range by construction."""
    depth = getattr(_state, "unchecked", 0)
    _state.unchecked = depth + 1
    try:
        yield
    finally:
        _state.unchecked = depth


def require(ok: torch.Tensor, error: str, message: str) -> None:
    """Make the program raise ``error`` with ``message`` when ``ok`` (a bool tensor) is not
    all true."""
    if getattr(_state, "unchecked", 0):
        return
    CHECK_OP(ok.all(), error, message)


def require_in_range(index: torch.Tensor, low: int, high: int, error: str, message: str) -> None:
    """``require`` that every element of ``index`` lies in ``[low, high)``."""
    from torch.fx.experimental.symbolic_shapes import guard_or_false

    # a data-dependent count (a nonzero's indices) may be 0 or not: checked either way
    if guard_or_false(index.numel() == 0) or getattr(_state, "unchecked", 0):
        return
    require((index >= low) & (index < high), error, message)


def is_check(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is CHECK_OP


def check_of(node: torch.fx.Node) -> tuple[object, Check]:
    """The condition (a node) and the ``Check`` a ``torchneuron::check`` node states."""
    names = ("ok", "error", "message")
    args = list(node.args) + [node.kwargs[name] for name in names[len(node.args) :]]
    ok, error, message = args[:3]
    return ok, Check(str(error), str(message))
