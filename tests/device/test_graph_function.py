"""A compiled graph's outputs that are its inputs (or views of them) are the inputs."""

import torch

from torchneuron.device.graph_function import split_input_outputs


def test_a_training_step_whose_forward_saves_a_weight_gives_eagers_gradients():
    weight = torch.nn.Parameter(torch.randn(6, 4))
    x = torch.randn(3, 6, requires_grad=True)
    compiled = torch.compile(lambda a: (a @ weight).relu().sum(), backend="neuron")
    loss = compiled(x)
    loss.backward()
    expected_x = x.detach().clone().requires_grad_(True)
    expected_w = weight.detach().clone().requires_grad_(True)
    (expected_x @ expected_w).relu().sum().backward()
    torch.testing.assert_close(x.grad, expected_x.grad)
    torch.testing.assert_close(weight.grad, expected_w.grad)


def test_outputs_that_are_inputs_or_their_views_are_split_off():
    def f(a, b):
        return a, a.t(), (a + b).sum(), b.view(-1)

    gm = torch.fx.experimental.proxy_tensor.make_fx(f)(torch.randn(2, 3), torch.randn(2, 3))
    stripped, views = split_input_outputs(gm)
    assert sorted(views) == [0, 1, 3]
    assert views[0] == (0, ())
    assert views[1][0] == 0 and len(views[1][1]) == 1
    assert views[3][0] == 1
    (output,) = stripped.graph.find_nodes(op="output")
    assert len(output.args[0]) == 1  # only the sum is computed


def test_a_graph_of_views_only_is_left_alone():
    gm = torch.fx.experimental.proxy_tensor.make_fx(lambda a: (a, a.t()))(torch.randn(2, 3))
    stripped, views = split_input_outputs(gm)
    assert stripped is gm and views == {}


def test_mutating_a_saved_weight_before_backward_is_caught_as_in_eager():
    weight = torch.nn.Parameter(torch.randn(4, 4))
    compiled = torch.compile(lambda a: (a @ weight).sum(), backend="neuron")
    loss = compiled(torch.randn(2, 4, requires_grad=True))
    with torch.no_grad():
        weight.mul_(2)
    try:
        loss.backward()
    except RuntimeError as error:
        assert "modified by an inplace operation" in str(error)
    else:  # eager raises the same error for the same program
        raise AssertionError("a weight changed in place after the forward went unnoticed")
