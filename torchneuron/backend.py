"""The ``torch.compile(backend="neuron")`` backend.

Dynamo hands over an FX graph; AOTAutograd splits it into forward and backward
ATen graphs (with torch-mlir's decompositions); each is compiled to a NEFF by
``compile_graph`` and run on the emulated NeuronCore. A graph that cannot be
lowered runs on the CPU with a warning, or raises when
``TORCHNEURON_NO_FALLBACK=1``.

Why this file is long: every way a Dynamo graph is compiled (static, symbolic,
bucketed, per shape, complex, split at collectives) dispatches from one function
here, and the callables they return share the calling convention of
``NeuronGraphFunction``; split, each would import the others back.
"""

from __future__ import annotations

import hashlib
import itertools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.nn.attention import SDPBackend, sdpa_kernel

from torchneuron import collective_graphs, settings
from torchneuron.compiler import buckets, dynamic, tensors
from torchneuron.compiler.pipeline import CompiledGraph, compile_graph
from torchneuron.errors import TorchNeuronError
from torchneuron.lowering import (
    DynamicShapeError,
    LoweringError,
    UnsupportedOpError,
    decomposition_table,
)
from torchneuron.lowering.complex_graph import PairedGraph, graph_has_complex
from torchneuron.lowering.fx_to_torch import EmptyOutput
from torchneuron.lowering.rules.random import is_random_state, seed_random_ops
from torchneuron.lru import LRU

_graph_ids = itertools.count()


class NeuronBackendOptions:
    """Options given as ``torch.compile(..., options={...})``."""

    KNOWN = ("target", "pipeline", "dump_dir", "core", "buckets")

    def __init__(self, options: dict[str, Any] | None):
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.KNOWN))
        if unknown:
            raise ValueError(
                f"unknown option(s) for backend 'neuron': {', '.join(unknown)}; "
                f"known: {', '.join(self.KNOWN)}"
            )
        if "target" in options:
            self.target: str = options["target"]
        else:
            from torchneuron.target.topology import topology

            self.target = topology().target
        self.pipeline: str | None = options.get("pipeline")
        self.dump_dir: str | None = options.get("dump_dir")
        # None: the core of the inputs' neuron device (the current device for CPU inputs)
        self.core: int | None = int(options["core"]) if "core" in options else None
        # sizes to pad a dynamic dimension up to (compiler/buckets.py); None: exact sizes
        if "buckets" in options:
            self.buckets = buckets.parse_buckets(options["buckets"], "option 'buckets'")
        else:
            self.buckets = buckets.buckets_from_env()


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options=None, **kw):
    """The torch.compile backend entry point (registered as ``"neuron"``)."""
    opts = NeuronBackendOptions(options or kw.get("options"))
    key = _dynamo_graph_key(gm, example_inputs, opts)
    cached = _COMPILED_FRAMES.get(key) if key is not None else None
    if cached is not None:
        return cached
    compiled = _compile_dynamo_graph(gm, example_inputs, opts)
    if key is not None:
        _COMPILED_FRAMES.put(key, compiled)
    return compiled


# Dynamo graph key -> the AOTAutograd-compiled callable made for it. Dynamo passes
# parameters and buffers as graph inputs, so the callable depends only on the graph,
# its constants and the inputs' metadata; a second compile of the same graph (after
# torch._dynamo.reset(), or a second instance of the same model) skips AOTAutograd.
_COMPILED_FRAMES: LRU[str, Any] = LRU(capacity=128)


