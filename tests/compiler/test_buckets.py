"""Bucketing of dynamic dimensions (compiler/buckets.py, backend ``options={"buckets": ...}``).

Every result is compared with PyTorch eager on the CPU at sizes inside a bucket, on a
bucket's edge and beyond the last bucket; the counters say how many numeric compiles
(specializations) ran, how many calls were padded, and which graphs were refused.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torchneuron import settings
from torchneuron.backend import NeuronBackendOptions
from torchneuron.compiler import buckets, dynamic


def _settled() -> dict:
    """``dynamic.stats()`` once the background thread has built what calls submitted
    (a new shape runs interpreted while it specializes there)."""
    from torchneuron.compiler import specialize_later

    specialize_later.drain()
    return dynamic.stats()


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    # the counts below assume no specialization of an earlier test or process on disk
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(settings.BUCKETS, raising=False)
    torch._dynamo.reset()
    dynamic.reset_stats()
    buckets.reset_stats()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not padded to buckets.*")
        warnings.filterwarnings("error", message=".*compiled once per shape.*")
        yield
    torch._dynamo.reset()


def _marked(tensor: torch.Tensor, *dims: int) -> torch.Tensor:
    for dim in dims:
        torch._dynamo.mark_dynamic(tensor, dim)
    return tensor


@pytest.mark.parametrize(
    "value, message",
    [
        ([64, 32], "strictly increasing"),
        ([8, 8], "strictly increasing"),
        ([0, 8], "0 is not a positive int"),
        ([1.5], "1.5 is not a positive int"),
        ([True], "True is not a positive int"),
        ([], "1 to 64 sizes"),
        ("32,64", "list of increasing positive sizes"),
        ({"s0": [8]}, "list of increasing positive sizes"),
    ],
)
def test_bad_bucket_options_are_refused(value, message):
    with pytest.raises(ValueError, match=f"option 'buckets'.*{message}|{message}"):
        NeuronBackendOptions({"buckets": value})


def test_bucket_environment_variable(monkeypatch):
    monkeypatch.setenv(settings.BUCKETS, " 8, 16 ,32")
    assert NeuronBackendOptions(None).buckets == (8, 16, 32)
    assert NeuronBackendOptions({"buckets": None}).buckets is None  # the option wins
    for bad in ("8,x", "16,8", "8,,16"):
        monkeypatch.setenv(settings.BUCKETS, bad)
        with pytest.raises(settings.SettingsError, match=settings.BUCKETS):
            NeuronBackendOptions(None)


def test_auto_buckets_are_a_ladder_of_two_sizes_per_octave(monkeypatch):
    auto = NeuronBackendOptions({"buckets": "auto"}).buckets
    assert auto[:10] == (1, 2, 3, 4, 6, 8, 12, 16, 24, 32) and auto[-1] == 65536
    assert all(b / a <= 1.5 for a, b in zip(auto[1:], auto[2:]))  # padding <= 1.5x
    monkeypatch.setenv(settings.BUCKETS, "auto")
    assert NeuronBackendOptions(None).buckets == auto
    monkeypatch.setenv(settings.BUCKETS, "off")
    assert NeuronBackendOptions(None).buckets is None
    monkeypatch.delenv(settings.BUCKETS)
    assert NeuronBackendOptions(None).buckets == auto  # the default


def test_gpt_inference_with_auto_buckets_specializes_once_per_bucket():
    from torchneuron.zoo import ZOO

    model = ZOO["gpt"].build().eval()
    compiled = torch.compile(model, backend="neuron", dynamic=True)  # auto: the default
    with torch.no_grad():
        for length in (17, 19, 24, 21, 13):
            tokens = torch.randint(0, 128, (2, length))
            torch.testing.assert_close(compiled(tokens), model(tokens), rtol=1e-4, atol=1e-4)
    assert buckets.stats()["bucketed_graphs"] == 1 and buckets.stats()["refusals"] == 0
    # 24 for 17..24; 13 borrows 24 (1.8x its size, within BORROW_LIMIT): one program
    assert _settled()["specializations"] == 1
    assert buckets.stats()["padded_calls"] == 4  # all but 24


def test_gpt_inference_specializes_a_size_too_small_to_borrow():
    from torchneuron.zoo import ZOO

    model = ZOO["gpt"].build().eval()
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    with torch.no_grad():
        for length in (30, 5):  # 5 would run at 32: over 4x, so its own bucket, 6
            tokens = torch.randint(0, 128, (2, length))
            torch.testing.assert_close(compiled(tokens), model(tokens), rtol=1e-4, atol=1e-4)
    assert _settled()["specializations"] == 2


def test_a_training_step_is_padded_forward_and_backward_and_equals_the_cpu():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
    reference = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="neuron", dynamic=True)  # buckets "auto"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not padded to buckets" warning
        for batch in (3, 5, 6, 7, 9, 12, 10):
            x, y = torch.randn(batch, 8), torch.arange(batch) % 4
            loss = F.cross_entropy(compiled(x), y)
            loss.backward()
            want = F.cross_entropy(reference(x), y)
            want.backward()
            torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6)
            for got, ref in zip(model.parameters(), reference.parameters()):
                torch.testing.assert_close(got.grad, ref.grad, rtol=1e-4, atol=1e-6)
                got.grad = ref.grad = None
    stats = buckets.stats()
    assert stats["bucketed_graphs"] == 2 and stats["refusals"] == 0  # forward, backward
    assert stats["padded_calls"] > 0
    # buckets 3, 6 (5, 6), 8 (7), 12 (9, 12, 10): each once for the forward and backward
    assert _settled()["specializations"] == 8


def test_bucket_choice_keeps_ranges_and_guards():
    plan = buckets.BucketPlan(None, (8, 16, 32), {}, {}, [], {}, limits={"s0": 24, "s1": None})
    choose = buckets.BucketedFunction(None, plan).choose
    assert choose({"s0": 3, "s1": 16}) == {"s0": 8, "s1": 16}  # 16: a bucket's edge
    assert choose({"s0": 20, "s1": 33}) == {"s0": 20, "s1": 33}  # s0's max 24; beyond 32
    # a guard of the program (Dynamo's s1 != 16) skips that bucket for the next one
    guarded = buckets.BucketedFunction(None, plan, admits=lambda v: v["s1"] != 16).choose
    assert guarded({"s0": 3, "s1": 9}) == {"s0": 8, "s1": 32}


def test_a_new_size_borrows_the_closest_earlier_choice_that_holds_it():
    plan = buckets.BucketPlan(None, buckets.AUTO_BUCKETS, {}, {}, [], {}, limits={})
    function = buckets.BucketedFunction(None, plan)
    choose = function.choose
    assert choose({"s0": 20}) == {"s0": 24}  # nothing chosen yet: its own bucket
    assert choose({"s0": 7}) == {"s0": 24}  # 24 holds 7 within 4x its size
    assert choose({"s0": 5}) == {"s0": 6}  # 24 is 4.8x: its own bucket
    assert choose({"s0": 4}) == {"s0": 6}  # the closest of 6 and 24
    assert choose({"s0": 30}) == {"s0": 32}  # nothing holds it
    assert choose({"s0": 17}) == {"s0": 24}  # its own bucket, chosen before
    assert function.chosen == [{"s0": 24}, {"s0": 6}, {"s0": 32}]
    # two symbols: the growth of both together counts, and each must be held
    pair = buckets.BucketedFunction(None, plan).choose
    assert pair({"s0": 16, "s1": 16}) == {"s0": 16, "s1": 16}
    assert pair({"s0": 9, "s1": 9}) == {"s0": 16, "s1": 16}  # 3.2x in all
    assert pair({"s0": 6, "s1": 6}) == {"s0": 6, "s1": 6}  # 7.1x: its own
    assert pair({"s0": 5, "s1": 20}) == {"s0": 6, "s1": 24}  # s1 is held by nothing
    # a guard the borrowed sizes break is never borrowed
    guarded = buckets.BucketedFunction(None, plan, admits=lambda v: v["s0"] != 24)
    guarded.chosen.append({"s0": 24})
    assert guarded.choose({"s0": 20}) == {"s0": 32}


def test_mlp_padded_batch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    compiled = torch.compile(model, backend="neuron", dynamic=True, options={"buckets": [4, 8]})
    with torch.no_grad():
        for batch in (3, 4, 6, 8, 9, 3):
            x = torch.randn(batch, 8)
            out = compiled(x)
            assert out.shape == (batch, 4)
            torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
    assert _settled()["front_half"] == 1
    assert _settled()["specializations"] == 3  # buckets 4 and 8, and 9 exactly
    assert buckets.stats() == {
        "bucketed_graphs": 1,
        "refusals": 0,
        "padded_calls": 3,  # 3, 6, 3
        "exact_calls": 3,  # 4 and 8 (bucket edges), 9 (beyond the last bucket)
    }


def _reductions(x):
    logs = torch.log(x.abs())  # -inf in a zero padding: only a select can mask it
    return (
        x.exp().sum(1),
        (-x.abs() - 1).amax(1),  # a zero padding would win: -1
        (x.abs() + 1).amin(1),  # and here: 1
        (x + 1).mean(1),
        torch.softmax(x + 1, 1),
        logs.transpose(1, 2) @ logs,  # contracts the padded dimension
        (x + 1).sum(),
    )


def test_reductions_over_the_padded_dimension_are_masked():
    compiled = torch.compile(_reductions, backend="neuron", options={"buckets": [8, 16]})
    with torch.no_grad():
        for length in (5, 8, 13, 20):
            x = _marked(torch.randn(2, length, 3), 1)
            for got, want in zip(compiled(x), _reductions(x)):
                assert got.shape == want.shape
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        # the masks matter: the same graph on zero-padded inputs, unmasked, is wrong
        x = torch.randn(2, 5, 3)
        padded = F.pad(x, (0, 0, 0, 3))
        for got, want in zip(_reductions(padded)[:4], _reductions(x)[:4]):
            assert not torch.allclose(got, want)
    assert _settled()["specializations"] == 3  # 8, 16, and 20 beyond the last bucket
    assert buckets.stats()["padded_calls"] == 2
    assert buckets.stats()["refusals"] == 0


class _TinyGPT(nn.Module):
    """Embedding, causal multi-head attention (mask cut to the length), MLP, head."""

    def __init__(self, vocab=32, d=16, heads=2, seq=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.embed(tokens)
        x = x + self.attn(x, x, x, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        logits = self.head(self.ln(x + self.mlp(x)))
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def test_gpt_causal_attention_padded_sequence():
    torch.manual_seed(0)
    model = _TinyGPT().eval()
    compiled = torch.compile(model, backend="neuron", options={"buckets": [8, 16]})
    with torch.no_grad():
        for length in (5, 16, 11):
            tokens = _marked(torch.randint(0, 32, (2, length)), 1)
            targets = _marked(torch.randint(0, 32, (2, length)), 1)
            logits, loss = compiled(tokens, targets)
            want_logits, want_loss = model(tokens, targets)
            assert logits.shape == (2, length, 32)
            torch.testing.assert_close(logits, want_logits, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(loss, want_loss, rtol=1e-5, atol=1e-5)
    assert _settled()["front_half"] == 1
    assert _settled()["specializations"] == 2  # buckets 8 and 16
    assert buckets.stats()["padded_calls"] == 2 and buckets.stats()["exact_calls"] == 1


def _first_cache_update(x):
    keys = torch.tensor([], dtype=x.dtype)  # a key/value cache before its first update
    keys = torch.cat([keys, x * 2], dim=-2)
    return keys.softmax(-2) + 1


def test_a_slice_scatter_over_a_whole_padded_dimension_or_across_it_is_padded():
    compiled = torch.compile(_scatters, backend="neuron", options={"buckets": [8, 16]})
    with torch.no_grad():
        for length in (5, 9):
            x = _marked(torch.randn(2, length, 3), 1)
            torch.testing.assert_close(compiled(x), _scatters(x), rtol=1e-5, atol=1e-6)
    assert buckets.stats()["refusals"] == 0 and buckets.stats()["padded_calls"] == 2


def test_a_concatenation_onto_an_empty_tensor_is_padded():
    compiled = torch.compile(_first_cache_update, backend="neuron", options={"buckets": [8, 16]})
    with torch.no_grad():
        for length in (5, 9, 7):
            x = _marked(torch.randn(2, length, 3), 1)
            torch.testing.assert_close(compiled(x), _first_cache_update(x), rtol=1e-5, atol=1e-6)
    assert buckets.stats()["refusals"] == 0 and buckets.stats()["padded_calls"] == 3
    assert _settled()["specializations"] == 2  # buckets 8 and 16


def _step_keeping(weight, x, keep):
    loss = (x @ weight)[:, -keep:].pow(2).sum()  # keep=0: the whole length
    loss.backward()
    return loss


def test_an_int_argument_pinned_to_a_value_is_padded_forward_and_backward():
    """transformers' ``logits_to_keep=0``: an int Dynamo makes symbolic that no tensor can
    carry is a constant of the program (one per value), so the graphs are still padded;
    the backward's slice_scatter over the whole length is a copy."""
    torch.manual_seed(0)
    reference = torch.randn(6, 6, requires_grad=True)
    weight = reference.detach().clone().requires_grad_(True)
    compiled = torch.compile(
        _step_keeping, backend="neuron", dynamic=True, options={"buckets": [8, 16]}
    )
    for length in (5, 7, 12):
        x = torch.randn(2, length, 6)
        weight.grad = reference.grad = None
        loss = compiled(weight, x, 0)
        torch.testing.assert_close(loss, _step_keeping(reference, x, 0), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(weight.grad, reference.grad, rtol=1e-5, atol=1e-6)
    stats = buckets.stats()
    assert stats["bucketed_graphs"] == 2 and stats["refusals"] == 0
    assert stats["padded_calls"] == 6  # each length, forward and backward


def _flip(x):
    return torch.flip(x, [1]) * 2


def _scatter_into_part(x):
    return torch.slice_scatter(x, torch.ones(2, 2, 3), dim=1, start=0, end=2) * 2


def _scatters(x):
    whole = torch.slice_scatter(torch.zeros_like(x), x * 2, dim=1)  # a copy
    across = torch.slice_scatter(x, x[..., :1] + 1, dim=2, start=1, end=2)  # not padded
    return whole + across


def _size_as_value(x):
    return x.sum(1) / x.shape[1]


def _pad_at_start(x):
    return F.pad(x, (0, 0, 1, 0))[:, 1:] * 2


def _pad_read_whole(x):
    return F.pad(x, (0, 0, 0, 1)).sum(1)


@pytest.mark.parametrize(
    "function, reason",
    [
        (_flip, r"aten\.flip\.default .* along a padded dimension"),
        (
            _scatter_into_part,
            r"slice_scatter\.default .* writes over a part only along a padded dimension",
        ),
        (_size_as_value, r"uses the size s\d+ as a value"),
        (_pad_at_start, r"constant_pad_nd\.default .* pads along a padded dimension"),
        (_pad_read_whole, r"constant_pad_nd\.default .* pads along a padded dimension"),
    ],
)
def test_refused_graph_warns_its_reason_and_stays_exact(function, reason):
    compiled = torch.compile(function, backend="neuron", options={"buckets": [8, 16]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            for length in (5, 9):
                x = _marked(torch.randn(2, length, 3), 1)
                torch.testing.assert_close(compiled(x), function(x), rtol=1e-5, atol=1e-5)
    messages = [str(w.message) for w in caught if "not padded to buckets" in str(w.message)]
    assert len(messages) == 1
    assert re.search(reason, messages[0]), messages[0]
    assert buckets.stats()["refusals"] == 1
    assert buckets.stats()["padded_calls"] == 0
    assert _settled()["specializations"] == 2  # exact sizes, one each


def test_numeric_compiles_bounded_by_the_buckets():
    def scaled(x):
        return (x * 2).sum(-1) + 1

    compiled = torch.compile(scaled, backend="neuron", options={"buckets": [8, 16, 32]})
    lengths = (3, 5, 7, 8, 10, 13, 16, 19, 24, 31)
    with torch.no_grad():
        for length in lengths:
            x = _marked(torch.randn(length, 4), 0)
            out = compiled(x)
            assert out.shape == (length,)
            torch.testing.assert_close(out, scaled(x))
    assert _settled()["front_half"] == 1
    assert _settled()["specializations"] == 3  # 10 lengths, 3 buckets
    assert buckets.stats()["padded_calls"] + buckets.stats()["exact_calls"] == len(lengths)


def test_a_training_graph_with_named_buckets_pads_and_is_exact():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    compiled = torch.compile(model, backend="neuron", options={"buckets": [8]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = _marked(torch.randn(5, 4), 0)
        compiled(x).square().sum().backward()
    got = model.weight.grad.clone()
    model.weight.grad = None
    model(x).square().sum().backward()
    torch.testing.assert_close(got, model.weight.grad, rtol=1e-5, atol=1e-5)
    assert buckets.stats()["refusals"] == 0 and buckets.stats()["padded_calls"] == 2


class _TinyLM(nn.Module):
    """Embedding, a linear head, and cross-entropy over flatten(0, 1) of the logits: the
    forward saves activations whose batch and length are one merged dimension."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.head = nn.Linear(16, 32)

    def forward(self, tokens):
        logits = self.head(torch.tanh(self.embed(tokens)))
        return F.cross_entropy(logits.flatten(0, 1), tokens.flatten())


def test_a_training_step_with_merged_dimensions_is_padded_and_exact():
    torch.manual_seed(0)
    model = _TinyLM()
    reference = _TinyLM()
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    specialized = []
    for batch, length in ((2, 5), (3, 7), (2, 3), (3, 8), (2, 6)):
        tokens = torch.randint(0, 32, (batch, length))
        loss = compiled(tokens)
        loss.backward()
        want = reference(tokens)
        want.backward()
        torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6)
        for got, ref in zip(model.parameters(), reference.parameters()):
            # the embedding's gradient is an accumulating index_put over padded tokens
            torch.testing.assert_close(got.grad, ref.grad, rtol=1e-4, atol=1e-6)
            got.grad = ref.grad = None
        specialized.append(_settled()["specializations"])
    stats = buckets.stats()
    assert stats["bucketed_graphs"] == 2 and stats["refusals"] == 0
    # (2, 6) runs at (2, 6), chosen for (2, 5): forward and backward compile nothing
    assert specialized[-1] == specialized[-2]


def test_a_training_step_on_the_device_is_padded_and_exact():
    # the masks' traced values live on the inputs' device (they were CPU tensors once,
    # and every masked graph of neuron tensors was silently run unpadded)
    torch.manual_seed(0)
    model = _TinyLM()
    reference = _TinyLM()
    reference.load_state_dict(model.state_dict())
    model.to("neuron")
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    for batch, length in ((2, 5), (3, 7), (2, 6)):
        tokens = torch.randint(0, 32, (batch, length))
        loss = compiled(tokens.to("neuron"))
        loss.backward()
        want = reference(tokens)
        want.backward()
        torch.testing.assert_close(loss.cpu(), want, rtol=1e-5, atol=1e-6)
        for got, ref in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(got.grad.cpu(), ref.grad, rtol=1e-4, atol=1e-6)
            got.grad = ref.grad = None
    stats = buckets.stats()
    assert stats["bucketed_graphs"] == 2 and stats["refusals"] == 0


def test_a_plain_index_put_along_a_padded_index_is_refused():
    def write(index):
        values = index.unsqueeze(1).float().expand(-1, 3) + 1.0
        return torch.zeros(16, 3).index_put((index,), values)

    compiled = torch.compile(write, backend="neuron", options={"buckets": [8]})
    index = _marked(torch.tensor([1, 4, 9, 2, 7]), 0)
    # padded positions would write row 0: refused, run at the exact size
    with pytest.warns(UserWarning, match="writes by data"):
        got = compiled(index)
    torch.testing.assert_close(got, write(index))


def test_an_accumulating_index_put_of_broadcast_values_is_refused():
    def count(index):
        return torch.zeros(16).index_put((index,), torch.tensor(1.0), accumulate=True)

    compiled = torch.compile(count, backend="neuron", options={"buckets": [8]})
    index = _marked(torch.tensor([1, 4, 9, 2, 4]), 0)
    # a padded index would add the broadcast 1.0 to row 0 again: refused, exact
    with pytest.warns(UserWarning, match="broadcast over the indices"):
        got = compiled(index)
    torch.testing.assert_close(got, count(index))


def _next_token_loss(weight, hidden, labels):
    """transformers' causal-LM loss: labels shifted by one, the last position ignored."""
    logits = (hidden @ weight).float()
    shifted = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), shifted.view(-1))


def test_labels_shifted_by_a_pad_at_the_end_are_padded_and_exact():
    # the pad's value must land at the true end of each length, not after the padding:
    # at lengths inside a bucket the last label would otherwise be a padding position
    torch.manual_seed(0)
    weight = torch.randn(8, 11, requires_grad=True)
    compiled = torch.compile(_next_token_loss, backend="neuron", options={"buckets": [8, 16]})
    for length in (5, 7, 12, 8):
        hidden = _marked(torch.randn(2, length, 8), 1)
        labels = _marked(torch.randint(0, 11, (2, length)), 1)
        loss = compiled(weight, hidden, labels)
        loss.backward()
        got = weight.grad
        weight.grad = None
        want = _next_token_loss(weight, hidden, labels)
        want.backward()
        torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(got, weight.grad, rtol=1e-5, atol=1e-6)
        weight.grad = None
    stats = buckets.stats()
    assert stats["refusals"] == 0
    assert stats["padded_calls"] == 6  # lengths 5, 7 and 12, forward and backward
    assert _settled()["specializations"] == 4  # buckets 8 and 16, forward and backward


def _token_loss(logits, labels):
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


def test_a_size_read_as_a_value_stays_exact_while_the_others_pad():
    # the vocabulary's size is read by the gather's bounds check (a value: padded, it
    # would admit out-of-range labels); it stays exact and the length still pads
    compiled = torch.compile(_token_loss, backend="neuron", options={"buckets": [8, 16]})
    with torch.no_grad():
        for length, vocab in ((5, 11), (7, 11), (12, 11), (6, 13)):
            logits = _marked(torch.randn(2, length, vocab), 1, 2)
            labels = _marked(torch.randint(0, vocab, (2, length)), 1)
            got = compiled(logits, labels)
            torch.testing.assert_close(got, _token_loss(logits, labels), rtol=1e-5, atol=1e-6)
        bad = torch.full((2, 6), 13)  # one past the vocabulary: PyTorch raises, so do we
        with pytest.raises((IndexError, RuntimeError)):
            compiled(_marked(torch.randn(2, 6, 13), 1, 2), _marked(bad, 1))
    stats = buckets.stats()
    assert stats["refusals"] == 0
    assert stats["padded_calls"] >= 4
