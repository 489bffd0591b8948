"""The native kernels of sparse neuron tensors: exact dense gather/scatter formulations
on the index lists (see ``torchneuron.device.sparse`` for how they are registered).

Each kernel's docstring says what it computes; a case a kernel cannot do exactly goes
to the counted CPU fallback (``sparse_fallback.run_on_cpu``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchneuron.device.sparse_fallback import run_on_cpu as _run_on_cpu

aten = torch.ops.aten


def _is_sparse(value) -> bool:
    return isinstance(value, torch.Tensor) and value.layout == torch.sparse_coo


def _is_csr(value) -> bool:
    return isinstance(value, torch.Tensor) and value.layout == torch.sparse_csr


def _is_dense(value) -> bool:
    return isinstance(value, torch.Tensor) and value.layout == torch.strided


def _is_scalar(value) -> bool:
    """A Python number (a wrapped-number operand arrives as one) or a 0-d dense tensor."""
    if isinstance(value, (bool, int, float)):
        return True
    return _is_dense(value) and value.dim() == 0


def _coo(
    indices: torch.Tensor, values: torch.Tensor, size, coalesced: bool = False
) -> torch.Tensor:
    """A COO tensor over ``indices`` and ``values`` (no copy, no checks)."""
    return aten._sparse_coo_tensor_with_dims_and_tensors(
        indices.shape[0],
        values.dim() - 1,
        list(size),
        indices,
        values,
        dtype=values.dtype,
        layout=torch.sparse_coo,
        device=values.device,
        is_coalesced=coalesced,
    )


def _csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size) -> torch.Tensor:
    return aten._sparse_compressed_tensor_unsafe(
        crow, col, values, list(size), dtype=values.dtype, layout=torch.sparse_csr,
        device=values.device,
    )  # fmt: skip


def _strides(size) -> list[int]:
    """Row-major strides of a shape (the linearisation of a COO index)."""
    strides, step = [], 1
    for extent in reversed(list(size)):
        strides.append(step)
        step *= extent
    return strides[::-1]


def _linear(indices: torch.Tensor, size) -> torch.Tensor:
    """``indices`` (sparse_dim x nnz) as one int64 position per entry, row-major."""
    linear = torch.zeros(indices.shape[1], dtype=torch.int64, device=indices.device)
    for dim, stride in enumerate(_strides(size)):
        linear = linear + indices[dim] * stride
    return linear


def _unlinear(linear: torch.Tensor, size) -> torch.Tensor:
    rows = []
    for extent, stride in zip(size, _strides(size)):
        rows.append(torch.remainder(torch.div(linear, stride, rounding_mode="floor"), extent))
    return torch.stack(rows) if rows else linear.new_zeros((0, linear.shape[0]))


def _index_tuple(indices: torch.Tensor) -> tuple:
    return tuple(indices[dim] for dim in range(indices.shape[0]))


# ---------------------------------------------------------------------------
# COO
# ---------------------------------------------------------------------------


def coalesce(self: torch.Tensor) -> torch.Tensor:
    """``_coalesce``: sorted unique indices, duplicates' values summed."""
    sparse_dim = self.sparse_dim()
    indices, values = self._indices(), self._values()
    if sparse_dim == 0 or values.dtype == torch.bool:
        return _run_on_cpu(aten._coalesce.default, (self,), {})
    size = self.shape[:sparse_dim]
    if indices.shape[1] == 0:
        return _coo(indices.clone(), values.clone(), self.shape, coalesced=True)
    unique, inverse = torch.unique(_linear(indices, size), sorted=True, return_inverse=True)
    summed = values.new_zeros((unique.shape[0], *values.shape[1:]))
    summed.index_add_(0, inverse, values)
    return _coo(_unlinear(unique, size), summed, self.shape, coalesced=True)


def to_dense(self: torch.Tensor, dtype=None, masked_grad=None) -> torch.Tensor:
    """``_to_dense``: the values scatter-added into zeros at their indices."""
    if not _has_index_lists(self):
        return _run_on_cpu(aten._to_dense.default, (self,), {"dtype": dtype})
    if _is_csr(self):
        self = csr_to_coo(self)
    values = self._values()
    dense = torch.zeros(self.shape, dtype=dtype or values.dtype, device=self.device)
    if values.dtype != dense.dtype:
        values = values.to(dense.dtype)
    return dense.index_put_(_index_tuple(self._indices()), values, accumulate=True)


