"""Ops enumerated from PyTorch's OpInfo database: every unary and binary ufunc and reduction.

Each becomes ``opinfo.<name>`` with the generic stressing inputs of its signature
class, restricted to the dtypes its OpInfo says the CPU supports (plus bool, whose
refusal PyTorch specifies by raising). Loading the database takes seconds, so these
ops are registered only when a selection could name them (``register_opinfo_ops``).
Values are compared with the dtype's tolerance: OpInfo does not say which ops are exact.
"""

from __future__ import annotations

import threading

from hypothesis import strategies as st

from ..cases import REGISTRY, Case, FuzzOp, register
from ..inputs import ALL_DTYPES, shapes, tensors
from .common import binary, dims, unary

PREFIX = "opinfo."
FAMILY = "opinfo"
# Entries that are not ops on tensor values, or that the hand-written families cover
# with better inputs, or whose result PyTorch leaves unspecified (random, hashes).
SKIPPED = {
    "jiterator_unary",
    "jiterator_binary",
    "jiterator_binary_return_by_ref",
    "hash_tensor",
    "nn.functional.rrelu",
    "nn.functional.prelu",
    "complex",
    "polar",
    "frexp",
    "fill",
    "bfloat16",
    "bool",
    "byte",
    "char",
    "double",
    "float",
    "half",
    "int",
    "long",
    "short",
    "cdouble",
    "cfloat",
    "chalf",
    "conj",
    "conj_physical",
    "imag",
    "real",
    "angle",
}
_lock = threading.Lock()
_done = False


def register_opinfo_ops() -> None:
    """Register ``opinfo.*`` ops (once; imports torch's OpInfo database)."""
    global _done
    with _lock:
        if _done:
            return
        import torch
        from torch.testing._internal.common_methods_invocations import op_db
        from torch.testing._internal.opinfo.core import (
            BinaryUfuncInfo,
            ReductionOpInfo,
            UnaryUfuncInfo,
        )

        for info in op_db:
            if info.variant_test_name or info.name in SKIPPED or info.name.startswith("__"):
                continue
            if info.name.startswith("masked.") or PREFIX + info.name in REGISTRY:
                continue
            path = f"torch.{info.name}"
            try:
                if eval(path, {"torch": torch}) is not info.op:
                    continue
            except AttributeError:
                continue
            supported = {str(d).removeprefix("torch.") for d in info.dtypes}
            dtypes = tuple(d for d in ALL_DTYPES if d in supported or d == "bool")
            name = PREFIX + info.name
            if isinstance(info, UnaryUfuncInfo):
                unary(name, path + "({a})", family=FAMILY, dtypes=dtypes)
            elif isinstance(info, BinaryUfuncInfo):
                binary(
                    name,
                    path + "({a}, {b})",
                    family=FAMILY,
                    dtypes=dtypes,
                    scalar_b=bool(info.supports_rhs_python_scalar),
                )
            elif isinstance(info, ReductionOpInfo):
                register(FuzzOp(name, FAMILY, _reduction_cases(path, dtypes)))
        _done = True


def _reduction_cases(path: str, dtypes: tuple[str, ...]):
    @st.composite
    def cases(draw):
        spec = draw(tensors(st.sampled_from(dtypes), shapes(max_dims=3)))
        dim = draw(dims(len(spec.shape)))
        args = "" if dim is None else f", dim={dim}"
        return Case(f"lambda a: {path}(a{args})", (spec,))

    return lambda: cases()
