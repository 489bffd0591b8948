"""Mixture of experts (torchneuron.zoo.MoELM), natively, against the CPU.

Random routing changes every expert's token count at every step: the ``gather``
dispatch (``torch.where`` per expert) compiles its forward once at its bounds and its
backward once at the forward's bounds; the ``grouped`` dispatch (``_grouped_mm``) has
static shapes. The compiled step includes the optimizer's multi-tensor update.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from torchneuron.compiler import bounded, dynamic
from torchneuron.zoo import MoELM


def _settled() -> dict:
    """``dynamic.stats()`` once the background thread has built what calls submitted
    (a new shape runs interpreted while it specializes there)."""
    from torchneuron.compiler import specialize_later

    specialize_later.drain()
    return dynamic.stats()


@pytest.fixture(autouse=True)
def _fresh(native_compile):
    bounded.reset_stats()
    dynamic.reset_stats()
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        yield


def _step(model, tokens, optimizer):
    logits, balance = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    optimizer.zero_grad()
    (loss + 0.01 * balance).backward()
    optimizer.step()
    return loss.detach(), balance.detach()


def _train(dispatch: str, steps: int, compiled: bool, optimizer=torch.optim.SGD, layers=2, **kw):
    torch.manual_seed(0)
    on_cpu = MoELM(dispatch=dispatch, layers=layers)
    on_device = MoELM(dispatch=dispatch, layers=layers)
    on_device.load_state_dict(on_cpu.state_dict())
    on_device.to("neuron")
    cpu_opt = optimizer(on_cpu.parameters(), lr=0.05, **kw)
    device_opt = optimizer(on_device.parameters(), lr=0.05, **kw)
    step = torch.compile(_step, backend="neuron") if compiled else _step
    generator = torch.Generator().manual_seed(1)
    pairs = []
    for _ in range(steps):
        tokens = torch.randint(0, 128, (4, 9), generator=generator)
        got = step(on_device, tokens.to("neuron"), device_opt)
        want = _step(on_cpu, tokens, cpu_opt)
        pairs.append((torch.stack(got).cpu(), torch.stack(want)))
    weights = [
        (p.detach().cpu(), q.detach()) for p, q in zip(on_device.parameters(), on_cpu.parameters())
    ]
    return pairs, weights


def test_gather_dispatch_trains_like_the_cpu_with_one_compile_each_way():
    pairs, weights = _train("gather", steps=3, compiled=True)
    for got, want in pairs:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for got, want in weights:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert bounded.stats()["bounded_graphs"] == 1  # the forward, whatever the counts
    stats = _settled()
    assert stats["specializations"] == 1 and stats["per_shape_front_half"] == 0  # backward


def test_grouped_dispatch_trains_like_the_cpu():
    pairs, _ = _train("grouped", steps=3, compiled=True)
    for got, want in pairs:  # bfloat16 grouped products, rounded once here
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


def test_moe_in_eager_mode_with_adam_equals_the_cpu():
    # Adam's multi-tensor (foreach) update on neuron parameters, eagerly
    pairs, weights = _train("gather", steps=1, compiled=False, optimizer=torch.optim.Adam, layers=1)
    for got, want in pairs:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for got, want in weights:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_a_compiled_adam_step_lowers_its_foreach_update_natively():
    params = [torch.randn(5, 3, requires_grad=True), torch.randn(7, requires_grad=True)]
    on_device = [p.detach().to("neuron").requires_grad_() for p in params]
    for p, q in zip(params, on_device):
        p.grad = torch.randn_like(p)
        q.grad = p.grad.to("neuron")
    cpu_opt = torch.optim.Adam(params, lr=0.1, foreach=True, weight_decay=0.01)
    # capturable: the step counts live with the parameters (a graph returns its results
    # on one device; uncapturable Adam keeps them on the CPU)
    device_opt = torch.optim.Adam(
        on_device, lr=0.1, foreach=True, weight_decay=0.01, capturable=True
    )
    step = torch.compile(device_opt.step, backend="neuron")
    for _ in range(3):
        cpu_opt.step()
        step()
    for p, q in zip(params, on_device):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-5, atol=1e-6)
