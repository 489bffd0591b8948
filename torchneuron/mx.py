"""OCP microscaling (MX) formats: MXFP8 and MXFP4 blocks, their conversion and product.

An MX block is ``BLOCK`` (32) consecutive elements along one dimension sharing one
scale, an E8M0 power of two (OCP Microscaling Formats (MX) Specification v1.0, 2023,
sections 5.3 and 6.3). Converting a block of floats ``V``:

    shared_exp = floor(log2(max |V_i|)) - emax_elem       (clamped to E8M0's [-127, 127])
    X          = 2 ** shared_exp
    P_i        = V_i / X rounded to the element format (nearest, ties to even), values
                 beyond the element format's largest normal clamped to it

with ``emax_elem`` the exponent of the element format's largest normal: 8 for FP8 E4M3
(largest 448), 15 for FP8 E5M2 (57,344), 2 for FP4 E2M1 (6). A block of zeros takes
the smallest scale, 2^-127; a block holding an infinity or a NaN gets the NaN scale
(E8M0 code 255) and reads back as NaN. The value of an element is ``P_i * X``.

``to_mx`` and ``from_mx`` are plain tensor ops (bit operations on float32, casts to the
float8 types, ``round`` for FP4), so they run natively on ``neuron`` in eager mode and
under ``torch.compile``; ``mx_matmul`` multiplies two MX tensors blocked along the
contracted dimension as the hardware's MX matmul does, the products of the decoded
elements summed in float32. Storage: FP8 elements in their torch float8 dtype, FP4
elements as their 4-bit codes (sign, 2 exponent bits, 1 mantissa bit), one per
``uint8``; scales as E8M0 codes (biased exponents, ``uint8``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

BLOCK = 32
SCALE_BIAS = 127
NAN_SCALE = 255


@dataclass(frozen=True)
class ElementFormat:
    name: str
    emax: int  # exponent of the largest normal
    largest: float  # the largest normal
    mantissa_bits: int
    emin: int  # exponent of the smallest normal
    dtype: torch.dtype | None  # torch's storage dtype, None: 4-bit codes in uint8


FORMATS = {
    "fp8_e4m3": ElementFormat("fp8_e4m3", 8, 448.0, 3, -6, torch.float8_e4m3fn),
    "fp8_e5m2": ElementFormat("fp8_e5m2", 15, 57344.0, 2, -14, torch.float8_e5m2),
    "fp4_e2m1": ElementFormat("fp4_e2m1", 2, 6.0, 1, 0, None),
}


@dataclass(frozen=True)
class MXTensor:
    """Elements blocked along the last dimension (``BLOCK`` per scale)."""

    elements: torch.Tensor  # [..., n]: float8, or uint8 FP4 codes
    scales: torch.Tensor  # [..., n // BLOCK] uint8 E8M0 codes
    format: str

    @property
    def shape(self) -> torch.Size:
        return self.elements.shape


def _format(name: str) -> ElementFormat:
    if name not in FORMATS:
        raise ValueError(f"unknown MX element format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name]


def _blocks(x: torch.Tensor) -> torch.Tensor:
    if x.dim() == 0 or x.shape[-1] % BLOCK:
        raise ValueError(
            f"an MX tensor is blocked by {BLOCK} along its last dimension; got shape "
            f"{tuple(x.shape)}"
        )
    return x.reshape(*x.shape[:-1], x.shape[-1] // BLOCK, BLOCK)


def _floor_log2(x: torch.Tensor) -> torch.Tensor:
    """floor(log2(x)) of finite float32 ``x > 0`` from its exponent bits (subnormals
    give -127: below every scale E8M0 holds, clamped anyway)."""
    bits = x.contiguous().view(torch.int32)
    return torch.bitwise_and(torch.bitwise_right_shift(bits, 23), 0xFF) - SCALE_BIAS


def _round_to_grid(v: torch.Tensor, spec: ElementFormat) -> torch.Tensor:
    """``v`` (float32) rounded to the element format's values, ties to even, clamped
    to its largest normal: the value, still in float32."""
    magnitude = v.abs().clamp(max=spec.largest)
    exponent = _floor_log2(torch.where(magnitude > 0, magnitude, torch.ones_like(magnitude)))
    exponent = exponent.clamp(min=spec.emin, max=spec.emax)
    spacing = torch.exp2((exponent - spec.mantissa_bits).to(torch.float32))
    rounded = (torch.round(magnitude / spacing) * spacing).clamp(max=spec.largest)
    return torch.copysign(rounded, v)


def _fp4_codes(values: torch.Tensor) -> torch.Tensor:
    """E2M1 codes of values already on its grid. The magnitudes 0, 0.5, 1, 1.5, 2, 3, 4,
    6 are codes 0-7 in order (exponent bits, then the mantissa bit); the sign is bit 3."""
    magnitude = values.abs()
    code = torch.zeros_like(magnitude, dtype=torch.uint8)
    for step in (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0):
        code = code + (magnitude >= step).to(torch.uint8)
    return torch.where(torch.signbit(values), code + 8, code)


def _fp4_values(codes: torch.Tensor) -> torch.Tensor:
    codes = codes.to(torch.int32)
    sign = torch.where(torch.bitwise_and(codes, 8) > 0, -1.0, 1.0)
    exponent = torch.bitwise_and(torch.bitwise_right_shift(codes, 1), 3)
    mantissa = torch.bitwise_and(codes, 1).to(torch.float32)
    normal = torch.exp2((exponent - 1).to(torch.float32)) * (1 + mantissa / 2)
    return sign * torch.where(exponent > 0, normal, mantissa / 2)


def to_mx(x: torch.Tensor, format: str = "fp8_e4m3") -> MXTensor:
    """``x`` (any float dtype) as an MX tensor of element ``format``, blocked along its
    last dimension."""
    spec = _format(format)
    blocks = _blocks(x.to(torch.float32))
    amax = blocks.abs().amax(-1, keepdim=True)
    special = ~torch.isfinite(blocks).all(-1, keepdim=True)
    positive = torch.where((amax > 0) & ~special, amax, torch.ones_like(amax))
    shared = (_floor_log2(positive) - spec.emax).clamp(-SCALE_BIAS, SCALE_BIAS)
    shared = torch.where((amax > 0) & ~special, shared, -SCALE_BIAS)
    scaled = blocks * torch.exp2((-shared).to(torch.float32))
    values = _round_to_grid(torch.where(special, 0.0, scaled), spec)
    codes = torch.where(special, NAN_SCALE, shared + SCALE_BIAS).to(torch.uint8).squeeze(-1)
    if spec.dtype is None:
        elements = _fp4_codes(values)
    else:
        elements = values.to(spec.dtype)
    return MXTensor(elements.reshape(x.shape), codes, format)


def from_mx(mx: MXTensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The values of ``mx`` (NaN in a block whose scale is NaN)."""
    spec = _format(mx.format)
    if spec.dtype is None:
        values = _fp4_values(mx.elements)
    else:
        values = mx.elements.to(torch.float32)
    blocks = _blocks(values)
    codes = mx.scales.to(torch.int32).unsqueeze(-1)
    scale = torch.exp2((codes - SCALE_BIAS).to(torch.float32))
    decoded = torch.where(codes == NAN_SCALE, torch.nan, blocks * scale)
    return decoded.reshape(mx.shape).to(dtype)


def mx_matmul(a: MXTensor, b: MXTensor, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``a @ b.T`` for ``a [M, K]`` and ``b [N, K]``, both blocked along ``K``: the
    decoded products summed in float32."""
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"mx_matmul contracts the blocked dimension: {tuple(a.shape)} and {tuple(b.shape)}"
        )
    return (from_mx(a) @ from_mx(b).transpose(-2, -1)).to(out_dtype)