def _dynamo_graph_key(gm: torch.fx.GraphModule, example_inputs, opts) -> str | None:
    if any(True for _ in gm.parameters()) or any(True for _ in gm.buffers()):
        return None  # state held by the module itself: not a pure function of the inputs
    digest = hashlib.sha256(gm.code.encode())
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            return None
    for value in example_inputs:
        if isinstance(value, torch.Tensor):
            digest.update(
                repr(
                    (
                        "T",
                        tuple(value.shape),
                        value.stride(),
                        value.dtype,
                        str(value.device),
                        value.requires_grad,
                        isinstance(value, torch.nn.Parameter),
                        value.storage_offset(),
                    )
                ).encode()
            )
        elif isinstance(value, (int, float, bool)):
            digest.update(repr(("S", type(value).__name__, value)).encode())
        else:
            return None  # symbolic sizes and other objects: no safe key
    digest.update(
        repr(
            (
                torch.is_grad_enabled(),
                torch.is_inference_mode_enabled(),
                torch.is_autocast_enabled("cpu"),
                torch.get_default_dtype(),
                fallback_disabled(),
                opts.target,
                opts.pipeline,
                opts.dump_dir,
                opts.core,
                opts.buckets,
            )
        ).encode()
    )
    return digest.hexdigest()


def _compile_dynamo_graph(gm: torch.fx.GraphModule, example_inputs, opts):
    graph_id = next(_graph_ids)

    def compile_forward(fx_gm, fx_inputs):
        return _compile_or_fallback(fx_gm, fx_inputs, f"graph{graph_id}_forward", opts)

    def compile_backward(fx_gm, fx_inputs):
        return _compile_or_fallback(fx_gm, fx_inputs, f"graph{graph_id}_backward", opts)

    def compile_inference(fx_gm, fx_inputs):
        name = f"graph{graph_id}_forward"
        return _compile_or_fallback(fx_gm, fx_inputs, name, opts, inference=True)

    compiler = aot_autograd(
        fw_compiler=compile_forward,
        bw_compiler=compile_backward,
        inference_compiler=compile_inference,
        decompositions=decomposition_table(),
    )
    # The math attention kernel decomposes into ops with lowerings, and so does
    # its backward; the fused CPU kernels do not.
    with sdpa_kernel([SDPBackend.MATH]):
        return compiler(gm, example_inputs)


def fallback_disabled() -> bool:
    """``TORCHNEURON_NO_FALLBACK`` (one switch for eager and compile mode)."""
    return settings.env_flag(settings.NO_FALLBACK)


def _compile_or_fallback(
    gm: torch.fx.GraphModule, example_inputs, name: str, opts, inference: bool = False
):
    if _has_symbolic_inputs(gm):
        return make_boxed_func(
            _compile_dynamic_or_per_shape(gm, example_inputs, name, opts, inference)
        )
    if graph_has_complex(gm):
        _refuse_wrong_under_aot_autograd(gm)
        # complex values as real pairs, FFTs as DFT matmuls (lowering/complex_graph.py)
        compile_real = lambda real, inputs: _compile_or_fallback(real, inputs, name, opts)  # noqa: E731
        try:
            return make_boxed_func(PairedGraph(gm, example_inputs, compile_real))
        except LoweringError as exc:  # a complex op without a real-pair rule
            return _graph_on_cpu(gm, name, exc)
    if collective_graphs.needs_split(gm):
        # Collectives call the process group: the compute between them is compiled
        # in segments, the collectives run eagerly in between (collective_graphs.py).
        split = collective_graphs.split_at_collectives(gm, name)
        run = collective_graphs.SplitGraphFunction(
            split,
            lambda part, inputs, part_name: _compile_or_fallback(part, inputs, part_name, opts),
        )
        return make_boxed_func(run)
    try:
        # AOTAutograd calls us inside its FakeTensorMode; the graph's real constant
        # tensors (lifted as weights, hashed for the cache) must be read outside it.
        with unset_fake_temporarily():
            # random ops draw from a key given at each call (one more input)
            seeded = seed_random_ops(gm, example_inputs)
            compiled = compile_graph(
                *(seeded[:2] if seeded else (gm, example_inputs)),
                name=name,
                target=opts.target,
                pipeline=opts.pipeline,
                dump_dir=opts.dump_dir,
            )
    except LoweringError as exc:
        return _graph_on_cpu(gm, name, exc)
    random_key = bool(seeded and seeded.takes_key)
    return make_boxed_func(NeuronGraphFunction(compiled, opts.core, random_key, _output_device(gm)))


