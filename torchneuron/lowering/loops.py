"""Counted loops: a rule's repeated block compiled once, as a ``stablehlo.while``.

A lowering rule that repeats the same block of ops (a Jacobi sweep, a series' term)
writes it with ``counted_loop(count, body, values, constants)`` instead of unrolling it
in Python.
``make_fx`` traces that as one ``higher_order.while_loop`` node whose condition and
body are child graphs; the program then holds the block once, and XLA compiles it
once, however many times it runs.

The route (three steps, each where the pipeline already is):

1. FX (``carry_loop_inputs``): a ``while_loop`` node's *additional inputs* (the
   tensors the body reads from outside: ``counted_loop``'s constants) become carried
   values that the body hands back unchanged. torch-mlir's importer turns the node into a
   ``torch.prim.Loop`` but passes additional inputs as carried values its body block
   has no arguments for (an invalid loop); with every input carried, it is valid.
2. Import (``lowering.import_graph``): a graph with a loop is imported with its child
   graphs as private functions; torch-mlir's backend pipeline inlines them into one
   ``torch.prim.Loop`` whose body computes the next condition at its end.
3. StableHLO (``loops_as_while``, before torch-mlir's StableHLO pipeline): each
   ``torch.prim.Loop`` becomes a ``stablehlo.while``. Its condition region evaluates the
   loop's condition on the carried values (the ops computing it, cloned); its body
   holds the loop's ops between ``torch_c`` casts, which the pipeline then converts
   with everything else and folds away.

Only what a counted loop needs is accepted: carried tensors (no Python numbers), a
condition computed from the values the body hands on, and a body that does not read
torch-mlir's trip index. The runtime's verifier admits a ``stablehlo.while`` only when
it proves the loop's trip count (``torchneuron/loop_bound.py``), and the compiler refuses
what the verifier would (``compiler/program.check_allowed_ops``).
"""

from __future__ import annotations

import contextlib
import re

import torch
import torch.fx
from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from .errors import LoweringError

WHILE_LOOP = torch.ops.higher_order.while_loop


def counted_loop(
    count: int, body, values: tuple[torch.Tensor, ...], constants: tuple[torch.Tensor, ...] = ()
) -> tuple[torch.Tensor, ...]:
    """``values`` after ``count`` applications of ``body``, as one loop in the program.

    ``body(*values, *constants)`` returns new values of the same shapes and dtypes.
    Every tensor the body reads that is not a value must be in ``constants``: traced, a
    tensor it reads otherwise would be a constant of the trace, and the compiler refuses
    it (``carry_loop_inputs``). The loop is PyTorch's ``while_loop`` operator, called
    directly (its Python wrapper would compile every loop with Dynamo first)."""
    from torch._higher_order_ops.while_loop import while_loop_op
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    if count <= 0:
        return tuple(values)
    if get_proxy_mode() is None:  # not traced (a rule run on tensors directly): just run it
        for _ in range(count):
            values = tuple(body(*values, *constants))
        return values
    counter = torch.zeros((), dtype=torch.int32, device=values[0].device)
    size = len(values)

    def condition(step, *_):
        return step < count

    def step_body(step, *carried):
        return (step + 1, *body(*carried[:size], *carried[size:]))

    with _shape_environment((*values, *constants)):
        _, *results = while_loop_op(condition, step_body, (counter, *values), tuple(constants))
    return tuple(results)


@contextlib.contextmanager
def _shape_environment(values):
    """PyTorch's fake-tensor rule of ``while_loop`` needs its fake mode to have a shape
    environment (for sizes a loop could change); the eager device traces its ops under a
    fake mode without one. Lend one for the loop's trace: our loops carry tensors of
    fixed shapes, so no symbol is made."""
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = detect_fake_mode(values)
    if mode is None or mode.shape_env is not None:
        yield
        return
    mode.shape_env = ShapeEnv()
    try:
        yield
    finally:
        mode.shape_env = None


def has_loops(gm: torch.fx.GraphModule) -> bool:
    return any(node.target is WHILE_LOOP for node in gm.graph.nodes)


