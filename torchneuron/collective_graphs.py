"""Compiled graphs with collectives: split at the collective ops, run them in between.

DTensor, compiled FSDP and Dynamo's rewrite of an in-graph ``dist.all_reduce`` put
functional collectives (``torch.ops._c10d_functional.*``: all_reduce,
all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single, broadcast, their
coalesced forms, and ``wait_tensor``) into the ATen graphs AOTAutograd hands the
backend. A collective is a call into the process group, not a computation a NEFF can
hold, so ``split_at_collectives`` cuts such a graph into *stages*: stage ``k`` first
runs its collective nodes eagerly (they call the process group with the real
tensors), then its compute segment, a graph of its own compiled to a NEFF like any
other (named ``<graph>_part<k>``, e.g. ``graph3_forward_part1``, as ``neuronc
inspect`` and the profiler show it). A last stage may hold collectives only.

Ordering guarantee. Every node runs after every node it reads, so a collective runs
after the compute that produces its input and before the compute that consumes its
(waited) output. Collectives that issue communication run in the graph's program
order on every rank (ranks must issue them alike, or they deadlock); a
``wait_tensor`` runs as late as its first reader allows, so the collective overlaps
the compute issued in between (not in a graph that mutates a tensor in place: there
each wait stays with its collective). Compute moves to the earliest stage whose
inputs are ready, which is what keeps the number of segments at the least the data
dependencies need (compute -> all_reduce -> compute is two segments). A node that
writes an argument in place runs after every earlier reader of it and before every
later one.

Opaque graph inputs (script objects DTensor's graphs carry from input to output) pass
through the same way, outside the segments: a graph holding them is split too, if
need be into one segment.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

# Operator namespaces whose ops call into a process group.
COLLECTIVE_NAMESPACES = frozenset(
    {"_c10d_functional", "c10d_functional", "_c10d_functional_autograd", "_dtensor"}
)
_WAIT_NAMES = frozenset({"wait_tensor"})
# Other ops that run eagerly between the segments, in program order like collectives that
# issue communication: NKI kernel calls (torchneuron/nki/torch_ops.py), which run on the
# kernel emulator, not in a NEFF.
EAGER_NAMESPACES = frozenset({"torchneuron_nki"})


def _namespace(target: Any) -> str | None:
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return target.namespace
    return None


def is_collective(node: torch.fx.Node) -> bool:
    """Whether ``node`` calls a functional collective (``wait_tensor`` included)."""
    return node.op == "call_function" and _namespace(node.target) in COLLECTIVE_NAMESPACES


def is_eager_op(node: torch.fx.Node) -> bool:
    """Whether ``node`` runs eagerly between segments: a collective or an NKI kernel call."""
    return node.op == "call_function" and (
        is_collective(node) or _namespace(node.target) in EAGER_NAMESPACES
    )


def _is_wait(node: torch.fx.Node) -> bool:
    return is_collective(node) and node.target._opname in _WAIT_NAMES


def has_collectives(gm: torch.fx.GraphModule) -> bool:
    return any(is_collective(node) for node in gm.graph.nodes)


def _is_opaque(value: Any) -> bool:
    from torch._library.fake_class_registry import FakeScriptObject

    return isinstance(value, (torch.ScriptObject, FakeScriptObject))


def has_opaque_inputs(gm: torch.fx.GraphModule) -> bool:
    """Whether a graph input is an opaque object, not a tensor (DTensor's graphs carry
    some through, from input to output); the split keeps them out of the segments."""
    return any(_is_opaque(node.meta.get("val")) for node in gm.graph.find_nodes(op="placeholder"))


def needs_split(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` holds what a NEFF cannot: collectives, NKI kernel calls, or opaque
    inputs."""
    return any(is_eager_op(node) for node in gm.graph.nodes) or has_opaque_inputs(gm)


