"""Eager ops padded to buckets: one program per op and bucket instead of per shape.

An eager op whose call signature changes only in some sizes (a new batch size) would
otherwise be traced, lowered and compiled again for every size. ``compile_padded``
traces the op once with those sizes symbolic, has the bucket analysis
(``buckets_analysis.plan_buckets``) prove that padding them cannot change a result
(masking reductions over them) and lowers the masked graph once as a dynamic program.
The device then runs each call at the next bucket, or a larger one already specialized
(``device/padded.py``): a size inside a bucket it ran before compiles nothing; a new
bucket specializes the program (XLA's compile, no tracing or lowering).

Anything the analysis cannot prove, and any graph the dynamic front half cannot keep
symbolic, is ``PaddingRefused``: the device then compiles each exact size, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from torchneuron.errors import TorchNeuronError

from .eager import TensorSpec, in_clean_thread


class PaddingRefused(TorchNeuronError):
    """The op's sizes cannot be padded (the reason says why); each size compiles exactly."""


@dataclass
class PaddedProgram:
    """An op's program with some sizes symbolic, and how to pad and slice around it."""

    plan: Any  # buckets_analysis.BucketPlan
    program: Any  # dynamic_program.DynamicProgram
    admits: Callable[[dict[str, int]], bool]  # the program's ranges and guards
    traced_shapes: tuple[tuple[int, ...], ...]  # the call's shapes at the trace
    symbolic: frozenset[tuple[int, int]]  # (input position, axis) of each symbolic size
    fresh_count: int  # the first outputs are the op's new tensors, the rest written arguments
    # each output's shape (ints, and size expressions over the symbols) and dtype
    outputs: tuple[tuple[tuple[int | str, ...], torch.dtype], ...] = ()
    # the padded sizes chosen for calls so far (``BucketedFunction.choose`` borrows them)
    chosen: list[dict[str, int]] = field(default_factory=list)
    # the program read by the interpreter (``runtime/interpreter.py``), which runs a new
    # bucket's calls until its specialization is compiled; None where it cannot
    interpreted: Any = None

    def output_metas(self, values: dict[str, int]) -> tuple[tuple, ...]:
        """(shape, contiguous stride, dtype) of each output for the symbols' ``values``."""
        from torch._prims_common import make_contiguous_strides_for

        from .dynamic_signature import evaluate

        metas = []
        for dims, dtype in self.outputs:
            shape = tuple(d if isinstance(d, int) else evaluate(d, values) for d in dims)
            metas.append((shape, tuple(make_contiguous_strides_for(shape)), dtype))
        return tuple(metas)


def compile_padded(
    op_name: str,
    specs: Sequence[TensorSpec],
    dynamic: Sequence[set[int]],
    traced_fn: Callable[..., tuple[torch.Tensor, ...]],
    buckets: Sequence[int],
    fresh_count: int,
    target: str | None = None,
) -> PaddedProgram:
    """``traced_fn`` (as for ``eager.compile_op``) traced with the axes ``dynamic[i]`` of
    input ``i`` symbolic, planned for ``buckets`` and lowered once."""
    if target is None:
        from torchneuron.target.topology import topology

        target = topology().target
    return in_clean_thread(
        lambda: _compile(op_name, specs, dynamic, traced_fn, buckets, fresh_count, target)
    )