def _has_index_lists(self: torch.Tensor) -> bool:
    """A COO tensor with a sparse dim, or an unbatched CSR tensor (one crow list)."""
    if _is_csr(self):
        return self.crow_indices().dim() == 1
    return self.sparse_dim() > 0


def dense_to_sparse(self: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """``_to_sparse`` of a dense tensor (or of a CSR tensor): the nonzero entries, coalesced."""
    layout, sparse_dim = _to_sparse_arguments(self, args, kwargs)
    if layout not in (None, torch.sparse_coo):
        if layout is torch.sparse_csr:
            return to_sparse_csr(self)
        return _to_sparse_on_cpu(self, args, kwargs)
    if _is_csr(self) and _has_index_lists(self):
        return csr_to_coo(self)
    sparse_dim = self.dim() if sparse_dim is None else sparse_dim
    if _is_csr(self) or sparse_dim == 0:
        return _to_sparse_on_cpu(self, args, kwargs)
    present = self != 0
    if sparse_dim < self.dim():
        present = present.flatten(sparse_dim).any(dim=sparse_dim)
    indices = torch.nonzero(present).t().contiguous()
    values = self[_index_tuple(indices)]
    return _coo(indices, values.contiguous(), self.shape, coalesced=True)


def _to_sparse_on_cpu(self, args, kwargs):
    if args and isinstance(args[0], int):
        return _run_on_cpu(aten._to_sparse.sparse_dim, (self, *args), {})
    return _run_on_cpu(aten._to_sparse.default, (self, *args), kwargs)


def _to_sparse_arguments(self, args, kwargs):
    if args and isinstance(args[0], int):  # _to_sparse.sparse_dim
        return torch.sparse_coo, args[0]
    layout = kwargs.get("layout", args[0] if args else None)
    dense_dim = kwargs.get("dense_dim", args[2] if len(args) > 2 else None)
    sparse_dim = None if dense_dim is None else self.dim() - dense_dim
    return layout, sparse_dim


def csr_to_coo(self: torch.Tensor) -> torch.Tensor:
    """The COO form of a 2-D CSR tensor: row of entry k = #(crow[1:] <= k)."""
    crow, col = self.crow_indices(), self.col_indices()
    positions = torch.arange(col.shape[0], dtype=crow.dtype, device=crow.device)
    rows = torch.searchsorted(crow, positions, right=True) - 1
    indices = torch.stack([rows, col]).to(torch.int64)
    return _coo(indices, self.values(), self.shape, coalesced=True)


def to_sparse_csr(self: torch.Tensor, dense_dim=None) -> torch.Tensor:
    """``_to_sparse_csr`` of a dense or COO 2-D tensor: crow[i] = #(row < i)."""
    if self.dim() != 2 or dense_dim:
        return _run_on_cpu(aten._to_sparse_csr.default, (self,), {"dense_dim": dense_dim})
    coo = dense_to_sparse(self) if _is_dense(self) else self.coalesce()
    rows, col = coo._indices()[0], coo._indices()[1]
    boundaries = torch.arange(self.shape[0] + 1, dtype=rows.dtype, device=rows.device)
    crow = torch.searchsorted(rows, boundaries)
    return _csr(crow, col.contiguous(), coo._values(), self.shape)


def _row_col_values(sparse: torch.Tensor):
    coo = csr_to_coo(sparse) if _is_csr(sparse) else sparse
    indices = coo._indices()
    return indices[0], indices[1], coo._values()


def _sparse_times_dense(sparse: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
    """``sparse @ dense``: out[row[k]] += values[k] * dense[col[k]]."""
    rows, cols, values = _row_col_values(sparse)
    products = dense.index_select(0, cols) * values.unsqueeze(1)
    out = dense.new_zeros((sparse.shape[0], dense.shape[1]))
    return out.index_add_(0, rows, products)


def _dense_times_sparse(dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
    """``dense @ sparse``: out[:, col[k]] += dense[:, row[k]] * values[k]."""
    rows, cols, values = _row_col_values(sparse)
    products = dense.index_select(1, rows) * values.unsqueeze(0)
    out = dense.new_zeros((dense.shape[0], sparse.shape[1]))
    return out.index_add_(1, cols, products)


def _matmul_native(left, right) -> bool:
    def fits(value):
        if _is_csr(value):
            return value.values().dim() == 1
        return value.dim() == 2 and (_is_dense(value) or value._values().dim() == 1)

    return (
        fits(left)
        and fits(right)
        and (_is_dense(left) != _is_dense(right))
        and left.dtype == right.dtype
        and left.dtype.is_floating_point
    )


def mm(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    if not _matmul_native(self, mat2):
        return _run_on_cpu(aten.mm.default, (self, mat2), {})
    if _is_dense(mat2):
        return _sparse_times_dense(self, mat2)
    return _dense_times_sparse(self, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> torch.Tensor:
    if not _is_dense(input) or not _matmul_native(mat1, mat2):
        return _run_on_cpu(aten.addmm.default, (input, mat1, mat2), {"beta": beta, "alpha": alpha})
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # beta = 0 ignores input (NaN included), as PyTorch's addmm does
        return product
    return product + (input if beta == 1 else input * beta)


def _scaled(sparse: torch.Tensor, factor) -> torch.Tensor:
    """``sparse`` with values multiplied by ``factor`` (same indices, same coalesced flag)."""
    return _coo(sparse._indices(), sparse._values() * factor, sparse.shape, sparse.is_coalesced())


def add(self, other, *, alpha=1) -> torch.Tensor:
    """``add.Tensor``: sparse + sparse (coalesced), dense + sparse and sparse + dense (dense)."""
    if not _add_native(self, other):
        return _run_on_cpu(aten.add.Tensor, (self, other), {"alpha": alpha})
    if _is_dense(self):
        return self.clone().index_put_(
            _index_tuple(other._indices()), _values_times(other, alpha), accumulate=True
        )
    if _is_dense(other):
        return (other * alpha).index_put_(
            _index_tuple(self._indices()), self._values(), accumulate=True
        )
    indices = torch.cat([self._indices(), other._indices()], dim=1)
    values = torch.cat([self._values(), _values_times(other, alpha)])
    return coalesce(_coo(indices, values, self.shape))


def _values_times(sparse, alpha):
    values = sparse._values()
    return values if alpha == 1 else values * alpha


def _add_native(self, other) -> bool:
    if not isinstance(other, torch.Tensor) or self.shape != other.shape:
        return False
    if self.dtype != other.dtype or _is_csr(self) or _is_csr(other):
        return False
    if _is_sparse(self) and _is_sparse(other):
        return self.sparse_dim() == other.sparse_dim()
    return _is_sparse(self) or _is_sparse(other)


def add_(self, other, *, alpha=1) -> torch.Tensor:
    if not _add_native(self, other) or (_is_dense(other) and not _is_dense(self)):
        return _run_on_cpu(aten.add_.Tensor, (self, other), {"alpha": alpha})
    if _is_dense(self):
        return self.index_put_(
            _index_tuple(other._indices()), _values_times(other, alpha), accumulate=True
        )
    return self.copy_(add(self, other, alpha=alpha))


def sub(self, other, *, alpha=1) -> torch.Tensor:
    return add(self, other, alpha=-alpha)


def sub_(self, other, *, alpha=1) -> torch.Tensor:
    return add_(self, other, alpha=-alpha)


def mul(self, other) -> torch.Tensor:
    """``mul.Tensor``: sparse * scalar, sparse * dense (same shape), sparse * sparse."""
    if _is_csr(self) and _is_scalar(other):
        values = self.values() * other
        return _csr(self.crow_indices(), self.col_indices(), values, self.shape)
    if _is_sparse(self) and _is_scalar(other):
        return _scaled(self, other)
    if _is_sparse(other) and _is_scalar(self):
        return _scaled(other, self)
    if isinstance(other, torch.Tensor) and self.shape == other.shape and self.dtype == other.dtype:
        if _is_sparse(self) and _is_dense(other) and self._values().dim() == 1:
            return _mul_dense(self, other)
        if _is_sparse(other) and _is_dense(self) and other._values().dim() == 1:
            return _mul_dense(other, self)
        if _is_sparse(self) and _is_sparse(other) and self.sparse_dim() == other.sparse_dim():
            return _mul_sparse(self, other)
    return _run_on_cpu(aten.mul.Tensor, (self, other), {})


def _mul_dense(sparse, dense):
    """sparse * dense: the values times the dense entries they sit on (a gather)."""
    gathered = dense[_index_tuple(sparse._indices())]
    return _coo(sparse._indices(), sparse._values() * gathered, sparse.shape, sparse.is_coalesced())


def _mul_sparse(self, other):
    """sparse * sparse: the entries present in both (coalesced, matched by searchsorted)."""
    left, right = coalesce(self), coalesce(other)
    size = self.shape[: self.sparse_dim()]
    left_linear = _linear(left._indices(), size)
    right_linear = _linear(right._indices(), size)
    if right_linear.shape[0] == 0 or left_linear.shape[0] == 0:
        return _coo(left._indices()[:, :0], left._values()[:0], self.shape, coalesced=True)
    position = torch.searchsorted(right_linear, left_linear).clamp(max=right_linear.shape[0] - 1)
    matched = torch.nonzero(right_linear[position] == left_linear).squeeze(1)
    values = left._values().index_select(0, matched) * right._values().index_select(
        0, position.index_select(0, matched)
    )
    return _coo(left._indices().index_select(1, matched), values, self.shape, coalesced=True)


def mul_(self, other) -> torch.Tensor:
    if not _is_sparse(self):
        return _run_on_cpu(aten.mul_.Tensor, (self, other), {})
    return self.copy_(mul(self, other))


def div(self, other) -> torch.Tensor:
    if _is_sparse(self) and _is_scalar(other):
        return _coo(self._indices(), self._values() / other, self.shape, self.is_coalesced())
    return _run_on_cpu(aten.div.Tensor, (self, other), {})


def sparse_mask(self: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``x.sparse_mask(sparse)``: the entries of ``x`` at the mask's indices (0 where absent)."""
    if not _is_sparse(mask) or self.shape != mask.shape:
        return _run_on_cpu(aten.sparse_mask.default, (self, mask), {})
    if _is_dense(self):
        gathered = self[_index_tuple(mask._indices())]
    elif _is_sparse(self) and self.sparse_dim() == mask.sparse_dim():
        gathered = _sparse_at(self, mask._indices())
    else:
        return _run_on_cpu(aten.sparse_mask.default, (self, mask), {})
    return _coo(mask._indices(), gathered, mask.shape, mask.is_coalesced())


def _sparse_at(sparse: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """The values of ``sparse`` (duplicates summed) at ``indices``, zero where it has none."""
    source = coalesce(sparse) if not sparse.is_coalesced() else sparse
    values = source._values()
    size = sparse.shape[: sparse.sparse_dim()]
    wanted = _linear(indices, size)
    present = _linear(source._indices(), size)
    result = values.new_zeros((wanted.shape[0], *values.shape[1:]))
    if present.shape[0] == 0:
        return result
    position = torch.searchsorted(present, wanted).clamp(max=present.shape[0] - 1)
    found = (present.index_select(0, position) == wanted).view(-1, *[1] * (values.dim() - 1))
    return torch.where(found, values.index_select(0, position), result)


def unsqueeze(self: torch.Tensor, dim: int) -> torch.Tensor:
    """A new sparse dim (a row of zeros in the indices) or a new dense dim of the values."""
    dim = dim % (self.dim() + 1)
    indices, values, sparse_dim = self._indices(), self._values(), self.sparse_dim()
    size = [*self.shape[:dim], 1, *self.shape[dim:]]
    if dim <= sparse_dim:
        zeros = indices.new_zeros((1, indices.shape[1]))
        indices = torch.cat([indices[:dim], zeros, indices[dim:]])
    else:
        values = values.unsqueeze(dim - sparse_dim + 1)
    return _coo(indices, values, size, self.is_coalesced())


def permute(self: torch.Tensor, dims) -> torch.Tensor:
    """Sparse dims reordered among themselves (rows of the indices), dense dims in the values."""
    dims = [d % self.dim() for d in dims]
    sparse_dim = self.sparse_dim()
    sparse_order, dense_order = dims[:sparse_dim], dims[sparse_dim:]
    if sorted(sparse_order) != list(range(sparse_dim)):
        return _run_on_cpu(aten.permute.default, (self, dims), {})
    order = torch.tensor(sparse_order, dtype=torch.int64, device=self.device)
    indices = self._indices().index_select(0, order)
    values = self._values().permute(0, *[d - sparse_dim + 1 for d in dense_order])
    identity = sparse_order == list(range(sparse_dim))
    size = [self.shape[d] for d in dims]
    return _coo(indices, values, size, self.is_coalesced() and identity)


def index_select(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """Entry k kept once per j with ``indices[dim][k] == index[j]``, its index there set to j."""
    dim = dim % self.dim()
    indices, values, sparse_dim = self._indices(), self._values(), self.sparse_dim()
    size = list(self.shape)
    size[dim] = index.shape[0]
    index = index.to(indices.device, torch.int64)
    if dim >= sparse_dim:
        selected = values.index_select(dim - sparse_dim + 1, index)
        return _coo(indices, selected, size, self.is_coalesced())
    pairs = torch.nonzero(indices[dim].unsqueeze(1) == index.unsqueeze(0))
    entries, positions = pairs[:, 0], pairs[:, 1]
    new_indices = indices.index_select(1, entries)
    new_indices = torch.cat([new_indices[:dim], positions.unsqueeze(0), new_indices[dim + 1 :]])
    return _coo(new_indices, values.index_select(0, entries), size)


def pow_scalar(self: torch.Tensor, exponent) -> torch.Tensor:
    """``pow(sparse, c)`` for c > 0 (0 ** c = 0): the coalesced values to the power c."""
    if not _is_sparse(self) or not isinstance(exponent, (int, float)) or exponent <= 0:
        return _run_on_cpu(aten.pow.Tensor_Scalar, (self, exponent), {})
    source = coalesce(self) if not self.is_coalesced() else self
    return _coo(source._indices(), source._values().pow(exponent), self.shape, coalesced=True)


def cat(tensors, dim: int = 0) -> torch.Tensor:
    """Concatenation along a sparse dim: indices shifted by the sizes before, values joined."""
    first = tensors[0]
    dim = dim % first.dim() if first.dim() else 0
    fits = all(
        _is_sparse(t)
        and t.sparse_dim() == first.sparse_dim()
        and t.dense_dim() == first.dense_dim()
        for t in tensors
    )
    if not fits or dim >= first.sparse_dim():
        return _run_on_cpu(aten.cat.default, (tensors, dim), {})
    indices, offset = [], 0
    for tensor in tensors:
        shifted = tensor._indices().clone()
        shifted[dim] += offset
        indices.append(shifted)
        offset += tensor.shape[dim]
    size = list(first.shape)
    size[dim] = offset
    values = torch.cat([tensor._values() for tensor in tensors])
    return _coo(torch.cat(indices, dim=1), values, size)


def sparse_sum(self, dtype=None) -> torch.Tensor:
    """``sum`` of a whole sparse tensor: the sum of its values."""
    values = self._values() if _is_sparse(self) else self.values()
    return values.sum(dtype=dtype)


def sum_dim(self, dim, keepdim=False, dtype=None) -> torch.Tensor:
    """``sum.dim_IntList`` over every sparse dimension of a COO tensor (a dense result)."""
    if _is_sparse(self) and dim is not None and not keepdim:
        dims = sorted(d % self.dim() for d in dim)
        if dims == list(range(self.sparse_dim())):
            return self._values().sum(0, dtype=dtype)
    return _run_on_cpu(aten.sum.dim_IntList, (self, dim, keepdim), {"dtype": dtype})


def _out(functional: Callable, op: torch._ops.OpOverload) -> Callable:
    """The ``.out`` overload of a native kernel: the result copied into ``out``."""

    def kernel(*args, out, **kwargs):
        if out.layout != torch.sparse_coo or any(_is_csr(value) for value in args):
            return _run_on_cpu(op, args, {"out": out, **kwargs})
        return out.copy_(functional(*args, **kwargs))

    return kernel


def _unary(op: torch._ops.OpOverload) -> Callable:
    """A zero-preserving elementwise op: the op on the (coalesced) values. A CSR tensor
    keeps its compressed indices (its entries are distinct, as PyTorch's CSR kernels
    assume: they too apply the op to the values)."""

    def kernel(self):
        if _is_csr(self):
            values = op(self.values())
            return _csr(self.crow_indices(), self.col_indices(), values, self.shape)
        if not _is_sparse(self):
            return _run_on_cpu(op, (self,), {})
        source = coalesce(self) if not self.is_coalesced() else self
        return _coo(source._indices(), op(source._values()), self.shape, coalesced=True)

    return kernel


# ---------------------------------------------------------------------------
