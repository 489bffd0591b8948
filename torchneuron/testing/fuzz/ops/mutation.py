"""Writes and constants: ``out=`` into views, in-place ops, compiled functions on ``neuron``
tensors (tensor constants, ``y[0] = v``), aliasing through views, and type promotion
with ``torch.set_default_dtype(torch.float64)``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..cases import Case
from ..inputs import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    broadcast_shapes,
    literal,
    python_scalars,
    shapes,
    tensors,
)
from .common import add, any_tensor

OUT_LAYOUTS = ("contiguous", "transposed", "strided", "offset")


@st.composite
def _out_tensor(draw, shape: tuple[int, ...], dtype_choices):
    """An ``out=`` tensor: the right shape (any layout), empty, or a wrong shape."""
    kind = draw(st.sampled_from(["right", "right", "empty", "wrong"]))
    if kind == "empty":
        shape = (0,)
    elif kind == "wrong":
        shape = (*shape, 2) if shape else (3,)
    return draw(tensors(st.sampled_from(dtype_choices), shape, OUT_LAYOUTS, special=False))


def _broadcast(*shapes_):
    result: list[int] = []
    for shape in shapes_:
        padded = [1] * (len(result) - len(shape)) + list(shape)
        result = [1] * (len(shape) - len(result)) + result
        result = [max(x, y) if min(x, y) != 0 else 0 for x, y in zip(result, padded)]
    return tuple(result)


@st.composite
def _binary_out_cases(draw, function: str, dtypes=ALL_DTYPES):
    shape_a, shape_b = draw(broadcast_shapes(2))
    a = draw(tensors(st.sampled_from(dtypes), shape_a))
    b = draw(tensors(st.sampled_from(dtypes), shape_b))
    out = draw(_out_tensor(_broadcast(shape_a, shape_b), dtypes))
    source = f"def fn(a, b, c):\n    r = torch.{function}(a, b, out=c)\n    return r, c"
    return Case(source, (a, b, out), aliases=2)


@st.composite
def _unary_out_cases(draw, call: str, min_dims: int = 0, dtypes=ALL_DTYPES):
    a = draw(any_tensor(dtypes, shapes(min_dims=min_dims)))
    out_shape = a.shape if "{dim}" not in call else a.shape[1:]
    out = draw(_out_tensor(out_shape, dtypes))
    body = call.format(a="a", dim="dim=0")
    return Case(f"def fn(a, c):\n    r = {body}\n    return r, c", (a, out), aliases=1)


@st.composite
def _cat_out_cases(draw):
    a = draw(any_tensor(ALL_DTYPES, shapes(min_dims=1, max_dims=2)))
    b = draw(tensors(st.sampled_from(ALL_DTYPES), a.shape))
    out = draw(_out_tensor((2 * a.shape[0], *a.shape[1:]), ALL_DTYPES))
    return Case(
        "def fn(a, b, c):\n    r = torch.cat([a, b], out=c)\n    return r, c",
        (a, b, out),
        aliases=2,
    )


@st.composite
def _inplace_cases(draw, method: str, scalar: bool):
    shape_a, shape_b = draw(broadcast_shapes(2))
    a = draw(tensors(st.sampled_from(ALL_DTYPES), shape_a))
    if scalar:
        value = literal(draw(python_scalars()))
        return Case(f"def fn(a):\n    r = a.{method}({value})\n    return r", (a,), aliases=0)
    b = draw(tensors(st.sampled_from(ALL_DTYPES), shape_b))
    return Case(f"def fn(a, b):\n    r = a.{method}(b)\n    return r", (a, b), aliases=0)


@st.composite
def _view_write_cases(draw):
    rows, cols = draw(st.integers(2, 4)), draw(st.integers(2, 4))
    a = draw(tensors("float32", (rows, cols), ("contiguous",), special=False))
    value = draw(st.sampled_from([1.0, -0.0, 7.5]))
    form = draw(
        st.sampled_from(
            [
                "v = a.view({rows}, {cols})\n    v.t_()\n    v[1, 0] = {value}",
                "v = a[:, 1:]\n    v.mul_(2)\n    v[0] = {value}",
                "v = a.t()\n    v[0].fill_({value})",
                "v = a.view(-1)\n    v[-1] = {value}\n    a.add_(1)",
            ]
        )
    )
    body = form.format(rows=rows, cols=cols, value=value)
    return Case(f"def fn(a):\n    {body}\n    return a", (a,))


out_family = "out"
add("add.out", out_family, lambda: _binary_out_cases("add"), "ieee")
add("mul.out", out_family, lambda: _binary_out_cases("mul"), "ieee")
add("remainder.out", out_family, lambda: _binary_out_cases("remainder"))
add("maximum.out", out_family, lambda: _binary_out_cases("maximum"), "exact")
add("abs.out", out_family, lambda: _unary_out_cases("torch.abs({a}, out=c)"), "exact")
add("sum.out", out_family, lambda: _unary_out_cases("torch.sum({a}, {dim}, out=c)", 1))
add(
    "clamp.out",
    out_family,
    lambda: _unary_out_cases("torch.clamp({a}, min=-1, max=2, out=c)"),
    "exact",
)
add("cat.out", out_family, lambda: _cat_out_cases(), "exact")

inplace_family = "inplace"
for _method in (
    "add_",
    "mul_",
    "sub_",
    "div_",
    "remainder_",
    "copy_",
    "clamp_min_",
    "bitwise_and_",
):
    add(
        f"{_method}.tensor",
        inplace_family,
        lambda m=_method: _inplace_cases(m, False),
        "exact" if _method in ("copy_", "clamp_min_", "bitwise_and_") else "ieee",
    )
for _method in ("add_", "mul_", "fill_", "clamp_min_", "floor_divide_", "remainder_"):
    add(f"{_method}.scalar", inplace_family, lambda m=_method: _inplace_cases(m, True))
add(
    "relu_",
    inplace_family,
    lambda: any_tensor().map(
        lambda a: Case("def fn(a):\n    r = torch.relu_(a)\n    return r", (a,), aliases=0)
    ),
    "exact",
)
add("view.writes", "aliasing", lambda: _view_write_cases(), "exact")

# Compiled functions on neuron tensors (issue 10's crash with a cold cache).
ON_DEVICE = {
    "compiled.tensor_constant": "lambda a: a + torch.tensor({v}, device=a.device)",
    "compiled.tensor_constant.mul": "lambda a: a * torch.tensor([{v}], device=a.device)",
    "compiled.cpu_scalar_tensor": "lambda a: a + torch.tensor({v})",
    "compiled.setitem": "def fn(a):\n    a[0] = {v}\n    return a",
    "compiled.setitem.neg": "def fn(a):\n    a[-1] = {v}\n    return a * 2",
    "compiled.inplace_add": "def fn(a):\n    a.add_({v})\n    return a * 2",
    "compiled.full_like": "lambda a: torch.full_like(a, {v})",
    "compiled.factory": "lambda a: a + torch.ones(a.shape, device=a.device) * {v}",
    "compiled.arange": "lambda a: a + torch.arange(a.shape[-1], device=a.device) * {v}",
}


def _on_device_cases(template: str):
    return st.tuples(
        any_tensor(("float32", "int64", "bool", "float16", "int32"), shapes(min_dims=1)),
        python_scalars(),
    ).map(
        lambda pair: Case(template.format(v=literal(pair[1])), (pair[0],), compile_device="neuron")
    )


for _name, _template in ON_DEVICE.items():
    add(_name, "compiled.on_device", lambda t=_template: _on_device_cases(t))

# Promotion with a float64 default dtype.
PROMOTION = {
    "true_divide": ("lambda a, b: a / b", 2),
    "int_plus_float": ("lambda a: a + 5.5", 1),
    "int_times_float": ("lambda a: a * -0.5", 1),
    "tensor_literal": ("lambda a: a + torch.tensor(1.5)", 1),
    "arange_scale": ("lambda a: torch.arange(3, device=a.device) * 0.5", 1),
    "mean_of_float": ("lambda a: (a * 1.0).mean()", 1),
    "sigmoid_of_int": ("lambda a: torch.sigmoid(a)", 1),
    "where_scalars": ("lambda a: torch.where(a > 0, 1.5, 2)", 1),
}


def _promotion_cases(template: str, count: int):
    dtypes = (*INT_DTYPES, "bool", "float32", "float16")
    return st.lists(
        any_tensor(dtypes, shapes(max_dims=2), special=False), min_size=count, max_size=count
    ).map(lambda specs: Case(template, tuple(specs), default_dtype="float64"))


for _name, (_template, _count) in PROMOTION.items():
    add(f"promotion.{_name}", "promotion", lambda t=_template, c=_count: _promotion_cases(t, c))

# Float-to-integer conversion of in-range values (out of range, and negative to
# unsigned, is undefined behaviour in C++: PyTorch's answer is not a specification).
add(
    "to.int",
    "elementwise.unary",
    lambda: st.tuples(
        any_tensor(FLOAT_DTYPES, special=False),
        st.sampled_from(("int64", "int32", "int16", "int8", "bool")),
    ).map(lambda pair: Case(f"lambda a: a.to(torch.{pair[1]})", (pair[0],))),
    "exact",
)
