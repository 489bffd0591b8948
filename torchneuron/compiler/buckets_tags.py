"""The tag algebra of the bucket analysis, and the ATen ops it knows by kind.

A *tag* (``buckets.py`` explains them) says what a tensor dimension is laid out as:
None when its size does not depend on a bucketed symbol, else the product of *atoms*
(symbols, and static factors merged with them by a view, in row-major order). Here:
the errors the analysis raises, the tables of ops by kind (elementwise, views,
creation, reductions and their mask identities, ...), and the small functions on
shapes and atoms that the rules (``buckets_rules.py``) and the driver
(``buckets_analysis.py``) share.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from typing import Any

import torch
import torch.fx

from torchneuron.errors import TorchNeuronError

from .dynamic_sizes import pinned_expr


class BucketRefused(TorchNeuronError):
    """Padding this graph could change a result; the reason names the op."""


class NothingToBucket(BucketRefused):
    """The graph has no size that is one symbol of an input: nothing to pad."""


def describe(node: torch.fx.Node) -> str:
    return f"{node.target} ({node.name})"


# Symbols with a value for the analysis running (the ints a graph's program takes as
# constants, ``dynamic_sizes.pinned_symbols``): every size is read with them substituted.
_PINNED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("pinned", default=None)


@contextlib.contextmanager
def pinned_values(pinned: dict):
    """Read every size with the symbols of ``pinned`` (symbol -> int) substituted."""
    token = _PINNED.set(dict(pinned))
    try:
        yield
    finally:
        _PINNED.reset(token)


def expr_of(size) -> Any:
    """The sympy expression of ``size`` (a SymInt, SymBool, ...), pinned symbols given
    their values."""
    return pinned_expr(size, _PINNED.get())


def exprs(value: torch.Tensor) -> list:
    import sympy

    return [expr_of(d) if isinstance(d, torch.SymInt) else sympy.Integer(d) for d in value.shape]


def product(atoms) -> Any:
    import sympy

    return sympy.Mul(*[sympy.Integer(a) if isinstance(a, int) else a for a in atoms])


def same(a, b) -> bool:
    import sympy

    return sympy.expand(a - b) == 0


aten = torch.ops.aten
prims = torch.ops.prims

# Ops whose every output position depends only on the same position of each input
# (beyond torch.Tag.pointwise).
ELEMENTWISE = {
    aten.where.self,
    aten.masked_fill.Scalar,
    aten.masked_fill.Tensor,
    aten.clone.default,
    aten._to_copy.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten.copy.default,
    aten.fill.Scalar,
    aten.tril.default,  # keeps absolute positions: the same mask for a prefix
    aten.triu.default,
    prims.convert_element_type.default,
}
VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
CREATION = {
    aten.full.default: 0,
    aten.zeros.default: 0,
    aten.ones.default: 0,
    aten.empty.memory_format: 0,
    aten.new_zeros.default: 1,
    aten.new_ones.default: 1,
    aten.new_empty.default: 1,
    aten.new_full.default: 1,
}
LIKE = {
    aten.full_like.default,
    aten.zeros_like.default,
    aten.ones_like.default,
    aten.empty_like.default,
}
# op -> the argument positions that are sizes (a symbolic size elsewhere is a value)
SHAPE_ARGS = {
    **{op: {1} for op in VIEWS},
    aten.expand.default: {1},
    aten.slice.Tensor: {2, 3},
    aten.slice_scatter.default: {3, 4},  # bounds (the rule refuses a part of a padding)
    aten.arange.default: {0},
    aten.arange.start: {0, 1},
    aten.arange.start_step: {0, 1},
    **{op: {position} for op, position in CREATION.items()},
}
# reduction -> (identity: "zero", "low", "high", "one", "false", "true", or "mean")
REDUCTIONS = {
    aten.sum.dim_IntList: "zero",
    aten.sum.default: "zero",
    aten.amax.default: "low",
    aten.amin.default: "high",
    aten.max.dim: "low",
    aten.min.dim: "high",
    aten.max.default: "low",
    aten.min.default: "high",
    aten.argmax.default: "low",
    aten.argmin.default: "high",
    aten.logsumexp.default: "low",
    aten.prod.dim_int: "one",
    aten.prod.default: "one",
    aten.any.dim: "false",
    aten.any.dims: "false",
    aten.any.default: "false",
    aten.all.dim: "true",
    aten.all.dims: "true",
    aten.all.default: "true",
    aten.mean.dim: "mean",
    aten.mean.default: "mean",
}
# reductions that refuse a padded reduced dimension (no exact mask here)
UNMASKED_REDUCTIONS = {
    aten.var.correction,
    aten.var.dim,
    aten.var_mean.correction,
    aten.std.correction,
    aten.std.dim,
    aten.linalg_vector_norm.default,
    aten.norm.ScalarOpt_dim,
}
SOFTMAX = {aten._softmax.default, aten._log_softmax.default}
SCANS = {aten.cumsum.default, aten.cumprod.default}  # prefix scans keep a prefix exact


def legacy_empty(value: torch.Tensor) -> bool:
    """A 1-D tensor of size 0, which ``cat`` skips whatever the other inputs' shapes."""
    return value.dim() == 1 and isinstance(value.shape[0], int) and value.shape[0] == 0


