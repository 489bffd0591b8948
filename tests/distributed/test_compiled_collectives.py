"""Functional collectives under torch.compile(backend="neuron"): graphs split at collectives.

The structural tests build ATen graphs by hand and check the split (stages, segment
names, ordering). The end-to-end tests spawn 2 ranks once (gloo on CPU tensors) and run
every check in that one launch; each rank writes its results to a JSON file, which the
tests read. TORCHNEURON_NO_FALLBACK=1 holds in the ranks, and a profile counts the NEFF
executions: the compute between collectives ran on the NeuronCore.
"""

from __future__ import annotations

import json
import operator
import os
import re
import time
import traceback
from pathlib import Path

import pytest
import torch
import torch.fx

from tests.distributed.torchrun import free_port
from torchneuron import collective_graphs

WORLD_SIZE = 2
LAUNCH_TIMEOUT_S = 240

c10d = torch.ops._c10d_functional
aten = torch.ops.aten


# -- the split, on hand-built graphs ------------------------------------------------


def _graph(build) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    outputs = build(graph)
    graph.output(tuple(outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _stage_plan(split):
    """[(collective op names, segment op names)] per stage."""
    plan = []
    for stage in split.stages:
        collectives = [n.target._opname for n in stage.collectives]
        segment = None
        if stage.segment is not None:
            segment = [
                n.target._opname for n in stage.segment.gm.graph.nodes if n.op == "call_function"
            ]
        plan.append((collectives, segment))
    return plan


def test_compute_all_reduce_compute_is_two_segments_around_the_collective():
    def build(g):
        x = g.placeholder("x")
        y = g.call_function(aten.mul.Tensor, (x, 2))
        reduced = g.call_function(c10d.all_reduce.default, (y, "sum", "0"))
        waited = g.call_function(c10d.wait_tensor.default, (reduced,))
        return [g.call_function(aten.add.Tensor, (waited, 1))]

    split = collective_graphs.split_at_collectives(_graph(build), "graph7_forward")
    assert _stage_plan(split) == [
        ([], ["mul"]),
        (["all_reduce", "wait_tensor"], ["add"]),
    ]
    assert [s.name for s in split.segments] == ["graph7_forward_part0", "graph7_forward_part1"]


def test_compute_independent_of_a_collective_joins_the_earliest_segment():
    # t(w) comes after the wait in program order but reads no collective: it runs in
    # segment 0, and the segment after the collective holds only what needs its result.
    def build(g):
        x, w = g.placeholder("x"), g.placeholder("w")
        x2 = g.call_function(aten.mul.Tensor, (x, 2))
        reduced = g.call_function(c10d.all_reduce.default, (x2, "sum", "0"))
        waited = g.call_function(c10d.wait_tensor.default, (reduced,))
        wt = g.call_function(aten.t.default, (w,))
        return [g.call_function(aten.mm.default, (wt, waited))]

    split = collective_graphs.split_at_collectives(_graph(build), "g")
    assert _stage_plan(split) == [
        ([], ["mul", "t"]),
        (["all_reduce", "wait_tensor"], ["mm"]),
    ]


def test_collectives_keep_program_order_and_waits_move_to_their_first_reader():
    # b's collective depends on nothing computed, yet it is issued after a's (every
    # rank issues them alike); a's wait is deferred from stage 1 to its reader's stage.
    def build(g):
        x, y = g.placeholder("x"), g.placeholder("y")
        x2 = g.call_function(aten.mul.Tensor, (x, 2))
        a = g.call_function(c10d.all_reduce.default, (x2, "sum", "0"))
        b = g.call_function(c10d.all_gather_into_tensor.default, (y, 2, "0"))
        b_done = g.call_function(c10d.wait_tensor.default, (b,))
        b2 = g.call_function(aten.neg.default, (b_done,))
        c = g.call_function(c10d.all_reduce.default, (b2, "max", "0"))
        a_done = g.call_function(c10d.wait_tensor.default, (a,))
        c_done = g.call_function(c10d.wait_tensor.default, (c,))
        return [g.call_function(aten.add.Tensor, (a_done, c_done)), c_done]

    split = collective_graphs.split_at_collectives(_graph(build), "g")
    assert _stage_plan(split) == [
        ([], ["mul"]),
        (["all_reduce", "all_gather_into_tensor", "wait_tensor"], ["neg"]),
        (["all_reduce", "wait_tensor", "wait_tensor"], ["add"]),
    ]
    waits = [n.args[0].name for n in split.stages[2].collectives[1:]]
    assert waits == ["all_reduce_default", "all_reduce_default_1"]


def test_a_collective_s_input_is_held_until_its_deferred_wait():
    def build(g):
        x = g.placeholder("x")
        x2 = g.call_function(aten.mul.Tensor, (x, 2))
        a = g.call_function(c10d.all_reduce.default, (x2, "sum", "0"))
        b = g.call_function(c10d.all_reduce.default, (x2, "max", "0"))
        b_done = g.call_function(c10d.wait_tensor.default, (b,))
        b2 = g.call_function(aten.neg.default, (b_done,))
        c = g.call_function(c10d.all_reduce.default, (b2, "sum", "0"))
        a_done = g.call_function(c10d.wait_tensor.default, (a,))
        c_done = g.call_function(c10d.wait_tensor.default, (c,))
        return [g.call_function(aten.add.Tensor, (a_done, c_done))]

    split = collective_graphs.split_at_collectives(_graph(build), "g")
    run = collective_graphs.SplitGraphFunction(split, lambda gm, inputs, name: None)
    names = [s.name if isinstance(s, torch.fx.Node) else s[0].name for s in run.steps]
    assert names == [
        "g_part0",
        "all_reduce_default",  # a
        "all_reduce_default_1",  # b
        "wait_tensor_default",  # b's
        "g_part1",  # overlaps a
        "all_reduce_default_2",  # c
        "wait_tensor_default_1",  # a's, deferred
        "wait_tensor_default_2",
        "g_part2",
    ]
    released = {n.name: i for i, nodes in run.release_after.items() for n in nodes}
    # mul feeds a, whose wait runs at step 6, after segment 1 (not at step 1 or 2)
    assert released["mul_tensor"] == names.index("wait_tensor_default_1")


def test_an_in_place_write_stays_after_a_collective_reading_the_tensor():
    # copy_ into the input x: the all_reduce issued later reads x first, so the write
    # goes to the segment after it, and waits stay with their collectives.
    def build(g):
        x, y = g.placeholder("x"), g.placeholder("y")
        y2 = g.call_function(aten.mul.Tensor, (y, 2))
        first = g.call_function(c10d.all_reduce.default, (y2, "sum", "0"))
        first_done = g.call_function(c10d.wait_tensor.default, (first,))
        first_plus = g.call_function(aten.add.Tensor, (first_done, 1))
        second = g.call_function(c10d.all_reduce.default, (x, "sum", "0"))
        second_done = g.call_function(c10d.wait_tensor.default, (second,))
        g.call_function(aten.copy_.default, (x, y2))
        return [first_plus, second_done]

    split = collective_graphs.split_at_collectives(_graph(build), "g")
    # copy_'s data inputs are ready in stage 0; it waits for the all_reduce reading x
    assert _stage_plan(split) == [
        ([], ["mul"]),
        (["all_reduce", "wait_tensor", "all_reduce", "wait_tensor"], ["add", "copy_"]),
    ]


def test_coalesced_results_are_taken_eagerly():
    def build(g):
        x, y = g.placeholder("x"), g.placeholder("y")
        both = g.call_function(c10d.all_reduce_coalesced.default, ([x, y], "sum", "0"))
        first = g.call_function(operator.getitem, (both, 0))
        second = g.call_function(operator.getitem, (both, 1))
        first_done = g.call_function(c10d.wait_tensor.default, (first,))
        second_done = g.call_function(c10d.wait_tensor.default, (second,))
        return [g.call_function(aten.add.Tensor, (first_done, second_done))]

    split = collective_graphs.split_at_collectives(_graph(build), "g")
    assert len(split.segments) == 1
    assert [getattr(n.target, "_opname", n.target) for n in split.stages[0].collectives] == [
        "all_reduce_coalesced",
        operator.getitem,
        operator.getitem,
        "wait_tensor",
        "wait_tensor",
    ]


def test_a_graph_without_collectives_is_not_split():
    def build(g):
        return [g.call_function(aten.relu.default, (g.placeholder("x"),))]

    assert not collective_graphs.has_collectives(_graph(build))


# -- end to end: 2 ranks, CPU tensors (gloo) and neuron tensors (neuron) -------------


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    import torch.multiprocessing as mp

    out_dir = tmp_path_factory.mktemp("compiled_collectives")
    context = mp.start_processes(
        _rank_main,
        args=(WORLD_SIZE, free_port(), str(out_dir)),
        nprocs=WORLD_SIZE,
        join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + LAUNCH_TIMEOUT_S
    try:
        while not context.join(timeout=max(0.5, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                pytest.fail(f"the {WORLD_SIZE} ranks did not finish in {LAUNCH_TIMEOUT_S} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
    return [json.loads((out_dir / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


DEVICES = ["cpu", "neuron"]
CHECKS = [
    "funcol_module_forward_backward",
    "dtensor_colwise_rowwise_mlp",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "all_to_all_single_uneven",
    "broadcast_and_coalesced",
    "in_graph_dist_all_reduce",
    "chained_collectives_order",
]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("device", DEVICES)
def test_compiled_graph_with_collectives_equals_eager_on_every_rank(rank_results, device, check):
    for rank, results in enumerate(rank_results):
        result = results[f"{device}/{check}"]
        assert "error" not in result, f"rank {rank}: {result.get('error')}"
        assert result["max_difference"] <= result["tolerance"], result
        # the compiled graph ran as NEFF segments on the NeuronCore, none on the CPU
        assert result["segments"] >= 1, result
        assert result["unsplit_graphs"] == [], result


@pytest.mark.parametrize("device", DEVICES)
def test_three_chained_all_reduces_run_between_four_segments(rank_results, device):
    for results in rank_results:
        assert results[f"{device}/chained_collectives_order"]["segments"] == 4


def test_segments_are_named_after_their_graph_and_part(rank_results):
    names = rank_results[0]["neuron/funcol_module_forward_backward"]["executed"]
    forward = sorted(n for n in names if "_forward_part" in n)
    backward = sorted(n for n in names if "_backward_part" in n)
    assert len(forward) >= 2 and len(backward) >= 2, names
    assert {n.split("_forward_part")[0] for n in forward} == {
        n.split("_backward_part")[0] for n in backward
    }


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_graphs_run_on_the_rank_s_core(rank_results, device):
    # neuron: the core of the tensors' device neuron:<rank>; CPU: the current device
    for rank, results in enumerate(rank_results):
        assert results[f"{device}/funcol_module_forward_backward"]["cores"] == [rank]


# -- what each rank runs -------------------------------------------------------------


def _rank_main(rank: int, world: int, port: int, out_dir: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TORCHNEURON_NO_FALLBACK="1",
        OMP_NUM_THREADS="1",
    )
    torch.set_num_threads(1)
    import torch.distributed as dist

    torch.neuron.set_device(rank)
    dist.init_process_group("cpu:gloo,neuron:neuron", rank=rank, world_size=world)
    results = {}
    try:
        for device in DEVICES:
            for check in _RANK_CHECKS:
                torch._dynamo.reset()
                torch.manual_seed(rank)
                name = f"{device}/{check.__name__.removeprefix('_check_')}"
                try:
                    results[name] = check(rank, world, torch.device(device, rank))
                except Exception:
                    results[name] = {"error": traceback.format_exc()}
    finally:
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))
        dist.destroy_process_group()


def _run_compiled(function, *args, backward=False):
    """(outputs on the CPU, report) of ``torch.compile(function, backend="neuron")(*args)``."""
    from torchneuron import profiler

    compiled = torch.compile(function, backend="neuron", fullgraph=True)
    with profiler.profile() as prof:
        outputs = compiled(*args)
        if backward:
            outputs.sum().backward()
    # eager neuron ops (the backward's seed) run NEFFs too: keep the compiled graphs'
    graphs = [e for e in prof.events if re.match(r"graph\d+_(forward|backward)", e.name)]
    return _on_cpu(outputs), {
        "executed": [e.name for e in graphs],
        "cores": sorted({e.core for e in graphs}),
        "segments": sum("_part" in e.name for e in graphs),
        "unsplit_graphs": [e.name for e in graphs if "_part" not in e.name],
    }


def _on_cpu(value):
    return torch.utils._pytree.tree_map(
        lambda t: t.detach().cpu() if isinstance(t, torch.Tensor) else t, value
    )


def _difference(actual, expected) -> float:
    pairs = zip(torch.utils._pytree.tree_leaves(actual), torch.utils._pytree.tree_leaves(expected))
    return max(float((a.double() - e.double()).abs().max()) for a, e in pairs)


def _compare(actual, expected, report, tolerance):
    return report | {"max_difference": _difference(actual, expected), "tolerance": tolerance}


# The reference is eager mode on CPU tensors (gloo); the compiled graph gets the same
# values on ``device``. Neuron matmuls may round differently from CPU ones.


def _check_funcol_module_forward_backward(rank, world, device):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    class ReducedMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.Linear(8, 16)
            self.down = torch.nn.Linear(16, 8)

        def forward(self, x):
            h = funcol.all_reduce(self.up(x), "sum", dist.group.WORLD)
            return funcol.all_reduce(self.down(torch.relu(h)), "sum", dist.group.WORLD) / world

    torch.manual_seed(0)
    reference = ReducedMLP()
    model = ReducedMLP()
    model.load_state_dict(reference.state_dict())
    model.to(device)
    torch.manual_seed(rank)
    x = torch.randn(4, 8)
    expected = reference(x)
    expected.sum().backward()
    actual, report = _run_compiled(model, x.to(device), backward=True)
    grads = _on_cpu([p.grad for p in model.parameters()])
    expected_grads = [p.grad for p in reference.parameters()]
    return _compare([actual, grads], [expected, expected_grads], report, 1e-5)


def _check_dtensor_colwise_rowwise_mlp(rank, world, device):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    def mlp():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))

    plan = {"0": ColwiseParallel(), "2": RowwiseParallel()}
    reference = parallelize_module(mlp(), init_device_mesh("cpu", (world,)), plan)
    model = parallelize_module(mlp().to(device), init_device_mesh(device.type, (world,)), plan)
    torch.manual_seed(100)  # the same input on every rank, as tensor parallelism wants
    x = torch.randn(4, 8)
    expected = reference(x)
    expected.sum().backward()
    actual, report = _run_compiled(model, x.to(device), backward=True)
    grads = _on_cpu([p.grad.full_tensor() for p in model.parameters()])
    expected_grads = [p.grad.full_tensor() for p in reference.parameters()]
    return _compare([actual, grads], [expected, expected_grads], report, 1e-5)


def _check_all_gather_into_tensor(rank, world, device):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    def gather(x):
        return funcol.all_gather_single(x * 2 + 1, 0, dist.group.WORLD).sin()

    x = torch.randn(3, 5)
    actual, report = _run_compiled(gather, x.to(device))
    return _compare(actual, gather(x), report, 1e-6)


def _check_reduce_scatter_tensor(rank, world, device):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    def scatter(x):
        return funcol.reduce_scatter_single(x.exp(), "sum", 0, dist.group.WORLD) - 1

    x = torch.randn(4, 3)
    actual, report = _run_compiled(scatter, x.to(device))
    return _compare(actual, scatter(x), report, 1e-6)


def _check_all_to_all_single_uneven(rank, world, device):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    # rank r sends r+1 rows to rank 0 and 2 rows to rank 1
    input_splits = [rank + 1, 2]
    output_splits = [src + 1 for src in range(world)] if rank == 0 else [2] * world

    def exchange(x):
        out = funcol.all_to_all_single(x * 3, output_splits, input_splits, dist.group.WORLD)
        return out + 1

    x = torch.randn(sum(input_splits), 4)
    actual, report = _run_compiled(exchange, x.to(device))
    return _compare(actual, exchange(x), report, 1e-6)


def _check_broadcast_and_coalesced(rank, world, device):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    def both(x, y):
        sent = funcol.broadcast(x + 1, 1, dist.group.WORLD)
        a, b = funcol.all_reduce_coalesced([sent * 2, y.cos()], "sum", dist.group.WORLD)
        return a + b.sum()

    x, y = torch.randn(3, 3), torch.randn(3)
    actual, report = _run_compiled(both, x.to(device), y.to(device))
    return _compare(actual, both(x, y), report, 1e-6)


def _check_in_graph_dist_all_reduce(rank, world, device):
    import torch.distributed as dist

    def reduce_in_place(x):
        y = x.tanh()
        dist.all_reduce(y)
        return y * 3

    x = torch.randn(6)
    actual, report = _run_compiled(reduce_in_place, x.to(device))
    return _compare(actual, reduce_in_place(x), report, 1e-6)


def _check_chained_collectives_order(rank, world, device):
    # Each collective's result feeds the next compute; a collective run before the
    # compute producing its input, or after the compute reading it, changes the values.
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    def chain(x):
        for step in range(3):
            x = funcol.all_reduce(x * (rank + 2) + step, "sum", dist.group.WORLD)
            x = x / x.abs().max()
        return x

    x = torch.randn(5)
    actual, report = _run_compiled(chain, x.to(device))
    return _compare(actual, chain(x), report, 1e-6)


_RANK_CHECKS = [
    _check_funcol_module_forward_backward,
    _check_dtensor_colwise_rowwise_mlp,
    _check_all_gather_into_tensor,
    _check_reduce_scatter_tensor,
    _check_all_to_all_single_uneven,
    _check_broadcast_and_coalesced,
    _check_in_graph_dist_all_reduce,
    _check_chained_collectives_order,
]
