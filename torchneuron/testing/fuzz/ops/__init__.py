"""The fuzzed ops: importing this package registers every hand-written family.

The registry itself (``cases.REGISTRY``, ``cases.register``) lives in ``cases``, which
imports none of these files: each family module registers into it, and this package
imports them all before choosing from it. ``opinfo`` (ops enumerated from PyTorch's
OpInfo database) registers on demand, when a pattern may name one.
"""

from __future__ import annotations

import fnmatch

from ..cases import REGISTRY, SELFTEST_FAMILY, FuzzOp
from . import elementwise, indexing, mutation, reductions, selftest, shapes, sorting
from .opinfo import register_opinfo_ops

__all__ = [
    "elementwise",
    "indexing",
    "lookup",
    "mutation",
    "reductions",
    "select",
    "selftest",
    "shapes",
    "sorting",
]


def select(patterns: str | list[str] | None) -> list[FuzzOp]:
    """The registered ops matching comma-separated names or globs (default: all).

    Self-test ops are chosen only by patterns that start with ``selftest.``: they
    are deliberately wrong or crash.
    """
    if isinstance(patterns, str):
        patterns = [p.strip() for p in patterns.split(",") if p.strip()]
    wanted = patterns or ["*"]
    if any(_may_name_opinfo(pattern) for pattern in wanted):
        register_opinfo_ops()
    chosen = []
    for op in REGISTRY.values():
        for pattern in wanted:
            if op.family == SELFTEST_FAMILY and not pattern.startswith(SELFTEST_FAMILY):
                continue
            if fnmatch.fnmatchcase(op.name, pattern):
                chosen.append(op)
                break
    return chosen


def lookup(name: str) -> FuzzOp:
    """The registered op called ``name`` (registering OpInfo ops when it is one)."""
    matches = select([name])
    if not matches or matches[0].name != name:
        raise KeyError(f"no fuzz op named {name!r}")
    return matches[0]


def _may_name_opinfo(pattern: str) -> bool:
    return pattern.startswith(("opinfo", "*", "?", "["))
