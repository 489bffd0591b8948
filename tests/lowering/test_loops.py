"""Counted loops (lowering/loops.py): a rule's repeated block is one ``stablehlo.while``
in the program, runs its trips, and reads what it closes over."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from torchneuron.compiler.pipeline import compile_artifact, compile_graph
from torchneuron.lowering import LoweringError, decomposition_table
from torchneuron.lowering.loops import counted_loop
from torchneuron.runtime import load_neff


def _compiled(function, *inputs, tracing_mode="fake"):
    gm = make_fx(function, decomposition_table=decomposition_table(), tracing_mode=tracing_mode)(
        *inputs
    )
    compiled = compile_graph(gm, list(inputs), use_cache=False)
    outputs = load_neff(compiled.neff).execute([t.numpy() for t in inputs])
    return [torch.from_numpy(o) for o in outputs], compiled.artifacts["optimized"]


def _unrolled(count, body, values):
    for _ in range(count):
        values = body(*values)
    return values


def _step(x, w):
    return (torch.tanh(x @ w) * 0.5 + 0.1, w * 1.25)


@pytest.mark.parametrize("count", [1, 6])
def test_a_counted_loop_runs_its_body_count_times_and_holds_it_once(count):
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    (got,), program = _compiled(lambda x, w: counted_loop(count, _step, (x, w))[0], x, w)
    want = _unrolled(count, _step, (x, w))[0]
    torch.testing.assert_close(got, want)
    assert program.count("stablehlo.while") == 1
    assert len(re.findall(r"stablehlo\.dot_general", program)) == 1


def test_a_loop_reads_its_constants_and_sizes_of_the_graph_around_it():
    # constants are the while_loop's additional inputs: carried through unchanged
    x, bias = torch.randn(3, 5), torch.randn(5)

    def program(x, bias):
        shift = bias * 2  # computed before the loop, read inside it
        scale = torch.full((), 0.75)

        def body(v, scale, shift):
            return (v * scale + shift[: v.shape[-1]],)

        return counted_loop(4, body, (x,), (scale, shift))[0]

    (got,), _ = _compiled(program, x, bias)
    want = x
    for _ in range(4):
        want = want * 0.75 + bias * 2
    torch.testing.assert_close(got, want)


def test_a_tensor_the_body_reads_without_being_given_it_is_refused():
    x = torch.randn(3)

    def program(x):
        shift = x * 2  # read by the body, not passed as a constant
        return counted_loop(2, lambda v: (v + shift,), (x,))[0]

    with pytest.raises(LoweringError, match="reads a tensor of the graph around it"):
        _compiled(program, x)


def test_a_count_of_zero_is_no_loop():
    x = torch.randn(3)
    assert counted_loop(0, lambda v: (v + 1,), (x,))[0] is x


def test_a_loop_the_runtime_could_not_prove_is_refused_when_compiled():
    unproved = """
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %start = stablehlo.constant dense<0> : tensor<i32>
  %step = stablehlo.constant dense<1> : tensor<i32>
  %bound = stablehlo.constant dense<7> : tensor<i32>
  %r:2 = stablehlo.while(%i = %start, %v = %x) : tensor<i32>, tensor<2xf32>
  cond {
    %c = stablehlo.compare NE, %i, %bound, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %next = stablehlo.add %i, %step : tensor<i32>
    %twice = stablehlo.add %v, %v : tensor<2xf32>
    stablehlo.return %next, %twice : tensor<i32>, tensor<2xf32>
  }
  return %r#1 : tensor<2xf32>
}
"""
    with pytest.raises(LoweringError, match="stablehlo.while.*compares .*NE.*, not LT"):
        compile_artifact(unproved, "stablehlo", where="loop.mlir")
    proved = compile_artifact(unproved.replace("NE,", "LT,"), "stablehlo", where="loop.mlir")
    (out,) = load_neff(proved.neff).execute([np.array([1.0, -2.0], np.float32)])
    np.testing.assert_array_equal(out, np.array([128.0, -256.0], np.float32))


def test_a_loop_run_outside_a_trace_runs_its_body_in_python():
    # a rule called on tensors directly (a CPU reference, a test) needs no compiler
    x = torch.tensor([1.0, -3.0])
    assert torch.equal(counted_loop(3, lambda v: (v * 2,), (x,))[0], x * 8)


def test_a_run_time_check_inside_a_loop_is_refused_naming_it():
    # an index check is an output of the program; inside a loop it would be one per trip
    x, index = torch.randn(4), torch.tensor([3, 1, 0, 2])

    def program(x, index):
        return counted_loop(2, lambda v, i: (v.index_select(0, i),), (x,), (index,))[0]

    with pytest.raises(LoweringError, match="loop's body holds a run-time check"):
        _compiled(program, x, index)


def test_loops_nest_and_their_trips_multiply():
    x = torch.randn(3, 3)

    def inner(v):
        return (v * 0.5 + 1.0,)

    def outer(v):
        return (counted_loop(3, inner, (torch.tanh(v),))[0],)

    (got,), program = _compiled(lambda x: counted_loop(2, outer, (x,))[0], x)
    want = x
    for _ in range(2):
        want = torch.tanh(want)
        for _ in range(3):
            want = want * 0.5 + 1.0
    torch.testing.assert_close(got, want)
    assert program.count("stablehlo.while") == 2