def carry_loop_inputs(gm: torch.fx.GraphModule) -> None:
    """Make every ``while_loop`` node of ``gm`` (and of its child graphs) carry its
    additional inputs, in place: the body returns them unchanged, the condition takes
    them as it did; the node's extra results are unused."""
    for child in gm.children():
        if isinstance(child, torch.fx.GraphModule):
            carry_loop_inputs(child)
    _refuse_traced_constants(gm)
    _refuse_checks_in_loops(gm)
    changed = False
    for node in gm.graph.nodes:
        if node.target is not WHILE_LOOP:
            continue
        cond, body, carried, extra = node.args
        if not extra:
            continue
        numbers = {
            i: e for i, e in enumerate(extra, len(carried)) if not isinstance(e, torch.fx.Node)
        }
        if any(
            isinstance(e, torch.fx.Node) and not isinstance(e.meta.get("val"), torch.Tensor)
            for e in extra
        ):
            raise LoweringError("a loop reads a symbolic size; loops take static shapes only")
        for child in (getattr(gm, cond.target), getattr(gm, body.target)):
            _substitute_numbers(child, numbers)
        extra = tuple(e for e in extra if isinstance(e, torch.fx.Node))
        _return_inputs_too(getattr(gm, body.target), len(carried), len(extra))
        node.args = (cond, body, (*carried, *extra), ())
        value = node.meta.get("val")
        if isinstance(value, (list, tuple)):
            node.meta["val"] = (*value, *(e.meta.get("val") for e in extra))
        changed = True
    if changed:
        gm.recompile()


def _refuse_traced_constants(gm: torch.fx.GraphModule) -> None:
    """A loop's body or condition that read a tensor of the enclosing trace without being
    given it holds that tensor as a constant: a fake tensor, with no data."""
    from torch._subclasses.fake_tensor import FakeTensor

    for node in gm.graph.nodes:
        if node.op == "get_attr" and isinstance(getattr(gm, node.target, None), FakeTensor):
            raise LoweringError(
                f"a loop's body reads a tensor of the graph around it ({node.target}) that the "
                "loop was not given; pass it in counted_loop's constants"
            )


def _refuse_checks_in_loops(gm: torch.fx.GraphModule) -> None:
    """A run-time check (``lowering.checks``) becomes an output of the program; one inside
    a loop's body would be a value of each trip, which no output holds."""
    from .checks import is_check

    for child in gm.children():
        if isinstance(child, torch.fx.GraphModule) and any(map(is_check, child.graph.nodes)):
            raise LoweringError(
                "a loop's body holds a run-time check (an index bound, an assertion); "
                "loops take ops without checks: compute what the check guards so that it "
                "cannot fail (select with where instead of indexing)"
            )


def _substitute_numbers(graph_module: torch.fx.GraphModule, numbers: dict[int, object]) -> None:
    """Put each number given as an additional input (a size the trace saw as symbolic,
    concrete here) in place of its placeholder, which is removed."""
    if not numbers:
        return
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    for position, number in numbers.items():
        placeholder = placeholders[position]
        for user in list(placeholder.users):
            user.args, user.kwargs = torch.utils._pytree.tree_map(
                lambda a, p=placeholder, v=number: v if a is p else a, (user.args, user.kwargs)
            )
        graph_module.graph.erase_node(placeholder)
    graph_module.recompile()


def _return_inputs_too(body: torch.fx.GraphModule, carried: int, extra: int) -> None:
    graph = body.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != carried + extra:
        raise LoweringError(
            f"a loop body takes {len(placeholders)} inputs, not the {carried} carried and "
            f"{extra} additional values its loop passes"
        )
    output = next(n for n in graph.nodes if n.op == "output")
    results = output.args[0]
    results = tuple(results) if isinstance(results, (list, tuple)) else (results,)
    output.args = ((*results, *placeholders[carried:]),)
    body.recompile()


# -- torch.prim.Loop -> stablehlo.while -------------------------------------------------

_VTENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],(\w+)>$")


def loops_as_while(module: ir.Module) -> None:
    """Rewrite, in place, every ``torch.prim.Loop`` of ``module`` (innermost first)."""
    loops: list[ir.Operation] = []

    def visit(op) -> ir.WalkResult:
        if op.operation.name == "torch.prim.Loop":
            loops.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.POST_ORDER)
    if not loops:
        return
    _load_cast_dialects(module.context)
    for loop in loops:
        _as_while(loop, module.context)


def _load_cast_dialects(context: ir.Context) -> None:
    """Load ``stablehlo`` and ``torch_c`` into ``context``: the bindings cannot name
    them until a pass that depends on them has run there."""
    with context, ir.Location.unknown():
        PassManager.parse("builtin.module(func.func(convert-torch-to-stablehlo))").run(
            ir.Module.create().operation
        )


def _builtin_type(value_type: ir.Type, context: ir.Context) -> ir.Type:
    """``!torch.vtensor<[4,4],f32>`` -> ``tensor<4x4xf32>`` (signed integers signless)."""
    match = _VTENSOR.match(str(value_type))
    if match is None:
        raise LoweringError(f"a loop carries {value_type}; only tensors of known shape can be")
    dims, element = match.groups()
    element = re.sub(r"^si(\d+)$", r"i\1", element)
    sizes = [d.strip() for d in dims.split(",") if d.strip()]
    if any(not d.isdigit() for d in sizes):
        raise LoweringError(f"a loop carries {value_type}; its shape must be static")
    return ir.Type.parse(f"tensor<{''.join(d + 'x' for d in sizes)}{element}>", context)


