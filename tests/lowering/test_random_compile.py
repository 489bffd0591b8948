"""Random ops under torch.compile: sampled in the program, tested by statistics.

Every random op lowers to Philox words under a key the compiled program takes as
an input, drawn per call from the generator of the inputs' device. The tests run
with the CPU fallback disabled (a fallback would hide a missing sampler).
"""

from __future__ import annotations

import pytest
import torch

from tests.random_stats import CASES, N
from torchneuron.lowering.errors import LoweringError
from torchneuron.lowering.rules import random as random_rules


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


# Dynamo does not capture Tensor.random_ (it breaks the graph and runs it eagerly)
CAPTURED = {name: case for name, case in CASES.items() if not name.startswith("random_")}


@pytest.fixture(scope="module")
def compiled_samples():
    """Every case's samples from one compiled graph (one compilation keeps the file fast)."""
    torch._dynamo.reset()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHNEURON_NO_FALLBACK", "1")
        torch.manual_seed(0)
        everything = torch.compile(
            lambda x: {name: fn(x) for name, (fn, _) in CAPTURED.items()}, backend="neuron"
        )
        samples = everything(torch.ones(N))
    torch._dynamo.reset()
    return samples


@pytest.mark.parametrize("case", CAPTURED)
def test_compiled_random_op_follows_its_distribution(case, compiled_samples):
    _, check = CAPTURED[case]
    check(compiled_samples[case])


def test_compiled_random_ops_repeat_under_manual_seed_and_differ_between_calls(fresh_dynamo):
    compiled = torch.compile(lambda x: (torch.rand_like(x), torch.randn_like(x)), backend="neuron")
    x = torch.ones(1000)
    torch.manual_seed(7)
    first = compiled(x)
    second = compiled(x)
    torch.manual_seed(7)
    again = compiled(x)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not torch.equal(first[0], second[0])
    assert not torch.equal(first[0], first[1])  # two ops of one graph draw distinct words


def test_compiled_random_ops_on_device_follow_the_device_generator(fresh_dynamo):
    compiled = torch.compile(
        lambda x: torch.nn.functional.dropout(x, 0.5, True) + torch.randn_like(x), backend="neuron"
    )
    x = torch.ones(N, device="neuron")
    torch.manual_seed(3)
    first = compiled(x)
    state = torch.neuron.get_rng_state()
    second = compiled(x)
    torch.neuron.set_rng_state(state)
    replay = compiled(x)
    torch.manual_seed(3)
    again = compiled(x)
    assert first.device.type == "neuron"
    assert torch.equal(first.cpu(), again.cpu())
    assert torch.equal(second.cpu(), replay.cpu())
    assert not torch.equal(first.cpu(), second.cpu())


def test_compiled_factory_draw_on_device_returns_a_device_tensor_from_its_generator(
    fresh_dynamo,
):
    compiled = torch.compile(lambda: torch.randn(1000, device="neuron"), backend="neuron")
    cpu_state = torch.get_rng_state()
    torch.neuron.manual_seed(4)
    first = compiled()
    torch.neuron.manual_seed(4)
    again = compiled()
    assert first.device.type == "neuron"
    assert torch.equal(first.cpu(), again.cpu())
    assert torch.equal(torch.get_rng_state(), cpu_state)  # the key came from the device's


def test_compiled_dropout_backward_uses_the_forward_mask(fresh_dynamo):
    def step(h):
        return torch.nn.functional.dropout(h, 0.3, True)

    compiled = torch.compile(step, backend="neuron")
    h = (torch.rand(4000) + 0.5).requires_grad_()
    out = compiled(h)
    out.backward(torch.ones_like(out))
    dropped = out.detach() == 0
    assert 0.25 < dropped.double().mean().item() < 0.35
    assert (h.grad[dropped] == 0).all()
    kept_grad = h.grad[~dropped]
    assert torch.equal(kept_grad, torch.full_like(kept_grad, 1 / 0.7))
    assert torch.equal(out.detach()[~dropped], h.detach()[~dropped] * (1 / 0.7))


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_checkpointed_dropout_recomputes_the_forward_mask_in_backward(device, fresh_dynamo):
    # activation checkpointing recomputes the dropout in the backward graph from the
    # state the forward saved: the replayed words must be the forward's
    from torch.utils.checkpoint import checkpoint

    linear = torch.nn.Linear(32, 32).to(device)

    def fn(h):
        return checkpoint(
            lambda t: torch.nn.functional.dropout(linear(t) + 5, 0.5, True), h, use_reentrant=False
        )

    h = torch.randn(16, 32, device=device, requires_grad=True)
    out = torch.compile(fn, backend="neuron")(h)
    out.backward(torch.ones_like(out))
    expected = ((out != 0).float() * 2) @ linear.weight
    assert 0.3 < (out == 0).double().mean().item() < 0.7
    assert torch.allclose(h.grad.cpu(), expected.detach().cpu(), atol=1e-5)


def test_compiled_training_with_dropout_runs_natively(fresh_dynamo):
    device = "neuron"  # CPU tensors: test_compiled_dropout_backward_uses_the_forward_mask
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(32, 1)
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    compiled = torch.compile(model, backend="neuron")
    x = torch.randn(64, 8).to(device)
    y = x.sum(1, keepdim=True)
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(compiled(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses)))
    assert all(
        p.grad is not None and torch.isfinite(p.grad.cpu()).all() for p in model.parameters()
    )


