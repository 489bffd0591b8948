"""A graph lowered once with symbolic sizes, and its back half run once per shape.

``DynamicProgram`` holds the StableHLO text with ``?`` dimensions that the front half
(``compiler/dynamic.py``) made, its ``SymbolicSignature`` (``dynamic_signature.py``),
weights and outputs. ``specialize(shapes)`` is the back half, run once per concrete
shape and cached: StableHLO shape refinement of the stored program
(``stablehlo-refine-arguments`` with the concrete argument types, then
``stablehlo-refine-shapes``), then the usual pass pipeline (whose
``stablehlo-canonicalize-dynamism`` turns the now-constant ``dynamic_*`` ops static),
the cost model and the NEFF writer; the runtime's XLA compile follows at load.
``to_neff``/``from_neff`` store the program in one NEFF (``dynamic_neff.py``).

``STATS`` counts front-half compiles and per-shape specializations, so tests and the
benchmark can assert "compiled once".
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from torch_mlir import ir

from torchneuron.counters import Counters
from torchneuron.lru import LRU

from . import dynamic_neff, graph_cache, program, stages
from .compilation import CompiledGraph
from .dynamic_signature import (
    ShapeConstraintError,
    SymbolicSignature,
    arguments_of,
    evaluate,
    numpy_dtype_name,
)

# Counters of this process: front_half (graphs lowered once with symbolic sizes),
# specializations (back-half compiles, one per concrete shape), specialization_hits
# (calls answered by an already specialized program), disk_specializations (shapes
# another process specialized, loaded from the disk cache), disk_front_half (front
# halves another process lowered, loaded from the disk cache), per_shape_front_half (graphs
# that could not stay symbolic and were retraced for a shape: the old path),
# interpreted_shapes (shapes whose first calls ran interpreted while they specialized in
# the background), interpreter_refusals (calls whose values needed the compiled program).
STATS = Counters(
    "front_half",
    "specializations",
    "specialization_hits",
    "disk_specializations",
    "disk_front_half",
    "per_shape_front_half",
    "interpreted_shapes",
    "interpreter_refusals",
)
reset_stats = STATS.reset
stats = STATS.snapshot

# Specialized programs kept per DynamicProgram (one per concrete shape).
SPECIALIZATION_CAPACITY = 64
# The longest name a specialization gets from its shapes (the NEFF limit is 1024).
SPECIALIZED_NAME_LIMIT = 200


@dataclass
class DynamicProgram:
    """A graph lowered once with symbolic sizes; ``specialize`` compiles it for one shape."""

    name: str
    target: str
    pipeline: str | None
    text: str  # StableHLO with dynamic dimensions, arguments marked
    signature: SymbolicSignature
    weights: dict[str, np.ndarray]
    weight_sources: dict[str, str]
    output_names: Sequence[str] | None
    output_count: int
    none_outputs: tuple[int, ...]
    constant_outputs: dict[int, Any]
    # outputs that are sizes: position -> size expression over the symbols
    size_outputs: dict[int, str] = field(default_factory=dict)
    front_half_seconds: float = 0.0
    _specialized: LRU = field(default_factory=lambda: LRU(SPECIALIZATION_CAPACITY), repr=False)
    _loaded: LRU = field(default_factory=lambda: LRU(SPECIALIZATION_CAPACITY), repr=False)
    _weights_digest: str | None = field(default=None, repr=False)
    _text_digest: str | None = field(default=None, repr=False)
    # (InterpretedProgram, weights by argument position) once read; False: not covered
    _interpreter: Any = field(default=None, repr=False)

    def specialize(self, shapes: Sequence[Sequence[int]]) -> CompiledGraph:
        """The program compiled for inputs of ``shapes`` (cached per shape)."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        found = self.stored(key)
        if found is not None:
            return found
        disk_key = self._disk_key(key)
        start = time.perf_counter()
        refined = refine(self.text, key, self.signature)
        refine_seconds = time.perf_counter() - start
        compiled = compile_refined(
            refined,
            name=self._specialized_name(key),
            target=self.target,
            pipeline=self.pipeline,
            weights=self.weights,
            weight_sources=self.weight_sources,
            output_names=self.output_names,
        )
        positions = self._graph_positions()
        compiled = replace(
            compiled,
            output_count=self.output_count - len(self.size_outputs),
            none_outputs=tuple(positions[i] for i in self.none_outputs),
            constant_outputs={positions[i]: v for i, v in self.constant_outputs.items()},
        )
        compiled.stage_seconds = {"refine": refine_seconds, **compiled.stage_seconds}
        STATS["specializations"] += 1
        self._specialized.put(key, compiled)
        graph_cache.store(disk_key, compiled)
        return compiled

    def stored(self, shapes: Sequence[Sequence[int]], *, disk: bool = True) -> CompiledGraph | None:
        """The program's specialization for ``shapes`` if this process has it or (with
        ``disk``) an earlier one stored it (then it is loaded from disk), else None:
        nothing compiles."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        hit = self._specialized.get(key)
        if hit is not None:
            STATS["specialization_hits"] += 1
            return hit
        if not disk:
            return None
        self.signature.bind(key)
        stored = graph_cache.load(self._disk_key(key), self._specialized_name(key), self.target)
        if stored is not None:  # specialized by an earlier process
            STATS["disk_specializations"] += 1
            self._specialized.put(key, stored)
        return stored

    def interpreted(self, shapes: Sequence[Sequence[int]]) -> InterpretedGraph | None:
        """The program for inputs of ``shapes`` as the interpreter runs it (read once per
        program), or None where the interpreter does not cover it (an op, a type)."""
        found = self.interpreter()
        if found is None:
            return None
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        self.signature.bind(key)
        positions = self._graph_positions()
        program, weights = found
        return InterpretedGraph(
            name=self._specialized_name(key),
            interpreted=program,
            weights=weights,
            inputs=[
                {"shape": list(shape), "dtype": spec["dtype"]}
                for shape, spec in zip(key, self.signature.inputs)
            ],
            output_count=self.output_count - len(self.size_outputs),
            none_outputs=tuple(positions[i] for i in self.none_outputs),
            constant_outputs={positions[i]: v for i, v in self.constant_outputs.items()},
        )

    def interpreter(self) -> tuple | None:
        """(the interpreter's reading of the program, its weights as (argument position,
        array)), read once; None where the interpreter does not cover it."""
        if self._interpreter is None:
            self._interpreter = _read_for_interpreter(self)
        return self._interpreter or None

    def _specialized_name(self, key: tuple) -> str:
        name = f"{self.name}_" + "_".join("x".join(map(str, s)) or "s" for s in key)
        if len(name) <= SPECIALIZED_NAME_LIMIT:
            return name
        # a graph of many inputs (a backward): the shapes as a digest, within the NEFF's
        # name limit
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        return f"{self.name[: SPECIALIZED_NAME_LIMIT - 24]}_shapes_{digest}"

    def _disk_key(self, shapes: tuple) -> str:
        """What a specialization depends on, as a digest (``graph_cache.graph_key`` mixes
        in the compiler's fingerprint): the program, the shapes, the request, the weights."""
        if self._weights_digest is None:
            digest = hashlib.sha256()
            for name, array in sorted(self.weights.items()):
                array = np.ascontiguousarray(array)
                digest.update(f"{name}:{array.dtype}:{array.shape};".encode())
                digest.update(array.tobytes())
            self._weights_digest = digest.hexdigest()
        if self._text_digest is None:
            self._text_digest = hashlib.sha256(self.text.encode()).hexdigest()
        parts = (
            "dynamic specialization",
            self._text_digest,
            repr(shapes),
            self.name,
            self.target,
            repr(self.pipeline),
            repr(sorted(self.weight_sources.items())),
            repr(self.output_names),
            repr((self.output_count, self.none_outputs, sorted(self.constant_outputs.items()))),
            repr(sorted(self.size_outputs.items())),
            self._weights_digest,
        )
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def optimized(self, shapes: Sequence[Sequence[int]], target: str | None = None) -> str:
        """The program refined to ``shapes`` and through the pass pipeline, not
        compiled further (what ``neuronc estimate --shape`` prices); not cached."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        self.signature.bind(key)
        compiled = compile_refined(
            refine(self.text, key, self.signature),
            name=self.name,
            target=target or self.target,
            pipeline=self.pipeline,
            weights=self.weights,
            weight_sources=self.weight_sources,
            output_names=self.output_names,
            stop_after="optimized",
        )
        return compiled.artifacts["optimized"]

    def run(self, arrays: Sequence[np.ndarray], core: int = 0) -> list[np.ndarray]:
        """The program's outputs for ``arrays``: its symbols bound from their shapes
        (``ShapeConstraintError`` when they break the signature), specialized once per
        shape, loaded once per shape and core, executed. Outputs that are None,
        constants or sizes are not among them (``output_positions`` says which are)."""
        shapes = tuple(tuple(int(d) for d in np.shape(a)) for a in arrays)
        for spec, array in zip(self.signature.inputs, arrays):
            dtype = numpy_dtype_name(array)
            if dtype != spec["dtype"]:
                raise ShapeConstraintError(
                    f"input {spec['name']!r} is {dtype}, the dynamic program takes {spec['dtype']}"
                )
        return self.loaded(shapes, core).execute([np.asarray(a) for a in arrays])

    def loaded(self, shapes: Sequence[Sequence[int]], core: int = 0):
        """The program specialized to ``shapes`` and loaded on ``core`` (cached)."""
        from torchneuron.runtime import load_neff

        key = (tuple(tuple(int(d) for d in s) for s in shapes), core)
        compiled = self.specialize(key[0])  # a hit counts in STATS["specialization_hits"]
        loaded = self._loaded.get(key)
        if loaded is None:
            loaded = load_neff(compiled.neff, core)
            self._loaded.put(key, loaded)
        return loaded

    def output_positions(self) -> list[int]:
        """The graph output position of each output the program computes."""
        skipped = {*self.none_outputs, *self.constant_outputs, *self.size_outputs}
        return [i for i in range(self.output_count) if i not in skipped]

    def _graph_positions(self) -> dict[int, int]:
        """Position among all outputs -> position among the outputs that are not sizes."""
        kept = [i for i in range(self.output_count) if i not in self.size_outputs]
        return {i: k for k, i in enumerate(kept)}

    def sizes(self, values: dict[str, int]) -> dict[int, int]:
        """The size outputs' values once the symbols are bound."""
        return {i: evaluate(text, values) for i, text in self.size_outputs.items()}

    @property
    def specializations(self) -> int:
        return len(self._specialized)

    # -- the dynamic NEFF ------------------------------------------------------

    def to_neff(self) -> bytes:
        """One NEFF holding this program with its symbolic signature, guards and weights
        (``neff/dynamic.py`` gives the layout); ``from_neff`` reads it back."""
        return dynamic_neff.dynamic_neff(self)

    @classmethod
    def from_neff(
        cls, source: Any, *, target: str | None = None, where: str | None = None
    ) -> DynamicProgram:
        """The dynamic program a NEFF holds (a ``Neff``, NEFF bytes or a path), checked as
        input from strangers; every failure is one ``NeffError`` line naming the field
        (after ``where``, the file by default)."""
        return cls(**dynamic_neff.program_fields(source, target=target, where=where))


@dataclass
class InterpretedGraph:
    """A dynamic program for one shape, run by the interpreter instead of compiled: what
    the device's graph function reads of a ``CompiledGraph`` (no NEFF)."""

    name: str
    interpreted: Any  # runtime.interpreter.InterpretedProgram
    weights: tuple  # (argument position, array) of each weight argument
    inputs: list[dict]  # shape and dtype of each input, as CompiledGraph.inputs
    output_count: int
    none_outputs: tuple[int, ...]
    constant_outputs: dict[int, Any]
    neff = None
    takes_random_key = False


def _read_for_interpreter(program: DynamicProgram) -> tuple | bool:
    """(the interpreter's reading of ``program``, its weights by argument position), or
    False when the interpreter does not cover it."""
    from torchneuron.runtime.interpreter import InterpretedProgram, Uninterpretable

    from .program import checks_of

    module = ir.Module.parse(program.text, stages.make_context())
    arguments, _ = arguments_of(module)
    try:
        checks = [(c["result"], c["error"], c["message"]) for c in checks_of(module)]
        interpreted = InterpretedProgram(module, program.name, checks)
        weights = []
        for position, (kind, name) in enumerate(arguments):
            if kind == "input":
                continue
            dtype, shape = interpreted.inputs[position]
            # a 0-d weight is kept as one element: given the argument's own shape
            array = np.ascontiguousarray(program.weights[name]).reshape(shape)
            if array.dtype != dtype:
                return False
            weights.append((position, array))
        return interpreted, tuple(weights)
    except (Uninterpretable, KeyError, ValueError, TypeError):
        return False


def compile_refined(text: str, **keywords) -> CompiledGraph:
    """The back half for one refined (static) program: passes, estimate, NEFF."""
    from .pipeline import compile_artifact

    return compile_artifact(text, "stablehlo", where="refined dynamic program", **keywords)


def refine(text: str, shapes: Sequence[Sequence[int]], signature: SymbolicSignature) -> str:
    """``text`` with its inputs given ``shapes`` and every shape refined from them."""
    from torch_mlir.passmanager import PassManager

    from torchneuron.passes.upstream import _register_stablehlo_passes

    _register_stablehlo_passes()
    module = ir.Module.parse(text, stages.make_context())
    func = program.main_function(module)
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    argument_types = []
    shapes_iter = iter(shapes)
    arguments, _ = arguments_of(module)
    for mlir_type, (kind, _name) in zip(function_type.inputs, arguments):
        tensor_type = ir.RankedTensorType(mlir_type)
        if kind == "input":
            shape = next(shapes_iter)
            element = tensor_type.element_type
            with module.context, ir.Location.unknown():
                argument_types.append(str(ir.RankedTensorType.get(list(shape), element)))
        else:
            argument_types.append(str(mlir_type))
    pipeline = (
        f"builtin.module(stablehlo-refine-arguments{{types={','.join(argument_types)}}},"
        "stablehlo-refine-shapes)"
    )
    try:
        PassManager.parse(pipeline, context=module.context).run(module.operation)
    except Exception as error:
        raise ShapeConstraintError(
            f"shape refinement of the dynamic program for input shapes {list(shapes)} failed: "
            f"{' '.join(str(error).split())[:600]}"
        ) from None
    _settle(module)
    return str(module)


# Rounds of folding and refining a refined program may need: a size computed in float
# arithmetic (``arange``'s ceil((end - start) / step)) is a constant only after our
# folder ran, and the shapes it feeds are static only after the next refinement.
SETTLE_ROUNDS = 4
_DYNAMIC_DIMENSION = re.compile(r"tensor<[^>]*\?")


def _settle(module: ir.Module) -> None:
    """Fold constants and refine shapes until no dimension is dynamic (at most
    ``SETTLE_ROUNDS`` times; dynamic ops over static types are the pass pipeline's
    ``stablehlo-canonicalize-dynamism``'s); what is left then is the pipeline's to report."""
    from torchneuron.passes import PassContext
    from torchneuron.passes import PassManager as OurPassManager

    manager = OurPassManager.from_pipeline(
        "fold-constants,stablehlo-canonicalize-dynamism,stablehlo-refine-shapes"
    )
    for _ in range(SETTLE_ROUNDS):
        if not _DYNAMIC_DIMENSION.search(str(module)):
            return
        manager.run(module, PassContext(weights={}))
