"""A compiled graph run on tensors: what torch.compile's backend calls for each graph.

``NeuronGraphFunction`` takes the tensors an FX graph takes (``neuron`` or CPU) and
returns what the graph would: it turns them into the program's arrays (host aliases of
device memory for ``neuron`` tensors, which wait for the device's queue), draws the
program's random key when it takes one (``CompiledGraph.takes_random_key``), runs the
NEFF on the core of the inputs' device and puts the None, constant and computed
outputs back in the graph's order, on the inputs' device.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.fx
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from torchneuron.compiler import tensors
from torchneuron.compiler.pipeline import CompiledGraph
from torchneuron.device.layout import dense_order, inverse_order
from torchneuron.lowering.fx_to_torch import EmptyOutput


class NeuronGraphFunction:
    """Calls a compiled NEFF with torch tensors; returns torch tensors like the FX graph would.

    A graph with random ops takes a last input more than its FX graph: the key of
    its random draws, drawn at each call from the generator of the inputs' device.

    The program runs on ``core`` when given, else on the core of the inputs' neuron
    device (``neuron:1`` -> core 1, as eager ops do; the current neuron device for CPU
    inputs), loaded there on first use: rank 1 of a job whose tensors live on
    ``neuron:1`` runs its graphs on core 1.
    """

    def __init__(
        self,
        compiled: CompiledGraph,
        core: int | None = None,
        device: torch.device | None = None,
        load_on: int | None = None,
    ):
        self.compiled = compiled
        self.random_key = compiled.takes_random_key
        self.device = device or torch.device("cpu")  # of a graph without tensor inputs
        self.core = core
        self.programs: dict[int, Any] = {}  # core index -> LoadedNeff
        # loaded now: on ``load_on`` when given (a build on another thread, whose
        # current device is not the caller's), else on the device's core
        first = load_on if load_on is not None else self._core_for(self.device)
        self.loaded = self._program_on(first)
        self.none_outputs = set(compiled.none_outputs)
        self.constant_outputs = dict(compiled.constant_outputs)
        self.output_count = compiled.output_count

    def __call__(self, *args):
        device = first_device(args, self.device)
        # None stands for an effect token (AOTAutograd threads one through ops such as
        # linalg's error checks); the program takes it as an empty tensor.
        on_device = device.type == "neuron"
        convert = _device_to_numpy() if on_device else tensors.to_numpy
        arrays = [convert(a) if a is not None else self._empty_input(i) for i, a in enumerate(args)]
        if self.random_key:
            arrays.append(random_key(device))
        # Neuron tensors in and out are charged to HBM as tensors already.
        program = self.programs.get(self._core_for(device))
        if program is None:
            program = self._program_on(self._core_for(device))
        results = program.execute(arrays, resident=on_device)
        produced = iter(results)
        outputs = []
        for i in range(self.output_count):
            if i in self.none_outputs:
                outputs.append(None)
                continue
            if i in self.constant_outputs:
                value = self.constant_outputs[i]
                outputs.append(value.make(device) if isinstance(value, EmptyOutput) else value)
                continue
            tensor = tensors.from_numpy(next(produced))
            outputs.append(tensor if device.type == "cpu" else tensor.to(device))
        return outputs

    def _core_for(self, device: torch.device) -> int:
        if self.core is not None:
            return self.core
        if device.type == "neuron":
            return device.index or 0
        return _current_neuron_device()

    def _program_on(self, core: int):
        from torchneuron.device.profiler_events import ensure_hook
        from torchneuron.runtime import load_neff

        ensure_hook()

        program = self.programs.get(core)
        if program is None:
            if self.compiled.neff is None:  # compiler.dynamic_program.InterpretedGraph
                from torchneuron.runtime import get_core
                from torchneuron.runtime.interpreter import Interpreted

                program = Interpreted(
                    self.compiled.interpreted, get_core(core), self.compiled.weights
                )
            else:
                program = load_neff(self.compiled.neff, core=core)
            self.programs[core] = program
        return program

    @property
    def cores(self) -> tuple[int, ...]:
        """The cores the program is loaded on, first loaded first."""
        return tuple(self.programs)

    @property
    def interpreted(self) -> bool:
        """Whether the program runs on the interpreter (a shape still compiling)."""
        return self.compiled.neff is None

    def _empty_input(self, index: int) -> np.ndarray:
        spec = self.compiled.inputs[index]
        return np.zeros(spec["shape"], dtype=tensors.numpy_dtype(spec["dtype"]))


# Ops whose result is a view of their first argument (the rest of their arguments
# constants): an output made only of these from an input is that input's view.
_VIEW_OPS = frozenset(
    {
        torch.ops.aten.alias.default,
        torch.ops.aten.expand.default,
        torch.ops.aten.permute.default,
        torch.ops.aten.select.int,
        torch.ops.aten.slice.Tensor,
        torch.ops.aten.squeeze.dim,
        torch.ops.aten.squeeze.dims,
        torch.ops.aten.t.default,
        torch.ops.aten.transpose.int,
        torch.ops.aten.unsqueeze.default,
        torch.ops.aten.view.default,
    }
)


def split_input_outputs(
    gm: torch.fx.GraphModule,
) -> tuple[torch.fx.GraphModule, dict[int, tuple[int, tuple]]]:
    """``gm`` without the outputs that are its inputs or views of them, and for each
    such output position (input position, the view calls to replay on that input).

    A training forward graph returns the weights it saves for the backward (GPT-2
    124M: 340 MB of its 503 MB of outputs): a program computing them copies every
    weight each step; returned as the inputs themselves (as Inductor does), they cost
    nothing. ``gm`` itself when no output is such a view, or every output is.
    """
    placeholders = {node: i for i, node in enumerate(gm.graph.find_nodes(op="placeholder"))}
    (output,) = gm.graph.find_nodes(op="output")
    values = output.args[0]
    if not isinstance(values, (tuple, list)):
        return gm, {}
    found: dict[int, tuple[int, tuple]] = {}
    for position, value in enumerate(values):
        chain = []
        node = value
        while (
            isinstance(node, torch.fx.Node)
            and node.op == "call_function"
            and node.target in _VIEW_OPS
            and not any(
                isinstance(a, torch.fx.Node) for a in (*node.args[1:], *node.kwargs.values())
            )
        ):
            chain.append((node.target, tuple(node.args[1:]), dict(node.kwargs)))
            node = node.args[0]
        if isinstance(node, torch.fx.Node) and node in placeholders:
            traced = value.meta.get("val")
            if isinstance(traced, torch.Tensor) and not _symbolic(traced):
                found[position] = (placeholders[node], tuple(reversed(chain)))
    if not found or len(found) == len(values):
        return gm, {}
    graph = torch.fx.Graph()
    remap: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.graph_copy(gm.graph, remap)  # every node but the output, mapped in remap
    kept = [v for i, v in enumerate(values) if i not in found]
    graph.output(tuple(remap[v] if isinstance(v, torch.fx.Node) else v for v in kept))
    graph.eliminate_dead_code()
    return torch.fx.GraphModule(gm, graph), found


def permute_dense_inputs(
    gm: torch.fx.GraphModule, example_inputs: list, names: set[str]
) -> tuple[torch.fx.GraphModule, list, dict[int, tuple[int, ...]]]:
    """``gm`` taking each input named in ``names`` and traced as a permuted dense view
    in its dense order instead, with the permutation back as the program's first op;
    the example inputs permuted alike; and for each such input position its order.

    The program reads a contiguous array, so such an input was copied at every call:
    GPT-2's backward takes the tied head's weight transposed (147 MiB a step). Passed
    as ``input.permute(order)``, a view of the caller's buffer, it is not; the
    transpose is the program's, which XLA folds into the matmul that reads it.
    ``names`` are the inputs known to arrive in their traced layout (views of the
    caller's tensors, ``InputOutputsFunction``): a program's own outputs are contiguous
    whatever their traced strides, so an input computed by a forward is left alone.
    """
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    orders: dict[int, tuple[int, ...]] = {}
    for i, node in enumerate(placeholders):
        if node.name not in names:
            continue
        traced = node.meta.get("val")
        example = example_inputs[i] if i < len(example_inputs) else None
        order = dense_order(traced)
        if order is not None and order == dense_order(example):
            orders[i] = order
    if not orders:
        return gm, example_inputs, {}
    graph = torch.fx.Graph()
    remap: dict[torch.fx.Node, torch.fx.Node] = {}
    outputs = graph.graph_copy(gm.graph, remap)
    graph.output(outputs)
    last = remap[placeholders[-1]]
    for i, order in orders.items():
        node = remap[placeholders[i]]
        traced = node.meta["val"]
        dense = traced.permute(order)
        node.meta = {**node.meta, "val": dense}
        if "tensor_meta" in node.meta:  # the importer reads an input's type from it
            node.meta["tensor_meta"] = _extract_tensor_metadata(dense)
        back = inverse_order(order)
        with graph.inserting_after(last):
            restored = graph.call_function(torch.ops.aten.permute.default, (node, list(back)))
        restored.meta["val"] = traced
        node.replace_all_uses_with(
            restored, delete_user_cb=lambda user, keep=restored: user is not keep
        )
        last = restored
    examples = [e.permute(orders[i]) if i in orders else e for i, e in enumerate(example_inputs)]
    return torch.fx.GraphModule(gm, graph), examples, orders


class PermutedInputsFunction:
    """Calls ``inner`` (compiled by ``permute_dense_inputs``) with those inputs permuted
    to their dense order: views, so nothing is copied when the layout is the traced
    one (another layout is still right: the program's input is then made contiguous)."""

    def __init__(self, inner, orders: dict[int, tuple[int, ...]]):
        self.inner = inner
        self.orders = orders

    def __call__(self, *args):
        args = list(args)
        for i, order in self.orders.items():
            if isinstance(args[i], torch.Tensor):
                args[i] = args[i].permute(order)
        return self.inner(*args)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def _symbolic(value: torch.Tensor) -> bool:
    return any(not isinstance(d, int) for d in value.shape)


class InputOutputsFunction:
    """A graph function whose outputs that are inputs (or their views) are not computed:
    ``inner`` computes the rest; those are the caller's own tensors, as views."""

    def __init__(self, inner, views: dict[int, tuple[int, tuple]], output_count: int):
        self.inner = inner
        self.views = views
        self.output_count = output_count

    def __call__(self, *args):
        computed = iter(self.inner(*args))
        device = first_device(args, getattr(self.inner, "device", None))
        outputs = []
        for position in range(self.output_count):
            view = self.views.get(position)
            if view is None:
                outputs.append(next(computed))
                continue
            index, chain = view
            tensor = args[index]
            for function, rest, keywords in chain:
                tensor = function(tensor, *rest, **keywords)
            outputs.append(tensor if tensor.device == device else tensor.to(device))
        return outputs

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


# The device modules below need its native layer: imported when first needed, so that
# importing this module (as the backend does) stays cheap.


def _device_to_numpy():
    from torchneuron.device.arrays import host_array

    return host_array


def _current_neuron_device() -> int:
    from torchneuron.device.module import current_device

    return current_device()


def random_key(device: torch.device) -> np.ndarray:
    """Two 32-bit words from the generator of ``device`` (advancing it): a graph's random key."""
    if device.type == "neuron":
        from torchneuron.device.host import random_words

        return np.array(random_words(device.index or 0, 2), dtype=np.int64)
    return torch.randint(0, 2**32, (2,), dtype=torch.int64).numpy()


def output_device(gm: torch.fx.GraphModule) -> torch.device | None:
    """The device of the graph's first tensor output, as traced: where a graph without
    tensor inputs puts its outputs."""
    for node in gm.graph.find_nodes(op="output"):
        for value in torch.utils._pytree.tree_leaves(node.args[0]):
            traced = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
            if isinstance(traced, torch.Tensor):
                return traced.device
    return None


def first_device(args, default: torch.device | None = None) -> torch.device:
    """The device of the first tensor among ``args``; ``default`` (else CPU) when none is."""
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return default or torch.device("cpu")
