"""Sorting and top-k in PyTorch's order: NaN after +inf, ties in their original order.

torch-mlir lowers ``sort`` to a ``stablehlo.sort`` whose comparator is a plain ``<``,
which leaves NaN anywhere, and types the comparison of ``uint8``/``bool`` keys as
signed (XLA's verifier rejects it). Here every sort compares integer keys instead:

- a float is mapped to an integer of its width whose signed order is the float's
  order (its bits, with the magnitude bits flipped where the sign bit is set),
  after -0.0 is made +0.0 (PyTorch ranks them equal) and every NaN the one positive
  quiet NaN (which then ranks above +inf); half precision is widened to float32 first
  (exactly);
- ``bool``/``uint8`` keys are widened to ``int32``;
- when the key is at most 32 bits wide, the sort compares ``key * n + position``
  (``n - 1 - position`` when descending) in ``int64``: all distinct, so the result is
  the stable order whatever algorithm the backend picks;
- wider keys (float64, int64) sort non-stably, or, for ``stable=True``, by counting
  the elements that go before each one (dense comparisons, ``n**2`` per row).

``bucketize`` runs PyTorch's binary search step by step (its NaN answers depend on it).

``topk`` is a sort (descending for the largest, NaN first; ascending for the smallest,
NaN last) cut to ``k``, as PyTorch ranks NaN above everything.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten

DENSE_ROW_LIMIT = 1 << 22  # elements of the largest (rows x n x n) comparison built

_BITS_OF = {torch.float32: torch.int32, torch.float64: torch.int64}
_HALF = (torch.float16, torch.bfloat16)
_NARROW_UNSIGNED = (torch.bool, torch.uint8)


def order_key(x: torch.Tensor) -> torch.Tensor:
    """Integers whose signed order is PyTorch's sort order of ``x`` (equal stays equal)."""
    if x.dtype in _NARROW_UNSIGNED:
        return x.to(torch.int32)
    if not x.is_floating_point():
        return x
    if x.dtype in _HALF:
        x = x.to(torch.float32)
    canonical = torch.where(x == 0, torch.zeros_like(x), x)
    canonical = torch.where(torch.isnan(x), torch.full_like(x, float("nan")), canonical)
    integer = _BITS_OF[x.dtype]
    bits = canonical.view(integer)
    # a negative float's magnitude bits count the wrong way: flip them (b -> min + ~b, with
    # ~b = -1 - b: the lowering has no bitwise xor with a constant)
    return torch.where(bits < 0, (-1 - bits) + torch.iinfo(integer).min, bits)


def _sort_by_key(self: torch.Tensor, dim: int, descending: bool, stable: bool):
    key = order_key(self)
    n = self.shape[dim]
    if torch.iinfo(key.dtype).bits <= 32:
        shape = [1] * self.dim()
        shape[dim] = n
        positions = torch.arange(n, device=self.device).view(shape)
        if descending:
            positions = (n - 1) - positions
        key = key.to(torch.int64) * n + positions
    elif stable:
        return _dense_stable_sort(self, key, dim, descending)
    _, indices = aten.sort.default(key, dim, descending)
    return torch.gather(self, dim, indices), indices


def _needs_key(self: torch.Tensor) -> bool:
    return self.is_floating_point() or self.dtype in _NARROW_UNSIGNED


@lowering_rule(aten.sort.default)
def sort(self, dim=-1, descending=False):
    # sort(x) -> gather(x, argsort(order_key(x) * n + position))
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    if not _needs_key(self):
        return NotImplemented
    return _sort_by_key(self, dim % self.dim(), descending, stable=False)


@lowering_rule(aten.sort.stable)
def sort_stable(self, *, stable=False, dim=-1, descending=False):
    # sort(x, stable) -> the keyed sort above, whose order is stable for keys of <= 32 bits
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    dim = dim % self.dim()
    if not _needs_key(self):
        if not stable:
            return aten.sort.default(self, dim, descending)
        return _dense_stable_sort(self, self, dim, descending)
    return _sort_by_key(self, dim, descending, stable=bool(stable))


def _dense_stable_sort(self: torch.Tensor, key: torch.Tensor, dim: int, descending: bool):
    # rank_i = #{j: key_j before key_i, or key_j == key_i and j < i}; i goes to rank_i
    n = self.shape[dim]
    if self.numel() * n > DENSE_ROW_LIMIT:
        return NotImplemented
    moved = key.movedim(dim, -1)
    key_i, key_j = moved.unsqueeze(-1), moved.unsqueeze(-2)
    strictly = key_j > key_i if descending else key_j < key_i
    positions = torch.arange(n, device=self.device)
    earlier = positions.unsqueeze(0) < positions.unsqueeze(1)  # [i, j]: j < i
    rank = (strictly | ((key_j == key_i) & earlier)).sum(-1)
    order = torch.zeros_like(rank).scatter(-1, rank, positions.expand(rank.shape))
    order = order.movedim(-1, dim)
    return torch.gather(self, dim, order), order


@lowering_rule(aten.topk.default)
def topk(self, k, dim=-1, largest=True, sorted=True):
    # topk(x, k) -> sort(x, descending=largest)[:k] (NaN ranks above +inf)
    if not _needs_key(self):
        return NotImplemented
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    dim = dim % self.dim()
    values, indices = _sort_by_key(self, dim, descending=largest, stable=False)
    return values.narrow(dim, 0, k), indices.narrow(dim, 0, k)


def binary_search(boundaries: torch.Tensor, values: torch.Tensor, right: bool) -> torch.Tensor:
    """PyTorch's bucketize/searchsorted search of ``values`` in a 1-D ``boundaries``, step
    by step: ``start = mid + 1`` while ``!(boundaries[mid] >= v)`` (``>`` when ``right``),
    else ``end = mid``. Its NaN answers come from those negated comparisons (a NaN value
    goes past every boundary; a NaN boundary is passed by every value that reaches it),
    so the steps are kept rather than a count of the boundaries below each value."""
    n = boundaries.shape[0]
    start = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    end = torch.full(values.shape, n, dtype=torch.int64, device=values.device)
    for _ in range(n.bit_length()):
        mid = start + (end - start) // 2
        probe = torch.index_select(boundaries, 0, mid.clamp(max=max(n - 1, 0)).reshape(-1))
        probe = probe.reshape(values.shape)
        passed = ~(probe > values) if right else ~(probe >= values)
        active = start < end
        start = torch.where(active & passed, mid + 1, start)
        end = torch.where(active & ~passed, mid, end)
    return start


@lowering_rule(aten.bucketize.Tensor)
def bucketize(self, boundaries, *, out_int32=False, right=False):
    # bucketize(v, b) -> PyTorch's binary search of v in b, unrolled (log2(n) steps)
    if boundaries.dim() != 1 or self.is_complex():
        return NotImplemented
    values = self.reshape(1) if self.dim() == 0 else self
    result = binary_search(boundaries, values, right).reshape(self.shape)
    return result.to(torch.int32) if out_int32 else result
