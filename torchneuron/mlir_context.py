"""The one way to make a torch-mlir ``Context``: its dialects load when first named.

torch-mlir's ``ir.Context()`` loads every dialect its bindings were built with (linalg,
tosa, scf, ... some thirty we never use) the moment it is made: ~24 ms on the 2-core
machine, against ~0.5 ms for a context that loads a dialect when a module first names
it. MLIR does that loading itself: the parser, an op created by name and a pass's
dependent dialects all load from the registry on first use. A compile makes several
contexts (the torch-mlir import, each parse of a stage's text, the runtime's read of a
program's signature), so each paid that ~24 ms several times over.
"""

from __future__ import annotations

from typing import Any


def new_context() -> Any:
    """A torch-mlir ``ir.Context`` with every dialect registered and none loaded yet."""
    from torch_mlir import ir

    return ir.Context(load_on_create_dialects=[])
