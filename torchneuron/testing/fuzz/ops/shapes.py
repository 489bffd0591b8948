"""Shape and view ops: cat/stack with promotion and empty tensors, negative dims, views of views."""

from __future__ import annotations

from hypothesis import strategies as st

from ..cases import Case
from ..inputs import ALL_DTYPES, shapes, tensors
from .common import add, any_tensor, dims

FAMILY = "shape"


@st.composite
def _join_cases(draw, function: str):
    first = draw(any_tensor(ALL_DTYPES, shapes(min_dims=1, max_dims=3)))
    dim = draw(dims(len(first.shape), none=False))
    other_shape = list(first.shape)
    if function == "cat" and -len(other_shape) <= dim < len(other_shape):
        other_shape[dim] = draw(st.sampled_from([0, 1, 2]))
    if draw(st.integers(0, 5)) == 0:
        other_shape = [0]  # PyTorch's legacy: a 1-d empty tensor joins anything in cat
    second = draw(tensors(st.sampled_from(ALL_DTYPES), tuple(other_shape)))
    return Case(f"lambda a, b: torch.{function}([a, b], dim={dim})", (first, second))


@st.composite
def _unary_shape_cases(draw, template: str, min_dims: int = 0):
    spec = draw(any_tensor(("float32", "int64", "bool", "float16"), shapes(min_dims=min_dims)))
    rank = len(spec.shape)
    fields = {
        "d0": draw(dims(rank, none=False)),
        "d1": draw(dims(rank, none=False)),
        "perm": tuple(draw(st.permutations(range(rank)))),
        "shifts": draw(st.sampled_from([1, -1, 5, -7, 0])),
        "k": draw(st.sampled_from([0, 1, -1, 3])),
        "chunks": draw(st.sampled_from([1, 2, 3])),
        "shape": tuple(1 if side == 1 and draw(st.booleans()) else side for side in spec.shape),
    }
    if fields["shape"]:
        fields["shape"] = (2, *(-1 if draw(st.booleans()) else side for side in spec.shape))
    return Case(f"lambda a: {template.format(**fields)}", (spec,))


add("cat", FAMILY, lambda: _join_cases("cat"), "exact")
add("stack", FAMILY, lambda: _join_cases("stack"), "exact")
SHAPE_OPS = {
    "transpose": ("a.transpose({d0}, {d1})", 0),
    "permute": ("a.permute({perm})", 0),
    "expand": ("a.expand({shape})", 0),
    "flip": ("torch.flip(a, ({d0},))", 0),
    "roll": ("torch.roll(a, {shifts}, {d0})", 0),
    "roll.flat": ("torch.roll(a, {shifts})", 0),
    "squeeze": ("a.squeeze({d0})", 0),
    "unsqueeze": ("a.unsqueeze({d0})", 0),
    "movedim": ("torch.movedim(a, {d0}, {d1})", 0),
    "view": ("a.view(-1)", 0),
    "reshape": ("a.reshape(-1, 1)", 0),
    "flatten": ("a.flatten({d0})", 0),
    "tril": ("torch.tril(a, {k})", 2),
    "triu": ("torch.triu(a, {k})", 2),
    "diagonal": ("torch.diagonal(a, {k}, {d0}, {d1})", 2),
    "chunk": ("torch.chunk(a, {chunks}, {d0})", 1),
    "split": ("torch.split(a, {chunks}, {d0})", 1),
    "unbind": ("torch.unbind(a, {d0})", 1),
    "repeat": ("a.repeat({perm} + (2,))", 0),
    "t": ("a.t()", 0),
    "contiguous": ("a.contiguous() + 0", 0),
}
for _name, (_template, _min_dims) in SHAPE_OPS.items():
    add(_name, FAMILY, lambda t=_template, m=_min_dims: _unary_shape_cases(t, m), "exact")
