"""Ops real models hit run natively (fallback off) in both modes and match PyTorch on the CPU.

Each test names the op and the form that used to leave the device (or fail to
compile), and compares eager mode (``fn(x.to("neuron"))``) and compile mode
(``torch.compile(fn, backend="neuron")``) with PyTorch on the CPU: exactly where
PyTorch's answer is exact (indices, integers), else with tight tolerances.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    # a CPU fallback would hide a wrong lowering: these must run on the device
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def _to(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    return value


def _assert_same(got, expected, exact: bool, rtol=1.3e-6, atol=1e-6):
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e, exact, rtol, atol)
        return
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if exact:  # NaN where PyTorch has NaN, and the sign of zeros
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
        if expected.is_floating_point():
            assert torch.equal(torch.signbit(got), torch.signbit(expected))
    else:
        torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def _both_modes(fn, *inputs, exact=False, **tolerance):
    """fn on the device in eager and compile mode equals fn on the CPU."""
    expected = fn(*inputs)
    eager = fn(*_to(inputs, "neuron"))
    _assert_same(eager, expected, exact, **tolerance)
    compiled = torch.compile(fn, backend="neuron")(*inputs)
    _assert_same(compiled, expected, exact, **tolerance)


# --- nn.MultiheadAttention / nn.TransformerEncoderLayer inference fast paths -----------------


def _module_both_modes(make, call):
    """``call(module, x)`` for a module in eval mode, on the CPU, the device, and compiled."""
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        expected = call(module, x)
        on_device = make().eval().to("neuron")
        on_device.load_state_dict(module.state_dict())
        eager = call(on_device, x.to("neuron"))
        compiled = call(torch.compile(module, backend="neuron"), x)
    for got in (eager, compiled):
        got, want = (got, expected) if isinstance(expected, tuple) else ((got,), (expected,))
        for g, w in zip(got, want):
            if w is None:
                continue
            torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=2e-6, equal_nan=True)


def _attention():
    return nn.MultiheadAttention(8, 2, batch_first=True)


def test_multihead_attention_fast_path_without_weights_runs_natively():
    _module_both_modes(_attention, lambda m, x: m(x, x, x, need_weights=False))


def test_multihead_attention_fast_path_with_per_head_weights_runs_natively():
    _module_both_modes(_attention, lambda m, x: m(x, x, x, average_attn_weights=False))


def test_multihead_attention_fast_path_with_causal_mask_runs_natively():
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    _module_both_modes(
        _attention, lambda m, x: m(x, x, x, attn_mask=causal.to(x.device), need_weights=False)
    )


def test_native_multi_head_attention_padding_mask_masks_whole_rows_to_nan():
    # mask_type 1 (key padding); a batch entry with every key masked is NaN, as on the CPU
    torch.manual_seed(0)
    m = _attention()
    x = torch.randn(2, 5, 8)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[0, 3:] = True
    padding[1, :] = True

    def fn(x, w, b, pw, pb, mask):
        return torch._native_multi_head_attention(x, x, x, 8, 2, w, b, pw, pb, mask, True, True, 1)

    with torch.no_grad():
        weights = (m.in_proj_weight, m.in_proj_bias, m.out_proj.weight, m.out_proj.bias)
        _both_modes(fn, x, *weights, padding, rtol=1e-5, atol=2e-6)


def _encoder_layer(**options):
    return lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, **options)


def test_transformer_encoder_layer_fast_path_runs_natively():
    _module_both_modes(_encoder_layer(), lambda m, x: m(x))


def test_transformer_encoder_layer_fast_path_gelu_norm_first_with_padding_mask_runs_natively():
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    _module_both_modes(
        _encoder_layer(activation="gelu", norm_first=True),
        lambda m, x: m(x, src_key_padding_mask=padding.to(x.device)),
    )


# --- adaptive max pooling, nearest upsampling's backward ---------------------------------------


def _with_nan_and_ties(*shape):
    x = torch.randint(-3, 4, shape).float()  # small integers: many tied maxima
    flat = x.view(-1)
    flat[3] = flat[40] = flat[41] = float("nan")
    flat[60:70] = -float("inf")
    return x


def test_adaptive_max_pool2d_picks_last_nan_or_first_maximum_like_pytorch():
    x = _with_nan_and_ties(2, 3, 7, 9)
    # overlapping unequal windows; then windows of one element, unbatched
    _both_modes(lambda t: F.adaptive_max_pool2d(t, (3, 4), return_indices=True), x, exact=True)
    _both_modes(lambda t: F.adaptive_max_pool2d(t, (10, 4), return_indices=True), x[0], exact=True)


def test_adaptive_max_pool3d_picks_last_nan_or_first_maximum_like_pytorch():
    x = _with_nan_and_ties(2, 2, 5, 6, 7)
    _both_modes(lambda t: F.adaptive_max_pool3d(t, (2, 4, 3), return_indices=True), x, exact=True)


def _gradient_both_modes(fn, x, **tolerance):
    """The gradient of a weighted sum of fn(x), on the CPU, the device, and compiled."""

    def gradient(f, device):
        leaf = x.detach().clone().to(device).requires_grad_(True)
        out = f(leaf)
        weights = torch.arange(out.numel(), dtype=out.dtype).sin().reshape(out.shape)
        (out * weights.to(device)).sum().backward()
        return leaf.grad.cpu()

    expected = gradient(fn, "cpu")
    _assert_same(gradient(fn, "neuron"), expected, False, **tolerance)
    _assert_same(gradient(torch.compile(fn, backend="neuron"), "cpu"), expected, False, **tolerance)


def test_adaptive_max_pool_backward_runs_natively():
    _gradient_both_modes(lambda t: F.adaptive_max_pool2d(t, (3, 4)), torch.randn(2, 3, 7, 9))
    _gradient_both_modes(lambda t: F.adaptive_max_pool3d(t, (2, 3, 4)), torch.randn(1, 2, 4, 5, 6))


def test_upsample_nearest_backward_sums_onto_the_source_pixel_like_pytorch():
    aten = torch.ops.aten
    g = torch.randint(-4, 5, (2, 3, 10, 13)).float()  # integers: sums exact in any order
    g[0, 0, 0, 0] = float("inf")
    cases = [
        lambda g: aten.upsample_nearest2d_backward(g, [10, 13], [2, 3, 7, 9], None, None),
        lambda g: aten.upsample_nearest2d_backward(g, [10, 13], [2, 3, 7, 9], 1.43, 1.45),
        lambda g: aten._upsample_nearest_exact2d_backward(g, [10, 13], [2, 3, 7, 9], None, None),
        lambda g: aten.upsample_nearest1d_backward(g[0], [13], [3, 10, 29], None),
        lambda g: aten._upsample_nearest_exact1d_backward(g[0], [13], [3, 10, 5], None),
    ]
    for fn in cases:
        _both_modes(fn, g, exact=True)
    g3 = torch.randint(-4, 5, (1, 2, 5, 6, 7)).float()
    _both_modes(
        lambda g: aten.upsample_nearest3d_backward(g, [5, 6, 7], [1, 2, 3, 4, 5], None, None, None),
        g3,
        exact=True,
    )


def test_interpolate_nearest_trains_natively():
    x = torch.randn(2, 3, 7, 9)
    _gradient_both_modes(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), x)
    _gradient_both_modes(lambda t: F.interpolate(t, size=(10, 13), mode="nearest-exact"), x)


# --- index_select ---------------------------------------------------------------------------


def test_index_select_with_a_0d_index_or_a_0d_source_runs_natively():
    a = torch.randn(5, 4)
    _both_modes(lambda t, i: torch.index_select(t, 1, i), a, torch.tensor(2), exact=True)
    _both_modes(
        lambda t, i: torch.index_select(t, 0, i), torch.tensor(3.5), torch.tensor([0]), exact=True
    )
    _both_modes(
        lambda t, i: torch.index_select(t, 0, i), torch.tensor(3.5), torch.tensor(0), exact=True
    )


# --- embedding_bag ---------------------------------------------------------------------------


def _bag_weight():
    weight = torch.randint(-5, 6, (10, 3)).float()  # integers: sums exact, maxima tied
    weight[1, 1] = weight[4, 0] = float("nan")
    weight[7, 2] = -float("inf")
    return weight


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_outputs_match_pytorch_in_every_mode(mode):
    # all four outputs (offset2bag, bag_size, max_indices feed the backward pass), with an
    # empty bag, a padding index, NaN first and later in a bag, and -inf
    indices = torch.tensor([1, 2, 4, 5, 2, 2, 7, 4, 1])
    offsets = torch.tensor([0, 2, 2, 4])
    for padding_idx in (-1, 2):

        def fn(w, i, o, padding_idx=padding_idx):
            return torch.ops.aten._embedding_bag(
                w, i, o, False, mode, False, None, False, padding_idx
            )

        _both_modes(fn, _bag_weight(), indices, offsets, exact=mode != 1, rtol=1e-6, atol=1e-6)


def test_embedding_bag_functional_forms_match_pytorch():
    weight, indices = _bag_weight(), torch.tensor([1, 2, 4, 5, 2, 2, 7, 4, 1])
    two_bags, last = torch.tensor([0, 4]), torch.tensor([0, 2, 9])
    weights = torch.rand(9)
    forms = [
        (lambda w, i: F.embedding_bag(i.reshape(3, 3), w, mode="max"), ()),
        (lambda w, i, o: F.embedding_bag(i, w, o, include_last_offset=True), (last,)),
        (lambda w, i, o: F.embedding_bag(i, w, o, mode="mean", padding_idx=-8), (two_bags,)),
        (
            lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
            (two_bags, weights),
        ),
    ]
    for fn, extra in forms:
        _both_modes(fn, weight, indices, *extra, rtol=1e-6, atol=1e-6)
    _both_modes(
        lambda w, i, o: F.embedding_bag(i, w, o), weight.double(), indices.int(), two_bags.int()
    )


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_trains_natively(mode):
    weight = torch.randn(10, 4)
    indices, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4, 4, 8])

    def fn(w):
        return F.embedding_bag(
            indices.to(w.device),
            w,
            offsets.to(w.device),
            mode=mode,
            padding_idx=2,
            include_last_offset=True,
        )

    _gradient_both_modes(fn, weight, rtol=1e-6, atol=1e-6)


def test_embedding_bag_per_sample_weights_gradient_matches_pytorch():
    weight, samples = torch.randn(10, 4), torch.rand(8)
    indices, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4])

    def fn(p):
        w, i, o = (t.to(p.device) for t in (weight, indices, offsets))
        return F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p)

    _gradient_both_modes(fn, samples, rtol=1e-6, atol=1e-6)


def test_embedding_with_scale_grad_by_freq_trains_natively():
    indices = torch.tensor([[1, 2, 4], [4, 3, 9]])
    _gradient_both_modes(
        lambda w: F.embedding(indices.to(w.device), w, scale_grad_by_freq=True), torch.randn(10, 4)
    )
