"""OCP MX formats (torchneuron/mx.py): bit-exact against a reference written here from
the specification's conversion rule, one block at a time in Python floats, and the same
bits natively on ``neuron`` in eager mode and under torch.compile."""

from __future__ import annotations

import math
import struct

import pytest
import torch

from torchneuron import mx

# element format -> (emax, largest normal, mantissa bits, smallest normal exponent)
SPEC = {
    "fp8_e4m3": (8, 448.0, 3, -6),
    "fp8_e5m2": (15, 57344.0, 2, -14),
    "fp4_e2m1": (2, 6.0, 1, 0),
}


def reference_block(values: list[float], fmt: str) -> tuple[int, list[float]]:
    """(E8M0 code, decoded values) of one block, by the specification's rule."""
    emax, largest, mantissa_bits, emin = SPEC[fmt]
    if any(math.isinf(v) or math.isnan(v) for v in values):
        return 255, [math.nan] * len(values)
    amax = max(abs(v) for v in values)
    shared = -127 if amax == 0 else max(-127, min(127, math.frexp(amax)[1] - 1 - emax))
    decoded = []
    for v in values:
        q = v / 2.0**shared
        magnitude = min(abs(q), largest)  # saturating
        if magnitude == 0:
            decoded.append(math.copysign(0.0, q))
            continue
        exponent = max(emin, min(emax, math.frexp(magnitude)[1] - 1))
        spacing = 2.0 ** (exponent - mantissa_bits)
        rounded = min(round(magnitude / spacing) * spacing, largest)  # ties to even
        decoded.append(math.copysign(rounded, q) * 2.0**shared)
    return shared + 127, decoded


def _hostile_input() -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(6, 64, generator=generator) * torch.logspace(-30, 30, 64)
    x[0, :32] = 0.0  # a block of zeros
    x[1, 5] = 1e-40  # a subnormal float32
    x[2, 40] = float("inf")  # a block with an infinity
    x[3, 3] = 500.0  # beyond E4M3's largest after scaling? (ties and saturation)
    x[4, :32] = torch.tensor([0.25 * i for i in range(32)])  # exact grid points and ties
    x[5, 32:] = -x[5, 32:]
    return x


def _bits(value: float) -> bytes:
    return struct.pack("f", value)


@pytest.mark.parametrize("fmt", list(SPEC))
def test_conversion_is_bit_exact_against_the_specifications_rule(fmt):
    x = _hostile_input()
    converted = mx.to_mx(x, fmt)
    decoded = mx.from_mx(converted)
    for row in range(x.shape[0]):
        for block in range(x.shape[1] // mx.BLOCK):
            span = slice(block * mx.BLOCK, (block + 1) * mx.BLOCK)
            code, want = reference_block(x[row, span].tolist(), fmt)
            assert converted.scales[row, block].item() == code, (row, block)
            for got, expected in zip(decoded[row, span].tolist(), want):
                assert (math.isnan(got) and math.isnan(expected)) or _bits(got) == _bits(expected)


def _raw(t: torch.Tensor) -> torch.Tensor:
    t = t.cpu()
    return t.view(torch.uint8) if t.element_size() == 1 else t


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp4_e2m1"])  # E5M2 is E4M3's code path
def test_the_same_bits_natively_in_eager_and_compiled(fmt, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    torch._dynamo.reset()
    x = _hostile_input()
    want = mx.to_mx(x, fmt)
    eager = mx.to_mx(x.to("neuron"), fmt)

    @torch.compile(backend="neuron", fullgraph=True)
    def convert(t):
        m = mx.to_mx(t, fmt)
        return m.elements, m.scales, mx.from_mx(m)

    elements, scales, decoded = convert(x.to("neuron"))
    for got in (eager.elements, elements):
        assert torch.equal(_raw(got), _raw(want.elements))
    for got in (eager.scales, scales):
        assert torch.equal(got.cpu(), want.scales)
    assert torch.equal(decoded.cpu().nan_to_num(7.0), mx.from_mx(want).nan_to_num(7.0))


def test_mx_matmul_mixes_formats_and_sums_in_float32(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    generator = torch.Generator().manual_seed(1)
    a = mx.to_mx(torch.randn(8, 64, generator=generator), "fp8_e4m3")
    b = mx.to_mx(torch.randn(16, 64, generator=generator), "fp4_e2m1")
    want = mx.from_mx(a).double() @ mx.from_mx(b).double().t()
    on_device = [
        mx.MXTensor(m.elements.to("neuron"), m.scales.to("neuron"), m.format) for m in (a, b)
    ]
    got = torch.compile(mx.mx_matmul, backend="neuron")(*on_device)
    torch.testing.assert_close(got.cpu().double(), want, rtol=1e-6, atol=1e-5)


def test_bad_shapes_and_formats_are_refused_by_name():
    with pytest.raises(ValueError, match="blocked by 32 along its last dimension"):
        mx.to_mx(torch.randn(4, 48))
    with pytest.raises(ValueError, match="unknown MX element format 'fp6'"):
        mx.to_mx(torch.randn(4, 32), "fp6")