def _written_arguments(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The nodes ``node`` writes in place (its schema's mutable arguments)."""
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None or not schema.is_mutable:
        return []
    written = []
    for i, argument in enumerate(schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = node.args[i] if i < len(node.args) else node.kwargs.get(argument.name)
        written.extend(_leaves(value))
    return written


def _leaves(value: Any) -> list[torch.fx.Node]:
    found: list[torch.fx.Node] = []
    torch.fx.node.map_arg(value, found.append)
    return found


@dataclass
class Segment:
    """One compute segment: a graph of its own, its inputs and outputs as nodes of the
    original graph (in the order of the segment graph's placeholders and outputs)."""

    name: str
    gm: torch.fx.GraphModule
    inputs: list[torch.fx.Node]
    outputs: list[torch.fx.Node]

    def example_inputs(self) -> list[Any]:
        return [node.meta.get("val") for node in self.inputs]


@dataclass
class Stage:
    """Collective nodes run eagerly (program order), then the compute segment if any."""

    collectives: list[torch.fx.Node] = field(default_factory=list)
    segment: Segment | None = None


@dataclass
class SplitGraph:
    """A graph cut at its collectives: its stages in the order they run."""

    gm: torch.fx.GraphModule
    stages: list[Stage]

    @property
    def segments(self) -> list[Segment]:
        return [stage.segment for stage in self.stages if stage.segment is not None]


def split_at_collectives(gm: torch.fx.GraphModule, name: str) -> SplitGraph:
    """Cut ``gm`` into stages of eager collectives and compute segments (module docstring)."""
    nodes = list(gm.graph.nodes)
    eager = _eager_nodes(nodes)
    stage_of = _assign_stages(nodes, eager)
    last = max(stage_of.values(), default=0)
    stages = [Stage() for _ in range(last + 1)]
    members: list[list[torch.fx.Node]] = [[] for _ in stages]
    for node in nodes:
        if node in eager:
            stages[stage_of[node]].collectives.append(node)
        elif node in stage_of:
            members[stage_of[node]].append(node)
    for index, compute in enumerate(members):
        stages[index].segment = _segment(gm, compute, f"{name}_part{index}")
    return SplitGraph(gm, stages)


def _eager_nodes(nodes: list[torch.fx.Node]) -> set[torch.fx.Node]:
    """Collectives and kernel calls, and the items taken from their lists of results."""
    eager: set[torch.fx.Node] = set()
    for node in nodes:
        if is_eager_op(node):
            eager.add(node)
        elif (
            node.op == "call_function" and node.target is operator.getitem and node.args[0] in eager
        ):
            eager.add(node)
    return eager


def _assign_stages(nodes: list[torch.fx.Node], eager: set[torch.fx.Node]) -> dict:
    """Stage index of every call node: as early as its inputs allow, collectives that
    communicate in program order, waits as late as their readers allow."""
    stage_of: dict[torch.fx.Node, int] = {}
    # extra inputs that order in-place writes against the other readers of a tensor
    after: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    readers: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    last_writer: dict[torch.fx.Node, torch.fx.Node] = {}
    mutates = False
    issue_stage = 0
    for node in nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        inputs = node.all_input_nodes
        ordered = [last_writer[i] for i in inputs if i in last_writer]
        written = _written_arguments(node)
        for tensor in written:
            ordered.extend(r for r in readers.get(tensor, ()) if r is not node)
        stage = issue_stage if node in eager and not _is_wait(node) else 0
        for source in [*inputs, *ordered]:
            if source not in stage_of:
                continue  # a placeholder or constant: ready from the start
            ready = stage_of[source]
            if node in eager and source not in eager:
                ready += 1  # a segment's output is there after the segment
            stage = max(stage, ready)
        stage_of[node] = stage
        after[node] = ordered
        if node in eager and not _is_wait(node) and node.target is not operator.getitem:
            issue_stage = stage
        for tensor in inputs:
            readers.setdefault(tensor, []).append(node)
        for tensor in written:
            last_writer[tensor] = node
            mutates = True
    if not mutates:
        _defer_waits(nodes, stage_of)
    return stage_of


def _defer_waits(nodes: list[torch.fx.Node], stage_of: dict[torch.fx.Node, int]) -> None:
    """Move each wait to the stage of its first reader (after the last segment when only
    the graph's output reads it), so the collective overlaps the compute in between."""
    end = max(stage_of.values(), default=0)
    for node in reversed(nodes):
        if node not in stage_of or not _is_wait(node):
            continue
        readers = [user for user in node.users if user.op != "output"]
        if readers:
            stage_of[node] = min(stage_of[user] for user in readers)
        else:
            stage_of[node] = end + 1


def _segment(gm: torch.fx.GraphModule, compute: list[torch.fx.Node], name: str) -> Segment | None:
    """The compute nodes of one stage as a graph of their own (None: nothing to run)."""
    members = set(compute)
    graph = torch.fx.Graph()
    inputs: list[torch.fx.Node] = []
    copied: dict[torch.fx.Node, torch.fx.Node] = {}

    def argument(node: torch.fx.Node) -> torch.fx.Node:
        if node in copied:
            return copied[node]
        if node.op == "get_attr":  # a constant stays inside the segment
            copied[node] = graph.get_attr(node.target)
        else:
            placeholder = graph.placeholder(node.name)
            placeholder.meta = dict(node.meta)
            inputs.append(node)
            copied[node] = placeholder
        return copied[node]

    for node in compute:
        for source in node.all_input_nodes:
            if source not in members:
                argument(source)
        copied[node] = graph.node_copy(node, lambda n: copied[n])
    outputs = [node for node in compute if any(user not in members for user in node.users)]
    writes = any(_written_arguments(node) for node in compute)
    if not outputs and not writes:
        return None
    graph.output(tuple(copied[node] for node in outputs))
    return Segment(name, torch.fx.GraphModule(gm, graph, class_name=name), inputs, outputs)


class SplitGraphFunction:
    """Runs a ``SplitGraph``: compiled segments and eager collectives, stage by stage.

    Called with the graph's inputs, returns its outputs like the FX graph would.
    ``compile_segment(gm, example_inputs, name)`` returns the boxed function (one list
    of inputs) that runs one segment. A value is dropped after the last step reading it;
    a collective's inputs are held until its wait has run, since the process group may
    still be reading them.
    """

    def __init__(
        self,
        split: SplitGraph,
        compile_segment: Callable[[torch.fx.GraphModule, Sequence[Any], str], Any],
    ):
        self.split = split
        self.placeholders = [n for n in split.gm.graph.nodes if n.op == "placeholder"]
        self.output_node = next(iter(split.gm.graph.find_nodes(op="output")))
        # the steps in the order they run: a collective node, or a segment and its program
        self.steps: list[torch.fx.Node | tuple[Segment, Any]] = []
        for stage in split.stages:
            self.steps.extend(stage.collectives)
            segment = stage.segment
            if segment is not None:
                program = compile_segment(segment.gm, segment.example_inputs(), segment.name)
                self.steps.append((segment, program))
        self.release_after = _last_uses(self.steps, self.output_node)

    def __call__(self, *args: Any) -> Any:
        env: dict[torch.fx.Node, Any] = dict(zip(self.placeholders, args))
        gm = self.split.gm
        for index, step in enumerate(self.steps):
            if isinstance(step, torch.fx.Node):
                call_args = torch.fx.node.map_arg(step.args, lambda n: _read(env, gm, n))
                call_kwargs = torch.fx.node.map_arg(step.kwargs, lambda n: _read(env, gm, n))
                env[step] = step.target(*call_args, **call_kwargs)
            else:
                segment, program = step
                results = program([_read(env, gm, n) for n in segment.inputs])
                env.update(zip(segment.outputs, results))
            for node in self.release_after.get(index, ()):
                env.pop(node, None)
        result = torch.fx.node.map_arg(self.output_node.args[0], lambda n: _read(env, gm, n))
        return list(result) if isinstance(result, (tuple, list)) else result


def _read(env: dict, gm: torch.fx.GraphModule, node: torch.fx.Node) -> Any:
    if node.op == "get_attr":
        return getattr(gm, node.target)
    return env[node]


def _last_uses(steps: list, output_node: torch.fx.Node) -> dict[int, list[torch.fx.Node]]:
    """Step index -> the values no later step reads (dropped then, as FX's interpreter
    does). A collective reads its inputs until the last step taking its results (its
    wait, or the waits of a coalesced result's items)."""
    position = {step: i for i, step in enumerate(steps) if isinstance(step, torch.fx.Node)}
    held_until: dict[torch.fx.Node, int] = {}
    for node in reversed(list(position)):
        held_until[node] = max(
            [position[node]] + [held_until[u] for u in node.users if u in held_until]
        )
    last: dict[torch.fx.Node, int] = {}
    for index, step in enumerate(steps):
        if isinstance(step, torch.fx.Node):
            for source in step.all_input_nodes:
                last[source] = max(last.get(source, -1), held_until[step])
        else:
            for source in step[0].inputs:
                last[source] = max(last.get(source, -1), index)
    for source in output_node.all_input_nodes:
        last.pop(source, None)  # returned: kept to the end
    by_step: dict[int, list[torch.fx.Node]] = {}
    for node, index in last.items():
        by_step.setdefault(index, []).append(node)
    return by_step