def test_random_op_without_a_sampler_is_refused_not_drawn_unseeded(fresh_dynamo):
    compiled = torch.compile(lambda x: x + torch.randperm(8).float(), backend="neuron")
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as failure:
        compiled(torch.ones(8))
    assert isinstance(failure.value.inner_exception, LoweringError)


def test_freeze_rng_state_inside_a_compiled_function_does_not_trip_dynamo(fresh_dynamo):
    # OpInfo's random entries wrap their op so (wrapper_set_seed); freeze_rng_state
    # reads torch.neuron's RNG state under no_dispatch(): Dynamo must not trace that call
    from torch.testing._utils import freeze_rng_state

    def fn(x):
        with freeze_rng_state():
            torch.manual_seed(42)
            return torch.nn.functional.dropout(x, 0.5, True)

    compiled = torch.compile(fn, backend="neuron")
    first, second = compiled(torch.ones(1000)), compiled(torch.ones(1000))
    assert torch.equal(first, second)  # seeded 42 each time
    assert 0.4 < (first == 0).double().mean().item() < 0.6


def test_item_inside_a_compiled_function_on_device(fresh_dynamo):
    compiled = torch.compile(lambda x: x.sum().item() * 2, backend="neuron")
    assert compiled(torch.ones(5, device="neuron")) == 10.0


def test_philox_matches_the_random123_known_answer_and_compiles_exactly():
    # Random123's kat_vectors: philox4x32_10, counter 0, key 0
    words = random_rules.philox_words(torch.tensor([0, 0]), 4)
    assert words.tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    key = torch.tensor([0x12345678, 0xFEDCBA98])
    compiled = torch.compile(lambda k: random_rules.philox_words(k, 4099), backend="neuron")
    assert torch.equal(compiled(key), random_rules.philox_words(key, 4099))


@pytest.mark.parametrize("word", [0, 2**32 - 1])
def test_samples_of_extreme_words_stay_finite_and_in_range(word, monkeypatch):
    # the words all 0 or all 1 bits: u = 0 and the largest u below 1
    monkeypatch.setattr(
        random_rules,
        "random_bits",
        lambda size, device: torch.full(tuple(size), word, dtype=torch.int64),
    )
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16):
        x = torch.ones(4, dtype=dtype)
        u = random_rules.rand([4], dtype=dtype)
        assert ((u >= 0) & (u < 1)).all(), dtype
        samples = [
            random_rules.randn([4], dtype=dtype),
            random_rules.log_normal(x, 0.0, 1.0),
            random_rules.geometric(x, 0.3),
        ]
        if torch.finfo(dtype).max > 1e30:  # a half-precision Cauchy sample may overflow, as on CPU
            samples.append(random_rules.cauchy(x))
        for sample in samples:
            assert torch.isfinite(sample).all(), dtype
        assert (random_rules.exponential(x, 1.0) > 0).all(), dtype
    gumbel = random_rules.multinomial(torch.tensor([0.0, 1.0, 0.0]), 3, True)
    assert (gumbel == 1).all()


@pytest.mark.parametrize("weights", [[1.0, -1.0, 2.0], [0.0, 0.0, 0.0], [1.0, float("nan"), 1.0]])
def test_compiled_multinomial_of_invalid_weights_raises_as_pytorch_does(weights, fresh_dynamo):
    compiled = torch.compile(lambda w: torch.multinomial(w, 1), backend="neuron")
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor(weights), 1)
    with pytest.raises(RuntimeError):
        compiled(torch.tensor(weights))


@pytest.mark.parametrize("device", ["cpu", "neuron"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_compiled_native_dropout_not_training_is_the_identity(device, dtype, fresh_dynamo):
    # train=False draws nothing: (x, all True), as eager; it was refused as a random op
    x = torch.arange(12, dtype=dtype).reshape(3, 4)
    compiled = torch.compile(
        lambda t: torch.ops.aten.native_dropout(t, 0.5, False), backend="neuron"
    )
    output, mask = compiled(x.to(device))
    expected, expected_mask = torch.ops.aten.native_dropout(x, 0.5, False)
    assert output.device.type == device
    assert output.dtype == dtype and mask.dtype == torch.bool
    assert torch.equal(output.cpu(), expected) and torch.equal(mask.cpu(), expected_mask)


@pytest.mark.parametrize("device", ["cpu", "neuron"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_draw_from_an_explicit_generator_matches_eager_and_advances_it(
    device, dtype, fresh_dynamo
):
    # Dynamo draws from an explicit generator outside the graph: the values are eager's
    generator = torch.Generator(device)
    x = torch.zeros(4, dtype=dtype, device=device)

    def fn(t):
        return t + torch.randn(4, dtype=dtype, generator=generator, device=device)

    compiled = torch.compile(fn, backend="neuron")
    generator.manual_seed(5)
    first, second = compiled(x), compiled(x)
    compiled_state = generator.get_state()
    generator.manual_seed(5)
    assert torch.equal(first.cpu(), fn(x).cpu()) and torch.equal(second.cpu(), fn(x).cpu())
    assert torch.equal(compiled_state, generator.get_state())
    assert not torch.equal(first.cpu(), second.cpu())