# Complex ops whose results AOTAutograd's runtime gets wrong whatever the backend
# (torch.compile(backend="aot_eager") of torch.linalg.pinv on complex64 differs from
# eager by more than 1 on torch 2.13), so neither our lowering nor a CPU fallback inside
# the compiled graph could give the right answer: refused, never a silent wrong value.
_WRONG_UNDER_AOT_AUTOGRAD = ("linalg_pinv",)


def _refuse_wrong_under_aot_autograd(gm: torch.fx.GraphModule) -> None:
    for node in gm.graph.nodes:
        packet = getattr(node.target, "_opname", None)  # aten overloads only
        if node.op == "call_function" and packet in _WRONG_UNDER_AOT_AUTOGRAD:
            raise UnsupportedOpError(
                str(node.target),
                [_type_text(a.meta.get("val")) for a in node.all_input_nodes],
                detail="refused for complex values under torch.compile: PyTorch's "
                "AOTAutograd returns wrong values for it with any backend; call it outside "
                "the compiled region (torch.compiler.disable) or in eager mode",
            )


def _type_text(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{value.dtype}{list(value.shape)}".removeprefix("torch.")
    return type(value).__name__


def _graph_on_cpu(gm: torch.fx.GraphModule, name: str, exc: LoweringError):
    if fallback_disabled():
        raise exc
    warnings.warn(
        f"torchneuron: graph {name} runs on the CPU, not on the NeuronCore, because it "
        f"could not be compiled: {exc}\n(set {settings.NO_FALLBACK}=1 to make this an error)",
        stacklevel=3,
    )
    return make_boxed_func(gm.forward)


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
        random_key: bool = False,
        device: torch.device | None = None,
    ):
        self.compiled = compiled
        self.random_key = random_key
        self.device = device or torch.device("cpu")  # of a graph without tensor inputs
        self.core = core
        self.programs: dict[int, Any] = {}  # core index -> LoadedNeff
        self.loaded = self._program_on(self._core_for(self.device))
        self.none_outputs = set(compiled.none_outputs)
        self.constant_outputs = dict(compiled.constant_outputs)
        self.output_count = compiled.output_count

    def __call__(self, *args):
        device = _first_device(args, self.device)
        # None stands for an effect token (AOTAutograd threads one through ops such as
        # linalg's error checks); the program takes it as an empty tensor.
        on_device = device.type == "neuron"
        convert = _device_to_numpy() if on_device else tensors.to_numpy
        arrays = [convert(a) if a is not None else self._empty_input(i) for i, a in enumerate(args)]
        if self.random_key:
            arrays.append(_random_key(device))
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
        from torchneuron.runtime import load_neff

        program = self.programs.get(core)
        if program is None:
            program = self.programs[core] = load_neff(self.compiled.neff, core=core)
        return program

    def _empty_input(self, index: int) -> np.ndarray:
        spec = self.compiled.inputs[index]
        return np.zeros(spec["shape"], dtype=tensors.numpy_dtype(spec["dtype"]))


def _compile_dynamic_or_per_shape(
    gm: torch.fx.GraphModule, example_inputs, name: str, opts, inference: bool = False
):
    """A graph with symbolic sizes: its front half compiled once (``DynamicGraphFunction``);
    where it cannot stay symbolic, retraced and compiled per shape, with a warning that
    says why (counted in ``dynamic.STATS["per_shape_front_half"]``). With buckets, an
    inference graph whose results padding cannot change runs padded to the buckets
    (``buckets.BucketedFunction``); any other graph runs exactly, with one warning."""
    if opts.buckets is not None:
        bucketed = _compile_bucketed(gm, name, opts, inference)
        if bucketed is not None:
            return bucketed
    try:
        with unset_fake_temporarily():
            if _draws_random_words(gm):
                raise DynamicShapeError("random ops draw words of symbolic count")
            program, size_positions = dynamic.compile_dynamic_graph(
                gm,
                name=name,
                target=opts.target,
                pipeline=opts.pipeline,
                dump_dir=opts.dump_dir,
            )
    except LoweringError as exc:
        warnings.warn(
            f"torchneuron: graph {name} has symbolic sizes but is compiled once per shape "
            f"(its front half included), because it cannot be lowered with symbolic sizes: "
            f"{exc}",
            stacklevel=2,
        )
        return ShapeSpecializingFunction(gm, name, opts)
    return DynamicGraphFunction(program, size_positions, opts.core, _output_device(gm))