def _compile(op_name, specs, dynamic, traced_fn, buckets, fresh_count, target) -> PaddedProgram:
    from torchneuron.lowering import LoweringError

    from .buckets import admits_of
    from .buckets_analysis import plan_buckets
    from .buckets_tags import BucketRefused, NothingToBucket
    from .dynamic import compile_dynamic_graph
    from .dynamic_functions import draws_random_words

    gm = _trace_symbolic(op_name, specs, dynamic, traced_fn)
    if draws_random_words(gm):
        raise PaddingRefused(f"{op_name}: it draws random numbers")
    try:
        plan = plan_buckets(gm, buckets)
        if plan.merges:  # the padded runner pads and slices whole dimensions only
            raise BucketRefused("a size or dimension is arithmetic of symbols")
        if plan.exact_inputs or plan.exact_size_inputs:  # it binds padded symbols only
            raise BucketRefused("a size is read as a value")
        program, size_positions = compile_dynamic_graph(
            plan.graph_module, name=_program_name(op_name), target=target
        )
    except (BucketRefused, NothingToBucket, LoweringError) as error:
        raise PaddingRefused(f"{op_name}: {' '.join(str(error).split())[:300]}") from None
    except Exception as error:  # noqa: BLE001 - a pass or the front half failed: exact sizes
        raise PaddingRefused(
            f"{op_name}: the padded program did not lower ({type(error).__name__}: "
            f"{' '.join(str(error).split())[:200]})"
        ) from None
    if size_positions:
        raise PaddingRefused(f"{op_name}: the graph takes sizes as inputs")
    if program.output_positions() != list(range(program.output_count)):
        raise PaddingRefused(f"{op_name}: an output is a constant, a size or None")
    symbolic = frozenset(
        (position, axis) for position, dims in plan.tensor_inputs.items() for axis, _ in dims
    )
    wanted = frozenset((i, axis) for i, axes in enumerate(dynamic) for axis in axes)
    if symbolic != wanted:
        raise PaddingRefused(f"{op_name}: the traced graph did not keep the changed sizes symbolic")
    return PaddedProgram(
        plan,
        program,
        admits_of(program.signature),
        tuple(s.shape for s in specs),
        symbolic,
        fresh_count,
        _output_shapes(gm, op_name),
        interpreted=_interpreted(program),
    )


def _interpreted(program: Any) -> Any:
    """``program`` read by the interpreter, or None (an op or type it does not cover, or
    weights: a padded eager program has none)."""
    found = program.interpreter()
    return found[0] if found is not None and not found[1] else None


def _output_shapes(gm: torch.fx.GraphModule, op_name: str) -> tuple:
    """Each output's (shape as ints and size expressions, dtype) from the trace."""
    output = next(node for node in gm.graph.nodes if node.op == "output")
    found = []
    for value in torch.utils._pytree.tree_leaves(output.args[0]):
        fake = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        if not isinstance(fake, torch.Tensor):
            raise PaddingRefused(f"{op_name}: an output is not a tensor")
        dims = tuple(
            int(d) if isinstance(d, int) else str(d.node.expr).replace(" ", "") for d in fake.shape
        )
        found.append((dims, fake.dtype))
    return tuple(found)


def _trace_symbolic(op_name, specs, dynamic, traced_fn) -> torch.fx.GraphModule:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import (
        DimDynamic,
        ShapeEnv,
        StatelessSymbolicContext,
    )

    from torchneuron.lowering import decomposition_table

    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    fakes = []
    for spec, axes in zip(specs, dynamic):
        kinds = [
            DimDynamic.DUCK if a in axes else DimDynamic.STATIC for a in range(len(spec.shape))
        ]
        real = torch.empty_strided(spec.shape, spec.stride, dtype=spec.dtype, device="cpu")
        fakes.append(
            mode.from_tensor(real, symbolic_context=StatelessSymbolicContext(dynamic_sizes=kinds))
        )

    def positional(*flat):
        return traced_fn(*flat)

    try:
        with mode:
            return make_fx(
                torch.func.functionalize(positional, remove="mutations_and_views"),
                decomposition_table=decomposition_table(),
                tracing_mode="symbolic",
            )(*fakes)
    except Exception as error:  # noqa: BLE001 - any tracing failure: compile each size
        raise PaddingRefused(
            f"{op_name}: could not be traced with symbolic sizes ({type(error).__name__}: "
            f"{' '.join(str(error).split())[:200]})"
        ) from None


def _program_name(op_name: str) -> str:
    from .eager import _program_name as name

    return name(op_name) + "_padded"
