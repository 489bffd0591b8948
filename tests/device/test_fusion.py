"""Adaptive eager execution (torchneuron.device.fusion): fused chains equal op-by-op runs.

A chain's structure runs launch by launch the first time, is compiled and verified
the second, and runs fused from the third; each test drives a chain through those
runs and compares the fused run with the same chain run with fusion off, bit for bit.
"""

from __future__ import annotations

import pytest
import torch

from torchneuron import settings
from torchneuron.device import compiled, fusion, streams

DEVICE = "neuron"


@pytest.fixture(autouse=True)
def fuser(monkeypatch):
    monkeypatch.delenv(settings.EAGER_FUSION, raising=False)
    # padded calls run outside chains: these tests count chains of exact programs
    monkeypatch.setenv(settings.BUCKETS, "off")
    compiled.forget_padded()
    previous = streams._fuser
    # Fusion works on queued launches: these tests run asynchronously even when the
    # suite runs with NEURON_LAUNCH_BLOCKING=1 (which queues nothing, so fuses nothing).
    streams.set_launch_blocking(False)
    fusion.install()
    fusion.clear()
    yield
    torch.neuron.synchronize()
    streams.install_fuser(previous)
    streams.set_launch_blocking(None)
    fusion.clear()


def bits(tensor: torch.Tensor) -> bytes:
    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def unfused(monkeypatch, chain, *inputs) -> list[bytes]:
    monkeypatch.setenv(settings.EAGER_FUSION, "0")
    try:
        return [bits(t) for t in chain(*inputs)]
    finally:
        monkeypatch.delenv(settings.EAGER_FUSION)


def fused(chain, first: tuple, then: tuple) -> list[bytes]:
    """``chain(*then)`` run fused: after a first sighting and a verified run on ``first``."""
    for _ in range(2):
        outputs = chain(*first)
        torch.neuron.synchronize()
    before = fusion.stats()["fused_runs"]
    outputs = chain(*then)
    result = [bits(t) for t in outputs]
    counters = fusion.stats()
    assert counters["verification_failures"] == 0, counters
    assert counters["fused_runs"] > before, counters
    return result


