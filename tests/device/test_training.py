"""Training on the neuron device matches CPU: autograd, optimizers, state_dict, autocast."""

from __future__ import annotations

import io

import pytest
import torch

from torchneuron.zoo import ZOO

OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-2, foreach=False),
    "adamw_foreach": lambda params: torch.optim.AdamW(params, lr=1e-2, foreach=True),
}


def train(name: str, optimizer: str, device: str, steps: int = 20):
    entry = ZOO[name]
    model = entry.build().to(device)
    inputs = tuple(t.to(device) for t in entry.example_inputs())
    opt = OPTIMIZERS[optimizer](model.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = entry.loss(model(*inputs), inputs)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, opt, losses


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_mlp_trains_like_cpu(optimizer):
    import torchneuron

    model, _, neuron_losses = train("mlp", optimizer, "neuron")
    _, _, cpu_losses = train("mlp", optimizer, "cpu")
    assert neuron_losses[-1] < neuron_losses[0]
    torch.testing.assert_close(neuron_losses, cpu_losses, rtol=1e-4, atol=1e-6)
    assert all(
        p.device.type == "neuron" and p.grad.device.type == "neuron" for p in model.parameters()
    )
    assert torchneuron.get_fallback_ops() == [] or all(
        "backward" not in op for op in torchneuron.get_fallback_ops()
    )


def test_gpt_block_trains_like_cpu():
    model, opt, neuron_losses = train("gpt", "adamw_foreach", "neuron")
    _, _, cpu_losses = train("gpt", "adamw_foreach", "cpu")
    torch.testing.assert_close(neuron_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    # state_dicts (model and optimizer) round-trip through torch.save on the device
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    fresh = ZOO["gpt"].build().to("neuron")
    fresh.load_state_dict(state["model"])
    idx = ZOO["gpt"].example_inputs()[0].to("neuron")
    torch.testing.assert_close(fresh(idx).cpu(), model(idx).detach().cpu())
    fresh_opt = torch.optim.AdamW(fresh.parameters(), lr=1e-2, foreach=True)
    fresh_opt.load_state_dict(state["opt"])
    first_moment = next(iter(fresh_opt.state.values()))["exp_avg"]
    assert first_moment.device.type == "neuron"


def test_backward_runs_on_the_device():
    from torchneuron.device import compiled

    x = torch.randn(4, 3, device="neuron", requires_grad=True)
    (x.tanh() * 2).sum().backward()
    assert x.grad.device.type == "neuron"
    torch.testing.assert_close(x.grad.cpu(), 2 * (1 - x.detach().cpu().tanh() ** 2))
    names = {str(key[0]) for key in compiled.cache.keys()}
    assert "aten.tanh_backward.default" in names


def test_autocast_bfloat16():
    linear = torch.nn.Linear(8, 4).to("neuron")
    x = torch.randn(2, 8, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        out = linear(x)
        softmax = torch.softmax(out, dim=-1)
    assert out.dtype == torch.bfloat16
    assert softmax.dtype == torch.float32
    expected = torch.nn.functional.linear(
        x.cpu().bfloat16(),
        linear.weight.detach().cpu().bfloat16(),
        linear.bias.detach().cpu().bfloat16(),
    )
    torch.testing.assert_close(out.cpu().float(), expected.float(), rtol=2e-2, atol=2e-2)
    out.float().sum().backward()
    assert linear.weight.grad.dtype == torch.float32


def test_batch_norm_updates_running_statistics_on_the_device():
    # native_batch_norm mutates running_mean/var without declaring it in its schema.
    import copy

    torch.manual_seed(0)
    cpu_bn = torch.nn.BatchNorm2d(3)
    device_bn = copy.deepcopy(cpu_bn).to("neuron")
    for step in range(3):
        x = torch.randn(4, 3, 5, 5) + step
        torch.testing.assert_close(device_bn(x.to("neuron")).cpu(), cpu_bn(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(device_bn.running_mean.cpu(), cpu_bn.running_mean)
    torch.testing.assert_close(device_bn.running_var.cpu(), cpu_bn.running_var)
    assert device_bn.num_batches_tracked.cpu().item() == 3
    cpu_bn.eval()
    device_bn.eval()
    x = torch.randn(2, 3, 5, 5)
    torch.testing.assert_close(device_bn(x.to("neuron")).cpu(), cpu_bn(x), atol=1e-5, rtol=1e-5)


def test_bfloat16_norms_round_once_like_cpu():
    # The whole op computes in float32 and rounds once, not every intermediate.
    torch.manual_seed(0)
    x = torch.randn(3, 6, 5, dtype=torch.bfloat16)
    w, b = torch.randn(6, dtype=torch.bfloat16), torch.randn(6, dtype=torch.bfloat16)
    F = torch.nn.functional
    cases = [
        (lambda x, w, b: F.group_norm(x, 3, w, b)),
        (lambda x, w, b: F.layer_norm(x, [5])),
        (lambda x, w, b: F.instance_norm(x)),
        (lambda x, w, b: F.batch_norm(x, torch.zeros_like(w), torch.ones_like(w), w, b)),
        (lambda x, w, b: torch.logsumexp(x, dim=1)),
    ]
    for case in cases:
        # float32 arithmetic rounded once (PyTorch's CPU kernels round some steps
        # earlier, e.g. instance_norm and logsumexp, and differ from this by an ulp)
        want = case(x.float(), w.float(), b.float()).to(torch.bfloat16)
        got = case(x.to("neuron"), w.to("neuron"), b.to("neuron")).cpu()
        assert torch.equal(got, want), case
    # an explicit dtype equal to the input's still accumulates in float32 (masked ops do this)
    big = torch.randn(4, 500, dtype=torch.bfloat16) * 8
    got = torch.sum(big.to("neuron").square(), 1, dtype=torch.bfloat16).cpu()
    # (the squares are rounded by their own op, then summed in float32 and rounded once)
    assert torch.equal(got, big.square().float().sum(1).to(torch.bfloat16))


def test_bfloat16_convolution_adds_its_bias_before_rounding():
    torch.manual_seed(0)
    x = torch.randn(2, 16, 9, dtype=torch.bfloat16)
    w = torch.randn(8, 16, 3, dtype=torch.bfloat16)
    b = (torch.randn(8) * 20).to(torch.bfloat16)  # large: cancels the convolution's sums
    want = torch.nn.functional.conv1d(x.float(), w.float(), b.float())
    got = torch.nn.functional.conv1d(x.to("neuron"), w.to("neuron"), b.to("neuron")).cpu()
    assert got.dtype == torch.bfloat16
    # one rounding of the float32 result: within half a bfloat16 ulp (plus float32 noise)
    ulp = torch.finfo(torch.bfloat16).eps * want.abs().clamp_min(2.0**-126)
    assert ((got.float() - want).abs() <= 0.5 * ulp + 1e-5).all()
