"""``_scaled_mm``: the scaled (float8) matrix product, which torch-mlir does not lower.

PyTorch's CPU kernel is the reference: both operands widened to float32 and scaled,
multiplied in float32, the bias added, and the result rounded once to ``out_dtype``
(``self``'s dtype when not given):

    _scaled_mm(a, b, sa, sb, bias) -> (a * sa) @ (b * sb) + bias

``scale_result`` is ignored, as the CPU kernel of torch 2.13 ignores it (measured: its
float8 results equal the unscaled product's).

Tensor-wise (0-d) and row-wise (``[M, 1]`` and ``[1, N]``) scales broadcast as written.
``use_fast_accum`` only chooses an accumulator on GPUs; float32 is exact enough here.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten


@lowering_rule(aten._scaled_mm.default)
def scaled_mm(
    self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False
):
    out_dtype = out_dtype or self.dtype
    if self.dim() != 2 or mat2.dim() != 2:
        return NotImplemented
    a = self.to(torch.float32) * scale_a.to(torch.float32)
    b = mat2.to(torch.float32) * scale_b.to(torch.float32)
    product = torch.mm(a, b)
    if bias is not None:
        product = product + bias.to(torch.float32)
    return product.to(out_dtype)
