"""The padded route: a second shape of an eager op runs its class's program at a bucket."""

import threading
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchneuron.compiler import specialize_later
from torchneuron.device import compiled, padded


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    # compiles are counted: nothing from other tests' caches
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCHNEURON_BUCKETS", "auto")
    compiled.forget_padded()
    padded.reset_stats()


def _step(model, opt, n, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=generator)
    y = torch.arange(n) % 5
    device = next(model.parameters()).device
    opt.zero_grad()
    loss = F.cross_entropy(model(x.to(device)), y.to(device))
    loss.backward()
    opt.step()
    return loss.item()


def test_an_mlp_training_step_over_many_batch_sizes_equals_the_cpu_and_compiles_once_per_bucket():
    losses = {}
    for device in ("neuron", "cpu"):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sizes = [8, 8, 3, 5, 6, 7, 9, 11, 10, 12]
        losses[device] = [_step(model, opt, n, seed) for seed, n in enumerate(sizes)]
        if device == "neuron":
            weights = [p.detach().cpu() for p in model.parameters()]
        else:
            reference = [p.detach() for p in model.parameters()]
    assert losses["neuron"] == pytest.approx(losses["cpu"], rel=1e-5, abs=1e-6)
    for got, want in zip(weights, reference):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    stats = padded.stats()
    # every op whose batch size changed got one padded program, not one per size
    assert stats["padded_programs"] >= 8
    assert stats["padded_calls"] > 0 and stats["exact_calls"] > 0


def test_reductions_over_the_padded_axis_are_masked():
    for n in (6, 6, 5, 7, 9, 4):
        x = torch.randn(n, 3) - 2.0  # all negative: a zero pad would win a max
        device_x = x.to("neuron")
        torch.testing.assert_close(device_x.sum(0).cpu(), x.sum(0))
        torch.testing.assert_close(device_x.amax(0).cpu(), x.amax(0))
        torch.testing.assert_close(device_x.mean(0).cpu(), x.mean(0))
        torch.testing.assert_close(F.softmax(device_x, 0).cpu(), F.softmax(x, 0))
    assert padded.stats()["padded_calls"] > 0


def test_checks_stay_in_a_padded_program():
    for n in (6, 6, 5):
        scores = torch.randn(n, 4)
        target = torch.arange(n) % 4
        F.nll_loss(scores.to("neuron"), target.to("neuron")).item()
    assert padded.stats()["padded_programs"] >= 1
    bad = torch.tensor([0, 1, 9, 2, 3])
    with pytest.raises(RuntimeError, match="out of bounds"):
        F.nll_loss(torch.randn(5, 4).to("neuron"), bad.to("neuron")).item()


def test_mismatched_sizes_still_get_pytorchs_error():
    for n in (6, 6, 5):
        a = torch.randn(n, 3).to("neuron")
        (a + a).cpu()
    with pytest.raises(RuntimeError, match="size of tensor"):
        torch.randn(5, 3).to("neuron") + torch.randn(7, 3).to("neuron")


