"""Our lowering rules against PyTorch on wider inputs than OpInfo's samples.

The rules are plain torch code, so their mathematics is checked by calling them
eagerly on CPU tensors (fast, any range); the rules that exist because
torch-mlir silently miscompiles something are also checked through the
compiler and the runtime.
"""

import math

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from torchneuron.lowering import decomposition_table
from torchneuron.lowering.rules import LOWERING_RULES, arithmetic, lowering_rules, special

aten = torch.ops.aten


def _close(got, want, rtol=1e-4, atol=1e-5):
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)


def test_every_rule_is_registered_once_and_in_the_table():
    rules = lowering_rules()
    table = decomposition_table()
    assert len(rules) > 100
    assert all(op in table for op in rules)
    with pytest.raises(ValueError, match="already has a lowering rule"):
        from torchneuron.lowering.rules import lowering_rule

        lowering_rule(aten.erfc.default)(lambda x: x)
    assert LOWERING_RULES[aten.erfc.default] is special.erfc


_GRID = torch.cat([torch.linspace(-30, 30, 2001), torch.tensor([0.0, -0.0, 1.0, 2.0, -1.0, -7.0])])
_POSITIVE = torch.cat([torch.logspace(-6, 2, 801), torch.tensor([0.5, 1.0, 2.0, 3.75, 8.0])])


@pytest.mark.parametrize(
    "rule,reference,points",
    [
        (special.lgamma, torch.lgamma, _GRID),
        (special.digamma, torch.digamma, _GRID),
        (special.erfc, torch.erfc, torch.linspace(-10, 10, 2001)),
        (special.erfcx, torch.special.erfcx, torch.linspace(-9, 50, 2001)),
        (special.log_ndtr, torch.special.log_ndtr, torch.linspace(-30, 10, 2001)),
        (special.erfinv, torch.erfinv, torch.linspace(-1, 1, 2001)),
        (
            special.ndtri,
            torch.special.ndtri,
            torch.cat([torch.logspace(-30, 0, 301), torch.linspace(0, 1, 201)]),
        ),
        (special.bessel_j0, torch.special.bessel_j0, torch.linspace(-40, 40, 2001)),
        (special.bessel_j1, torch.special.bessel_j1, torch.linspace(-40, 40, 2001)),
        (special.bessel_y0, torch.special.bessel_y0, _POSITIVE),
        (special.bessel_y1, torch.special.bessel_y1, _POSITIVE),
        (
            special.modified_bessel_i0,
            torch.special.modified_bessel_i0,
            torch.linspace(-80, 80, 2001),
        ),
        (
            special.modified_bessel_i1,
            torch.special.modified_bessel_i1,
            torch.linspace(-80, 80, 2001),
        ),
        (special.i0e, torch.special.i0e, torch.linspace(-200, 200, 2001)),
        (special.i1e, torch.special.i1e, torch.linspace(-200, 200, 2001)),
        (special.modified_bessel_k0, torch.special.modified_bessel_k0, _POSITIVE),
        (special.modified_bessel_k1, torch.special.modified_bessel_k1, _POSITIVE),
        (special.scaled_modified_bessel_k0, torch.special.scaled_modified_bessel_k0, _POSITIVE),
        (special.scaled_modified_bessel_k1, torch.special.scaled_modified_bessel_k1, _POSITIVE),
    ],
)
def test_special_function_accuracy_over_wide_ranges(rule, reference, points):
    # Zeros of the Bessel functions make relative error meaningless there: absolute 2e-6.
    _close(rule(points), reference(points), rtol=2e-4, atol=2e-6)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_polygamma_and_zeta(n):
    # near the poles (negative integers) PyTorch's float32 trigamma loses all precision
    # (ours matches float64 there), so stay 0.01 away from them
    x = torch.cat([torch.linspace(-8.7, -0.3, 57), torch.linspace(0.1, 40, 400)])
    x = x[torch.abs(x - torch.round(x)) > 0.01]
    _close(special.polygamma(n, x), torch.polygamma(n, x), rtol=5e-4)
    q = torch.linspace(0.2, 30, 300)
    s = torch.full_like(q, n + 1.5)
    _close(special.zeta(s, q), torch.special.zeta(s, q), rtol=2e-4)


