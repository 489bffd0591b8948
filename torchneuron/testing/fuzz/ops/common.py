"""Case generators shared by the op families: one per signature class.

Templates are source text with ``{a}``, ``{b}``, ``{c}`` for operands: a tensor
operand becomes a parameter of ``fn``, a Python scalar is written in place.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..cases import Case, FuzzOp, register
from ..inputs import ALL_DTYPES, LAYOUTS, broadcast_shapes, literal, python_scalars, shapes, tensors


def lambda_source(template: str, tensor_names: list[str], scalars: dict[str, object]) -> str:
    filled = template.format(
        **{name: name for name in tensor_names},
        **{name: f"({literal(value)})" for name, value in scalars.items()},
    )
    return f"lambda {', '.join(tensor_names)}: {filled}"


def add(name: str, family: str, strategy_factory, compare: str = "approx", **extra) -> FuzzOp:
    return register(FuzzOp(name, family, strategy_factory, compare, **extra))


def unary(
    name: str,
    template: str,
    family: str = "elementwise.unary",
    dtypes: tuple[str, ...] = ALL_DTYPES,
    compare: str = "approx",
    special: bool = True,
) -> FuzzOp:
    """``template`` uses ``{a}``: one tensor of any shape, layout and dtype of ``dtypes``."""

    def cases():
        return tensors(st.sampled_from(dtypes), special=special).map(
            lambda spec: Case(lambda_source(template, ["a"], {}), (spec,))
        )

    return add(name, family, cases, compare)


def binary(
    name: str,
    template: str,
    family: str = "elementwise.binary",
    dtypes: tuple[str, ...] = ALL_DTYPES,
    compare: str = "approx",
    scalar_b: bool = True,
    scalar_a: bool = False,
    special: bool = True,
) -> FuzzOp:
    """Two broadcast operands of independent dtypes; either may be a Python scalar."""

    @st.composite
    def cases(draw):
        shape_a, shape_b = draw(broadcast_shapes(2))
        kinds = ["tensor"] + (["scalar"] if scalar_b else [])
        kind_b = draw(st.sampled_from(kinds))
        kind_a = "tensor"
        if scalar_a and kind_b == "tensor":
            kind_a = draw(st.sampled_from(["tensor", "scalar"]))
        names, specs, scalars = [], [], {}
        for operand, kind, shape in (("a", kind_a, shape_a), ("b", kind_b, shape_b)):
            if kind == "scalar":
                scalars[operand] = draw(python_scalars())
            else:
                names.append(operand)
                specs.append(draw(tensors(st.sampled_from(dtypes), shape, special=special)))
        return Case(lambda_source(template, names, scalars), tuple(specs))

    return add(name, family, lambda: cases(), compare)


def any_tensor(dtypes=ALL_DTYPES, shape=None, layouts=LAYOUTS, special=True):
    return tensors(
        st.sampled_from(dtypes), shape if shape is not None else shapes(), layouts, special
    )


def dims(ndim: int, none: bool = True) -> st.SearchStrategy:
    """A dim for a tensor of ``ndim`` dims: valid, negative, or one out of range."""
    rank = max(ndim, 1)
    options = st.integers(-rank, rank - 1)
    out_of_range = st.sampled_from([rank, -rank - 1])
    choices = [options, out_of_range]
    if none:
        choices.insert(0, st.none())
    return st.one_of(*choices)
