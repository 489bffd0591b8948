"""Counted loops in the cost model: a ``stablehlo.while`` costs its trips times its body.

The modules are built as text and only estimated (no numerics), except the last test,
which compiles ``torch.linalg.eigh`` (its Jacobi sweeps are one loop) and reads the
schedule its execution is profiled with.
"""

from __future__ import annotations

import re

import pytest
import torch

import torchneuron.profiler
from torchneuron.estimate.cost_model import EstimateError, estimate
from torchneuron.lowering.rules.eigen import sweeps_for
from torchneuron.passes import PassContext, PassManager, parse_module
from torchneuron.passes.dataflow import (
    Dataflow,
    UncountedLoopError,
    loop_flows,
    loop_trip_count,
    main_function,
)
from torchneuron.target import hardware
from torchneuron.target.engines import ENGINES

M = "tensor<512x512xbf16>"
DOT = f"contracting_dims = [1] x [0] : ({M}, {M}) -> {M}"


def step_once() -> str:
    """The body written once at the top level: x <- tanh(x @ w)."""
    return f"""
func.func @main(%x: {M}, %w: {M}) -> {M} {{
  %d = stablehlo.dot_general %x, %w, {DOT}
  %t = stablehlo.tanh %d : {M}
  return %t : {M}
}}"""


def loop(
    trips: int,
    direction: str = "LT",
    start: int = 0,
    step: int = 1,
    bound: str = "",
    counter: str = "i32",
    extra_condition: str = "",
) -> str:
    """x <- tanh(x @ w), ``trips`` times, as our compiler's counted loop; each argument
    bends one part of its form (the bound is a constant of @main, captured)."""
    limit = bound or f"stablehlo.constant dense<{start + trips * step}> : tensor<{counter}>"
    return f"""
func.func @main(%x: {M}, %w: {M}) -> {M} {{
  %start = stablehlo.constant dense<{start}> : tensor<{counter}>
  %one = stablehlo.constant dense<{step}> : tensor<{counter}>
  %bound = {limit}
  %r:3 = stablehlo.while(%i = %start, %v = %x, %u = %w) : tensor<{counter}>, {M}, {M}
  cond {{
    {extra_condition}
    %c = stablehlo.compare {direction}, %i, %bound, SIGNED : (tensor<{counter}>, tensor<{counter}>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %d = stablehlo.dot_general %v, %u, {DOT}
    %t = stablehlo.tanh %d : {M}
    %next = stablehlo.add %i, %one : tensor<{counter}>
    stablehlo.return %next, %t, %u : tensor<{counter}>, {M}, {M}
  }}
  return %r#1 : {M}
}}"""


def nested(outer: int, inner: int) -> str:
    """``outer`` trips of a loop of ``inner`` trips of x <- tanh(x @ w); the inner
    loop's constants are defined inside the outer body, its bound inside its condition."""
    return f"""
func.func @main(%x: {M}, %w: {M}) -> {M} {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %cn = stablehlo.constant dense<{outer}> : tensor<i32>
  %o:3 = stablehlo.while(%j = %c0, %y = %x, %u = %w) : tensor<i32>, {M}, {M}
  cond {{
    %c = stablehlo.compare LT, %j, %cn, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %k0 = stablehlo.constant dense<0> : tensor<i32>
    %r:2 = stablehlo.while(%i = %k0, %v = %y) : tensor<i32>, {M}
    cond {{
      %kn = stablehlo.constant dense<{inner}> : tensor<i32>
      %c = stablehlo.compare LT, %i, %kn, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }} do {{
      %d = stablehlo.dot_general %v, %u, {DOT}
      %t = stablehlo.tanh %d : {M}
      %next = stablehlo.add %i, %c1 : tensor<i32>
      stablehlo.return %next, %t : tensor<i32>, {M}
    }}
    %j1 = stablehlo.add %j, %c1 : tensor<i32>
    stablehlo.return %j1, %r#1, %u : tensor<i32>, {M}, {M}
  }}
  return %o#1 : {M}
}}"""


def schedule_of(text: str, **options):
    return estimate(parse_module(text), "trn2", **options)


