"""The callables torch.compile runs for a graph with symbolic sizes.

Two ways, tried in this order by the backend's route table (``backend.ROUTES``):

- ``compile_symbolic``: the graph's front half compiled once
  (``dynamic.compile_dynamic_graph``), run by a ``DynamicGraphFunction``, which binds
  the symbols from the inputs' shapes and specializes the program once per concrete
  shape. Where the graph cannot stay symbolic it warns why and returns None;
- ``ShapeSpecializingFunction``: the graph retraced and compiled per concrete shape,
  front half included (counted in ``dynamic.STATS["per_shape_front_half"]``).

A compiled program is run on tensors by the device layer's graph function, which this
layer may not import: the backend passes ``run_compiled`` (a ``CompiledGraph`` -> a
callable on tensors) and ``compile_static`` (a static graph -> its boxed callable,
through the whole route table again) in.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily

from torchneuron.lowering import DynamicShapeError, LoweringError
from torchneuron.lowering.rules.random import is_random_state
from torchneuron.lru import LRU
from torchneuron.passes.errors import PassError

from .dynamic import compile_dynamic_graph
from .dynamic_program import STATS, DynamicProgram
from .dynamic_signature import ShapeConstraintError, evaluate, expression_text
from .dynamic_sizes import carrier, carrier_positions, pinned_expr, pinned_symbols

# Concrete shapes whose programs one graph keeps loaded (the oldest is dropped first).
SHAPES_PER_GRAPH = 64
# Input elements above which a new shape waits for its specialization instead of
# running interpreted meanwhile. The interpreter pays off on small programs (the zoo
# GPT's new length: ~10-30 ms interpreted against 0.3-0.8 s of compile); on GPT-2 124M's
# training step (~250M input elements) interpreting while the build runs made the first
# call 60-63 s against 46 s waiting, and a new length 6.9-7.2 s against 5.4-6.3 s.
INTERPRET_ELEMENTS_LIMIT = 16 * 2**20

# (a compiled or interpreted graph[, the core to load it on now]) -> a callable on tensors
RunCompiled = Callable[..., Callable]


def has_symbolic_inputs(gm: torch.fx.GraphModule) -> bool:
    """Whether an input of ``gm`` is a symbolic size or has one (the saved state of
    replayed random draws excepted: its size is ours, fixed)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder" or is_random_state(node):
            continue
        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            return True
        if isinstance(value, torch.Tensor) and any(not isinstance(d, int) for d in value.shape):
            return True
    return False


def draws_random_words(gm: torch.fx.GraphModule) -> bool:
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


def compile_symbolic(
    gm: torch.fx.GraphModule,
    name: str,
    options: Any,
    run_compiled: RunCompiled,
    per_shape: Callable[[], Callable],
) -> Callable | None:
    """``gm`` with its front half compiled once (``options``: the backend's target,
    pipeline and dump_dir), or None after a warning saying why it cannot stay symbolic
    (the caller then compiles it per shape). A graph with int inputs no tensor can carry
    (``pinned_symbols``) is compiled at its first call, once per value of those ints
    (``ValuePinnedFunction``; ``per_shape()`` where that fails)."""
    pinned = pinned_symbols(gm)
    if pinned:
        return ValuePinnedFunction(
            pinned,
            lambda values: compile_pinned_symbolic(gm, name, options, run_compiled, values),
            per_shape,
        )
    return compile_pinned_symbolic(gm, name, options, run_compiled)


def compile_pinned_symbolic(
    gm: torch.fx.GraphModule,
    name: str,
    options: Any,
    run_compiled: RunCompiled,
    pinned: dict | None = None,
) -> DynamicGraphFunction | None:
    """``compile_symbolic`` of ``gm`` with the ``pinned`` symbols (symbol -> int) as
    constants of its program."""
    try:
        with unset_fake_temporarily():
            if draws_random_words(gm):
                raise DynamicShapeError("random ops draw words of symbolic count")
            program, size_positions = compile_dynamic_graph(
                gm,
                name=name,
                target=options.target,
                pipeline=options.pipeline,
                dump_dir=options.dump_dir,
                carry_sizes=True,
                pinned=pinned,
            )
    except (LoweringError, PassError) as exc:  # a pass that fails on the symbolic program
        warnings.warn(
            f"torchneuron: graph {name} has symbolic sizes but is compiled once per shape "
            f"(its front half included), because it cannot be lowered with symbolic sizes: "
            f"{exc}",
            stacklevel=4,
        )
        return None
    return DynamicGraphFunction(program, size_positions, run_compiled, gm, pinned)


