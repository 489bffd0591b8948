"""Random ops on ``neuron`` tensors in eager mode, tested by statistics.

Eager random ops draw on the host: the CPU kernel runs with the device
generator's state (``device.host.run_random``), so ``torch.manual_seed`` gives
the CPU's numbers. The tests run with the CPU fallback disabled.
"""

from __future__ import annotations

import pytest
import torch

from tests.random_stats import CASES, N


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.mark.parametrize("case", CASES)
def test_eager_random_op_follows_its_distribution(case):
    fn, check = CASES[case]
    samples = fn(torch.ones(N, device="neuron"))
    assert samples.device.type == "neuron"
    check(samples.cpu())


def test_eager_random_ops_repeat_under_manual_seed_and_advance_the_generator():
    torch.manual_seed(11)
    first = torch.randn(1000, device="neuron").cpu()
    second = torch.randn(1000, device="neuron").cpu()
    torch.manual_seed(11)
    assert torch.equal(torch.randn(1000, device="neuron").cpu(), first)
    assert not torch.equal(first, second)


def test_eager_random_ops_draw_the_cpu_stream_of_the_same_seed():
    torch.manual_seed(5)
    on_device = torch.nn.functional.dropout(torch.ones(100, device="neuron"), 0.5).cpu()
    torch.manual_seed(5)
    assert torch.equal(on_device, torch.nn.functional.dropout(torch.ones(100), 0.5))


def test_device_rng_state_round_trips_and_leaves_the_cpu_generator_alone():
    torch.manual_seed(2)
    cpu_state = torch.get_rng_state()
    state = torch.neuron.get_rng_state()
    assert state.device.type == "cpu" and state.dtype == torch.uint8
    first = torch.rand(10, device="neuron").cpu()
    assert torch.equal(torch.get_rng_state(), cpu_state)  # the device draw left the CPU's
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.rand(10, device="neuron").cpu(), first)


def test_explicit_device_generator_is_used_and_advanced():
    generator = torch.Generator("neuron").manual_seed(9)
    first = torch.rand(10, device="neuron", generator=generator).cpu()
    second = torch.rand(10, device="neuron", generator=generator).cpu()
    again = torch.rand(10, device="neuron", generator=torch.Generator("neuron").manual_seed(9))
    assert torch.equal(again.cpu(), first)
    assert not torch.equal(first, second)


def test_cpu_generator_for_a_device_op_is_refused_as_pytorch_does():
    with pytest.raises(RuntimeError, match="generator"):
        torch.rand(10, device="neuron", generator=torch.Generator())
