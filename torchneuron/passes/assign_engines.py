"""assign-engines: name the NeuronCore engine that runs each operation, as attributes.

Requires: fuse-kernels (every non-constant op of a block has ``neuron.kernel``; the
pass groups a block's ops itself when they have none). Guarantees: every top-level
op, and every op of the body of every ``stablehlo.while`` (nested ones included),
but constants, carries ``neuron.engine = "<engine>"`` (TensorE, VectorE, ScalarE,
GpSimd or DMA; see ``torchneuron.target.engines``), and ops evaluated together as
one ScalarE activation carry ``neuron.activation = N : i64`` (island ids are local
to their block, like kernel ids). The loop itself carries its kind's engine,
GpSimd: a label, since the cost model schedules a loop as a barrier over every
engine. Attributes only: the program's meaning is unchanged.

Engines come from the op table (matmuls -> TensorE, arithmetic and reductions ->
VectorE, transcendentals -> ScalarE, gathers/sorts/iotas -> GpSimd, layout changes
-> DMA), with one refinement: **activation islands**. ScalarE applies a function
``f(x * scale + bias)`` to every element in one pass, whatever ``f`` is among its
activation functions (GELU, erf, tanh, exp ...). Inside one kernel, the element-wise
ops that depend on a single tensor ``x`` (besides constants) form a function of
``x``; when that function contains a transcendental, or is long enough to be a
polynomial approximation of one (torch-mlir expands GELU's erf into ~30 multiplies
and adds), the whole island is one ScalarE pass instead of one VectorE pass per op.

Rewrite: ``%r = op(...)`` -> ``%r = op(...) {neuron.engine = "VectorE"}``
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.dataflow import ARGUMENT, Dataflow, ValueRef, functions_of, loop_flows
from torchneuron.passes.fuse_kernels import plan_kernels, read_kernels
from torchneuron.passes.registry import Pass, register_pass
from torchneuron.target import engines

ENGINE_ATTR = "neuron.engine"
ACTIVATION_ATTR = "neuron.activation"

# An island of at least this many element-wise ops of one tensor is a polynomial
# approximation of an activation (erf, GELU) that ScalarE evaluates in one pass; shorter
# transcendental-free chains (x * 0.5 + 1) stay on VectorE, one pass per op.
ACTIVATION_POLYNOMIAL_MIN_OPS = 8

_POINTWISE = frozenset([engines.ELEMENTWISE, engines.TRANSCENDENTAL])
_LAYOUT = frozenset([engines.DATA_MOVEMENT, engines.VIEW])


def activation_islands(flow: Dataflow, kernels: list[int | None]) -> list[int | None]:
    """For every node, the id of the ScalarE activation island it belongs to, or None.

    An island id is the index of the island's first node. Only islands that qualify
    (a transcendental, or ACTIVATION_POLYNOMIAL_MIN_OPS ops or more) get ids.
    """
    nodes = flow.nodes
    constant_like: dict[int, bool] = {}

    def is_constant(ref: ValueRef) -> bool:
        producer = ref[0]
        if producer == ARGUMENT:
            return False
        if producer not in constant_like:
            node = nodes[producer]
            # Constants, and anything computed from constants only (rsqrt(2.0), a
            # broadcast splat), are immediates of an activation instruction.
            constant_like[producer] = node.kind == engines.CONSTANT or (
                node.kind in _POINTWISE | _LAYOUT
                and bool(node.operands)
                and all(is_constant(operand) for operand in node.operands)
            )
        return constant_like[producer]

    # source[i]: the single non-constant value node i is a function of, or None.
    source: list[ValueRef | None] = [None] * len(nodes)
    for node in nodes:
        if node.kind not in _POINTWISE or kernels[node.index] is None:
            continue
        inputs = set()
        for ref in node.operands:
            if is_constant(ref):
                continue
            producer = ref[0]
            if (
                producer != ARGUMENT
                and kernels[producer] == kernels[node.index]
                and source[producer] is not None
            ):
                inputs.add(source[producer])
            else:
                inputs.add(ref)
        if len(inputs) == 1:
            source[node.index] = inputs.pop()

    members: dict[tuple[int, ValueRef], list[int]] = {}
    for node in nodes:
        if source[node.index] is not None:
            members.setdefault((kernels[node.index], source[node.index]), []).append(node.index)
    island: list[int | None] = [None] * len(nodes)
    for indices in members.values():
        transcendental = any(nodes[i].kind == engines.TRANSCENDENTAL for i in indices)
        if len(indices) > 1 and (transcendental or len(indices) >= ACTIVATION_POLYNOMIAL_MIN_OPS):
            for i in indices:
                island[i] = indices[0]
    return island


def assign_engines(
    flow: Dataflow, kernels: list[int | None]
) -> tuple[list[str | None], list[int | None]]:
    """The engine of every node (None for constants) and its activation island (or None)."""
    island = activation_islands(flow, kernels)
    engine_of = []
    for node in flow.nodes:
        if island[node.index] is not None:
            engine_of.append(engines.SCALAR_ENGINE)
        else:
            engine_of.append(engines.default_engine(node.name))
    return engine_of, island


def read_engines(flow: Dataflow) -> tuple[list[str | None], list[int | None]] | None:
    """The ``neuron.engine``/``neuron.activation`` attributes; None unless every op has an
    engine."""
    engine_of: list[str | None] = []
    island: list[int | None] = []
    for node in flow.nodes:
        attributes = node.op.attributes
        if node.kind == engines.CONSTANT:
            engine_of.append(None)
            island.append(None)
            continue
        if ENGINE_ATTR not in attributes:
            return None
        engine = ir.StringAttr(attributes[ENGINE_ATTR]).value
        if engine not in engines.ENGINES:
            raise ValueError(
                f"{node.name} (op {node.index}) has {ENGINE_ATTR} = {engine!r}; "
                f"engines are {', '.join(engines.ENGINES)}"
            )
        engine_of.append(engine)
        island.append(
            ir.IntegerAttr(attributes[ACTIVATION_ATTR]).value
            if ACTIVATION_ATTR in attributes
            else None
        )
    return engine_of, island


@register_pass
@dataclass(frozen=True)
class AssignEngines(Pass):
    """Name the engine of every op (neuron.engine) and mark ScalarE activation islands."""

    name = "assign-engines"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        i64 = ir.IntegerType.get_signless(64)
        for function in functions_of(module):
            for flow in loop_flows(function):
                self._annotate(flow, ctx, i64)

    @staticmethod
    def _annotate(flow: Dataflow, ctx: PassContext, i64: ir.Type) -> None:
        kernels = read_kernels(flow)
        if kernels is None:
            kernels = plan_kernels(flow)
        engine_of, island = assign_engines(flow, kernels)
        for node, engine, island_id in zip(flow.nodes, engine_of, island):
            attributes = node.op.attributes
            for stale in (ENGINE_ATTR, ACTIVATION_ATTR):
                if stale in attributes:
                    del attributes[stale]
            if engine is None:
                continue
            attributes[ENGINE_ATTR] = ir.StringAttr.get(engine)
            ctx.count(f"op-on-{engine}")
            if island_id is not None:
                attributes[ACTIVATION_ATTR] = ir.IntegerAttr.get(i64, island_id)
        ctx.count("activation-island", len({i for i in island if i is not None}))