def _cast(name: str, value: ir.Value, result_type: ir.Type) -> ir.Value:
    return ir.Operation.create(name, results=[result_type], operands=[value]).results[0]


def _as_while(loop: ir.Operation, context: ir.Context) -> None:
    block = loop.regions[0].blocks[0]
    index, *old_arguments = list(block.arguments)
    if list(index.uses):
        raise LoweringError("a loop body reads torch-mlir's trip index; carry a counter instead")
    terminator = list(block.operations)[-1].operation
    condition = terminator.operands[0].owner.operation
    if condition.name != "torch.aten.Bool.Tensor":
        raise LoweringError(f"a loop's condition comes from {condition.name}, not a tensor")
    value_types = [a.type for a in old_arguments]
    types = [_builtin_type(t, context) for t in value_types]
    with context, loop.location:
        with ir.InsertionPoint(loop):
            initial = [
                _cast("torch_c.to_builtin_tensor", v, t)
                for v, t in zip(list(loop.operands)[2:], types)
            ]
            new = ir.Operation.create("stablehlo.while", results=types, operands=initial, regions=2)
        _condition_region(new, loop, terminator, condition, value_types, types, context)
        body = new.regions[1].blocks.append(*types)
        with ir.InsertionPoint(body):
            for argument, old, value_type in zip(body.arguments, old_arguments, value_types):
                old.replace_all_uses_with(
                    _cast("torch_c.from_builtin_tensor", argument, value_type)
                )
        anchor = list(body.operations)[-1].operation
        for op in list(block.operations)[:-1]:
            op = op.operation
            op.move_after(anchor)
            anchor = op
        handed_on = list(terminator.operands)[1:]
        with ir.InsertionPoint(body):
            ir.Operation.create(
                "stablehlo.return",
                results=[],
                operands=[
                    _cast("torch_c.to_builtin_tensor", v, t) for v, t in zip(handed_on, types)
                ],
            )
        with ir.InsertionPoint(loop):
            results = [
                _cast("torch_c.from_builtin_tensor", r, t) for r, t in zip(new.results, value_types)
            ]
    for old, replacement in zip(loop.results, results):
        old.replace_all_uses_with(replacement)
    terminator.erase()
    _erase_unused(condition, new)
    loop.erase()


def _condition_region(new, loop, terminator, condition, value_types, types, context) -> None:
    """The while's condition: the ops computing the loop's next condition, cloned, reading
    the carried values instead of the ones the body hands on (they are the same)."""
    region = new.regions[0].blocks.append(*types)
    with ir.InsertionPoint(region):
        current = [
            _cast("torch_c.from_builtin_tensor", a, t)
            for a, t in zip(region.arguments, value_types)
        ]
        mapping: dict[ir.Value, ir.Value] = {}
        for handed, value in zip(list(terminator.operands)[1:], current):
            mapping.setdefault(handed, value)

        def clone(value: ir.Value) -> ir.Value:
            if value in mapping:
                return mapping[value]
            owner = value.owner
            if isinstance(owner, ir.Block):
                raise LoweringError("a loop's condition reads a value its body does not hand on")
            owner = owner.operation
            if not _inside(owner, loop):
                return value  # a constant of the enclosing function
            copy = owner.clone()
            for i, operand in enumerate(list(owner.operands)):
                copy.operands[i] = clone(operand)
            for old, made in zip(owner.results, copy.results):
                mapping[old] = made
            return mapping[value]

        flag = condition.operands[0]
        ir.Operation.create(
            "stablehlo.return",
            results=[],
            operands=[
                _cast("torch_c.to_builtin_tensor", clone(flag), _builtin_type(flag.type, context))
            ],
        )


def _inside(op: ir.Operation, ancestor: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        parent = parent.operation
        if parent == ancestor:
            return True
        if parent.name == "builtin.module":
            return False
        parent = parent.parent
    return False


def _erase_unused(op: ir.Operation, within: ir.Operation) -> None:
    """Erase ``op`` and what computed only its operands, inside ``within``."""
    pending = [op]
    while pending:
        op = pending.pop()
        if any(list(r.uses) for r in op.results):
            continue
        sources = [v.owner.operation for v in op.operands if not isinstance(v.owner, ir.Block)]
        op.erase()
        pending.extend(s for s in sources if _inside(s, within))
