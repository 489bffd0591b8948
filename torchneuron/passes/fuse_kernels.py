"""fuse-kernels: group operations into the kernels a NeuronCore would run, as attributes.

Requires: StableHLO in ``func.func`` bodies. Guarantees: the program is unchanged
except that every top-level operation of every function, and every operation of the
body of every ``stablehlo.while`` (nested ones included), constants excepted, carries
``neuron.kernel = N : i64``, the index of its kernel (0, 1, ... in program order of
the kernels' first operations) among the kernels of its own block: a loop body is
grouped like a function whose arguments are the carried values, and the loop itself
is a kernel of its enclosing block with no other op in it. Values produced and
consumed inside one kernel stay in SBUF; only values that leave a kernel (used by
another kernel, returned, or carried to the next trip) go through HBM. The attributes
are discardable: the program computes exactly what it computed before (the compiler
strips them, nested ones included, before serialising the program). A loop's
condition region is not annotated (the cost model does not cost it).

Grouping, in one sweep over the operations in program order:

- matmuls (dot_general, convolution), irregular ops (gather, scatter, sort, iota,
  rng, custom calls) and control flow (loops included) start a kernel of their own;
- an element-wise, reduction, data-movement or view op joins the kernel of one of
  its operands' producers (a matmul, element-wise or reduction kernel): a matmul's
  epilogue (bias, activation, residual add), element-wise chains, and reduction
  patterns such as softmax and layer norm end up in one kernel;
- such an op fed by function arguments only joins the latest kernel that already
  reads one of those arguments (sibling fusion: ``x * 0.5`` and ``erf(x / sqrt 2)``
  of GELU share one load of ``x``);
- a view or data-movement op used by one op only (a transposed weight, a broadcast
  bias, a reshape between two ops) joins its consumer's kernel: it becomes the
  access pattern of a load or store of that kernel; so does an op of constants
  only (``rsqrt(2.0)``) used once; but not when that consumer is a loop or other
  control flow: its body reads the value from HBM at every trip, so the op runs in
  a kernel of its own that writes it there;
- constants belong to no kernel (splats are immediates; other constants are read
  by the kernels that use them).

Joining kernel K is allowed only when every other kernel feeding the op ends, in
program order, before K begins: program order is a topological order, so no such
kernel can depend on K, and the kernel graph stays acyclic.

Rewrite: ``%r = op(...)`` -> ``%r = op(...) {neuron.kernel = N : i64}``
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.dataflow import (
    ARGUMENT,
    Dataflow,
    Node,
    ValueRef,
    functions_of,
    loop_flows,
)
from torchneuron.passes.registry import Pass, register_pass
from torchneuron.target import engines

KERNEL_ATTR = "neuron.kernel"
# Kinds whose kernels accept further element-wise/reduction/layout ops.
_ACCEPTING_KINDS = frozenset(
    [
        engines.MATMUL,
        engines.ELEMENTWISE,
        engines.TRANSCENDENTAL,
        engines.REDUCTION,
        engines.DATA_MOVEMENT,
        engines.VIEW,
    ]
)
_LAYOUT_KINDS = frozenset([engines.DATA_MOVEMENT, engines.VIEW])
# Kinds whose work is in their regions: no op becomes part of their kernel.
_REGION_KINDS = frozenset([engines.LOOP, engines.CONTROL])


def plan_kernels(flow: Dataflow, fuse: bool = True) -> list[int | None]:
    """The kernel index of every node (None for constants); ``fuse=False``: one op per kernel."""
    nodes = flow.nodes
    kernel_of: list[int | None] = [None] * len(nodes)
    # Layout ops with one consumer wait for it and join its kernel, as its access pattern.
    pending: set[int] = set()
    first: list[int] = []  # kernel -> index of the op that opened it
    last: list[int] = []  # kernel -> highest op index in it
    kind_of: list[str] = []  # kernel -> kind of its first op

    def feeding(node: Node) -> list[tuple[int, int]]:
        """(kernel, bytes) of each value of another kernel ``node`` reads, through pending ops."""
        found = []
        for ref in node.operands:
            producer = ref[0]
            if producer == ARGUMENT:
                continue
            if producer in pending:
                found.extend(feeding(nodes[producer]))
            elif kernel_of[producer] is not None:
                found.append((kernel_of[producer], flow.info(ref).nbytes))
        return found

    def computed_from_constants(ref: ValueRef) -> bool:
        producer = ref[0]
        if producer == ARGUMENT:
            return False
        node = nodes[producer]
        if node.kind == engines.CONSTANT:
            return True
        return producer in pending and all(computed_from_constants(r) for r in node.operands)

    # Argument -> the latest kernel reading it: an op fed by arguments only joins a kernel
    # that already loads one of them (sibling fusion: the load is shared).
    readers: dict[ValueRef, int] = {}

    def arguments_read(node: Node) -> list[ValueRef]:
        found = []
        for ref in node.operands:
            if ref[0] == ARGUMENT:
                found.append(ref)
            elif ref[0] in pending:
                found.extend(arguments_read(nodes[ref[0]]))
        return found

    def adopt_pending(node: Node, kernel: int) -> None:
        for producer, _ in node.operands:
            if producer in pending:
                pending.discard(producer)
                kernel_of[producer] = kernel
                adopt_pending(nodes[producer], kernel)

    for node in nodes:
        if node.kind == engines.CONSTANT:
            continue
        single_use = (
            len(node.users) == 1
            and not node.returned
            and nodes[node.users[0]].kind not in _REGION_KINDS
        )
        if (
            fuse
            and single_use
            and (
                node.kind in _LAYOUT_KINDS
                or (
                    node.kind in engines.FUSIBLE_KINDS
                    and node.operands
                    and all(computed_from_constants(ref) for ref in node.operands)
                )
            )
        ):
            pending.add(node.index)
            continue
        chosen = None
        if fuse and node.kind in engines.FUSIBLE_KINDS:
            fed_by = feeding(node)
            if fed_by:
                chosen = _choose_kernel(fed_by, first, last, kind_of)
            else:
                # Nothing depends on a kernel through this op yet, so joining any earlier
                # kernel keeps the graph acyclic.
                siblings = [readers[r] for r in arguments_read(node) if r in readers]
                siblings = [k for k in siblings if kind_of[k] in _ACCEPTING_KINDS]
                chosen = max(siblings, key=lambda k: first[k], default=None)
        arguments = arguments_read(node)
        if chosen is None:
            chosen = len(first)
            first.append(node.index)
            last.append(node.index)
            kind_of.append(node.kind)
        kernel_of[node.index] = chosen
        last[chosen] = max(last[chosen], node.index)
        adopt_pending(node, chosen)
        for ref in arguments:
            readers[ref] = chosen
    # Pending ops whose consumer is a constant-free dead end cannot exist after dce, but a
    # malformed plan must still give every op a kernel: each such op runs alone.
    for index in sorted(pending):
        kernel_of[index] = len(first)
        first.append(index)
        last.append(index)
        kind_of.append(nodes[index].kind)
    return _renumber(kernel_of, first)


def _choose_kernel(
    feeding: list[tuple[int, int]], first: list[int], last: list[int], kind_of: list[str]
) -> int | None:
    """The producer kernel to join: the one feeding the most bytes among those that keep the
    kernel graph acyclic (every other feeding kernel ends before the candidate begins)."""
    fed: dict[int, int] = {}
    for kernel, nbytes in feeding:
        fed[kernel] = fed.get(kernel, 0) + nbytes
    best = None
    for candidate, nbytes in fed.items():
        if kind_of[candidate] not in _ACCEPTING_KINDS:
            continue
        if any(last[other] >= first[candidate] for other in fed if other != candidate):
            continue
        if best is None or (nbytes, first[candidate]) > (fed[best], first[best]):
            best = candidate
    return best


def _renumber(kernel_of: list[int | None], first: list[int]) -> list[int | None]:
    order = sorted(range(len(first)), key=lambda k: first[k])
    new_id = {old: new for new, old in enumerate(order)}
    return [None if k is None else new_id[k] for k in kernel_of]


def read_kernels(flow: Dataflow) -> list[int | None] | None:
    """The ``neuron.kernel`` attributes of ``flow``'s nodes; None unless every non-constant op
    has one."""
    kernels: list[int | None] = []
    for node in flow.nodes:
        if node.kind == engines.CONSTANT:
            kernels.append(None)
            continue
        if KERNEL_ATTR not in node.op.attributes:
            return None
        kernels.append(ir.IntegerAttr(node.op.attributes[KERNEL_ATTR]).value)
    return kernels


@register_pass
@dataclass(frozen=True)
class FuseKernels(Pass):
    """Group ops into NeuronCore kernels (neuron.kernel attributes); intermediates stay in SBUF."""

    name = "fuse-kernels"
    # false: one op per kernel (what the estimate looks like without fusion)
    fuse: bool = True

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        i64 = ir.IntegerType.get_signless(64)
        for function in functions_of(module):
            for flow in loop_flows(function):
                kernels = plan_kernels(flow, fuse=self.fuse)
                for node, kernel in zip(flow.nodes, kernels):
                    if kernel is None:
                        if KERNEL_ATTR in node.op.attributes:
                            del node.op.attributes[KERNEL_ATTR]
                        continue
                    node.op.attributes[KERNEL_ATTR] = ir.IntegerAttr.get(i64, kernel)
                count = len({k for k in kernels if k is not None})
                ctx.count("kernel", count)
                ctx.count("fused-op", sum(k is not None for k in kernels) - count)