def test_incomplete_gamma():
    a, x = torch.meshgrid(torch.linspace(0.1, 30, 60), torch.linspace(0.0, 60, 61), indexing="ij")
    _close(special.igamma(a, x), torch.igamma(a, x), atol=2e-5)
    _close(special.igammac(a, x), torch.igammac(a, x), atol=2e-5)


@pytest.mark.parametrize(
    "op,reference",
    [
        (aten.special_chebyshev_polynomial_t.default, torch.special.chebyshev_polynomial_t),
        (aten.special_chebyshev_polynomial_u.default, torch.special.chebyshev_polynomial_u),
        (aten.special_hermite_polynomial_h.default, torch.special.hermite_polynomial_h),
        (aten.special_legendre_polynomial_p.default, torch.special.legendre_polynomial_p),
        (aten.special_laguerre_polynomial_l.default, torch.special.laguerre_polynomial_l),
    ],
)
def test_orthogonal_polynomials_including_high_degrees(op, reference):
    x, n = torch.meshgrid(
        torch.linspace(-1.5, 1.5, 31), torch.arange(-1, 40).float(), indexing="ij"
    )
    want = reference(x, n)
    got = special.POLYNOMIALS[op](x, n)
    finite = torch.isfinite(want) & (torch.abs(want) < 1e30) & (n < special.RECURRENCE_DEGREES)
    _close(got[finite], want[finite], rtol=1e-3, atol=1e-4)
    if op in (
        aten.special_chebyshev_polynomial_t.default,
        aten.special_chebyshev_polynomial_u.default,
    ):
        inside = (torch.abs(x) < 0.99) & (n >= special.RECURRENCE_DEGREES)
        _close(got[inside], want[inside], rtol=1e-3, atol=1e-3)


def test_frexp_and_nextafter_bit_exact():
    x = torch.cat(
        [
            torch.randn(1000) * 1e30,
            torch.randn(1000) * 1e-30,
            torch.tensor([0.0, 1.0, 0.5, -2.0, math.inf, -math.inf]),
        ]
    )
    mantissa, exponent = special.frexp(x)
    want_mantissa, want_exponent = torch.frexp(x)
    assert torch.equal(mantissa, want_mantissa) and torch.equal(exponent, want_exponent)
    y = torch.randn(x.shape)
    assert torch.equal(arithmetic.nextafter(x, y), torch.nextafter(x, y))


def _compiled(function, *inputs):
    from torchneuron.compiler.pipeline import compile_graph
    from torchneuron.runtime import load_neff

    gm = make_fx(function, decomposition_table=decomposition_table())(*inputs)
    compiled = compile_graph(gm, list(inputs), use_cache=False)
    outputs = load_neff(compiled.neff).execute([t.numpy() for t in inputs])
    return [torch.from_numpy(o) for o in outputs]


def test_remainder_and_constant_comparisons_are_right_once_compiled():
    # torch-mlir lowers remainder as fmod and folds full(2.5) >= 2 to false.
    x = torch.tensor([-7.5, -2.5, -0.5, 0.5, 3.0, 7.25])
    i = torch.tensor([-7, -2, 0, 1, 3, 8])

    def program(x, i):
        constant = torch.full_like(x, 2.5)
        return (
            torch.remainder(x, 2),
            torch.remainder(x, -3),
            torch.remainder(i, 3),
            torch.remainder(x, torch.full_like(x, -2.0)),
            constant >= 2,
            constant > 2,
            constant < 3,
            (x < 0) != (i < 0),
        )

    for got, want in zip(_compiled(program, x, i), program(x, i)):
        assert torch.equal(got.to(want.dtype), want), (got, want)


