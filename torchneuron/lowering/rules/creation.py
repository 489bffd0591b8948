"""Factory ops whose values are unspecified: filled with zeros.

torch-mlir lowers ``empty`` to ``tensor.empty``, which is not StableHLO (the
program cannot be serialized, and some passes crash on it). Any value is a
correct result for ``empty``; zero is the one that folds away.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten


def _zeros(size, dtype, layout=None, device=None, pin_memory=None):
    # scalar_tensor + expand, not full: the decomposition of full is empty + fill.
    zero = aten.scalar_tensor.default(
        0,
        dtype=dtype or torch.get_default_dtype(),
        layout=layout,
        device=device,
        pin_memory=pin_memory,
    )
    return aten.clone.default(aten.expand.default(zero, list(size)))


@lowering_rule(aten.empty.memory_format)
def empty(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # empty(size) -> full(size, 0)
    return _zeros(size, dtype, layout, device, pin_memory)


@lowering_rule(aten.empty_strided.default)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    # empty_strided(size, stride) -> full(size, 0): strides do not exist after lowering
    return _zeros(size, dtype, layout, device, pin_memory)


@lowering_rule(aten.empty_permuted.default)
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=None):
    # empty_permuted(size, order) -> full(size, 0)
    return _zeros(size, dtype, layout, device, pin_memory)


@lowering_rule(aten.empty_like.default)
def empty_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # empty_like(x) -> full(x.shape, 0)
    return _zeros(self.shape, dtype or self.dtype, layout, device or self.device, pin_memory)


@lowering_rule(aten.new_empty.default)
def new_empty(self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    # x.new_empty(size) -> full(size, 0, dtype=x.dtype)
    return _zeros(size, dtype or self.dtype, layout, device or self.device, pin_memory)


@lowering_rule(aten.new_empty_strided.default)
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    # x.new_empty_strided(size, stride) -> full(size, 0, dtype=x.dtype)
    return _zeros(size, dtype or self.dtype, layout, device or self.device, pin_memory)