def clean(value):
    if isinstance(value, (tuple, list)):
        return [(None,) * v.dim() if isinstance(v, torch.Tensor) else None for v in value]
    return (None,) * value.dim() if isinstance(value, torch.Tensor) else None


def reduced_dims(node, rank: int) -> tuple[list[int], bool]:
    """The dimensions a reduction node reduces, and whether it keeps them."""
    target = node.target
    args = list(node.args) + [None] * 3
    if target in (aten.sum.default, aten.max.default, aten.min.default, aten.prod.default) or (
        target in (aten.any.default, aten.all.default, aten.mean.default)
    ):
        return list(range(rank)), False
    dims = node.kwargs.get("dim", args[1])
    keepdim = node.kwargs.get("keepdim", args[2]) or False
    if target is aten.var_mean.correction or target in (
        aten.var.correction,
        aten.std.correction,
    ):
        keepdim = node.kwargs.get("keepdim", False)
    if target in (aten.var.dim, aten.std.dim):
        keepdim = node.kwargs.get("keepdim", args[3] if len(node.args) > 3 else False) or False
    if target in (aten.linalg_vector_norm.default, aten.norm.ScalarOpt_dim):
        dims = node.kwargs.get("dim", args[2])
        keepdim = node.kwargs.get("keepdim", args[3] if len(node.args) > 3 else False) or False
    if dims is None or dims == []:
        return list(range(rank)), bool(keepdim)
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % max(rank, 1) for d in dims}), bool(keepdim)


def fill_value(kind: str, dtype: torch.dtype):
    if kind in ("zero", "false"):
        return False if dtype is torch.bool else 0
    if kind in ("one", "true"):
        return True if dtype is torch.bool else 1
    if dtype is torch.bool:
        return kind == "high"
    if dtype.is_floating_point:
        return -math.inf if kind == "low" else math.inf
    info = torch.iinfo(dtype)
    return info.min if kind == "low" else info.max


def take(atoms: list, expr, free) -> tuple[list | None, list]:
    """The leading atoms whose product is ``expr`` (a static atom may be split), and
    the atoms left; ``(None, atoms)`` when no prefix makes ``expr``."""
    import sympy

    taken: list = []
    remaining = sympy.Integer(1) * expr
    atoms = list(atoms)
    while not same(remaining, 1):
        if not atoms:
            return None, atoms
        atom = atoms[0]
        if free(atom) or _symbolic(atom):  # a padded symbol, or one kept exact
            quotient = sympy.cancel(remaining / atom)
            if not quotient.is_polynomial() or sympy.fraction(quotient)[1] != 1:
                return None, atoms
            taken.append(atom)
            remaining = quotient
            atoms.pop(0)
            continue
        # a static atom: the static part of what remains takes it whole or a piece of it
        coefficient, _ = sympy.Mul(remaining).as_coeff_Mul()
        size, want = int(atom), int(coefficient)
        if size == 1:
            atoms.pop(0)
            continue
        if want % size == 0:
            taken.append(size)
            remaining = sympy.cancel(remaining / size)
            atoms.pop(0)
        elif size % want == 0 and want > 1:
            taken.append(want)
            remaining = sympy.cancel(remaining / want)
            atoms[0] = size // want
        else:
            return None, atoms
    if not taken:
        taken = [1]
    while atoms and not free(atoms[0]) and not _symbolic(atoms[0]) and int(atoms[0]) == 1:
        atoms.pop(0)
    return taken, atoms


def _symbolic(atom) -> bool:
    """Whether an atom is a size symbol (one the analysis keeps at its exact size)."""
    return not isinstance(atom, int) and not getattr(atom, "is_number", True)
