"""The one way to make a torch-mlir ``Context``: its dialects load when first named.

torch-mlir's ``ir.Context()`` loads every dialect its bindings hold (about fifty:
linalg, tosa, gpu, ... which we never use) the moment it is made: ~24 ms on the 2-core
machine, against ~0.5 ms for a context that loads a dialect when something first names
it. MLIR does that loading itself: the parser, an op created by name and a pass's
dependent dialects all load from the registry on first use. Every compile (each new
eager op's program is one) makes a context for its torch-mlir import, and so do each
parse of a stage's text, the runtime's read of a program's signature and each request
to the verifier's child.
"""

from __future__ import annotations

from typing import Any


def new_context() -> Any:
    """A torch-mlir ``ir.Context`` with every dialect registered and none loaded yet."""
    from torch_mlir import ir

    return ir.Context(load_on_create_dialects=[])
