"""Our own lowering rules: ATen ops torch-mlir cannot lower, rewritten into ATen ops it can.

A table from ATen op overload to rule (``registry.py``, which imports no family), filled
by the ``@lowering_rule`` decorator.
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

import torch

from .registry import LOWERING_RULES, Rule, lowering_rule

__all__ = ["LOWERING_RULES", "Rule", "lowering_rule", "lowering_rules"]


def lowering_rules() -> dict[torch._ops.OpOverload, Rule]:
    """Every rule, with each family's module imported."""
    from . import (  # noqa: F401
        arithmetic,
        attention,
        chunked_loss,
        clamping,
        comparisons,
        convolution,
        creation,
        eigen,
        embedding,
        extremes,
        foreach,
        fractional_pool,
        grouped_mm,
        histograms,
        indexing,
        linalg,
        moments,
        pooling,
        qr,
        random,
        reductions,
        resampling,
        scaled_mm,
        shifts,
        sorting,
        special,
    )

    return dict(LOWERING_RULES)