def _compile_bucketed(gm: torch.fx.GraphModule, name: str, opts, inference: bool):
    """``gm`` padded to ``opts.buckets`` (a ``BucketedFunction``), or None after one
    warning (counted in ``buckets.STATS["refusals"]``) when padding could change a result
    or the graph cannot stay symbolic."""
    try:
        if not inference:
            if name.endswith("_backward"):
                return None  # its forward graph warned already
            raise buckets.BucketRefused(
                "it is a training graph: its backward would read padded activations; "
                "buckets apply to inference (torch.no_grad()) graphs"
            )
        with unset_fake_temporarily():
            if _draws_random_words(gm):
                raise buckets.BucketRefused("it draws random numbers")
            plan = buckets.plan_buckets(gm, opts.buckets)
            program, size_positions = dynamic.compile_dynamic_graph(
                plan.graph_module,
                name=name,
                target=opts.target,
                pipeline=opts.pipeline,
                dump_dir=opts.dump_dir,
            )
    except buckets.NothingToBucket:
        return None
    except (buckets.BucketRefused, LoweringError) as exc:
        buckets.STATS["refusals"] += 1
        warnings.warn(
            f"torchneuron: graph {name} is not padded to buckets {list(opts.buckets)} "
            f"(it runs at each exact size) because {exc}",
            stacklevel=3,
        )
        return None
    buckets.STATS["bucketed_graphs"] += 1
    inner = DynamicGraphFunction(program, size_positions, opts.core, _output_device(gm))
    return buckets.BucketedFunction(inner, plan, _admits(program.signature))


def _admits(signature):
    """Whether ``signature`` (ranges, guards) admits the symbols' values (a padded size
    must keep every guard the tracer assumed, e.g. ``s0 != 128``)."""

    def admits(values: dict[str, int]) -> bool:
        for name, (low, high) in signature.symbols.items():
            value = values.get(name)
            if value is None or value < low or (high is not None and value > high):
                return False
        try:
            return all(dynamic.holds(guard, values) for guard in signature.guards)
        except (KeyError, ValueError, TorchNeuronError):
            return False

    return admits


