"""Elementwise ops: unary, arithmetic, comparison, bitwise, division modes, min/max/clamp/where."""

from __future__ import annotations

from hypothesis import strategies as st

from ..cases import Case
from ..inputs import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, broadcast_shapes, python_scalars, tensors
from .common import add, binary, lambda_source, unary

INTEGRAL = (*INT_DTYPES, "bool")

EXACT_UNARY = {
    "neg": "-{a}",
    "abs": "torch.abs({a})",
    "sign": "torch.sign({a})",
    "sgn": "torch.sgn({a})",
    "relu": "torch.relu({a})",
    "floor": "torch.floor({a})",
    "ceil": "torch.ceil({a})",
    "round": "torch.round({a})",
    "round.decimals": "torch.round({a}, decimals=1)",
    "trunc": "torch.trunc({a})",
    "isnan": "torch.isnan({a})",
    "isinf": "torch.isinf({a})",
    "isfinite": "torch.isfinite({a})",
    "signbit": "torch.signbit({a})",
    "nan_to_num": "torch.nan_to_num({a})",
    "logical_not": "torch.logical_not({a})",
    "bitwise_not": "~{a}",
    "hardtanh": "torch.nn.functional.hardtanh({a})",
    "relu6": "torch.nn.functional.relu6({a})",
    "clone": "{a}.clone()",
    "positive": "+{a}",
}
APPROX_UNARY = {
    "exp": "torch.exp({a})",
    "log": "torch.log({a})",
    "log1p": "torch.log1p({a})",
    "expm1": "torch.expm1({a})",
    "sqrt": "torch.sqrt({a})",
    "rsqrt": "torch.rsqrt({a})",
    "reciprocal": "torch.reciprocal({a})",
    "sigmoid": "torch.sigmoid({a})",
    "tanh": "torch.tanh({a})",
    "sin": "torch.sin({a})",
    "erf": "torch.erf({a})",
    "frac": "torch.frac({a})",
    "square": "torch.square({a})",
    "gelu": "torch.nn.functional.gelu({a})",
    "gelu.tanh": "torch.nn.functional.gelu({a}, approximate='tanh')",
    "silu": "torch.nn.functional.silu({a})",
    "leaky_relu": "torch.nn.functional.leaky_relu({a}, 0.1)",
    "elu": "torch.nn.functional.elu({a})",
    "softplus": "torch.nn.functional.softplus({a})",
    "mish": "torch.nn.functional.mish({a})",
    "hardswish": "torch.nn.functional.hardswish({a})",
    "hardsigmoid": "torch.nn.functional.hardsigmoid({a})",
    "logsigmoid": "torch.nn.functional.logsigmoid({a})",
}
for _name, _template in EXACT_UNARY.items():
    unary(_name, _template, compare="exact")
for _name, _template in APPROX_UNARY.items():
    unary(_name, _template)

# One correctly rounded IEEE operation; operator forms take Python scalars on either side.
for _name, _template in {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}"}.items():
    binary(_name, _template, compare="ieee", scalar_a=True)
binary("div", "{a} / {b}", compare="ieee", scalar_a=True)
binary("add.alpha", "torch.add({a}, {b}, alpha=2)", compare="ieee")
binary("div.trunc", "torch.div({a}, {b}, rounding_mode='trunc')", scalar_a=False)
binary("div.floor", "torch.div({a}, {b}, rounding_mode='floor')")
binary("remainder", "torch.remainder({a}, {b})")
binary("remainder.op", "{a} % {b}", scalar_a=True)
binary("fmod", "torch.fmod({a}, {b})")
binary("floor_divide", "{a} // {b}", scalar_a=True)
binary("pow", "torch.pow({a}, {b})")
binary("atan2", "torch.atan2({a}, {b})", dtypes=FLOAT_DTYPES + INT_DTYPES, scalar_b=False)
binary("copysign", "torch.copysign({a}, {b})", compare="exact")
for _name, _operator in {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
}.items():
    binary(_name, f"{{a}} {_operator} {{b}}", family="elementwise.comparison", compare="exact")
for _name, _operator in {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}.items():
    binary(
        _name,
        f"{{a}} {_operator} {{b}}",
        family="elementwise.bitwise",
        dtypes=INTEGRAL,
        compare="exact",
    )
binary("bitwise_left_shift", "{a} << {b}", family="elementwise.bitwise", dtypes=INT_DTYPES)
binary("bitwise_right_shift", "{a} >> {b}", family="elementwise.bitwise", dtypes=INT_DTYPES)
binary("logical_and", "torch.logical_and({a}, {b})", compare="exact", scalar_b=False)
for _name in ("maximum", "minimum", "fmax", "fmin"):
    binary(
        _name,
        f"torch.{_name}({{a}}, {{b}})",
        family="elementwise.minmax",
        compare="exact",
        scalar_b=False,
    )
binary(
    "max.binary",
    "torch.max({a}, {b})",
    family="elementwise.minmax",
    compare="exact",
    scalar_b=False,
)


@st.composite
def _clamp_cases(draw):
    spec = draw(tensors(st.sampled_from(ALL_DTYPES)))
    low = draw(st.one_of(st.none(), python_scalars()))
    high = draw(st.one_of(st.none(), python_scalars()))
    return Case(
        lambda_source("torch.clamp({a}, min={lo}, max={hi})", ["a"], {"lo": low, "hi": high})
        if low is not None and high is not None
        else lambda_source(
            "torch.clamp({a}, min={lo})", ["a"], {"lo": low if low is not None else 0}
        ),
        (spec,),
    )


@st.composite
def _clamp_tensor_cases(draw):
    shapes = draw(broadcast_shapes(3))
    specs = tuple(draw(tensors(st.sampled_from(FLOAT_DTYPES[:2] + ("int64",)), s)) for s in shapes)
    return Case("lambda a, b, c: torch.clamp(a, min=b, max=c)", specs)


@st.composite
def _where_cases(draw):
    shapes = draw(broadcast_shapes(3))
    condition = draw(tensors("bool", shapes[0]))
    kind = draw(st.sampled_from(["tensors", "scalar"]))
    a = draw(tensors(st.sampled_from(ALL_DTYPES), shapes[1]))
    if kind == "scalar":
        value = draw(python_scalars())
        return Case(
            lambda_source("torch.where({c}, {a}, {b})", ["c", "a"], {"b": value}), (condition, a)
        )
    b = draw(tensors(st.sampled_from(ALL_DTYPES), shapes[2]))
    return Case("lambda c, a, b: torch.where(c, a, b)", (condition, a, b))


add("clamp", "elementwise.minmax", lambda: _clamp_cases(), "exact")
add("clamp.tensor", "elementwise.minmax", lambda: _clamp_tensor_cases(), "exact")
add("where", "elementwise.minmax", lambda: _where_cases(), "exact")
