"""The ``torch.compile(backend="neuron")`` backend: the front door of compiled graphs.

Dynamo hands over an FX graph; AOTAutograd splits it into forward and backward
ATen graphs (with torch-mlir's decompositions); each is compiled by the first route of
``ROUTES`` that takes it and runs on the emulated NeuronCore. A graph that cannot be
lowered runs on the CPU with a ``CpuFallbackWarning``, or raises when
``TORCHNEURON_NO_FALLBACK=1``.

Here: the options, the Dynamo graph key and the frame cache, the AOTAutograd wiring,
the route table and the fallback warning. The routes' compilers and callables live
with the compiler (``compiler/dynamic_functions.py``, ``compiler/buckets.py``,
``lowering/complex_graph.py``, ``collective_graphs.py``); the function that runs a
compiled graph on tensors lives with the device (``device/graph_function.py``).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.nn.attention import SDPBackend, sdpa_kernel

from torchneuron import aot_cache, collective_graphs, settings
from torchneuron.check import check_requested, checked_graph
from torchneuron.compiler import bounded, buckets, observe
from torchneuron.compiler.dynamic_functions import (
    ShapeSpecializingFunction,
    ValuePinnedFunction,
    compile_pinned_symbolic,
    compile_symbolic,
    has_symbolic_inputs,
)
from torchneuron.compiler.dynamic_sizes import pinned_symbols
from torchneuron.compiler.flex_attention import inline_flex_attention
from torchneuron.compiler.pipeline import compile_graph
from torchneuron.device.graph_function import (
    InputOutputsFunction,
    NeuronGraphFunction,
    PermutedInputsFunction,
    output_device,
    permute_dense_inputs,
    split_input_outputs,
)
from torchneuron.errors import CpuFallbackWarning, TorchNeuronError
from torchneuron.lowering import LoweringError, decomposition_table
from torchneuron.lowering.complex_graph import (
    PairedGraph,
    graph_has_complex,
    wrong_under_aot_autograd,
)
from torchneuron.lru import LRU
from torchneuron.runtime import heap

_graph_ids = itertools.count()


class NeuronBackendOptions:
    """Options given as ``torch.compile(..., options={...})``."""

    KNOWN = ("target", "pipeline", "dump_dir", "core", "buckets", "check")

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
        # check mode (torchneuron/check.py): None, or its settings
        self.check: dict[str, Any] | None = check_requested(options.get("check"))
        # sizes to pad a dynamic dimension up to (compiler/buckets.py); None: exact sizes
        if "buckets" in options:
            self.buckets = buckets.parse_buckets(options["buckets"], "option 'buckets'")
        else:
            self.buckets = buckets.buckets_from_env()


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options=None, **kw):
    """The torch.compile backend entry point (registered as ``"neuron"``)."""
    opts = NeuronBackendOptions(options or kw.get("options"))
    inline_flex_attention(gm)  # as tensor ops that AOTAutograd differentiates
    graph_id = next(_graph_ids)
    key = _dynamo_graph_key(gm, example_inputs, opts)
    compiled = _COMPILED_FRAMES.get(key) if key is not None else None
    if compiled is None:
        compiled = _compile_dynamo_graph(gm, example_inputs, opts, graph_id, key)
        if key is not None:
            _COMPILED_FRAMES.put(key, compiled)
    else:
        observe.graph_compiled(f"graph{graph_id}", "reused", 0.0, cache="hit (memory)")
    if opts.check is not None:  # the same graph, checked at every call against the CPU
        return checked_graph(gm, compiled, f"graph{graph_id}", opts.check)
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
    # the bodies of higher-order ops (activation checkpointing's, a ``wrap``'s) are
    # submodules of code only (the check above found no state in them)
    bodies = {}
    for name, module in gm.named_modules():
        if module is gm:
            continue
        if not isinstance(module, torch.fx.GraphModule):
            return None
        bodies[name] = module.code
    for node in gm.graph.nodes:
        if node.op == "get_attr" and node.target not in bodies:
            return None  # a tensor held by the graph: not a function of the inputs
    digest.update(repr(sorted(bodies.items())).encode())
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
                _autocast_state(),
                torch.are_deterministic_algorithms_enabled(),
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


def _autocast_state() -> tuple:
    """Each device type autocast is on for, with its dtype. AOTAutograd's trace inserts the
    casts it makes (the graph Dynamo hands over has none), so graphs traced under
    different states differ."""
    return tuple(
        (device, str(torch.get_autocast_dtype(device)))
        for device in torch._C._autocast_supported_devices()
        if torch.is_autocast_enabled(device)
    )


def _compile_dynamo_graph(
    gm: torch.fx.GraphModule, example_inputs, opts, graph_id: int, key: str | None = None
):
    input_views: set[str] = set()
    layouts: dict[str, dict] = {}
    shared = {"input_views": input_views, "layouts": layouts, "bounds": {}}

    def compile_forward(fx_gm, fx_inputs):
        name = f"graph{graph_id}_forward"
        return compile_or_fallback(GraphJob(fx_gm, fx_inputs, name, opts, **shared))

    def compile_backward(fx_gm, fx_inputs):
        name = f"graph{graph_id}_backward"
        return compile_or_fallback(GraphJob(fx_gm, fx_inputs, name, opts, **shared))

    def compile_inference(fx_gm, fx_inputs):
        name = f"graph{graph_id}_forward"
        return compile_or_fallback(GraphJob(fx_gm, fx_inputs, name, opts))

    compilers = {
        "forward": compile_forward,
        "backward": compile_backward,
        "inference": compile_inference,
    }
    compiler = aot_autograd(
        fw_compiler=aot_cache.serializable("forward", compile_forward),
        bw_compiler=aot_cache.serializable("backward", compile_backward),
        inference_compiler=aot_cache.serializable("inference", compile_inference),
        decompositions=_DecompositionsOnFirstUse(),
    )
    # The math attention kernel decomposes into ops with lowerings, and so does
    # its backward; the fused CPU kernels do not. AOTAutograd's result is kept in our
    # disk cache, so the next process skips its tracing (aot_cache.py).
    with sdpa_kernel([SDPBackend.MATH]), aot_cache.storing_in_our_cache(compilers, gm, key):
        return compiler(gm, example_inputs)


class _DecompositionsOnFirstUse(Mapping):
    """The decomposition table, made when AOTAutograd first reads it (to trace): a graph
    whose AOTAutograd result is in the disk cache is never traced, and making the table
    imports torch-mlir and every lowering rule (~0.6 s of a warm process here)."""

    def __init__(self):
        self._table: dict | None = None

    def _made(self) -> dict:
        if self._table is None:
            self._table = decomposition_table()
        return self._table

    def __getitem__(self, op):
        return self._made()[op]

    def __iter__(self):
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())


def fallback_disabled() -> bool:
    """``TORCHNEURON_NO_FALLBACK`` (one switch for eager and compile mode)."""
    return settings.env_flag(settings.NO_FALLBACK)


# -- the routes ---------------------------------------------------------------------


@dataclass(frozen=True)
class GraphJob:
    """One ATen graph to compile, and what its route needs to know."""

    gm: torch.fx.GraphModule
    example_inputs: Sequence[Any]
    name: str  # graph<k>_forward, graph<k>_backward, ..._part<i>, ..._<shape index>
    opts: NeuronBackendOptions
    # the names of a training forward's outputs that are its inputs' views, which its
    # backward takes by the same names (shared by the two graphs of one Dynamo graph)
    input_views: set[str] = field(default_factory=set)
    # the merged padded dimensions of a bucketed forward's outputs, by name, which its
    # bucketed backward takes by the same names (``buckets.compile_bucketed``)
    layouts: dict[str, dict] = field(default_factory=dict)
    # the bounds of the data-dependent sizes a bounded forward returned, by symbol
    # (``bounded.compile_bounded``), to which its backward pads them
    bounds: dict[str, int] = field(default_factory=dict)

    def run_compiled(self, compiled, load_on: int | None = None) -> NeuronGraphFunction:
        """The callable that runs ``compiled`` (a ``CompiledGraph`` of this graph, or an
        ``InterpretedGraph``) on tensors: what the compiler layer's callables are given
        to build. ``load_on``: the core to load it on now (else the inputs' device's)."""
        return NeuronGraphFunction(
            compiled, self.opts.core, output_device(self.gm), load_on=load_on
        )

    def compile_part(self, gm: torch.fx.GraphModule, example_inputs, name: str):
        """A graph this one is made of (a segment, a per-shape retrace, the real-pair
        graph), through the route table again."""
        return compile_or_fallback(GraphJob(gm, example_inputs, name, self.opts))


@dataclass(frozen=True)
class Route:
    """One way to compile a graph (a row of ``ROUTES``)."""

    name: str
    applies: Callable[[GraphJob], bool]
    # a callable on tensors, or None to leave the graph to the next route
    compile: Callable[[GraphJob], Callable | None]
    # a LoweringError of the compile runs the graph on the CPU (else it is raised)
    falls_back: bool


# -- each route: whether it applies, how it compiles ------------------------------


def _data_dependent(job: GraphJob) -> bool:
    return bounded.has_data_dependent_sizes(job.gm)


def _at_bounds(job: GraphJob):
    return bounded.compile_bounded(
        job.gm, job.example_inputs, job.name, job.compile_part, job.bounds
    )


def _given_bounds(job: GraphJob) -> bool:
    return bounded.bounds_of_inputs(job.gm, job.bounds) is not None


def _padded_to_bounds(job: GraphJob):
    # every count padded to its forward's bound: one specialization, whatever the counts
    options = copy.copy(job.opts)
    options.buckets = bounded.bounds_of_inputs(job.gm, job.bounds)
    return buckets.compile_bucketed(job.gm, job.name, options, job.run_compiled, job.layouts)


def _symbolic_with_buckets(job: GraphJob) -> bool:
    return job.opts.buckets is not None and has_symbolic_inputs(job.gm)


def _bucketed(job: GraphJob):
    pinned = pinned_symbols(job.gm)
    if not pinned:
        return buckets.compile_bucketed(job.gm, job.name, job.opts, job.run_compiled, job.layouts)

    def compile_pinned(values: dict):  # buckets, else exact sizes (a warning said why)
        padded = buckets.compile_bucketed(
            job.gm, job.name, job.opts, job.run_compiled, job.layouts, values
        )
        if padded is not None:
            return padded
        return compile_pinned_symbolic(job.gm, job.name, job.opts, job.run_compiled, values)

    return ValuePinnedFunction(pinned, compile_pinned, per_shape=lambda: _per_shape(job))


def _symbolic(job: GraphJob) -> bool:
    return has_symbolic_inputs(job.gm)


def _dynamic(job: GraphJob):
    return compile_symbolic(
        job.gm, job.name, job.opts, job.run_compiled, per_shape=lambda: _per_shape(job)
    )


def _per_shape(job: GraphJob):
    return ShapeSpecializingFunction(job.gm, job.name, job.compile_part)


def _wrong_for_complex(job: GraphJob) -> bool:
    return wrong_under_aot_autograd(job.gm) is not None


def _refuse(job: GraphJob):
    raise wrong_under_aot_autograd(job.gm)


def _complex(job: GraphJob) -> bool:
    return graph_has_complex(job.gm)


def _paired(job: GraphJob):
    real_name = job.name  # the real-pair graph is the graph, under its own name
    return PairedGraph(
        job.gm, job.example_inputs, lambda real, inputs: job.compile_part(real, inputs, real_name)
    )


def _collectives(job: GraphJob) -> bool:
    return collective_graphs.needs_split(job.gm)


def _split(job: GraphJob):
    split = collective_graphs.split_at_collectives(job.gm, job.name)
    return collective_graphs.SplitGraphFunction(split, job.compile_part)


def _any_graph(job: GraphJob) -> bool:
    return True


def _static(job: GraphJob):
    # outputs that are inputs (a training forward's saved weights) are not computed
    gm, input_outputs = split_input_outputs(job.gm)
    (output,) = job.gm.graph.find_nodes(op="output")
    job.input_views.update(output.args[0][i].name for i in input_outputs)
    # a backward's inputs that are such views, traced transposed (a tied weight's t()),
    # are read without a copy
    gm, example_inputs, orders = permute_dense_inputs(gm, list(job.example_inputs), job.input_views)
    # AOTAutograd calls us inside its FakeTensorMode; the graph's real constant tensors
    # (lifted as weights, hashed for the cache) must be read outside it.
    with unset_fake_temporarily():
        compiled = compile_graph(
            gm,
            example_inputs,
            name=job.name,
            target=job.opts.target,
            pipeline=job.opts.pipeline,
            dump_dir=job.opts.dump_dir,
        )
    function = job.run_compiled(compiled)
    if orders:
        function = PermutedInputsFunction(function, orders)
    if not input_outputs:
        return function
    count = compiled.output_count + len(input_outputs)
    return InputOutputsFunction(function, input_outputs, count)


# Every way a graph is compiled, tried in order: the first route that applies and
# does not hand the graph on (its compile returns None) compiles it. ``falls_back``:
# a LoweringError of its compile runs the graph on the CPU, with a warning.
# fmt: off
ROUTES: tuple[Route, ...] = (
    # sizes the data decides (nonzero, masks, unique) compiled once at their bounds
    # (compiler/bounded.py), the outputs sliced to the true sizes after the run
    Route("bounded",   _data_dependent,        _at_bounds, falls_back=True),
    # the backward of such a graph: the counts it is given padded back to their bounds
    # (hands the graph on where the bucket analysis refuses)
    Route("to-bounds", _given_bounds,          _padded_to_bounds, falls_back=False),
    # symbolic sizes padded up to buckets (compiler/buckets.py); hands the graph on
    # (warned) where padding could change a result
    Route("bucketed",  _symbolic_with_buckets, _bucketed,  falls_back=False),
    # symbolic sizes compiled once (compiler/dynamic_functions.py); hands the graph on
    # (warned) where it cannot stay symbolic
    Route("dynamic",   _symbolic,              _dynamic,   falls_back=False),
    # symbolic sizes retraced and compiled per concrete shape, each through this table
    Route("per-shape", _symbolic,              _per_shape, falls_back=False),
    # complex ops AOTAutograd itself gets wrong: an error, never a wrong value
    Route("refused",   _wrong_for_complex,     _refuse,    falls_back=False),
    # complex values as real pairs, FFTs as DFT matmuls (lowering/complex_graph.py)
    Route("complex",   _complex,               _paired,    falls_back=True),
    # collectives and NKI calls run eagerly between compiled segments (collective_graphs.py)
    Route("split",     _collectives,           _split,     falls_back=False),
    # one NEFF (compile_graph), random ops keyed at each call
    Route("static",    _any_graph,             _static,    falls_back=True),
)
# fmt: on


def compile_or_fallback(job: GraphJob):
    """The boxed callable of ``job``'s graph: compiled by its route, or on the CPU."""
    started = time.perf_counter()
    observe.begin_graph()
    function, route = _compile_by_route(job)
    seconds = time.perf_counter() - started
    heap.after_compile(seconds)
    if route is not None:
        observe.graph_compiled(job.name, route, seconds)
    return function


def _compile_by_route(job: GraphJob):
    """(the boxed callable, the route's name; None where the graph runs on the CPU)."""
    for route in ROUTES:
        if not route.applies(job):
            continue
        try:
            function = route.compile(job)
        except LoweringError as exc:
            if not route.falls_back:
                raise
            return _graph_on_cpu(job.gm, job.name, exc), None
        if function is not None:
            return make_boxed_func(function), route.name
    raise TorchNeuronError(f"no route compiles graph {job.name}")  # static takes every one


def _graph_on_cpu(gm: torch.fx.GraphModule, name: str, exc: LoweringError):
    if fallback_disabled():
        raise exc
    observe.graph_fell_back(name, str(exc).split("\n", 1)[0][:300])
    warnings.warn(
        CpuFallbackWarning(
            f"torchneuron: graph {name} runs on the CPU, not on the NeuronCore, because it "
            f"could not be compiled: {exc}\n(set {settings.NO_FALLBACK}=1 to make this an "
            "error)",
            where=name,
            reason=str(exc).split("\n", 1)[0][:300],
        ),
        stacklevel=3,
    )
    return make_boxed_func(gm.forward)
