"""Sparse sample inputs of OpInfo entries: the layouts conformance runs, and their samples.

PyTorch marks the entries that accept sparse inputs (``OpInfo.supports_sparse`` for
COO, ``supports_sparse_csr`` for CSR). Some of them have sparse sample generators
(``sample_inputs_sparse_coo_func``...: ``mul``, ``sum``, ``masked.*``, ``zeros_like``);
the unary ufuncs have none, and PyTorch's own sparse tests
(``test_sparse.py::TestSparseUnaryUfuncs``, ``test_sparse_csr.py``) convert their dense
samples with ``to_sparse()`` (CSR: ``to_sparse_csr()`` of the 2-D ones). This module
does the same.

A sparse variant is named ``<layout>.<dtype>`` (``sparse_coo.float32``): the
expectations file's dtype column holds it.
"""

from __future__ import annotations

import unittest
from collections.abc import Iterator

import torch

LAYOUTS = {"sparse_coo": torch.sparse_coo, "sparse_csr": torch.sparse_csr}
# The value dtypes sparse samples are made in.
SPARSE_DTYPES = ("float32",)
VARIANTS = tuple(f"{layout}.{dtype}" for layout in LAYOUTS for dtype in SPARSE_DTYPES)


class NoSparseSamples(Exception):
    """The entry has no sparse sample in this layout (the message says why)."""


def split_variant(name: str) -> tuple[torch.layout, str]:
    """``"sparse_csr.float32"`` -> (``torch.sparse_csr``, ``"float32"``); a dense
    dtype name -> (``torch.strided``, the name)."""
    layout, dot, dtype = name.partition(".")
    if dot and layout in LAYOUTS:
        return LAYOUTS[layout], dtype
    return torch.strided, name


def supports(op, layout: torch.layout) -> bool:
    return bool(op.supports_sparse_layout(layout))


def sparse_samples(op, layout: torch.layout, dtype: torch.dtype) -> Iterator:
    """The entry's sparse samples in ``layout``, made on the CPU."""
    try:
        samples = iter(op.sample_inputs_sparse(layout, "cpu", dtype))
        first = next(samples, None)
    except unittest.SkipTest as skipped:
        raise NoSparseSamples(f"PyTorch's sparse sample generator gives none ({skipped})") from None
    except NotImplementedError:
        # no sparse sample generator: PyTorch's sparse tests convert the dense samples
        yield from _converted_dense_samples(op, layout, dtype)
        return
    if first is None:
        raise NoSparseSamples("PyTorch's sparse sample generator gives none")
    yield first
    yield from samples


def _converted_dense_samples(op, layout: torch.layout, dtype: torch.dtype) -> Iterator:
    from torch.testing._internal.opinfo.core import SampleInput

    found = False
    for sample in op.sample_inputs("cpu", dtype, requires_grad=False):
        value = sample.input
        if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
            continue
        if layout == torch.sparse_csr:
            if value.dim() != 2:
                continue
            converted = value.to_sparse_csr()
        else:
            converted = value.to_sparse()
        found = True
        yield SampleInput(converted, args=sample.args, kwargs=sample.kwargs)
    if not found:
        raise NoSparseSamples(f"no dense sample converts to {layout}")
