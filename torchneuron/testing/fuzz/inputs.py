"""Input tensors that stress semantics, described as data and rendered as Python source.

A ``TensorSpec`` says what tensor to build: its dtype, its logical shape, its values
(a flat list of Python numbers, or a seed for long rows) and the memory layout of the
view that reaches the op (contiguous, transposed, strided, offset into its storage or
expanded from size-1 dims). ``TensorSpec.source(device)`` is the one way a tensor is
built: the fuzzer evaluates that expression, and the reproduction prints the same
text, so what is reported is what ran.

The value pools put PyTorch's edge cases first among the "special" draws: NaN, ±inf,
-0.0, float32 denormals, int64 values beyond 2**53 and at the limits of every integer
type, uint8 values above 127 (signedness). Hypothesis shrinks toward the first element
of each pool, so a shrunk reproduction uses plain values wherever the plain ones fail
the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import strategies as st

FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
ALL_DTYPES = ("float32", *INT_DTYPES, "bool", "float64", "float16", "bfloat16")
LAYOUTS = ("contiguous", "transposed", "strided", "offset", "expanded")

# Names the rendered source may use besides ``torch``.
SOURCE_NAMES = {"nan": math.nan, "inf": math.inf}

_INT_LIMITS = {
    "uint8": (0, 255),
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_SPECIAL_INTS = {
    "uint8": [128, 255, 254, 127, 200],
    "int8": [127, -128, -127, 126],
    "int16": [32767, -32768, 255, 256],
    "int32": [2**31 - 1, -(2**31), 2**24 + 1, -(2**24) - 1],
    "int64": [2**53 + 1, -(2**53) - 1, 2**62 + 3, 2**63 - 1, -(2**63), 2**32 + 1, 2**31],
}
_SMALL_INTS = [0, 1, -1, 2, -2, 3, -3, 5, -7]
_PLAIN_FLOATS = [0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 2.0, -0.5, 1.5]
_SPECIAL_FLOATS = {
    "float32": [-0.0, math.nan, math.inf, -math.inf, 1e-40, -1e-45, 3e38, -1e30, 1e-38],
    "float64": [-0.0, math.nan, math.inf, -math.inf, 5e-324, -1e-310, 1e308, 2.0**53 + 2],
    "float16": [-0.0, math.nan, math.inf, -math.inf, 6e-8, -1e-5, 65504.0, -60000.0],
    "bfloat16": [-0.0, math.nan, math.inf, -math.inf, 1e-40, 3e38, -1e30],
}


def values(dtype: str, special: bool = True) -> st.SearchStrategy:
    """One element of ``dtype``: plain values first, then boundary and special ones."""
    if dtype == "bool":
        return st.booleans()
    if dtype in _INT_LIMITS:
        low, high = _INT_LIMITS[dtype]
        plain = st.sampled_from([v for v in _SMALL_INTS if low <= v <= high])
        if not special:
            return plain
        return st.one_of(plain, st.sampled_from(_SPECIAL_INTS[dtype]), st.integers(low, high))
    plain = st.sampled_from(_PLAIN_FLOATS)
    if not special:
        return st.one_of(plain, st.integers(-8, 8).map(lambda v: v / 4))
    moderate = st.floats(-10, 10, allow_nan=False, width=16).map(float)
    return st.one_of(plain, moderate, st.sampled_from(_SPECIAL_FLOATS[dtype]))


def python_scalars() -> st.SearchStrategy:
    """A Python number as a second operand: every sign, bool, int beyond 2**53, NaN, inf."""
    return st.sampled_from(
        [2, -3, 0, -1, 3, 1, -2.5, 0.5, -0.0, True, False, 2**53 + 1, math.nan, math.inf, 1e-40]
    )


def literal(value) -> str:
    """A Python number as source (``nan``/``inf`` are names the snippet defines)."""
    if isinstance(value, bool) or isinstance(value, int):
        return repr(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


@dataclass(frozen=True)
class TensorSpec:
    """How to build one input tensor; ``source`` renders it for a device."""

    dtype: str
    shape: tuple[int, ...]
    values: tuple = ()  # flat, row-major over the base tensor
    seed: int | None = None  # when set: a seeded construction instead of ``values``
    layout: str = "contiguous"
    base_shape: tuple[int, ...] = ()

    def source(self, device: str = "device") -> str:
        """A Python expression building the tensor on the device named by ``device``.

        ``device`` is an expression too (by default the variable ``device``); ``torch``
        and ``nan``/``inf`` must be in scope where the text is evaluated.
        """
        base = self._base_source(device)
        if self.layout == "transposed":
            return f"{base}.transpose(-1, -2)"
        if self.layout == "strided":
            return f"{base}[..., ::2]"
        if self.layout == "offset":
            return f"{base}[1:].view({_shape_text(self.shape)})"
        if self.layout == "expanded":
            return f"{base}.expand({_shape_text(self.shape)})"
        return base

    def _base_source(self, device: str) -> str:
        dtype = f"torch.{self.dtype}"
        if self.seed is not None:
            gen = f"generator=torch.Generator().manual_seed({self.seed})"
            shape = _shape_text(self.base_shape)
            if self.dtype in FLOAT_DTYPES:
                made = f"torch.randn({shape}, {gen}).to({dtype})"
            else:
                low, high = _INT_LIMITS.get(self.dtype, (0, 2))
                made = f"torch.randint({max(low, -100)}, {min(high, 100) + 1}, {shape}, {gen})"
                made += f".to({dtype})"
            return f"{made}.to({device})"
        items = ", ".join(literal(v) for v in self.values)
        if self.layout == "offset":
            return f"torch.tensor([{items}], dtype={dtype}, device={device})"
        if not self.base_shape:
            return f"torch.tensor({items}, dtype={dtype}, device={device})"
        flat = f"torch.tensor([{items}], dtype={dtype}, device={device})"
        if len(self.base_shape) == 1 and self.base_shape[0] == len(self.values):
            return flat
        return f"{flat}.reshape({_shape_text(self.base_shape)})"


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + "".join(f"{side}, " for side in shape).rstrip(" ") + ")"


def base_shape_of(shape: tuple[int, ...], layout: str, expand_mask: tuple[bool, ...] = ()) -> tuple:
    """The shape of the storage a view of ``layout`` with logical ``shape`` is taken from."""
    if layout == "transposed":
        return (*shape[:-2], shape[-1], shape[-2])
    if layout == "strided":
        return (*shape[:-1], 2 * shape[-1])
    if layout == "offset":
        return (math.prod(shape) + 1,)
    if layout == "expanded":
        return tuple(1 if flag else side for side, flag in zip(shape, expand_mask))
    return shape


@st.composite
def tensors(
    draw,
    dtype: str | st.SearchStrategy = "float32",
    shape: tuple | st.SearchStrategy | None = None,
    layouts: tuple[str, ...] = LAYOUTS,
    special: bool = True,
) -> TensorSpec:
    """A ``TensorSpec`` of ``dtype`` and ``shape`` (drawn when given as strategies)."""
    if isinstance(dtype, st.SearchStrategy):
        dtype = draw(dtype)
    if shape is None:
        shape = shapes()
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    shape = tuple(shape)
    usable = [layout for layout in layouts if _layout_fits(layout, shape)]
    layout = draw(st.sampled_from(usable)) if usable else "contiguous"
    mask: tuple[bool, ...] = ()
    if layout == "expanded":
        mask = tuple(draw(st.booleans()) if side != 1 else True for side in shape)
        if not any(flag and side != 1 for side, flag in zip(shape, mask)):
            layout = "contiguous"
    base = base_shape_of(shape, layout, mask)
    count = math.prod(base)
    element = values(dtype, special)
    flat = tuple(draw(st.lists(element, min_size=count, max_size=count)))
    return TensorSpec(dtype, shape, flat, None, layout, base)


def _layout_fits(layout: str, shape: tuple[int, ...]) -> bool:
    if layout == "contiguous":
        return True
    if not shape or 0 in shape:
        return False
    if layout == "transposed":
        return len(shape) >= 2
    if layout == "expanded":
        return any(side > 1 for side in shape)
    return True


def shapes(
    min_dims: int = 0, max_dims: int = 3, max_side: int = 4, empty: bool = True
) -> st.SearchStrategy:
    """Small shapes: 0-d, size-1 dims, and (when ``empty``) zero-size dims."""
    sides = [1, 2, 3, max_side] + ([0] if empty else [])
    return st.lists(st.sampled_from(sides), min_size=min_dims, max_size=max_dims).map(tuple)


@st.composite
def broadcast_shapes(draw, count: int = 2, max_dims: int = 3) -> list[tuple[int, ...]]:
    """``count`` shapes that broadcast together (dropped leading dims, size-1 dims)."""
    full = draw(shapes(max_dims=max_dims))
    result = []
    for _ in range(count):
        drop = draw(st.integers(0, len(full)))
        kept = full[drop:]
        ones = draw(st.lists(st.booleans(), min_size=len(kept), max_size=len(kept)))
        result.append(tuple(1 if one else side for side, one in zip(kept, ones)))
    return result


@st.composite
def long_rows(draw, dtype: str | None = None, rows: int = 2) -> TensorSpec:
    """A half or bfloat16 matrix with long rows (thousands of elements), seeded."""
    dtype = dtype or draw(st.sampled_from(["float16", "bfloat16"]))
    length = draw(st.sampled_from([1024, 4099, 8192]))
    seed = draw(st.integers(0, 1000))
    shape = (rows, length)
    return TensorSpec(dtype, shape, (), seed, "contiguous", shape)
