"""A compiled graph's outputs that are its inputs (or views of them) are the inputs."""

import torch

from torchneuron.compiler import tensors
from torchneuron.device.graph_function import (
    dense_order,
    permute_dense_inputs,
    split_input_outputs,
)


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


def test_dense_order_names_the_layout_of_a_permuted_buffer_only():
    base = torch.randn(4, 5, 6)
    assert dense_order(base) is None  # contiguous already
    assert dense_order(base.t() if base.dim() == 2 else base.permute(2, 0, 1)) == (1, 2, 0)
    assert dense_order(torch.randn(5, 7).t()) == (1, 0)
    assert dense_order(torch.randn(4, 10)[:, ::2]) is None  # gaps
    assert dense_order(torch.randn(4, 1).expand(4, 3)) is None  # overlaps


def test_a_named_input_traced_transposed_is_taken_in_its_dense_order():
    def f(w_t, x):
        return x @ w_t

    w_t, x = torch.randn(3, 5).t(), torch.randn(2, 5)
    gm = torch.fx.experimental.proxy_tensor.make_fx(f)(w_t, x)
    names = {gm.graph.find_nodes(op="placeholder")[0].name}
    rewritten, examples, orders = permute_dense_inputs(gm, [w_t, x], names)
    assert orders == {0: (1, 0)}
    assert examples[0].is_contiguous() and examples[0].shape == (3, 5)
    placeholder = rewritten.graph.find_nodes(op="placeholder")[0]
    assert tuple(placeholder.meta["val"].shape) == (3, 5)
    torch.testing.assert_close(rewritten(examples[0], x), f(w_t, x))
    # an input not named (a program's own output arrives contiguous) is left alone
    assert permute_dense_inputs(gm, [w_t, x], set())[2] == {}


def test_a_tied_transposed_weight_reaches_the_backward_without_a_copy(monkeypatch):
    torch.manual_seed(0)
    table = torch.nn.Parameter(torch.randn(50, 8))
    idx = torch.randint(0, 50, (6,))

    def loss_of(weight):
        return torch.log_softmax(weight[idx].tanh() @ weight.t(), -1).sum()

    read = []
    to_numpy = tensors.to_numpy
    monkeypatch.setattr(
        tensors, "to_numpy", lambda t: read.append(t.is_contiguous()) or to_numpy(t)
    )
    loss = torch.compile(loss_of, backend="neuron")(table)
    loss.backward()
    assert read and all(read), "a graph input was copied to make it contiguous"
    expected = table.detach().clone().requires_grad_(True)
    loss_of(expected).backward()
    torch.testing.assert_close(table.grad, expected.grad)
