"""Our own lowering rules: ATen ops torch-mlir cannot lower, rewritten into ATen ops it can.

A table from ATen op overload to rule, filled by the ``@lowering_rule`` decorator.
A rule is a pure function of the op's operands and attributes, written with ATen
ops that do lower (it runs while the graph is traced, like a decomposition), and
it returns ``NotImplemented`` for the cases it does not cover, which then take
the op's ordinary path (a decomposition, torch-mlir, or an ``UnsupportedOpError``).

One module per family of ops: ``arithmetic``, ``convolution``, ``creation`` (factory ops),
``pooling``, ``reductions``, ``indexing``, ``special`` (special functions, a package with
one module per family of functions), ``linalg`` (factorisations and solves of small
matrices) and ``qr`` (Householder QR).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Rule = Callable[..., object]
LOWERING_RULES: dict[torch._ops.OpOverload, Rule] = {}


def lowering_rule(*ops: torch._ops.OpOverload) -> Callable[[Rule], Rule]:
    """Register the decorated function as the rule for each of ``ops``."""

    def register(rule: Rule) -> Rule:
        for op in ops:
            if op in LOWERING_RULES:
                raise ValueError(
                    f"{op} already has a lowering rule "
                    f"({LOWERING_RULES[op].__module__}.{LOWERING_RULES[op].__name__})"
                )
            LOWERING_RULES[op] = rule
        return rule

    return register


def lowering_rules() -> dict[torch._ops.OpOverload, Rule]:
    """Every rule, with each family's module imported."""
    from . import (  # noqa: F401
        arithmetic,
        attention,
        clamping,
        comparisons,
        convolution,
        creation,
        embedding,
        extremes,
        indexing,
        linalg,
        moments,
        pooling,
        qr,
        random,
        reductions,
        shifts,
        sorting,
        special,
    )

    return dict(LOWERING_RULES)