def _draws_random_words(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` draws random words (which ``seed_random_ops`` counts statically)."""
    stateful = (
        torch.ops.torchneuron.random_bits.default,
        torch.ops.higher_order.run_and_save_rng_state,
        torch.ops.higher_order.run_with_rng_state,
    )
    return any(
        node.op == "call_function"
        and (
            node.target in stateful
            or torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())
        )
        for node in gm.graph.nodes
    )


# Concrete shapes whose programs one graph keeps loaded (the oldest is dropped first).
SHAPES_PER_GRAPH = 64


class DynamicGraphFunction:
    """Runs a ``DynamicProgram``: binds its symbols from the inputs' shapes (a shape
    outside its signature is a ``ShapeConstraintError``), specializes it once per
    concrete shape, and calls that program like ``NeuronGraphFunction``."""

    def __init__(self, program, size_positions, core, device):
        self.program = program
        self.size_positions = set(size_positions)
        self.core = core
        self.device = device
        self._by_shapes: LRU[tuple, NeuronGraphFunction] = LRU(capacity=SHAPES_PER_GRAPH)

    def __call__(self, *args):
        tensor_args = [a for i, a in enumerate(args) if i not in self.size_positions]
        shapes = tuple(tuple(a.shape) for a in tensor_args)
        values = self.program.signature.bind(shapes)
        for i in sorted(self.size_positions):  # Dynamo's own sizes must agree
            given = args[i]
            if isinstance(given, int) and given not in values.values():
                raise dynamic.ShapeConstraintError(
                    f"size argument {i} is {given}, no input dimension has that size"
                )
        function = self._by_shapes.get(shapes)
        if function is None:
            compiled = self.program.specialize(shapes)
            function = NeuronGraphFunction(compiled, self.core, False, self.device)
            self._by_shapes.put(shapes, function)
        else:
            dynamic.STATS["specialization_hits"] += 1
        outputs = function(*tensor_args)
        for position, size in sorted(self.program.sizes(values).items()):
            outputs.insert(position, size)
        return outputs


class ShapeSpecializingFunction:
    """Runs a graph with symbolic sizes by compiling one NEFF per concrete shape.

    The fallback for graphs that cannot be lowered with symbolic sizes
    (``DynamicGraphFunction`` is the path that compiles once): at call time the
    graph is retraced with the concrete inputs and compiled (then cached per shape
    signature); each retrace counts in ``dynamic.STATS["per_shape_front_half"]``.
    """

    def __init__(self, gm: torch.fx.GraphModule, name: str, opts):
        self.gm = gm
        self.name = name
        self.opts = opts
        self._by_shapes: LRU[tuple, Any] = LRU(capacity=SHAPES_PER_GRAPH)
        self._compiled = itertools.count()

    def __call__(self, *args):
        key = tuple(
            (tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else (type(a), a) for a in args
        )
        function = self._by_shapes.get(key)
        if function is None:
            function = self._specialize(args)
            self._by_shapes.put(key, function)
        tensor_args = [a for a in args if isinstance(a, torch.Tensor)]
        return function(*tensor_args)

    def _specialize(self, args):
        from torch.fx.experimental.proxy_tensor import make_fx

        positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

        def with_constants(*tensor_args):
            full = list(args)
            for i, t in zip(positions, tensor_args):
                full[i] = t
            return self.gm(*full)

        tensor_args = [args[i] for i in positions]
        dynamic.STATS["per_shape_front_half"] += 1
        static_gm = make_fx(with_constants, tracing_mode="fake")(*tensor_args)
        shape_name = f"{self.name}_{next(self._compiled)}"
        boxed = _compile_or_fallback(static_gm, tensor_args, shape_name, self.opts)
        return lambda *tensor_args: boxed(list(tensor_args))


def _has_symbolic_inputs(gm: torch.fx.GraphModule) -> bool:
    for node in gm.graph.nodes:
        if node.op != "placeholder" or is_random_state(node):
            continue
        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            return True
        if isinstance(value, torch.Tensor) and any(not isinstance(d, int) for d in value.shape):
            return True
    return False


def _device_to_numpy():
    from torchneuron.device.arrays import host_array

    return host_array


def _current_neuron_device() -> int:
    from torchneuron.device.module import current_device

    return current_device()


def _random_key(device: torch.device) -> np.ndarray:
    """Two 32-bit words from the generator of ``device`` (advancing it): a graph's random key."""
    if device.type == "neuron":
        from torchneuron.device.host import random_words

        return np.array(random_words(device.index or 0, 2), dtype=np.int64)
    return torch.randint(0, 2**32, (2,), dtype=torch.int64).numpy()


def _output_device(gm: torch.fx.GraphModule) -> torch.device | None:
    """The device of the graph's first tensor output, as traced."""
    for node in gm.graph.find_nodes(op="output"):
        for value in torch.utils._pytree.tree_leaves(node.args[0]):
            traced = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
            if isinstance(traced, torch.Tensor):
                return traced.device
    return None


def _first_device(args, default: torch.device | None = None) -> torch.device:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return default or torch.device("cpu")