def test_off_compiles_each_size_exactly(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_BUCKETS", "off")
    for n in (6, 6, 5, 7):
        x = torch.randn(n, 3)
        torch.testing.assert_close((x.to("neuron") * 2).cpu(), x * 2)
    assert padded.stats()["padded_programs"] == 0


def test_shape_classes_keep_the_stride_order():
    assert padded.shape_class((None, (torch.float32, torch.Size([4, 6]), (1, 4), "neuron"))) == (
        (None, (torch.float32, 2, (1, 0), "neuron")),
        ((4, 6),),
    )
    # an overlapping or gapped layout is never padded
    assert padded.shape_class((None, (torch.float32, torch.Size([4, 6]), (1, 1), "neuron"))) is None
    assert (
        padded.shape_class((None, (torch.float32, torch.Size([4, 6]), (12, 2), "neuron"))) is None
    )


def test_scatter_across_the_padded_axis_is_padded_and_along_it_is_exact():
    for n in (6, 6, 5, 7, 4):
        generator = torch.Generator().manual_seed(n)
        base = torch.randn(n, 5, generator=generator)
        index = torch.randint(0, 5, (n, 2), generator=generator)
        src = torch.randn(n, 2, generator=generator)
        device = [t.to("neuron") for t in (base, index, src)]
        torch.testing.assert_close(
            device[0].scatter(1, device[1], device[2]).cpu(), base.scatter(1, index, src)
        )
        torch.testing.assert_close(
            device[0].scatter_add(1, device[1], device[2]).cpu(),
            base.scatter_add(1, index, src),
        )
        # along the changing axis: rows move by data, never padded
        rows = torch.randint(0, n, (2, 5), generator=generator)
        torch.testing.assert_close(
            device[0].scatter_add(0, rows.to("neuron"), device[0][:2]).cpu(),
            base.scatter_add(0, rows, base[:2]),
        )
    assert padded.stats()["padded_calls"] > 0


def test_in_place_and_out_ops_write_the_sliced_value_back():
    for n in (6, 6, 5, 7, 4, 8):
        generator = torch.Generator().manual_seed(n)
        a = torch.randn(n, 3, generator=generator)
        b = torch.randn(n, 3, generator=generator)
        on_device = a.to("neuron")
        on_device.add_(b.to("neuron"), alpha=2).relu_()
        torch.testing.assert_close(on_device.cpu(), (a + 2 * b).relu())
        out = torch.empty(n, 3).to("neuron")
        torch.mul(a.to("neuron"), b.to("neuron"), out=out)
        torch.testing.assert_close(out.cpu(), a * b)
        # a view written in place: only its rows change in the base
        base = torch.zeros(n, 4).to("neuron")
        base[:, 1:].add_(b.to("neuron"))
        torch.testing.assert_close(base.cpu(), torch.cat([torch.zeros(n, 1), b], 1))
    assert padded.stats()["padded_calls"] > 0


def test_an_out_argument_of_another_shape_is_resized_by_the_exact_route():
    for n in (6, 6, 5):
        a = torch.randn(n, 3)
        out = torch.empty(0).to("neuron")
        torch.mul(a.to("neuron"), 2, out=out)
        torch.testing.assert_close(out.cpu(), a * 2)


def test_a_new_size_runs_at_a_larger_bucket_already_compiled():
    from torchneuron.compiler import dynamic

    def scaled(n):
        x = torch.randn(n, 7)  # a width no other test uses: nothing specialized before
        torch.testing.assert_close((x.to("neuron") * 2 + 1).cpu(), x * 2 + 1)

    for n in (8, 8, 20):  # 20: the class's padded program, at bucket 24
        scaled(n)
    specialize_later.drain()  # bucket 24 compiles on the background thread
    dynamic.reset_stats()
    for n in (7, 9, 13, 22):  # 24 holds each within 4x its size
        scaled(n)
    specialize_later.drain()
    assert dynamic.stats()["specializations"] == 0
    scaled(5)  # 24 is 4.8x 5: its own bucket, 6, for each of the two ops
    specialize_later.drain()
    assert dynamic.stats()["specializations"] == 2


def test_shapes_met_in_one_round_are_not_a_change_of_size():
    a = torch.randn(8, 16).to("neuron")
    w1, w2 = torch.randn(16, 32).to("neuron"), torch.randn(16, 48).to("neuron")
    for _ in range(2):  # twice inside one round: as a model's layers in its first step
        a @ w1
    a @ w2  # another layer's weight: compiled exactly, not padded
    assert padded.stats()["padded_programs"] == 0
    (a @ w2).cpu()  # the host waits for results: the round ends
    b = torch.randn(5, 16)
    torch.testing.assert_close((b.to("neuron") @ w1).cpu(), b @ w1.cpu())  # a new batch size
    assert padded.stats()["padded_programs"] == 1


def _mlp_on(device, hidden):
    # a hidden width per test: no exact program of another test's shapes is reused
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, hidden), nn.ReLU(), nn.Linear(hidden, 5)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def test_a_new_bucket_runs_interpreted_until_its_compile_is_done():
    sizes = [8, 8, 20, 20, 21]  # 20 and 21: bucket 24, new, then compiled in the background
    losses = {}
    built_before = specialize_later.stats()["built"]
    for device in ("neuron", "cpu"):
        model, opt = _mlp_on(device, 17)
        losses[device] = []
        for seed, n in enumerate(sizes):
            losses[device].append(_step(model, opt, n, seed))
            if device == "neuron" and n == 20:
                specialize_later.drain()
        if device == "neuron":
            weights = [p.detach().cpu() for p in model.parameters()]
            stats = padded.stats()
            built = specialize_later.stats()["built"] - built_before
        else:
            reference = [p.detach() for p in model.parameters()]
    assert losses["neuron"] == pytest.approx(losses["cpu"], rel=1e-5, abs=1e-6)
    for got, want in zip(weights, reference):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    # the first step at 20 ran its ops interpreted; after the build, 20 and 21 ran compiled
    assert stats["interpreted_entries"] >= 8
    assert 0 < stats["interpreted_calls"] <= stats["interpreted_entries"]
    assert stats["padded_calls"] > stats["interpreted_calls"]
    # one build per op's bucket 24 (signatures that share one while it builds share it)
    assert 8 <= built <= stats["interpreted_entries"]


