"""The decomposition table used before import: ATen op -> Python decomposition.

Reviewed like code: the base is torch-mlir's own table (without it batch-norm
and some loss ops arrive as opaque ``torch.operator``s), plus PyTorch's own
decompositions listed in ``EXTRA_DECOMPOSITIONS`` below, each with the reason
it is needed, plus our own lowering rules (``torchneuron.lowering.rules``),
which take precedence and hand the cases they decline to the entry beneath.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch._decomp import get_decompositions
from torch_mlir.extras.fx_decomp_util import get_decomposition_table as _torch_mlir_table

from .refusals import refusal, refused

aten = torch.ops.aten

# Ops torch-mlir's StableHLO lowering lacks but PyTorch can decompose into ops
# it has. One line each, with why; an entry is added only when a test fails
# without it (MLP, CNN and GPT-style training were checked entry by entry).
EXTRA_DECOMPOSITIONS = [
    # torch-mlir's StableHLO conversion leaves it (and a stray torch.constant.bool) illegal.
    aten.max_pool2d_with_indices_backward,
    # torch-mlir has no StableHLO lowering for these; PyTorch's decompositions use ops it has
    # (each checked against its OpInfo entry, which falls back to the CPU without it):
    aten.addmv,  # -> mm/mv + add
    aten.diagonal,  # -> as_strided view (also trace, linalg.diagonal, quantile)
    aten.as_strided_copy,  # -> as_strided + clone
    aten.narrow_copy,
    aten.view_copy,
    aten.permute_copy,
    aten.unbind_copy,  # -> the view + clone
    aten.adaptive_max_pool3d,  # -> max_pool3d over computed windows
    aten.max_pool3d_with_indices,  # -> the generic windowed-max decomposition
    # eager mode meets these directly (torch.compile sees the .vec forms, decomposed):
    aten.upsample_bilinear2d,
    aten.upsample_bicubic2d,
    aten.upsample_trilinear3d,  # -> gathers
]


# Ops whose bfloat16/float16 form is computed in float32 and rounded once, as PyTorch's
# CPU kernels do and as the NeuronCore's engines do (they compute in fp32 and round on
# write): rounding every step of an accumulation in bfloat16 drifts by several ulp.
FLOAT32_ACCUMULATION = [
    aten.cumsum.default,
    aten.sum.dim_IntList,
    aten.mean.dim,
    aten.var.correction,
    aten.var_mean.correction,
    aten.std.correction,
    aten.std_mean.correction,
    aten.logsumexp.default,
    aten._softmax.default,
    aten._log_softmax.default,
    aten.linalg_cross.default,
    aten.grid_sampler_2d.default,
    aten._adaptive_avg_pool3d.default,
    aten.native_group_norm.default,
    aten.native_layer_norm.default,
    # A half-precision convolution's bias is added to the float32 accumulator and the sum
    # rounded once, as the TensorEngine's PSUM accumulation does: rounding the
    # convolution first loses the bias's digits under cancellation. (The cost model
    # counts the upcast operands at their bfloat16 width.)
    aten.convolution.default,
    # (not the training forms with running statistics: they update those in place,
    # which an upcast copy would swallow)
    aten._native_batch_norm_legit_no_training.default,
    aten._native_batch_norm_legit.no_stats,
]
_HALF_TYPES = (torch.bfloat16, torch.float16)


@functools.lru_cache(maxsize=1)
def decomposition_table() -> dict[torch._ops.OperatorBase, Callable]:
    """The full table, built once per process."""
    from .rules import lowering_rules

    table = dict(_torch_mlir_table())
    table.update(get_decompositions(EXTRA_DECOMPOSITIONS))
    for op, rule in lowering_rules().items():
        table[op] = _rule_then(op, rule, table.get(op))
    for op in FLOAT32_ACCUMULATION:
        table[op] = _in_float32(op, table.get(op))
    return table


def _in_float32(op, beneath: Callable | None) -> Callable:
    """``op`` on half-precision inputs computed in float32, the result rounded back."""

    def upcast_or_beneath(*args, **kwargs):
        floating = [a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
        half = {t.dtype for t in floating if t.dtype in _HALF_TYPES}
        # other floating operands may only be 0-d (Python scalars lifted to tensors)
        others_scalar = all(t.dim() == 0 for t in floating if t.dtype not in _HALF_TYPES)
        requested = kwargs.get("dtype")
        if len(half) == 1 and others_scalar and requested in (None, *half):
            (dtype,) = half
            wide = [
                a.to(torch.float32) if isinstance(a, torch.Tensor) and a.dtype == dtype else a
                for a in args
            ]
            if requested is not None:  # sum(x, dtype=bfloat16) accumulates in float32 too
                kwargs = {**kwargs, "dtype": torch.float32}
            result = op(*wide, **kwargs)
            results = result if isinstance(result, (tuple, list)) else [result]
            narrow = [
                r.to(dtype) if isinstance(r, torch.Tensor) and r.dtype == torch.float32 else r
                for r in results
            ]
            return tuple(narrow) if isinstance(result, (tuple, list)) else narrow[0]
        if beneath is not None:
            return beneath(*args, **kwargs)
        return NotImplemented

    upcast_or_beneath.__name__ = f"float32_{op.__name__.replace('.', '_')}"
    return upcast_or_beneath


def _rule_then(op, rule: Callable, beneath: Callable | None) -> Callable:
    """``rule``, handing the calls it declines (``NotImplemented``) to ``beneath``.

    A call PyTorch's CPU kernel refuses (``refusals.refusal``) is refused before the
    rule writes it out of the graph: the graph check after tracing never sees it.
    """

    @functools.wraps(rule)
    def refused_or_rule(*args, **kwargs):
        values = _schema_values(op, args, kwargs)
        reason = refusal(op, values) if values is not None else None
        if reason is not None:
            raise refused(op, reason)
        result = rule(*args, **kwargs)
        if result is NotImplemented and beneath is not None:
            return beneath(*args, **kwargs)
        return result

    return refused_or_rule


def _schema_values(op, args: tuple, kwargs: dict) -> list | None:
    values = list(args)
    for argument in op._schema.arguments[len(args) :]:
        if argument.name in kwargs:
            values.append(kwargs[argument.name])
        elif argument.has_default_value():
            values.append(argument.default_value)
        else:
            return None
    return values
