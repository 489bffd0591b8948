"""Sparse COO and CSR tensors on the neuron device (the SparsePrivateUse1 and
SparseCsrPrivateUse1 dispatch keys).

A sparse neuron tensor is PyTorch's own ``SparseTensorImpl`` (or
``SparseCsrTensorImpl``) whose index and value tensors are ordinary dense neuron
tensors, so every computation on it is made of dense neuron ops, compiled like any
other (``dispatch``). The kernels come in three kinds:

- **structural** ops (constructors, ``_indices``/``_values``/``crow_indices``...,
  ``_nnz``, ``sparse_resize_``, ``copy_`` between sparse tensors, ``clone``,
  ``zero_``): PyTorch's SparseCPU / SparseCsrCPU kernel serves unchanged. Each one
  listed here only reads or replaces the tensor's metadata and calls dispatcher ops
  on its members (never a raw data pointer), so run on a neuron tensor it calls
  neuron ops;
- **native** ops (``_NATIVE``, kernels in ``sparse_kernels``): dense gather/scatter formulations on
  the index lists, each exact (``sparse @ dense`` is the scatter-add of
  ``values[k] * dense[col[k]]`` into row ``row[k]``; ``coalesce`` is ``unique`` on the
  linearised indices plus an ``index_add`` of the values). Ops whose output size
  depends on the data (``unique``, ``nonzero``) take the dense host route, as they do
  for dense tensors;
- **every other op** with a sparse neuron operand runs its CPU kernel on CPU copies
  (the sparse CPU fallback: the boxed fallback of both keys, and a direct kernel for
  each op with a sparse CPU kernel, since a composite kernel would otherwise win). It
  is recorded like the dense fallback
  (``torchneuron.get_fallback_ops()``, one warning per op) and raises
  ``NeuronFallbackError`` under ``TORCHNEURON_NO_FALLBACK=1``. The dispatcher never
  raises ``NotImplementedError`` for these keys.

Dense neuron tensors reach the native kernels too: ``dense.to_sparse()`` and
``dense.to_sparse_csr()`` (PrivateUse1 kernels), and ``dense.add_(sparse)``,
``dense.sparse_mask(sparse)``, ``dense @ sparse`` (the sparse operand selects the
sparse key).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch
from torch._C import DispatchKey, DispatchKeySet

from torchneuron.device import sparse_fallback
from torchneuron.device.sparse_kernels import (
    _out,
    _unary,
    add,
    add_,
    addmm,
    cat,
    coalesce,
    dense_to_sparse,
    div,
    index_select,
    mm,
    mul,
    mul_,
    permute,
    pow_scalar,
    sparse_mask,
    sparse_sum,
    sub,
    sub_,
    sum_dim,
    to_dense,
    to_sparse_csr,
    unsqueeze,
)

aten = torch.ops.aten

_SPARSE_CPU = DispatchKeySet(DispatchKey.SparseCPU)
_SPARSE_CSR_CPU = DispatchKeySet(DispatchKey.SparseCsrCPU)

# SparseCPU kernels that touch only metadata and call dispatcher ops on the members.
_COO_STRUCTURAL = (
    aten._sparse_coo_tensor_with_dims.default,
    aten._sparse_coo_tensor_with_dims_and_tensors.default,
    aten._indices.default,
    aten._values.default,
    aten.indices.default,
    aten.values.default,
    aten._nnz.default,
    aten.sparse_dim.default,
    aten.dense_dim.default,
    aten._dimI.default,
    aten._dimV.default,
    aten.is_coalesced.default,
    aten._coalesced_.default,
    aten.sparse_resize_.default,
    aten.sparse_resize_and_clear_.default,
    aten.resize_as_sparse_.default,
    aten.copy_sparse_to_sparse_.default,
    aten.copy_.default,
    aten.clone.default,
    aten.zero_.default,
    aten.empty.memory_format,
    aten.empty_like.default,
)
# SparseCsrCPU kernels of the same kind (CSR tensors are built by the composite
# ``_sparse_compressed_tensor_unsafe``, which needs no kernel).
_CSR_STRUCTURAL = (
    aten.crow_indices.default,
    aten.col_indices.default,
    aten.ccol_indices.default,
    aten.row_indices.default,
    aten.values.default,
    aten._nnz.default,
    aten.sparse_dim.default,
    aten.dense_dim.default,
    aten.clone.default,
    aten.copy_.default,
    aten.resize_as_sparse_.default,
    aten.empty.memory_format,
    aten.empty_like.default,
)


def _structural(op: torch._ops.OpOverload, keys: DispatchKeySet) -> Callable:
    def kernel(*args, **kwargs):
        return op.redispatch(keys, *args, **kwargs)

    return kernel


_UNARY_OPS = (
    "abs", "neg", "sqrt", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh",
    "expm1", "log1p", "erf", "erfinv", "relu", "sign", "sgn", "floor", "ceil", "round",
    "trunc", "frac", "deg2rad", "rad2deg",
    # predicates, false at zero: bool values
    "isnan", "isinf", "isposinf", "isneginf", "signbit",
)  # fmt: skip
_UNARY = {getattr(aten, name).default: _unary(getattr(aten, name).default) for name in _UNARY_OPS}

# op -> kernel for the SparsePrivateUse1 key (their own docstrings say what is exact).
_NATIVE: dict = {
    aten._coalesce.default: coalesce,
    aten._to_dense.default: to_dense,
    aten._to_sparse.default: dense_to_sparse,
    aten._to_sparse.sparse_dim: dense_to_sparse,
    aten._to_sparse_csr.default: to_sparse_csr,
    aten.mm.default: mm,
    aten.addmm.default: addmm,
    aten.add.Tensor: add,
    aten.add_.Tensor: add_,
    aten.sub.Tensor: sub,
    aten.sub_.Tensor: sub_,
    aten.mul.Tensor: mul,
    aten.mul_.Tensor: mul_,
    aten.add.out: _out(add, aten.add.out),
    aten.sub.out: _out(sub, aten.sub.out),
    aten.mul.out: _out(mul, aten.mul.out),
    aten.div.Tensor: div,
    aten.sparse_mask.default: sparse_mask,
    aten.unsqueeze.default: unsqueeze,
    aten.permute.default: permute,
    aten.index_select.default: index_select,
    aten.pow.Tensor_Scalar: pow_scalar,
    aten.cat.default: cat,
    aten.sum.default: sparse_sum,
    aten.sum.dim_IntList: sum_dim,
    **_UNARY,
}
# The CSR kernels: layout changes, to_dense, the products with a dense matrix and the
# zero-preserving unary ops.
_NATIVE_CSR: dict = {
    aten._to_dense.default: to_dense,
    aten._to_sparse.default: dense_to_sparse,
    aten._to_sparse.sparse_dim: dense_to_sparse,
    aten.mm.default: mm,
    aten.addmm.default: addmm,
    aten.sum.default: sparse_sum,
    aten.mul.Tensor: mul,
    **_UNARY,
}
# Dense neuron tensors becoming sparse (the PrivateUse1 key).
_NATIVE_DENSE: dict = {
    aten._to_sparse.default: dense_to_sparse,
    aten._to_sparse.sparse_dim: dense_to_sparse,
    aten._to_sparse_csr.default: to_sparse_csr,
}

_install_lock = threading.Lock()
_libraries: list[torch.library.Library] = []


def native_ops() -> list[str]:
    """Names of the ops with a native kernel for sparse neuron tensors (docs, tests)."""
    return sorted({op.name() for table in (_NATIVE, _NATIVE_CSR) for op in table})


def install() -> None:
    """Register the sparse kernels and the sparse fallback for neuron (once)."""
    with _install_lock:
        if _libraries:
            return
        fallbacks = torch.library.Library("_", "IMPL")
        fallbacks.fallback(sparse_fallback.fallback, "SparsePrivateUse1")
        fallbacks.fallback(sparse_fallback.fallback, "SparseCsrPrivateUse1")
        kernels = torch.library.Library("aten", "IMPL")
        for op in _COO_STRUCTURAL:
            kernels.impl(op, _structural(op, _SPARSE_CPU), "SparsePrivateUse1")
        for op in _CSR_STRUCTURAL:
            kernels.impl(op, _structural(op, _SPARSE_CSR_CPU), "SparseCsrPrivateUse1")
        for op, kernel in _NATIVE.items():
            kernels.impl(op, kernel, "SparsePrivateUse1")
        for op, kernel in _NATIVE_CSR.items():
            kernels.impl(op, kernel, "SparseCsrPrivateUse1")
        for op, kernel in _NATIVE_DENSE.items():
            kernels.impl(op, kernel, "PrivateUse1")
        # An op with a composite kernel would run it rather than the fallback (and fail on
        # a sparse layout): every op PyTorch's sparse CPU kernels cover gets the fallback
        # as a direct kernel.
        for key, cpu_key in (
            ("SparsePrivateUse1", "SparseCPU"),
            ("SparseCsrPrivateUse1", "SparseCsrCPU"),
        ):
            for op in sparse_fallback.ops_with_kernel(cpu_key, without=key):
                kernels.impl(op, sparse_fallback.direct_fallback(op), key)
        _libraries.extend([fallbacks, kernels])
