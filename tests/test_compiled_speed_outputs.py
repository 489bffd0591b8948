"""Outputs of torch.compile(backend="neuron") are the caller's tensors, with no copy made.

The compiled path hands XLA's output buffers to torch without copying them (issue 12):
these tests pin down that such tensors behave as any other, written in place included.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

from torchneuron.zoo import ZOO

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def sin_twice(x):
    return torch.sin(x) * 2, torch.cos(x)


def test_a_compiled_output_written_in_place_keeps_the_write_and_later_calls_do_not_see_it():
    x = torch.linspace(-2, 2, 24).reshape(4, 6)
    compiled = torch.compile(sin_twice, backend="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns on a tensor over read-only memory
        first, cosine = compiled(x)
        first.add_(1)
        first[0, 0] = 42.0
        second, _ = compiled(x)
    expected = torch.sin(x) * 2
    torch.testing.assert_close(second, expected)
    assert first[0, 0].item() == 42.0
    torch.testing.assert_close(first[1:], expected[1:] + 1)
    torch.testing.assert_close(cosine, torch.cos(x))
    pointers = {t.untyped_storage().data_ptr() for t in (first, second, cosine, x)}
    assert len(pointers) == 4


def test_an_output_fed_back_in_then_written_leaves_the_second_result_alone():
    compiled = torch.compile(lambda x: x * 3 + 1, backend="neuron")
    a = compiled(torch.ones(8, 8))
    b = compiled(a)
    a.zero_()
    torch.testing.assert_close(b, torch.full((8, 8), 13.0))


def test_gradients_of_the_compiled_backward_accumulate_in_place_as_in_eager():
    entry = ZOO["mlp"]
    reference = entry.build().train()
    model = copy.deepcopy(reference)
    compiled = torch.compile(model, backend="neuron")
    inputs = entry.example_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):  # no zero_grad: the second backward adds into the first's grads
            entry.loss(compiled(*inputs), inputs).backward()
            entry.loss(reference(*inputs), inputs).backward()
    for (name, p), p_ref in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, p_ref.grad, rtol=1e-3, atol=1e-5, msg=name)


def test_sgd_losses_follow_eager_when_activations_go_straight_back_to_the_backward():
    entry = ZOO["gpt"]
    reference = entry.build().train()
    model = copy.deepcopy(reference)
    compiled = torch.compile(model, backend="neuron")
    inputs = entry.example_inputs()
    losses = {}
    for key, module, fn in (("eager", reference, reference), ("neuron", model, compiled)):
        opt = torch.optim.SGD(module.parameters(), lr=0.05)
        values = []
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss = entry.loss(fn(*inputs), inputs)
            loss.backward()
            opt.step()
            values.append(loss.item())
        losses[key] = values
    assert losses["neuron"] == pytest.approx(losses["eager"], rel=1e-4, abs=1e-5)
