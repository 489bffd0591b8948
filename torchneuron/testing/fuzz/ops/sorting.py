"""Sorting and searching: NaN order, stability, unsigned keys, k out of range, sorted boundaries."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from ..cases import Case
from ..inputs import ALL_DTYPES, TensorSpec, shapes, tensors, values
from .common import add, dims

FAMILY = "sort"
SORTABLE = tuple(d for d in ALL_DTYPES if d != "bool") + ("bool",)


@st.composite
def _sort_cases(draw, template: str):
    spec = draw(tensors(st.sampled_from(SORTABLE), shapes(max_dims=2)))
    dim = draw(dims(len(spec.shape), none=False))
    descending = draw(st.booleans())
    body = template.format(dim=dim, descending=descending)
    return Case(f"lambda a: {body}", (spec,))


@st.composite
def _topk_cases(draw, template: str):
    spec = draw(tensors(st.sampled_from(SORTABLE), shapes(min_dims=1, max_dims=2)))
    dim = draw(dims(len(spec.shape), none=False))
    k = draw(st.sampled_from([1, 2, 0, 5]))
    largest = draw(st.booleans())
    return Case(f"lambda a: {template.format(k=k, dim=dim, largest=largest)}", (spec,))


def _nan_last(value):
    return (1, 0) if isinstance(value, float) and math.isnan(value) else (0, value)


@st.composite
def _sorted_boundaries(draw):
    dtype = draw(st.sampled_from(["float32", "int64", "float64", "int32", "uint8"]))
    count = draw(st.integers(0, 6))
    items = sorted(draw(st.lists(values(dtype), min_size=count, max_size=count)), key=_nan_last)
    return TensorSpec(dtype, (count,), tuple(items), None, "contiguous", (count,)), dtype


@st.composite
def _search_cases(draw, template: str):
    boundaries, dtype = draw(_sorted_boundaries())
    probe_dtype = draw(st.sampled_from([dtype, "float32", "int64"]))
    probes = draw(tensors(probe_dtype, shapes(max_dims=2)))
    right = draw(st.booleans())
    return Case(f"lambda a, b: {template.format(right=right)}", (boundaries, probes))


@st.composite
def _isin_cases(draw):
    a = draw(tensors(st.sampled_from(SORTABLE), shapes(max_dims=2)))
    b = draw(tensors(st.sampled_from([a.dtype, "float32", "int64"]), shapes(max_dims=1)))
    invert = draw(st.booleans())
    return Case(f"lambda a, b: torch.isin(a, b, invert={invert})", (a, b))


def _sort_op(name, template, compare="exact"):
    add(name, FAMILY, lambda: _sort_cases(template), compare)


_sort_op("sort", "tuple(torch.sort(a, dim={dim}, descending={descending}, stable=True))")
_sort_op("sort.values", "torch.sort(a, dim={dim}, descending={descending}).values")
_sort_op("argsort", "torch.argsort(a, dim={dim}, descending={descending}, stable=True)")
_sort_op("msort", "torch.msort(a)")
add(
    "topk",
    FAMILY,
    lambda: _topk_cases("torch.topk(a, {k}, dim={dim}, largest={largest}).values"),
    "exact",
)
add("kthvalue", FAMILY, lambda: _topk_cases("torch.kthvalue(a, {k}, dim={dim}).values"), "exact")
add(
    "searchsorted",
    FAMILY,
    lambda: _search_cases("torch.searchsorted(a, b, right={right})"),
    "exact",
)
add("bucketize", FAMILY, lambda: _search_cases("torch.bucketize(b, a, right={right})"), "exact")
add("isin", FAMILY, lambda: _isin_cases(), "exact")
add(
    "unique",
    FAMILY,
    lambda: tensors(st.sampled_from(SORTABLE), shapes(max_dims=2)).map(
        lambda spec: Case(
            "lambda a: tuple(torch.unique(a, sorted=True, return_counts=True))", (spec,)
        )
    ),
    "exact",
)
add(
    "nonzero",
    FAMILY,
    lambda: tensors(st.sampled_from(ALL_DTYPES), shapes(max_dims=2)).map(
        lambda spec: Case("lambda a: torch.nonzero(a)", (spec,))
    ),
    "exact",
)