def test_ceil_mode_max_pool_values_and_indices_once_compiled():
    x = torch.randn(1, 2, 7, 9)

    def program(x):
        return torch.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)

    got, want = _compiled(program, x), program(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_transposed_convolution_rule_matches_pytorch_over_random_configurations():
    import random

    from torchneuron.lowering.rules.convolution import convolution

    rng = random.Random(0)
    torch.manual_seed(0)
    checked = 0
    for _ in range(200):
        spatial, groups = rng.choice([1, 2, 3]), rng.choice([1, 2])
        c_in, c_out = groups * rng.choice([1, 2]), groups * rng.choice([1, 3])
        kernel = [rng.choice([1, 2, 3]) for _ in range(spatial)]
        stride = [rng.choice([1, 2, 3]) for _ in range(spatial)]
        dilation = [rng.choice([1, 2]) for _ in range(spatial)]
        padding = [rng.choice([0, 1, 2, 3]) for _ in range(spatial)]
        output_padding = [rng.randrange(max(s, d)) for s, d in zip(stride, dilation)]
        x = torch.randn(
            2, c_in, *[rng.choice([1, 3, 5]) for _ in range(spatial)], dtype=torch.float64
        )
        w = torch.randn(c_in, c_out // groups, *kernel, dtype=torch.float64)
        b = torch.randn(c_out, dtype=torch.float64)
        args = (x, w, b, stride, padding, dilation, True, output_padding, groups)
        try:
            want = aten.convolution.default(*args)
        except RuntimeError:
            continue  # a configuration PyTorch rejects (output size below 1)
        _close(convolution(*args), want, rtol=1e-9, atol=1e-9)
        checked += 1
    assert checked > 100
    assert (
        convolution(x, w, b, stride, padding, dilation, False, output_padding, groups)
        is NotImplemented
    )


def test_conv_transpose1d_in_eager_mode_compiles_and_matches_cpu():
    # PyTorch runs it as a 2d convolution with a unit first dim: the shape torch-mlir
    # mis-lowers without the rule.
    import warnings

    import torchneuron

    x, w, b = torch.randn(2, 4, 6), torch.randn(4, 8, 3), torch.randn(8)
    want = torch.nn.functional.conv_transpose1d(
        x, w, b, stride=2, padding=1, output_padding=1, dilation=2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no CPU fallback
        got = torch.nn.functional.conv_transpose1d(
            x.to("neuron"),
            w.to("neuron"),
            b.to("neuron"),
            stride=2,
            padding=1,
            output_padding=1,
            dilation=2,
        )
    _close(got.cpu(), want)
    assert "aten::convolution" not in torchneuron.get_fallback_ops()


def test_matrix_exp_rule_against_float64_over_norms():
    from torchneuron.lowering.rules.linalg import linalg_matrix_exp

    torch.manual_seed(0)
    for scale in (1e-3, 0.1, 1.0, 5.0, 30.0, 100.0):
        a = torch.randn(3, 5, 5, dtype=torch.float64) * scale / 3
        want = torch.linalg.matrix_exp(a)
        error = (linalg_matrix_exp(a) - want).abs().max() / want.abs().max()
        assert error < 1e-12, (scale, error)
    negative = torch.randn(6, 6) * 3 - 8 * torch.eye(6)
    want = torch.linalg.matrix_exp(negative.double())
    # float32, with cancellation in the polynomial: within a few ulp of the result's scale,
    # no worse than PyTorch's own float32 kernel
    error = (linalg_matrix_exp(negative).double() - want).abs().max()
    cpu_error = (torch.linalg.matrix_exp(negative).double() - want).abs().max()
    assert error < max(1e-6 * want.abs().max(), 2 * cpu_error)
    assert torch.equal(linalg_matrix_exp(torch.zeros(2, 2)), torch.eye(2))


def test_as_strided_scatter_rule_matches_pytorch():
    from torchneuron.lowering.rules.indexing import as_strided_scatter

    torch.manual_seed(0)
    cases = [
        (torch.randn(10), torch.randn(2, 2), [2, 2], [1, 2], 1),
        (torch.randn(3, 4), torch.randn(3), [3], [5], 0),
        (torch.randn(4, 6), torch.randn(2, 3), [2, 3], [6, 2], 7),
    ]
    for base, src, size, stride, offset in cases:
        want = torch.as_strided_scatter(base, src, size, stride, offset)
        assert torch.equal(as_strided_scatter(base, src, size, stride, offset), want)
    assert as_strided_scatter(torch.randn(4, 4).t(), torch.randn(2), [2], [1], 0) is NotImplemented


def test_convolution_backward_rule_for_transposed_and_grouped_convolutions():
    import random

    from torchneuron.lowering.rules.convolution import convolution_backward

    rng = random.Random(1)
    torch.manual_seed(0)
    checked = {True: 0, False: 0}
    for transposed in (True, False):
        for _ in range(120):
            spatial, groups = (
                rng.choice([1, 2, 3]),
                rng.choice([2, 3] if not transposed else [1, 2]),
            )
            c_in, c_out = groups * rng.choice([1, 2]), groups * rng.choice([1, 3])
            kernel = [rng.choice([1, 2, 3]) for _ in range(spatial)]
            stride = [rng.choice([1, 2, 3]) for _ in range(spatial)]
            dilation = [rng.choice([1, 2]) for _ in range(spatial)]
            padding = [rng.choice([0, 1, 2]) for _ in range(spatial)]
            output_padding = (
                [rng.randrange(max(s, d)) for s, d in zip(stride, dilation)]
                if transposed
                else [0] * spatial
            )
            x = torch.randn(
                2, c_in, *[rng.choice([1, 3, 5, 7]) for _ in range(spatial)], dtype=torch.float64
            )
            shape = (c_in, c_out // groups) if transposed else (c_out, c_in // groups)
            w = torch.randn(*shape, *kernel, dtype=torch.float64)
            try:
                y = aten.convolution.default(
                    x, w, None, stride, padding, dilation, transposed, output_padding, groups
                )
            except RuntimeError:
                continue
            args = (
                torch.randn_like(y),
                x,
                w,
                [y.shape[1]],
                stride,
                padding,
                dilation,
                transposed,
                output_padding,
                groups,
                [True, True, True],
            )
            got = convolution_backward(*args)
            if got is NotImplemented:
                continue
            for mine, theirs in zip(got, aten.convolution_backward.default(*args)):
                _close(mine, theirs, rtol=1e-9, atol=1e-9)
            checked[transposed] += 1
    assert checked[True] > 50 and checked[False] > 50


def test_grouped_and_transposed_convolutions_train_in_eager_without_fallback():
    import copy
    import warnings

    for module, shape in [
        (torch.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, output_padding=1), (1, 4, 5, 5)),
        (torch.nn.Conv2d(4, 4, 3, groups=4, stride=2), (2, 4, 7, 7)),  # depthwise
    ]:
        x = torch.randn(*shape, requires_grad=True)
        on_device = copy.deepcopy(module).to("neuron")
        x_device = x.detach().to("neuron").requires_grad_(True)
        module(x).square().sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a CPU fallback warns
            on_device(x_device).square().sum().backward()
        _close(x_device.grad.cpu(), x.grad)
        _close(on_device.weight.grad.cpu(), module.weight.grad)
        _close(on_device.bias.grad.cpu(), module.bias.grad)


@pytest.mark.parametrize("device", ["cpu", "neuron"])
@pytest.mark.parametrize("scales", ["tensorwise", "rowwise"])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, None])
def test_scaled_mm_compiles_natively_and_matches_the_cpu_kernel(
    device, scales, out_dtype, fresh_dynamo, monkeypatch
):
    # torch-mlir has no _scaled_mm: it stayed with its constant operands (use_fast_accum's
    # torch.constant.bool), which the error named
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    if scales == "rowwise" and out_dtype is None:
        pytest.skip("PyTorch refuses row-wise scales with a float8 result")
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(16, 32, generator=generator).to(torch.float8_e4m3fn)
    b = torch.randn(24, 32, generator=generator).to(torch.float8_e4m3fn)
    if scales == "tensorwise":
        scale_a, scale_b = torch.tensor(0.5), torch.tensor(2.0)
    else:
        scale_a = torch.rand(16, 1, generator=generator) + 0.5
        scale_b = torch.rand(1, 24, generator=generator) + 0.5
    bias = torch.randn(24, generator=generator).to(out_dtype or torch.float32)
    bias = bias if out_dtype is not None else None

    def fn(a, b, scale_a, scale_b, bias):
        return torch._scaled_mm(
            a, b.t(), scale_a=scale_a, scale_b=scale_b, bias=bias, out_dtype=out_dtype
        )

    want = fn(a, b, scale_a, scale_b, bias)
    moved = [t.to(device) if t is not None else None for t in (a, b, scale_a, scale_b, bias)]
    got = torch.compile(fn, backend="neuron")(*moved)
    assert got.device.type == device and got.dtype == want.dtype
    # float32 sums in another order may round to the neighbouring bfloat16
    rtol = 2**-7 if want.dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(got.cpu().float(), want.float(), rtol=rtol, atol=1e-5)
