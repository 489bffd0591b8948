"""The table of our lowering rules, and the ``@lowering_rule`` decorator that fills it.

It imports no family of rules: each family module imports this one, and
``rules.lowering_rules()`` imports the families, so nothing imports back.
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
