"""Indexing: negative, boundary and out-of-range indices (PyTorch raises: so must we), duplicates."""

from __future__ import annotations

from hypothesis import strategies as st

from ..cases import Case
from ..inputs import ALL_DTYPES, TensorSpec, literal, python_scalars, shapes, tensors
from .common import add, any_tensor, dims, lambda_source

FAMILY = "indexing"
DATA_DTYPES = ("float32", "int64", "bool", "uint8", "float16", "int32")


def _index_values(size: int, count: int) -> st.SearchStrategy:
    """``count`` indices into a dim of ``size``: mostly in range, some negative or past the end."""
    in_range = st.integers(-size, size - 1) if size else st.just(0)
    outside = st.sampled_from([size, -size - 1, size + 3])
    return st.lists(st.one_of(in_range, outside), min_size=count, max_size=count)


@st.composite
def index_tensor(draw, size: int, shape: tuple[int, ...] | None = None, dtype: str = "int64"):
    shape = shape if shape is not None else (draw(st.integers(0, 4)),)
    count = 1
    for side in shape:
        count *= side
    items = tuple(draw(_index_values(size, count)))
    return TensorSpec(dtype, tuple(shape), items, None, "contiguous", tuple(shape))


@st.composite
def _data(draw, min_dims=1, dtypes=DATA_DTYPES):
    return draw(any_tensor(dtypes, shapes(min_dims=min_dims, max_dims=3)))


@st.composite
def _index_cases(draw):
    data = draw(_data())
    index = draw(index_tensor(data.shape[0], dtype=draw(st.sampled_from(["int64", "int32"]))))
    return Case("lambda a, b: a[b]", (data, index))


@st.composite
def _index_two_cases(draw):
    data = draw(_data(min_dims=2))
    first = draw(index_tensor(data.shape[0], (draw(st.integers(1, 3)), 1)))
    second = draw(index_tensor(data.shape[1], (draw(st.integers(1, 3)),)))
    return Case("lambda a, b, c: a[b, c]", (data, first, second))


@st.composite
def _mask_cases(draw):
    data = draw(_data())
    mask = draw(tensors("bool", data.shape, layouts=("contiguous",)))
    return Case("lambda a, b: a[b]", (data, mask))


@st.composite
def _index_put_cases(draw, inplace: bool):
    data = draw(_data())
    index = draw(index_tensor(data.shape[0]))
    value_shape = draw(st.sampled_from([(), (index.shape[0], *data.shape[1:])]))
    value = draw(tensors(st.sampled_from([data.dtype, "float32", "int64"]), value_shape))
    accumulate = draw(st.booleans())
    if inplace:
        source = (
            f"def fn(a, b, c):\n    a.index_put_((b,), c, accumulate={accumulate})\n    return a"
        )
        return Case(source, (data, index, value), aliases=None)
    return Case(
        f"lambda a, b, c: a.index_put((b,), c, accumulate={accumulate})", (data, index, value)
    )


@st.composite
def _setitem_cases(draw):
    data = draw(_data())
    position = draw(st.sampled_from([0, -1, data.shape[0], -data.shape[0] - 1, 1]))
    value = draw(python_scalars())
    body = f"def fn(a):\n    a[{position}] = {literal(value)}\n    return a"
    return Case(body, (data,))


@st.composite
def _gather_cases(draw, template: str, with_src: bool):
    data = draw(_data())
    dim = draw(st.integers(-len(data.shape), len(data.shape) - 1))
    axis = dim % len(data.shape)
    shape = tuple(
        draw(st.integers(0, side)) if i != axis else draw(st.integers(0, 4))
        for i, side in enumerate(data.shape)
    )
    index = draw(index_tensor(data.shape[axis], shape))
    specs = [data, index]
    if with_src:
        specs.append(draw(tensors(data.dtype, shape)))
    body = template.format(
        dim=dim,
        reduce=draw(st.sampled_from(["sum", "prod", "amax", "amin"])),
        include=draw(st.booleans()),
    )
    names = "a, b, c" if with_src else "a, b"
    return Case(f"lambda {names}: {body}", tuple(specs))


@st.composite
def _select_cases(draw, template: str):
    data = draw(_data())
    dim = draw(dims(len(data.shape), none=False))
    size = data.shape[dim] if -len(data.shape) <= dim < len(data.shape) else 1
    index = draw(index_tensor(size))
    return Case(f"lambda a, b: {template.format(dim=dim)}", (data, index))


@st.composite
def _index_add_cases(draw):
    data = draw(_data(dtypes=("float32", "int64", "float64")))
    index = draw(index_tensor(data.shape[0]))
    source = draw(tensors(data.dtype, (index.shape[0], *data.shape[1:])))
    alpha = draw(st.sampled_from([1, -2]))
    return Case(f"lambda a, b, c: a.index_add(0, b, c, alpha={alpha})", (data, index, source))


@st.composite
def _take_cases(draw):
    data = draw(any_tensor(DATA_DTYPES, shapes(max_dims=2)))
    count = 1
    for side in data.shape:
        count *= side
    return Case("lambda a, b: torch.take(a, b)", (data, draw(index_tensor(count))))


@st.composite
def _masked_fill_cases(draw):
    data = draw(any_tensor(ALL_DTYPES, shapes(max_dims=3)))
    mask = draw(tensors("bool", data.shape[draw(st.integers(0, len(data.shape))) :]))
    value = draw(python_scalars())
    return Case(lambda_source("a.masked_fill(b, {v})", ["a", "b"], {"v": value}), (data, mask))


@st.composite
def _narrow_cases(draw):
    data = draw(_data())
    dim = draw(dims(len(data.shape), none=False))
    start = draw(st.sampled_from([0, -1, 1, -3, 5]))
    length = draw(st.sampled_from([0, 1, 2, 4]))
    return Case(f"lambda a: a.narrow({dim}, {start}, {length})", (data,))


add("index", FAMILY, lambda: _index_cases(), "exact")
add("index.two", FAMILY, lambda: _index_two_cases(), "exact")
add("index.mask", FAMILY, lambda: _mask_cases(), "exact")
add("index_put", FAMILY, lambda: _index_put_cases(False))
add("index_put_", FAMILY, lambda: _index_put_cases(True))
add("setitem", FAMILY, lambda: _setitem_cases(), "exact")
add("gather", FAMILY, lambda: _gather_cases("torch.gather(a, {dim}, b)", False), "exact")
add("scatter.value", FAMILY, lambda: _gather_cases("a.scatter({dim}, b, 2)", False), "exact")
add("scatter_add", FAMILY, lambda: _gather_cases("a.scatter_add({dim}, b, c)", True))
add(
    "scatter_reduce",
    FAMILY,
    lambda: _gather_cases(
        "a.scatter_reduce({dim}, b, c, {reduce!r}, include_self={include})", True
    ),
)
add("index_select", FAMILY, lambda: _select_cases("torch.index_select(a, {dim}, b)"), "exact")
add("index_add", FAMILY, lambda: _index_add_cases())
add("take", FAMILY, lambda: _take_cases(), "exact")
add("masked_fill", FAMILY, lambda: _masked_fill_cases(), "exact")
add("narrow", FAMILY, lambda: _narrow_cases(), "exact")
add(
    "select",
    FAMILY,
    lambda: _data().flatmap(
        lambda data: st.sampled_from([0, -1, data.shape[0], -data.shape[0] - 1]).map(
            lambda i: Case(f"lambda a: a.select(0, {i})", (data,))
        )
    ),
    "exact",
)