@pytest.mark.parametrize("trips", [4, 8])
def test_a_loop_costs_its_trips_times_its_body_written_once(trips):
    once = schedule_of(step_once())
    looped = schedule_of(loop(trips))
    assert 0.8 * trips <= looped.latency_s / once.latency_s <= 1.2 * trips
    assert looped.flops == trips * once.flops == trips * 2 * 512**3
    (kernel,) = [k for k in looped.kernels if k.ops == ["stablehlo.while"]]
    assert kernel.duration_s == pytest.approx(looped.latency_s)
    assert f"{trips} trips" in " ".join(kernel.notes)


def test_trips_scale_the_estimate():
    one, four = schedule_of(loop(1)), schedule_of(loop(4))
    assert four.latency_s == pytest.approx(4 * one.latency_s, rel=1e-9)
    assert four.hbm_bytes == 4 * one.hbm_bytes > 0
    assert four.flops == 4 * one.flops
    assert four.peak_seconds == pytest.approx(4 * one.peak_seconds)
    assert schedule_of(loop(0)).latency_s == 0.0


def test_a_loop_is_a_barrier_over_every_engine():
    # %n does not depend on the loop: alone it would run on VectorE beside the loop's
    # matmuls, but a loop's body runs its own schedule on every engine at every trip.
    text = loop(3).replace(
        "  return %r#1 : " + M,
        f"  %n = stablehlo.negate %w : {M}\n  %s = stablehlo.add %r#1, %n : {M}\n  return %s : {M}",
    )
    schedule = schedule_of(text)
    (loop_kernel,) = [k for k in schedule.kernels if k.ops == ["stablehlo.while"]]
    others = [k for k in schedule.kernels if k is not loop_kernel]
    assert others
    for kernel in others:
        assert kernel.end_s <= loop_kernel.start_s or kernel.start_s >= loop_kernel.end_s
    assert sorted(loop_kernel.lanes) == sorted(ENGINES)
    assert set(loop_kernel.lanes.values()) == {(loop_kernel.start_s, loop_kernel.end_s)}


@pytest.mark.parametrize(
    ("bent", "reason"),
    [
        ({"direction": "NE"}, "compares .*NE.*, not LT"),
        ({"step": 0}, "does not start at a constant and grow by a positive one"),
        ({"bound": "stablehlo.add %start, %one : tensor<i32>"}, "does not compare .* constant"),
        ({"extra_condition": "%e = stablehlo.add %i, %i : tensor<i32>"}, "computes more than"),
    ],
)
def test_a_loop_whose_trip_count_is_not_proved_is_refused(bent, reason):
    with pytest.raises(EstimateError, match=rf"stablehlo\.while \(op \d+ of @main\).*{reason}"):
        schedule_of(loop(4, **bent))


def test_a_loop_with_the_bound_read_from_an_argument_is_refused():
    text = loop(4).replace(f"%w: {M})", f"%w: {M}, %n: tensor<i32>)")
    text = text.replace("%i, %bound,", "%i, %n,")
    with pytest.raises(EstimateError, match=r"stablehlo\.while.*not compare a carried value"):
        schedule_of(text)


def test_other_ops_with_regions_are_refused_not_priced_as_free():
    text = f"""
func.func @main(%p: tensor<i1>, %x: {M}) -> {M} {{
  %r = "stablehlo.if"(%p) ({{
    %t = stablehlo.tanh %x : {M}
    stablehlo.return %t : {M}
  }}, {{
    stablehlo.return %x : {M}
  }}) : (tensor<i1>) -> {M}
  return %r : {M}
}}"""
    with pytest.raises(EstimateError, match=r"stablehlo\.if \(op 0 of @main\)"):
        schedule_of(text)


def test_nested_loops_multiply():
    once = schedule_of(step_once())
    twice_nested = schedule_of(nested(3, 5))
    assert twice_nested.flops == 15 * once.flops
    assert 0.8 * 15 <= twice_nested.latency_s / once.latency_s <= 1.2 * 15
    assert twice_nested.latency_s == pytest.approx(3 * schedule_of(nested(1, 5)).latency_s)