class ValuePinnedFunction:
    """A graph whose int inputs at ``positions`` (position -> symbol) no tensor can carry:
    Python ints Dynamo made symbolic, such as ``logits_to_keep=0`` in a language
    model's slice ``hidden[:, -logits_to_keep:]``. At a call with values not seen
    before, ``compile_for(pinned)`` (pinned: symbol -> int) makes the graph's program with
    those ints as constants, symbolic in its sizes still (padded to buckets, or not);
    so a new sequence length costs at most a specialization, and only a new value of
    the ints a front half. Where ``compile_for`` gives None, calls go per shape
    (``per_shape()``)."""

    def __init__(
        self,
        positions: dict[int, Any],
        compile_for: Callable[[dict], Callable | None],
        per_shape: Callable[[], Callable],
    ) -> None:
        self.positions = positions
        self.compile_for = compile_for
        self.per_shape = per_shape
        self._by_values: LRU[tuple, Callable] = LRU(capacity=SHAPES_PER_GRAPH)
        self._per_shape: Callable | None = None

    def __call__(self, *args):
        values = tuple(int(args[i]) for i in self.positions)
        function = self._by_values.get(values)
        if function is None:
            function = self.compile_for(dict(zip(self.positions.values(), values)))
            if function is None:
                if self._per_shape is None:
                    self._per_shape = self.per_shape()
                function = self._per_shape
            self._by_values.put(values, function)
        return function(*args)


