"""FX (ATen) graph -> torch-mlir ``torch`` dialect, through torch-mlir's FX importer.

Before import the graph is normalised so that the program has a plain
signature: every tensor the graph reads is a function argument (constants held
by the module become *weights*, never inline literals), ``None`` outputs
(gradients of inputs that need none) are dropped and remembered, and each run-time
check (``lowering.checks``) becomes one more output, after the graph's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.fx
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d
from torch_mlir.extras.fx_importer import TORCH_DTYPE_TO_MLIR_TYPE, FxImporter

from torchneuron.mlir_context import new_context

from . import loops
from .checks import Check, check_of, is_check
from .errors import (
    DynamicShapeError,
    LoweringError,
    UnsupportedOpError,
    describe_value,
    node_source,
)
from .normalize import normalize_graph
from .scalar_asserts import scalar_asserts_as_checks


@dataclass
class ArgumentInfo:
    """One argument of the imported function."""

    name: str  # in the NEFF
    kind: str  # "input" (given at run time) or "weight" (data known at compile time)
    shape: tuple[int, ...]
    dtype: torch.dtype
    node: str = ""  # the graph's placeholder, when its name differs (INPUT_NAME_META)

    @property
    def node_name(self) -> str:
        return self.node or self.name


@dataclass(frozen=True)
class EmptyOutput:
    """A graph output with no elements: made at call time, not by the program."""

    shape: tuple[int, ...]
    dtype: torch.dtype

    def make(self, device: torch.device) -> torch.Tensor:
        return torch.empty(self.shape, dtype=self.dtype, device=device)


@dataclass
class PreparedGraph:
    """A graph ready for import and what the runtime needs to call it."""

    graph_module: torch.fx.GraphModule
    arguments: list[ArgumentInfo]
    weights: dict[str, torch.Tensor] = field(default_factory=dict)
    output_count: int = 0  # outputs of the original graph, None ones included
    none_outputs: tuple[int, ...] = ()  # positions of the outputs that are None
    # outputs that are plain numbers (a size AOTAutograd saves for the backward pass,
    # concrete once the graph is specialised to its input shapes): position -> value
    constant_outputs: dict[int, object] = field(default_factory=dict)
    # run-time checks: the program's last len(checks) results are their conditions
    # (0-d bools), in this order, after the outputs of the original graph
    checks: tuple[Check, ...] = ()


# placeholder meta: the name a program's input goes by in the NEFF when the graph had
# to rename its node (torch.export's user name ``input`` is node ``input_1``)
INPUT_NAME_META = "neuron_input_name"


def prepare_graph(
    gm: torch.fx.GraphModule,
    weights: dict[str, torch.Tensor] | None = None,
    symbolic: bool = False,
) -> PreparedGraph:
    """Normalise a copy of ``gm`` for import (``gm`` itself is left as it was).

    ``weights`` maps placeholder names to values known at compile time (a
    ``torch.export`` program's parameters and buffers); those placeholders
    become weight arguments. ``symbolic`` lets inputs and outputs keep symbolic
    sizes (a dynamic program, ``compiler/dynamic.py``); otherwise they are refused.
    """
    weights = dict(weights or {})
    graph = torch.fx.Graph()
    output = graph.graph_copy(gm.graph, {}, return_output_node=True)
    graph.output(output[0] if isinstance(output, tuple) else output)
    gm = torch.fx.GraphModule(gm, graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    last_placeholder = placeholders[-1] if placeholders else None

    for node in list(graph.nodes):
        if node.op != "get_attr":
            continue
        value = _fetch_attr(gm, node.target)
        if not isinstance(value, torch.Tensor):
            continue
        name = _safe_name(str(node.target))
        with (
            graph.inserting_after(last_placeholder)
            if last_placeholder
            else graph.inserting_before(next(iter(graph.nodes)))
        ):
            replacement = graph.placeholder(name)
        replacement.meta["val"] = _fake_like(value, node)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        last_placeholder = replacement
        weights[replacement.name] = value.detach()  # the graph may have renamed it

    arguments = []
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor):
            raise DynamicShapeError(
                f"graph input {node.name!r} is {type(value).__name__}, not a tensor; symbolic "
                "sizes and Python scalars as graph inputs are not supported (compile with "
                "dynamic=False, or pass tensors)"
            )
        if not symbolic:
            _check_static(node.name, value)
        kind = "weight" if node.name in weights else "input"
        name = node.meta.get(INPUT_NAME_META, node.name) if kind == "input" else node.name
        renamed = node.name if name != node.name else ""
        arguments.append(ArgumentInfo(name, kind, tuple(value.shape), value.dtype, renamed))

    output_node = next(n for n in reversed(graph.nodes) if n.op == "output")
    results = output_node.args[0]
    if not isinstance(results, (tuple, list)):
        results = (results,)
    none_outputs = tuple(i for i, r in enumerate(results) if r is None)
    constant_outputs: dict[int, object] = {}
    for i, r in enumerate(results):
        if r is None:
            continue
        if isinstance(r, (bool, int, float)):
            constant_outputs[i] = r
            continue
        if not isinstance(r, torch.fx.Node) or not isinstance(r.meta.get("val"), torch.Tensor):
            raise LoweringError(f"graph output {i} is {r!r}, not a tensor")
        value = r.meta["val"]
        if not symbolic:
            _check_static(f"output {i}", value)
        if isinstance(value.numel(), int) and value.numel() == 0:
            # Nothing to compute (and torch-mlir cannot lower every empty literal).
            constant_outputs[i] = EmptyOutput(tuple(value.shape), value.dtype)
    kept = [r for i, r in enumerate(results) if r is not None and i not in constant_outputs]
    _refuse_quantized(graph)
    scalar_asserts_as_checks(graph)
    conditions, checks = _checks_as_outputs(graph)
    output_node.args = (tuple(kept + conditions),)
    graph.eliminate_dead_code()
    normalize_graph(graph)
    return PreparedGraph(
        gm, arguments, weights, len(results), none_outputs, constant_outputs, tuple(checks)
    )


_QUANTIZED = frozenset({torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4})


def _refuse_quantized(graph: torch.fx.Graph) -> None:
    """Refuse, naming it, the first op that makes or takes a quantized tensor type
    (``torch.qint8``...): torch-mlir's importer has no type for them (a bare KeyError)."""
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        values = [node.meta.get("val"), *(a.meta.get("val") for a in node.all_input_nodes)]
        flat = torch.utils._pytree.tree_leaves([values, node.args, node.kwargs])
        if any(_is_quantized(v) for v in flat):
            raise UnsupportedOpError(
                str(node.target),
                [describe_value(a.meta.get("val")) for a in node.all_input_nodes],
                node_source(node),
                detail="quantized tensor types (torch.qint8, quint8, qint32...) have no "
                "StableHLO form; quantize with torch.ops.quantized_decomposed (integer "
                "tensors and explicit scales and zero points) instead",
            )


def _is_quantized(value) -> bool:
    if isinstance(value, torch.dtype):
        return value in _QUANTIZED
    return isinstance(value, torch.Tensor) and value.dtype in _QUANTIZED


def _checks_as_outputs(graph: torch.fx.Graph) -> tuple[list[torch.fx.Node], list[Check]]:
    """Every ``torchneuron::check`` node removed; its condition, a 0-d bool, returned to
    become an output. Checks the same condition states twice are kept once."""
    conditions: list[torch.fx.Node] = []
    checks: list[Check] = []
    seen: set[tuple[torch.fx.Node, Check]] = set()
    for node in list(graph.nodes):
        if not is_check(node):
            continue
        condition, check = check_of(node)
        graph.erase_node(node)
        if not isinstance(condition, torch.fx.Node):
            raise LoweringError(f"run-time check {check.message!r} has no tensor condition")
        value = condition.meta.get("val")
        if not isinstance(value, torch.Tensor) or value.dim() != 0 or value.dtype != torch.bool:
            raise LoweringError(f"run-time check {check.message!r} is not a 0-d bool tensor")
        if (condition, check) in seen:
            continue
        seen.add((condition, check))
        conditions.append(condition)
        checks.append(check)
    return conditions, checks


def import_graph(prepared: PreparedGraph, context: ir.Context | None = None) -> ir.Module:
    """Import a prepared graph as ``func.func @main`` in the raw torch dialect."""
    _refuse_unimportable_dtypes(prepared.graph_module.graph)
    context = context or new_context()
    torch_d.register_dialect(context)
    importer = FxImporter(context=context)
    if loops.has_loops(prepared.graph_module):
        # the loops' condition and body graphs become private functions first
        loops.carry_loop_inputs(prepared.graph_module)
        importer.import_graph_module(prepared.graph_module, func_name="main")
    else:
        importer.import_stateless_graph(prepared.graph_module.graph, func_name="main")
    return importer.module


def _check_static(what: str, value: torch.Tensor) -> None:
    if any(not isinstance(d, int) for d in value.shape):
        raise DynamicShapeError(
            f"{what} has symbolic shape {tuple(value.shape)}; the NEFF format needs static "
            "shapes (compile with dynamic=False)"
        )


def _fetch_attr(gm: torch.nn.Module, target: str):
    value = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _fake_like(value: torch.Tensor, node: torch.fx.Node):
    existing = node.meta.get("val")
    if isinstance(existing, torch.Tensor):
        return existing
    return value.detach()


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def _refuse_unimportable_dtypes(graph: torch.fx.Graph) -> None:
    """Raise ``UnsupportedOpError`` for a value of a dtype torch-mlir's importer has no
    type for (uint16, uint64: it failed with a bare ``KeyError: torch.uint64``)."""
    for node in graph.nodes:
        values = node.meta.get("val")
        for value in values if isinstance(values, (list, tuple)) else (values,):
            if isinstance(value, torch.Tensor) and value.dtype not in TORCH_DTYPE_TO_MLIR_TYPE:
                op = str(node.target) if node.op == "call_function" else f"{node.op} {node.name}"
                raise UnsupportedOpError(
                    f"{op} (its {value.dtype} value: torch-mlir's importer has no such type)"
                )