def test_a_loop_holds_its_carried_values_and_its_body_temporaries():
    # The carried x is computed in the program (a temporary, not an input), and each
    # trip passes d = x @ w to a second matmul through HBM (a body temporary).
    text = f"""
func.func @main(%a: {M}, %w: {M}) -> {M} {{
  %start = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %bound = stablehlo.constant dense<4> : tensor<i32>
  %x = stablehlo.add %a, %a : {M}
  %r:3 = stablehlo.while(%i = %start, %v = %x, %u = %w) : tensor<i32>, {M}, {M}
  cond {{
    %c = stablehlo.compare LT, %i, %bound, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %d = stablehlo.dot_general %v, %u, {DOT}
    %e = stablehlo.dot_general %d, %u, {DOT}
    %next = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %next, %e, %u : tensor<i32>, {M}, {M}
  }}
  %s = stablehlo.negate %r#1 : {M}
  return %s : {M}
}}"""
    memory = schedule_of(text).memory
    matrix = 512 * 512 * 2
    names = {b.name: b for b in memory.buffers}
    body = [b for name, b in names.items() if name.endswith(".body")]
    assert len(body) == 1 and body[0].size_bytes >= matrix  # d, between the two matmuls
    # x (the first trip's value) and the loop's result (what the trips write) are live
    # together while the loop runs, beside the body's temporaries.
    assert memory.temporaries_live_peak_bytes >= 3 * matrix
    assert memory.temporaries_bytes >= memory.temporaries_live_peak_bytes
    assert memory.peak_hbm_bytes >= 2 * matrix + memory.temporaries_bytes


def test_a_value_the_loop_hands_on_unchanged_is_held_once():
    # w2 is carried through the loop unchanged (as our compiler carries what a loop
    # closes over) and read after it: its one buffer lives until then, with no copy.
    text = (
        loop(4)
        .replace(
            "  %r:3 = stablehlo.while(%i = %start, %v = %x, %u = %w)",
            f"  %w2 = stablehlo.add %w, %w : {M}\n"
            "  %r:3 = stablehlo.while(%i = %start, %v = %x, %u = %w2)",
        )
        .replace(
            "  return %r#1 : " + M,
            f"  %s = stablehlo.add %r#1, %r#2 : {M}\n  return %s : {M}",
        )
    )
    schedule = schedule_of(text)
    (loop_kernel,) = [k for k in schedule.kernels if k.ops == ["stablehlo.while"]]
    (last,) = [k for k in schedule.kernels if k.start_s >= loop_kernel.end_s]
    matrix = 512 * 512 * 2
    big = [b for b in schedule.memory.buffers if b.size_bytes == matrix]
    # w2 (until the add after the loop reads it) and the loop's tanh result, nothing else.
    assert len(big) == 2
    w2 = next(b for b in big if not b.name.startswith(loop_kernel.name))
    assert w2.end_s == last.end_s and w2.start_s < loop_kernel.start_s


def test_the_passes_annotate_loop_bodies_and_the_estimate_reads_them():
    module = parse_module(loop(4))
    planned = estimate(parse_module(loop(4)), "trn2")
    PassManager.from_pipeline("fuse-kernels,assign-engines").run(module, PassContext(weights={}))
    text = str(module)
    # The loop is a kernel of its own; every op of its body is annotated, its condition not.
    body = text.split("} do {", 1)[1]
    assert len(re.findall(r"neuron\.kernel", body)) == 3  # dot_general, tanh, add
    assert "neuron.kernel" not in text.split("cond {", 1)[1].split("} do {", 1)[0]
    with module.context:
        flows = list(loop_flows(main_function(module)))
        assert [flow.owner.name for flow in flows] == ["func.func", "stablehlo.while"]
    annotated = estimate(module, "trn2")
    assert annotated.latency_s == pytest.approx(planned.latency_s)
    # One op per kernel, as the annotations say, in the body too: the tanh is no longer
    # fused into the matmul's kernel, so the loop moves more bytes.
    unfused = parse_module(loop(4))
    PassManager.from_pipeline("fuse-kernels{fuse=false},assign-engines").run(
        unfused, PassContext(weights={})
    )
    assert estimate(unfused, "trn2").hbm_bytes > annotated.hbm_bytes