def randn(*shape, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(dtype).to(DEVICE)


# Chains return every intermediate: the caller may hold any of them.
def float_chain(x, y):
    a = x + y
    b = a * x
    c = b.exp()
    d = c.tanh()
    e = torch.sigmoid(d) / (y.abs() + 1)
    return a, b, c, d, e


def multiply_add(x, y):
    # x * y + x: one FMA if compiled together; two roundings op by op
    a = x * y
    b = a + x
    c = b * 0.044715 + y
    return a, b, c


def gelu_by_hand(x, y):
    inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    return (0.5 * x * (1 + torch.tanh(inner)),)


def sum_at_end(x, y):
    a = x * y + x
    total = a.abs().sum()
    return a, a.exp().sum(dim=1), a.amax(), a / total, (a * a).mean()


def broadcast(x, y):
    a = x + y[0]  # (n, m) + (m,)
    b = a * y[:, :1]  # (n, m) * (n, 1)
    return a, b, b - x


def with_bools(x, y):
    positive = x > 0
    a = torch.where(positive, x, x * 0.1)
    return positive, a, a.clamp(-0.5, 0.5)


def mixed_dtypes(x, y):
    wide = x.float()  # bfloat16 -> float32
    a = wide * y.float() + 1
    return wide, a, a.to(torch.bfloat16) * x


def integers(x, y):
    a = x * y + 3
    b = (a - y).abs() >> 1
    return a, b, torch.maximum(b, x) & 0xFF


CHAINS = [
    pytest.param(float_chain, torch.float32, id="float32"),
    pytest.param(multiply_add, torch.float32, id="float32-multiply-add"),
    pytest.param(gelu_by_hand, torch.bfloat16, id="bfloat16-gelu"),
    pytest.param(float_chain, torch.float16, id="float16"),
    pytest.param(sum_at_end, torch.bfloat16, id="bfloat16-reductions"),
    pytest.param(broadcast, torch.float32, id="broadcast"),
    pytest.param(with_bools, torch.float32, id="bools"),
    pytest.param(mixed_dtypes, torch.bfloat16, id="mixed-dtypes"),
    pytest.param(integers, torch.int32, id="int32"),
]


@pytest.mark.parametrize("chain, dtype", CHAINS)
def test_a_fused_chain_gives_the_bits_of_the_unfused_chain(monkeypatch, chain, dtype):
    def inputs(seed):
        if dtype.is_floating_point:
            return randn(48, 33, dtype=dtype, seed=seed), randn(48, 33, dtype=dtype, seed=seed + 1)
        generator = torch.Generator().manual_seed(seed)
        x, y = (torch.randint(-1000, 1000, (48, 33), generator=generator) for _ in range(2))
        return x.to(dtype).to(DEVICE), y.to(dtype).to(DEVICE)

    second = inputs(10)
    assert fused(chain, inputs(0), second) == unfused(monkeypatch, chain, *second)


def test_new_scalar_values_reuse_the_fused_program_and_stay_exact(monkeypatch):
    def chain(x, scale, shift):
        a = x * scale
        return a, a + shift, (a + shift).exp()

    x = randn(40, 7)
    result = fused(chain, (x, 0.3, 1.0), (x, 1.7, -2.5))
    assert result == unfused(monkeypatch, chain, x, 1.7, -2.5)
    assert fusion.stats()["programs"] == 1


def test_a_structure_seen_once_is_not_compiled():
    x = randn(8, 8)
    (x * 2 + 1).exp().cpu()
    counters = fusion.stats()
    assert counters["chains"] == 1
    assert counters["programs"] == 0


def test_reading_a_value_ends_the_chain():
    x = randn(8, 8)
    a = x * 2
    b = a + 1
    assert fusion._fuser.held(x.device.index) == 2
    b[0, 0].item()
    assert fusion._fuser.held(x.device.index) == 0
    c = b.exp()
    str(c)  # printing reads the values
    assert fusion._fuser.held(x.device.index) == 0
    d = c - 1
    e = d * d
    assert fusion._fuser.held(x.device.index) == 2
    e.cpu()
    assert fusion._fuser.held(x.device.index) == 0


def test_an_op_reading_a_view_of_an_intermediate_starts_a_new_chain(monkeypatch):
    def chain(x):
        a = x * 2
        b = a.t() + 1  # a transposed view of a, not a itself
        c = b[1:] * 3  # a view at an offset
        return a, b, c

    x = randn(6, 6)
    reference = unfused(monkeypatch, chain, x)
    outputs = chain(x)
    assert fusion._fuser.held(x.device.index) == 1  # each view began a chain of its own
    assert [bits(t) for t in outputs] == reference


def test_an_in_place_op_ends_the_chain_and_keeps_its_order(monkeypatch):
    def chain(x):
        a = x + 1
        b = a * 2
        a.mul_(3)  # not fusible: the held (add, mul) run first
        return a, b, a + b

    x = randn(5, 5)
    reference = unfused(monkeypatch, chain, x)
    assert [bits(t) for t in chain(x)] == reference


def test_a_chain_is_cut_at_the_cap(monkeypatch):
    monkeypatch.setattr(fusion, "CHAIN_CAP", 4)
    x = randn(4, 4)
    for _ in range(10):
        x = x + 1
    x.cpu()
    assert fusion.stats()["chains"] == 3  # 4 + 4 + 2


@pytest.mark.parametrize("switch", ["deterministic", "environment"])
def test_fusion_turns_off(monkeypatch, switch):
    if switch == "environment":
        monkeypatch.setenv(settings.EAGER_FUSION, "0")
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(switch == "deterministic")
    try:
        x = randn(8, 8)
        for _ in range(3):
            (x * 2 + 1).cpu()
        assert fusion._fuser.held(x.device.index) == 0
        counters = fusion.stats()
        assert counters["chains"] == counters["programs"] == counters["fused_runs"] == 0
    finally:
        torch.use_deterministic_algorithms(was_deterministic)


def test_a_structure_that_fails_verification_is_never_fused(monkeypatch):
    def spoil(results):
        results[-1] = results[-1] + 1

    monkeypatch.setattr(fusion, "verification_hook", spoil)
    x = randn(8, 8)
    for _ in range(2):
        result = (x * 2 + 1).cpu()
    monkeypatch.setattr(fusion, "verification_hook", None)
    for _ in range(3):
        again = (x * 2 + 1).cpu()
    assert torch.equal(result, again)  # what was returned is launch-by-launch's result
    counters = fusion.stats()
    assert counters["verification_failures"] == 1
    assert counters["fused_runs"] == 0
    (row,) = counters["structures"]
    assert row["state"] == "refused"
    assert row["ops"] == ["aten::mul.Tensor", "aten::add.Tensor"]


def test_the_profiler_and_stats_name_fused_programs_and_their_ops():
    from torchneuron.profiler import profile

    x = randn(8, 8)
    for _ in range(2):
        (x * 2 + 1).exp().cpu()
    with profile() as prof:
        (x * 2 + 1).exp().cpu()
    names = [row.name for row in prof.key_averages()]
    assert "fused.mul.add.exp" in names
    (row,) = fusion.stats()["structures"]
    assert row["ops"] == ["aten::mul.Tensor", "aten::add.Tensor", "aten::exp"]
    assert row["state"] == "fused" and row["runs"] == 1


def test_temporaries_only_the_chain_reads_are_not_written():
    x = randn(16, 16)
    for _ in range(4):  # (the first run's compiles may hold a temporary for a while)
        y = 0.5 * x * (1 + torch.tanh(x * 0.7))
        result = y.cpu()
    (row,) = [row for row in fusion.stats()["structures"] if row["runs"]]
    assert (row["outputs_written"], row["outputs"]) == (1, 5)  # y alone
    expected = 0.5 * x.cpu() * (1 + torch.tanh(x.cpu() * 0.7))
    torch.testing.assert_close(result, expected)


def test_an_intermediate_a_view_keeps_is_written(monkeypatch):
    def chain(x):
        a = x * 2
        view = a[1:]  # holds a's memory after the name a is gone
        b = (a + 1).exp()
        del a
        return view, b

    x = randn(6, 6)
    second = randn(6, 6, seed=3)
    assert fused(chain, (x,), (second,)) == unfused(monkeypatch, chain, second)


def test_an_output_autograd_saved_is_written(monkeypatch):
    def chain(x):
        w = x.detach().requires_grad_()
        e = (w * 2).exp()  # exp's backward reads its saved result
        loss = (e * 3).sum()
        del e
        loss.backward()
        return (w.grad,)

    x = randn(6, 6)
    second = randn(6, 6, seed=3)
    result = fused(chain, (x,), (second,))
    assert result == unfused(monkeypatch, chain, second)


def test_an_intermediate_behind_a_weak_reference_is_written():
    import weakref

    x = randn(8, 8)
    for _ in range(3):
        a = x * 2
        reference = weakref.ref(a)
        del a
        b = reference() + 1
        b.cpu()
    rows = fusion.stats()["structures"]
    assert rows and all(row["outputs_written"] == row["outputs"] for row in rows)


def test_a_launch_on_another_stream_ends_the_chain(monkeypatch):
    def chain(x):
        a = x * 2
        b = a + 1
        with torch.neuron.stream(torch.neuron.Stream()):
            c = b.exp()  # b is read on another stream: the held (mul, add) go first
            d = c - 1
        return a, b, c, d

    x = randn(5, 5)
    reference = unfused(monkeypatch, chain, x)
    outputs = chain(x)
    assert fusion._fuser.held(x.device.index) == 2  # (exp, sub), on the side stream
    assert fusion.stats()["chains"] == 1
    assert [bits(t) for t in outputs] == reference


def test_tensors_reshaped_in_place_between_ops_are_read_as_they_are_then(monkeypatch):
    def chain(x):
        x = x.clone()
        a = x * 2  # (4, 6)
        x.unsqueeze_(0)  # the outside tensor, (1, 4, 6) from here on
        a.t_()  # the intermediate, (6, 4) from here on
        b = x + 1
        c = a * 3
        return a, b, c

    x = randn(4, 6)
    second = randn(4, 6, seed=3)
    for _ in range(2):
        chain(x)
    outputs = chain(second)
    assert [bits(t) for t in outputs] == unfused(monkeypatch, chain, second)


def test_an_intermediate_a_detached_alias_keeps_is_written(monkeypatch):
    def chain(x):
        a = x * 2
        alias = a.detach()  # shares a's memory, but is neither a view of it nor a itself
        b = (a + 1).exp()
        del a
        return alias, b

    x = randn(6, 6)
    second = randn(6, 6, seed=3)
    assert fused(chain, (x,), (second,)) == unfused(monkeypatch, chain, second)