def size_input_texts(gm: torch.fx.GraphModule, positions, pinned: dict | None = None) -> dict:
    """The expression over the symbols of each size placeholder at ``positions``, with
    the ``pinned`` symbols' values substituted."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    texts = {}
    for position in positions:
        value = placeholders[position].meta.get("val")
        if isinstance(value, torch.SymInt):
            expr = pinned_expr(value, pinned)
            try:
                texts[position] = expression_text(expr)
            except DynamicShapeError:
                continue  # the program computes it from the dimensions; nothing to compare
    return texts


class DynamicGraphFunction:
    """Runs a ``DynamicProgram``: binds its symbols from the inputs' shapes (a shape
    outside its signature is a ``ShapeConstraintError``), specializes it once per
    concrete shape, and calls that program through ``run_compiled``."""

    def __init__(
        self,
        program: DynamicProgram,
        size_positions,
        run_compiled: RunCompiled,
        gm: torch.fx.GraphModule,
        pinned: dict | None = None,
    ) -> None:
        self.program = program
        self.size_positions = set(size_positions)
        # sizes the program takes as [size, 0] tensors (no tensor input carries them)
        self.carrier_positions = set(carrier_positions(gm, size_positions))
        self.run_compiled = run_compiled
        self._by_shapes: LRU[tuple, Callable] = LRU(capacity=SHAPES_PER_GRAPH)
        # each size input's expression over the symbols (a backward's s0*s1), from the
        # traced graph ``gm``
        self.size_texts = size_input_texts(gm, self.size_positions, pinned)

    def __call__(self, *args):
        tensor_args = [
            carrier(a, args) if i in self.carrier_positions else a
            for i, a in enumerate(args)
            if i not in self.size_positions
        ]
        shapes = tuple(tuple(a.shape) for a in tensor_args)
        values = self.program.signature.bind(shapes)
        for i in sorted(self.size_positions):  # Dynamo's own sizes must agree
            given = args[i]
            if not isinstance(given, int):
                continue
            text = self.size_texts.get(i)
            if text is None:
                continue  # an expression the checker cannot write: computed, not compared
            if evaluate(text, values) != given:
                raise ShapeConstraintError(
                    f"size argument {i} is {given}, but {text} is {evaluate(text, values)} "
                    "by the input dimensions"
                )
        function = self._by_shapes.get(shapes)
        if function is None:
            function = self._function_for(shapes)
            self._by_shapes.put(shapes, function)
        else:
            STATS["specialization_hits"] += 1
        outputs = function(*tensor_args)
        for position, size in sorted(self.program.sizes(values).items()):
            outputs.insert(position, size)
        return outputs

    def _function_for(self, shapes: tuple) -> Callable:
        """The program for ``shapes``: compiled when this or an earlier process
        specialized it; else, where the interpreter covers the program and the inputs
        hold at most ``INTERPRET_ELEMENTS_LIMIT`` elements, run interpreted while the
        background thread specializes it (``specialize_later``); else specialized now."""
        from . import specialize_later

        program = self.program
        elements = sum(math.prod(shape) for shape in shapes)
        if specialize_later.interpreting() and elements <= INTERPRET_ELEMENTS_LIMIT:
            # in memory only: a specialization on disk loads on the background thread
            # (reading the NEFF and XLA's executable costs more than interpreting a call)
            stored = program.stored(shapes, disk=False)
            if stored is not None:
                return self.run_compiled(stored)
            graph = program.interpreted(shapes)
            if graph is not None:
                interpreted = self.run_compiled(graph)
                # the compiled program loads where the interpreted one runs (the
                # background thread has no current device of its own)
                cores = tuple(getattr(interpreted, "cores", ()))[:1]

                def build() -> Callable:
                    return self.run_compiled(program.specialize(shapes), *cores)

                pending = specialize_later.submit((id(program), shapes), build)
                if not (pending.done and pending.error is not None):
                    STATS["interpreted_shapes"] += 1
                    return UntilCompiled(interpreted, pending, build)
                # its build failed before: specialize here, where the error is raised
        return self.run_compiled(program.specialize(shapes))


class UntilCompiled:
    """Runs a shape's interpreted function until its background build is done, then
    the compiled one; a call the interpreter refuses waits for (or makes) the build."""

    def __init__(self, interpreted: Callable, pending: Any, build: Callable[[], Callable]):
        self.function = interpreted
        self.pending = pending
        self.build = build

    def __call__(self, *args):
        from torchneuron.runtime.interpreter import Uninterpretable

        pending = self.pending
        if pending is not None and pending.done:
            self._settle()
        try:
            return self.function(*args)
        except Uninterpretable:
            STATS["interpreter_refusals"] += 1
            self._settle(wait=True)
            if self.interpreted:  # no build was pending any more
                self.function = self.build()
            return self.function(*args)

    @property
    def interpreted(self) -> bool:
        return getattr(self.function, "interpreted", False)

    def _settle(self, wait: bool = False) -> None:
        """Take the finished build. A dropped one (a fork, a cancel) is built here; a
        failed one too, so its error reaches the caller as it did before there was an
        interpreter."""
        pending = self.pending
        if pending is None:
            return
        if wait:
            pending.wait()
        self.pending = None
        self.function = pending.value if pending.error is None else self.build()


class ShapeSpecializingFunction:
    """Runs a graph with symbolic sizes by compiling one NEFF per concrete shape.

    The fallback for graphs that cannot be lowered with symbolic sizes
    (``DynamicGraphFunction`` is the path that compiles once): at call time the
    graph is retraced with the concrete inputs and compiled by ``compile_static``
    (then cached per shape signature); each retrace counts in
    ``dynamic.STATS["per_shape_front_half"]``.
    """

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        name: str,
        compile_static: Callable[[torch.fx.GraphModule, list, str], Callable],
    ) -> None:
        self.gm = gm
        self.name = name
        self.compile_static = compile_static
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
        STATS["per_shape_front_half"] += 1
        static_gm = make_fx(with_constants, tracing_mode="fake")(*tensor_args)
        shape_name = f"{self.name}_{next(self._compiled)}"
        boxed = self.compile_static(static_gm, tensor_args, shape_name)
        return lambda *tensor_args: boxed(list(tensor_args))