def test_a_loop_body_is_a_dataflow_of_its_carried_and_captured_values():
    # The body closes over %b, computed at the top level, and over the step constant.
    text = (
        loop(4)
        .replace(
            "  %r:3 = stablehlo.while",
            f"  %b = stablehlo.add %w, %w : {M}\n  %r:3 = stablehlo.while",
        )
        .replace(
            f"%t = stablehlo.tanh %d : {M}",
            f"%h = stablehlo.tanh %d : {M}\n    %t = stablehlo.add %h, %b : {M}",
        )
    )
    module = parse_module(text)
    with module.context:
        top = Dataflow.of_function(main_function(module))
        (while_node,) = [n for n in top.nodes if n.kind == "loop"]
        body = Dataflow.of_loop_body(while_node.op)
    b_ref = (3, 0)
    assert top.nodes[b_ref[0]].name == "stablehlo.add" and b_ref in while_node.operands
    assert while_node.index in top.nodes[b_ref[0]].users
    # The captured constant is the body's first node; the three carried values, then %b,
    # are its arguments.
    assert [n.name for n in body.nodes] == [
        "stablehlo.constant",
        "stablehlo.dot_general",
        "stablehlo.tanh",
        "stablehlo.add",
        "stablehlo.add",
    ]
    assert len(body.arguments) == 4 and body.nodes[3].operands == [(2, 0), (-1, 3)]
    assert body.returns == [(4, 0), (3, 0), (-1, 2)]
    # Every trip reads %b from HBM: the loop moves 4 x its bytes more than without it.
    extra = schedule_of(text).hbm_bytes - schedule_of(loop(4)).hbm_bytes
    matrix = 512 * 512 * 2
    assert extra >= 4 * matrix + 2 * matrix  # the trips' reads, and %b's own add


FORMS = [
    {},
    {"start": 3, "step": 4},
    {"start": 9, "bound": "stablehlo.constant dense<3> : tensor<i32>"},
    {"counter": "i64", "trips": 4096},
    {"direction": "NE"},
    {"direction": "LE"},
    {"step": 0},
    {"step": -1},
    {"bound": "stablehlo.add %start, %one : tensor<i32>"},
    {"extra_condition": "%e = stablehlo.add %i, %i : tensor<i32>"},
    {
        "start": 2147483000,
        "step": 1000,
        "bound": "stablehlo.constant dense<2147483647> : tensor<i32>",
    },
    {
        "counter": "i8",
        "start": 100,
        "step": 50,
        "bound": "stablehlo.constant dense<127> : tensor<i8>",
    },
]


@pytest.mark.parametrize("form", FORMS, ids=[str(f) for f in FORMS])
def test_the_trip_count_is_the_runtime_verifiers(form):
    """The cost model and the runtime's verifier (a process of its own, which loads the
    proof by its path) count the same trips and refuse the same forms, for the same reason."""
    from torchneuron.neff import NeffError
    from torchneuron.runtime import verifier

    options = {"trips": 5, **form}
    text = loop(**options)
    module = parse_module(text)
    with module.context:
        (node,) = [n for n in Dataflow.of_function(main_function(module)).nodes if n.kind == "loop"]
        try:
            ours = loop_trip_count(node.op)
        except UncountedLoopError as error:
            ours = str(error)
    verifier.clear_verified_programs()
    try:
        verifier.verified_program(text.encode(), "NEFF 'loop'")
    except NeffError as refusal:
        assert isinstance(ours, str) and ours in str(refusal)
    else:
        assert isinstance(ours, int)  # both admitted it


def test_eigh_is_estimated_with_its_sweeps(native_compile):
    """torch.linalg.eigh compiles its Jacobi sweeps as one loop: the profiled device time
    holds every sweep, not one."""
    a = torch.randn(6, 6)
    a = a + a.T
    chip = hardware.chip("trn2")
    with torchneuron.profiler.profile() as prof:
        torch.compile(torch.linalg.eigh, backend="neuron")(a)
    (event,) = [e for e in prof.events if e.schedule is not None]
    schedule = event.schedule
    (loop_kernel,) = [k for k in schedule.kernels if "stablehlo.while" in k.ops]
    trips = sweeps_for(6)
    assert f"{trips} trips" in " ".join(loop_kernel.notes)
    # Every sweep's body reads the carried matrices from HBM at least once.
    assert loop_kernel.duration_s >= trips * chip.dma_fixed_latency_s
    assert loop_kernel.flops > 0 and loop_kernel.flops % trips == 0
    assert schedule.flops == loop_kernel.flops  # every matmul of eigh is in the sweeps
    assert event.device_seconds == schedule.latency_s >= loop_kernel.duration_s
