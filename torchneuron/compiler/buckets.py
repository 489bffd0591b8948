"""Bucketing of dynamic dimensions: pad a symbolic size up to the next bucket, exactly.

``torch.compile(..., backend="neuron", dynamic=True, options={"buckets": [32, 64, 128]})``
(or ``TORCHNEURON_BUCKETS=32,64,128``; ``"auto"`` for ``AUTO_BUCKETS``, a ladder of
two sizes per power of two) runs a graph whose sizes are symbolic at the
next bucket at or above each symbol's value, so a dynamic program is specialized
(numerically compiled) once per bucket instead of once per size; a size whose bucket is
not specialized yet borrows a larger one that is, within ``BORROW_LIMIT``. A size
beyond the last bucket is specialized exactly (no padding).

Padding is only allowed where it cannot change a result. ``plan_buckets`` walks the
ATen graph once and gives every dimension of every tensor a *tag*: ``None``
when its size does not depend on a bucketed symbol, else the product of *atoms*
(the symbols, and the static factors merged with them by a view, in row-major order)
that it is laid out as. A padded position holds arbitrary values (possibly inf or
NaN), so:

- ops that keep positions independent along a tagged dimension pass (elementwise
  ops, views that keep the atoms in order, matmuls that do not contract it, norms over
  other dimensions, slices that keep it whole, prefix scans);
- a reduction or contraction over a bare padded dimension gets its operand(s)
  selected (``where``, never multiplied) against a mask with the reduction's
  identity: 0 for sum and contraction, -inf for max/softmax/logsumexp, +inf for min,
  and a mean becomes masked sum / masked count. The mask (``arange(padded) < true``)
  is one more runtime input per symbol;
- anything else that touches a tagged dimension (sort, flip, conv, var, indexing into
  it, a size used as a value, an unknown op) refuses with ``BucketRefused`` naming
  the op: the backend then runs the graph exactly, unpadded, with one warning (none
  under ``"auto"``: the user named no sizes, and an exact run is what they expect).

Outputs are sliced back to the true sizes, a training forward's saved activations
included, and a size it returns (saved for its backward) is its true value; the
backward is planned on its own and pads them again.

The analysis is split along its seams: the tag algebra and the ops by kind
(``buckets_tags.py``), the rule of each op (``buckets_rules.py``), the walk that
applies them (``buckets_analysis.py``), the option's sizes (``bucket_sizes.py``, which the
eager device reads without importing this module). Here: the route torch.compile takes
(``compile_bucketed``) and the function that pads and slices at run time.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily

from torchneuron.counters import Counters
from torchneuron.errors import TorchNeuronError
from torchneuron.lowering.errors import LoweringError

from .bucket_sizes import AUTO_BUCKETS, MAX_BUCKETS, buckets_from_env, parse_buckets
from .buckets_analysis import BucketPlan, plan_buckets
from .buckets_tags import BucketRefused, NothingToBucket
from .dynamic import compile_dynamic_graph
from .dynamic_functions import DynamicGraphFunction, RunCompiled, draws_random_words
from .dynamic_signature import ShapeConstraintError, SymbolicSignature, evaluate, holds

__all__ = [
    "MAX_BUCKETS",
    "STATS",
    "BucketPlan",
    "BucketRefused",
    "BucketedFunction",
    "NothingToBucket",
    "buckets_from_env",
    "compile_bucketed",
    "parse_buckets",
    "plan_buckets",
    "reset_stats",
    "stats",
]

# Counters of this process: bucketed_graphs (graphs planned with padding),
# refusals (graphs whose bucketing was refused: run exactly), padded_calls (calls run
# at a bucket larger than the true size), exact_calls (calls of a bucketed graph whose
# sizes were a bucket already, or beyond the last bucket).
STATS = Counters("bucketed_graphs", "refusals", "padded_calls", "exact_calls")
reset_stats = STATS.reset
stats = STATS.snapshot


# -- the route ---------------------------------------------------------------------


def compile_bucketed(
    gm: torch.fx.GraphModule,
    name: str,
    options: Any,
    run_compiled: RunCompiled,
    layouts: dict | None = None,
    pinned: dict | None = None,
) -> BucketedFunction | None:
    """``gm`` padded to ``options.buckets`` (a ``BucketedFunction``; ``options``: the
    backend's target, pipeline, dump_dir and buckets), or None after one warning
    (counted in ``STATS["refusals"]``) when padding could change a result or the graph
    cannot stay symbolic; then the caller runs it at each exact size. ``layouts``
    (shared by a training forward and its backward): the merged dimensions of the
    outputs each planned graph returns, by name, read by the graph that takes them.
    ``pinned`` (symbol -> int): ints the program takes as constants
    (``dynamic_functions.ValuePinnedFunction``)."""
    try:
        with unset_fake_temporarily():
            if draws_random_words(gm):
                raise BucketRefused("it draws random numbers")
            plan = plan_buckets(gm, options.buckets, layouts, pinned)
            program, size_positions = compile_dynamic_graph(
                plan.graph_module,
                name=name,
                target=options.target,
                pipeline=options.pipeline,
                dump_dir=options.dump_dir,
                pinned=pinned,
            )
    except NothingToBucket:
        return None
    except (BucketRefused, LoweringError) as exc:
        STATS["refusals"] += 1
        if options.buckets is AUTO_BUCKETS:
            return None  # not asked for by name: an exact run is what was expected
        warnings.warn(
            f"torchneuron: graph {name} is not padded to buckets {list(options.buckets)} "
            f"(it runs at each exact size) because {exc}",
            stacklevel=3,
        )
        return None
    STATS["bucketed_graphs"] += 1
    if layouts is not None:  # for the graph that takes this one's outputs (its backward)
        layouts.update(plan.layouts)
    inner = DynamicGraphFunction(program, size_positions, run_compiled, plan.graph_module, pinned)
    return BucketedFunction(inner, plan, admits_of(program.signature))


def admits_of(signature: SymbolicSignature) -> Callable[[dict[str, int]], bool]:
    """Whether ``signature`` (ranges, guards) admits the symbols' values (a padded size
    must keep every guard the tracer assumed, e.g. ``s0 != 128``)."""

    def admits(values: dict[str, int]) -> bool:
        for name, (low, high) in signature.symbols.items():
            value = values.get(name)
            if value is None or value < low or (high is not None and value > high):
                return False
        try:
            return all(holds(guard, values) for guard in signature.guards)
        except (KeyError, ValueError, TorchNeuronError):
            return False

    return admits


# -- the runtime -------------------------------------------------------------------


# A call whose own bucket has not been specialized yet borrows the smallest sizes
# specialized before that hold it, when they pad at most this many times its elements
# (all symbols together): a new size then compiles nothing. A larger gap specializes
# the call's own bucket.
BORROW_LIMIT = 4
_CHOSEN_KEPT = 64  # the sizes a function remembers choosing (the first ones)


def growth(sizes: dict[str, int], true: dict[str, int]) -> float:
    """How many times the true elements ``sizes`` pad to (all symbols together)."""
    return math.prod(sizes[s] / max(1, v) for s, v in true.items())


class BucketedFunction:
    """Calls ``inner`` (compiled from ``plan.graph_module``) with every padded input
    grown to its bucket and the masks appended; slices the outputs back.

    ``admits(values)`` says whether the program may run with the symbols at ``values``
    (its ranges and the tracer's guards, e.g. ``s0 != 128``); a symbol takes the
    smallest bucket at or above its size that keeps every guard, else its exact size,
    unless sizes chosen before (``chosen``, shared by whoever runs the same program)
    hold the call within ``BORROW_LIMIT``: then those, and nothing is specialized.
    """

    def __init__(self, inner, plan: BucketPlan, admits=None, chosen: list | None = None):
        self.inner = inner
        self.plan = plan
        self.admits = admits
        self.chosen: list[dict[str, int]] = [] if chosen is None else chosen

    def choose(self, true: dict[str, int], exact: dict | None = None) -> dict[str, int]:
        """The padded value of every symbol for the true values ``true``: the sizes of
        its own bucket when they were chosen before, else the closest earlier choice
        that holds them within ``BORROW_LIMIT``, else its own bucket (remembered).
        ``exact``: the values of the symbols kept at their sizes, which the guards read
        too."""
        exact = exact or {}
        own = self.bucket_of(true, exact)
        if own in self.chosen:
            return own
        holding = [
            sizes
            for sizes in self.chosen
            if sizes.keys() == true.keys()
            and all(sizes[s] >= v for s, v in true.items())
            and growth(sizes, true) <= BORROW_LIMIT
            and (self.admits is None or self.admits({**sizes, **exact}))
        ]
        if holding:
            return min(holding, key=lambda sizes: growth(sizes, true))
        if len(self.chosen) < _CHOSEN_KEPT:
            self.chosen.append(own)
        return own

    def bucket_of(self, true: dict[str, int], exact: dict | None = None) -> dict[str, int]:
        """Every symbol at its own bucket for the true values ``true`` (``exact``: as
        ``choose``)."""
        exact = exact or {}
        chosen = dict(true)  # the exact sizes: admitted (Dynamo's guards passed)
        for symbol in sorted(true):
            limit = self.plan.limits.get(symbol)
            for bucket in self.plan.buckets:
                if bucket < true[symbol] or (limit is not None and bucket > limit):
                    continue
                trial = {**chosen, symbol: bucket}
                if self.admits is None or self.admits({**trial, **exact}):
                    chosen = trial
                    break
        return chosen

    def __call__(self, *args):
        plan = self.plan
        true: dict[str, int] = {}

        def bind(symbol: str, size: int, where: str) -> None:
            if true.setdefault(symbol, int(size)) != size:
                raise ShapeConstraintError(
                    f"{where} is {size} but symbol {symbol} is {true[symbol]} (from another "
                    "input); the graph requires them equal"
                )

        for position, dims in plan.tensor_inputs.items():
            for axis, symbol in dims:
                bind(symbol, args[position].shape[axis], f"input {position} dimension {axis}")
        for position, symbol in plan.size_inputs.items():
            bind(symbol, args[position], f"size argument {position}")
        exact: dict[str, int] = {}  # symbols kept at their sizes (a vocabulary)
        for position, dims in plan.exact_inputs.items():
            for axis, symbol in dims:
                exact.setdefault(symbol, int(args[position].shape[axis]))
        for position, symbol in plan.exact_size_inputs.items():
            exact.setdefault(symbol, int(args[position]))
        padded = self.choose(true, exact)
        grown = any(padded[s] != v for s, v in true.items())
        STATS["padded_calls" if grown else "exact_calls"] += 1
        call = list(args)
        for position, dims in plan.merged_inputs.items():
            for axis, atoms in dims:
                call[position] = _regrow(call[position], axis, atoms, true, padded, position)
        for position, dims in plan.tensor_inputs.items():
            call[position] = _pad(call[position], {a: padded[s] for a, s in dims})
        for position, symbol in plan.size_inputs.items():
            call[position] = padded[symbol]
        for position, text in plan.size_input_exprs.items():
            if evaluate(text, {**true, **exact}) != args[position]:
                raise ShapeConstraintError(
                    f"size argument {position} is {args[position]} but {text} is "
                    f"{evaluate(text, {**true, **exact})} by the input dimensions"
                )
            call[position] = evaluate(text, {**padded, **exact})
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        for symbol in plan.mask_symbols:
            mask = torch.arange(padded[symbol]) < true[symbol]
            call.append(mask if device is None or device.type == "cpu" else mask.to(device))
        outputs = list(self.inner(*call))
        for position, text in plan.size_outputs.items():
            outputs[position] = evaluate(text, {**true, **exact})
        if grown:
            for position in {*plan.outputs, *plan.merged_outputs}:
                out = outputs[position]
                if out is None:
                    continue
                for axis, symbol in plan.outputs.get(position, ()):
                    out = out.narrow(axis, 0, true[symbol])
                for axis, atoms in plan.merged_outputs.get(position, ()):
                    out = _unmerge(out, axis, atoms, true, padded)
                outputs[position] = out.clone(memory_format=torch.contiguous_format)
        return outputs


def _sizes_of(atoms: tuple, values: dict[str, int]) -> list[int]:
    return [a if isinstance(a, int) else values[a] for a in atoms]


def _regrow(tensor, axis: int, atoms: tuple, true, padded, position: int) -> torch.Tensor:
    """``tensor`` whose dimension ``axis`` merges ``atoms`` (row-major), each symbol's
    part grown from its true size to its padded one."""
    true_sizes, padded_sizes = _sizes_of(atoms, true), _sizes_of(atoms, padded)
    shape = list(tensor.shape)
    if math.prod(true_sizes) != shape[axis]:
        raise ShapeConstraintError(
            f"input {position} dimension {axis} is {shape[axis]}, but the graph takes it "
            f"as {' * '.join(map(str, atoms))} = {math.prod(true_sizes)}"
        )
    if true_sizes == padded_sizes:
        return tensor
    split = tensor.reshape(shape[:axis] + true_sizes + shape[axis + 1 :])
    split = _pad(split, {axis + k: size for k, size in enumerate(padded_sizes)})
    return split.reshape(shape[:axis] + [math.prod(padded_sizes)] + shape[axis + 1 :])


def _unmerge(tensor, axis: int, atoms: tuple, true, padded) -> torch.Tensor:
    """``tensor`` whose dimension ``axis`` merges ``atoms`` at their padded sizes, each
    symbol's part cut back to its true size."""
    true_sizes, padded_sizes = _sizes_of(atoms, true), _sizes_of(atoms, padded)
    shape = list(tensor.shape)
    split = tensor.reshape(shape[:axis] + padded_sizes + shape[axis + 1 :])
    for k, size in enumerate(true_sizes):
        split = split.narrow(axis + k, 0, size)
    return split.reshape(shape[:axis] + [math.prod(true_sizes)] + shape[axis + 1 :])


def _pad(tensor: torch.Tensor, sizes: dict[int, int]) -> torch.Tensor:
    """``tensor`` grown with zeros to ``sizes`` (axis -> size) at the end of each axis."""
    widths = [0] * (2 * tensor.dim())
    for axis, size in sizes.items():
        widths[2 * (tensor.dim() - 1 - axis) + 1] = size - tensor.shape[axis]
    if not any(widths):
        return tensor
    return torch.nn.functional.pad(tensor, widths)