@pytest.mark.parametrize("switch", ["variable", "deterministic"])
def test_a_new_bucket_compiles_at_once_when_the_interpreter_is_off(switch, monkeypatch):
    if switch == "variable":
        monkeypatch.setenv("TORCHNEURON_INTERPRET", "0")
    else:
        monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: True)
    model, opt = _mlp_on("neuron", 18 if switch == "variable" else 19)
    for seed, n in enumerate([8, 8, 20]):
        _step(model, opt, n, seed)
    stats = padded.stats()
    assert stats["padded_calls"] > 0
    assert stats["interpreted_entries"] == stats["interpreted_calls"] == 0


def test_a_call_the_interpreter_refuses_runs_compiled(monkeypatch):
    from torchneuron.runtime import interpreter

    def refuse(self, inputs):
        raise interpreter.Uninterpretable("a value the interpreter leaves to the compiled program")

    monkeypatch.setattr(interpreter.InterpretedProgram, "run", refuse)
    for n in (8, 8, 20):
        x = torch.randn(n, 11)
        torch.testing.assert_close((x.to("neuron").exp() * 3).cpu(), x.exp() * 3)
    stats = padded.stats()
    assert stats["interpreted_entries"] == stats["interpreter_refusals"] == 2
    assert stats["interpreted_calls"] == 0


def test_a_bucket_whose_build_fails_warns_stays_right_and_is_not_built_again(monkeypatch):
    from torchneuron.compiler import dynamic_program, specialize_later

    real = dynamic_program.DynamicProgram.loaded

    def failing(self, shapes, core=0):
        if threading.current_thread().name == "torchneuron-specialize":
            raise MemoryError("no room for the specialization")
        return real(self, shapes, core)

    monkeypatch.setattr(dynamic_program.DynamicProgram, "loaded", failing)
    failed_before = specialize_later.stats()["failed"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (8, 8, 20, 20, 20, 22):
            x = torch.randn(n, 13)
            torch.testing.assert_close((x.to("neuron") * 3).cpu(), x * 3)
            specialize_later.drain()
    failures = specialize_later.stats()["failed"] - failed_before
    assert failures == 1  # bucket 24 once: 22's signature compiled on its own thread
    assert any("did not compile" in str(w.message) for w in caught)
    stats = padded.stats()
    assert stats["interpreted_entries"] == 1 and stats["interpreted_calls"] == 3
