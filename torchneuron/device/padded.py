"""The padded route: an eager op whose sizes changed runs at the next bucket.

A compiled op is keyed by its call signature, shapes included, so every new batch
size used to trace, lower and compile each op of a step again (~90 ms an op). Here
an op's signatures are grouped into *shape classes* (the signature with each
tensor's shape reduced to its rank and layout order). The first shapes of a class
compile exactly, as before. Once a shape of the class has run twice and a round of the
host's work has ended since its first run (``streams.rounds``: the user's read of a
result, ``torch.neuron.synchronize()`` or an optimizer step ends one), a new shape is
measured against the closest such shape (the shapes a model's layers meet inside its
first step are never taken for a change of size): the sizes that changed become
symbolic (equal ones share a symbol) and the op is compiled once as a padded program
(``compiler/eager_padded.py``: the bucket analysis proves padding exact, reductions
over padded positions are masked). From then on a call of the class pads its inputs
with zeros up to the next bucket of ``TORCHNEURON_BUCKETS`` (``auto`` by default: 1,
2, 3, 4, 6, 8, 12, ...; ``off`` turns this off), runs the program for that bucket
and slices the outputs back (a bucket not specialized yet borrows a larger one that
is, ``buckets.BucketedFunction.choose``): a size such a bucket holds compiles nothing;
a new bucket specializes the program (XLA's compile only).

An op that writes into an argument (in-place, ``out=``) computes the new value padded
and writes it back sliced, as an exact program does. Not padded (each size compiles
exactly, as before): an ``out=`` argument that must be resized, listed tensor inputs
or tensors with gaps or overlaps, integer divisions, outputs that are not new
contiguous tensors, sizes 0 and 1, and whatever the bucket analysis or the dynamic
lowering refuses. Run-time checks (an index out of range) stay in the padded program:
the bucket mask keeps padded positions out of them. A call whose sizes the padded
program does not admit (its guards, a size beyond the last bucket) compiles exactly
too. Padded calls are queued like exact ones (synchronous where the op has run-time
checks) but never join the fuser's chains.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch._prims_common import make_contiguous_strides_for

from torchneuron.counters import Counters
from torchneuron.device import _C, arrays, streams
from torchneuron.device.layout import dense_order_of
from torchneuron.device.plan import Route
from torchneuron.lru import LRU

# padded_programs: ops compiled padded; refusals: shape classes that compile each size;
# padded_calls / exact_calls: calls run by a padded program at a larger / their own size
# interpreted_entries: call signatures whose calls began interpreted (their bucket was
# compiling); interpreted_calls: calls run so; interpreter_refusals: calls whose values needed the
# compiled program at once
STATS = Counters(
    "padded_programs",
    "refusals",
    "padded_calls",
    "exact_calls",
    "interpreted_entries",
    "interpreted_calls",
    "interpreter_refusals",
)
reset_stats = STATS.reset
stats = STATS.snapshot


@dataclass
class _ShapeClass:
    # shapes compiled exactly: (shapes, entry, the round of its first run); a shape whose
    # entry ran twice and whose first round has ended is established: a change is
    # measured against those
    seen: list = field(default_factory=list)
    programs: list = field(default_factory=list)  # compiler.eager_padded.PaddedProgram
    refused: set = field(default_factory=set)  # symbolic (input, axis) sets refused
    checked: bool = False  # an exact program of the class has run-time checks


_SEEN_PER_CLASS = 16
_PROGRAMS_PER_CLASS = 8

# shape class -> what is known of it
_classes: LRU[tuple, _ShapeClass] = LRU(capacity=4096)


class PaddedEntry:
    """The cache entry of a call signature run by its shape class's padded program.

    It has what the compiled route reads of an ``Entry`` (``compiled._run_program``,
    ``launch.Launch``): ``program.execute`` pads, runs and slices, so a padded call is
    queued like any other (but never joins a fused chain: ``fusion.fusible``).
    """

    __slots__ = (
        "checked",
        "fresh",
        "fresh_metas",
        "mutated_shapes",
        "native_metas",
        "program",
        "runs",
        "scalar_dtypes",
    )
    route = Route.PADDED
    divisor = None
    dense_orders = None  # padded programs take every input in its own order

    def __init__(
        self, padded: Any, scalar_dtypes: tuple, fresh: tuple, mutated: tuple, checked: bool
    ):
        self.program = PaddedRunner(padded)
        self.scalar_dtypes = scalar_dtypes
        self.fresh = fresh  # (shape, stride, dtype) of each new output, in return order
        self.fresh_metas = fresh  # all computed: none empty or undefined
        # the shape of each argument the op writes (its shape now: never resized)
        self.mutated_shapes = mutated
        self.native_metas = _C.output_metas(fresh)
        self.checked = checked  # run-time checks: run synchronously, errors at the op
        self.runs = 0


def clear() -> None:
    """Forget every shape class (``compiled.forget_padded`` drops the entries too)."""
    _classes.clear()


def buckets() -> tuple[int, ...] | None:
    from torchneuron.compiler.bucket_sizes import buckets_from_env

    return buckets_from_env()


def shape_class(key: tuple) -> tuple[tuple, tuple[tuple[int, ...], ...]] | None:
    """(the signature with shapes reduced to ranks and layout orders, the shapes), or
    None when the signature has a listed tensor or one with gaps or overlaps."""
    parts: list = []
    shapes: list[tuple[int, ...]] = []
    for part in key:
        if _is_tensor_part(part):
            order = None if part[2] is None else dense_order_of(tuple(part[1]), part[2])
            if part[2] is not None and order is None:
                return None
            parts.append((part[0], len(part[1]), order, part[3]))
            shapes.append(tuple(part[1]))
        elif isinstance(part, tuple) and any(_is_tensor_part(p) for p in part):
            return None
        else:
            parts.append(part)
    return tuple(parts), tuple(shapes)


def _is_tensor_part(part: Any) -> bool:
    return isinstance(part, tuple) and len(part) == 4 and isinstance(part[1], torch.Size)


def paddable(entry: Any) -> bool:
    """Whether a call whose exact entry is ``entry`` may later run padded."""
    return (
        getattr(entry, "route", None) is Route.COMPILED
        and entry.divisor is None
        and all(_contiguous(meta) for meta in entry.fresh)
    )


def _contiguous(meta: tuple | None) -> bool:
    if meta is None:
        return False
    shape, stride, _ = meta
    return tuple(stride) == tuple(make_contiguous_strides_for(shape))


def saw_exact(key: tuple, entry: Any) -> None:
    """Record the first shapes of ``key``'s class (its exact entry was just compiled)."""
    found = shape_class(key)
    if found is None or not paddable(entry):
        return
    class_key, shapes = found
    known = _classes.get(class_key)
    if known is None:
        known = _ShapeClass()
        _classes.put(class_key, known)
    known.checked = known.checked or bool(entry.checked)
    if len(known.seen) < _SEEN_PER_CLASS:
        known.seen.append((shapes, entry, streams.rounds()))


def entry_for(
    plan, values, key, tensors, written, traceable, scalar_dtypes, device: int
) -> PaddedEntry | None:
    """A padded entry for a signature not seen before, its program specialized and
    loaded for the call's bucket on ``device``, or None to compile the signature exactly.

    ``written`` are the arguments the call writes (in-place, ``out=``), in output order;
    ``traceable(fresh_count, mutated_count)`` is the call as a function of flat tensors
    and lifted scalars returning its new outputs, then the values of the arguments it
    writes (``compiled._traceable``); ``scalar_dtypes`` the lifted scalars' dtypes.
    """
    entry = _entry_for(plan, values, key, tensors, written, traceable, scalar_dtypes)
    if entry is None:
        return None
    shapes = tuple(tuple(t.shape) for t in tensors) + tuple(() for _ in scalar_dtypes)
    try:
        entry.program.prepare(shapes, device)
    except Exception:  # noqa: BLE001 - a specialization that fails: this size compiles exactly
        STATS["refusals"] += 1
        return None
    return entry


def _entry_for(plan, values, key, tensors, written, traceable, scalar_dtypes) -> PaddedEntry | None:
    """``entry_for``'s entry, its program not yet specialized for the call's bucket."""
    found = shape_class(key)
    if found is None:
        return None
    class_key, shapes = found
    known = _classes.get(class_key)
    if known is None or buckets() is None:
        return None
    if not all(isinstance(t, torch.Tensor) for t in written):
        return None  # a written position holding something else: never padded
    targets = [tuple(t.shape) for t in written]
    padded = next((p for p in known.programs if _takes(p, shapes)), None)
    if padded is not None:  # the output shapes are the trace's, no shape function
        metas = _traced_metas(padded, shapes)
        if metas is None:
            return None
        fresh, writes = metas[: padded.fresh_count], metas[padded.fresh_count :]
        if [tuple(m[0]) for m in writes] != targets:
            return None  # an out= argument to resize: the exact route does that
        return PaddedEntry(padded, scalar_dtypes, fresh, tuple(targets), known.checked)
    if len(known.programs) >= _PROGRAMS_PER_CLASS:
        return None
    changed = _closest_change(known, shapes)
    if changed is None:
        return None
    from torchneuron.device.shapes import MetaRejected, MetaUnavailable, output_metadata

    try:
        fresh, mutated = output_metadata(plan, values)
    except (MetaUnavailable, MetaRejected):
        return None
    if not all(_contiguous(meta) and 0 not in meta[0] for meta in fresh):
        return None
    if [tuple(shape) for shape in mutated] != targets or any(0 in shape for shape in targets):
        return None  # a resized or empty written argument: the exact route
    traced = traceable(len(fresh), len(targets))
    padded = _compile(plan, tensors, scalar_dtypes, changed, traced, buckets(), len(fresh))
    if padded is None or not _agrees(padded, shapes, fresh, targets):
        # refused, or the trace and the shape function differ: never padded
        known.refused.add(_pattern(changed))
        STATS["refusals"] += 1
        return None
    known.programs.append(padded)
    STATS["padded_programs"] += 1
    return PaddedEntry(padded, scalar_dtypes, fresh, tuple(targets), known.checked)


def _traced_metas(padded: Any, shapes: tuple) -> tuple | None:
    """The program's output metas for ``shapes`` from its trace, or None when it does
    not take them (a broken tie or guard, an expression the evaluator cannot read)."""
    values = _bind(padded, shapes)
    if values is None or not padded.admits(values):
        return None
    try:
        return padded.output_metas(values)
    except Exception:  # noqa: BLE001 - a size expression outside the evaluator's forms
        return None


def _agrees(padded: Any, shapes: tuple, fresh: tuple, targets: list) -> bool:
    """Whether the program takes ``shapes`` and its traced outputs are the shape
    function's: ``fresh`` new ones (shapes and dtypes), then the written arguments'
    ``targets`` shapes."""
    traced = _traced_metas(padded, shapes)
    if traced is None:
        return False
    count = len(fresh)
    return [(tuple(m[0]), m[2]) for m in traced[:count]] == [
        (tuple(m[0]), m[2]) for m in fresh
    ] and [tuple(m[0]) for m in traced[count:]] == targets


def _bind(padded: Any, shapes: tuple) -> dict[str, int] | None:
    """The symbols' values for ``shapes``, or None when two sizes of one symbol differ."""
    values: dict[str, int] = {}
    for position, dims in padded.plan.tensor_inputs.items():
        for axis, symbol in dims:
            if values.setdefault(symbol, shapes[position][axis]) != shapes[position][axis]:
                return None
    return values


def _takes(padded: Any, shapes: tuple) -> bool:
    """Whether ``shapes`` differ from the program's traced shapes only where it is symbolic."""
    return all(
        a == b or (position, axis) in padded.symbolic
        for position, (traced, now) in enumerate(zip(padded.traced_shapes, shapes))
        for axis, (a, b) in enumerate(zip(traced, now))
    )


def _pattern(changed: list[set[int]]) -> frozenset:
    return frozenset((i, axis) for i, axes in enumerate(changed) for axis in axes)


def _closest_change(known: _ShapeClass, shapes: tuple) -> list[set[int]] | None:
    """The axes that changed from the closest established shape of the class, or None
    (nothing established, sizes 0 or 1, a change refused before)."""
    best = None
    used = {frozenset(p.symbolic) for p in known.programs}
    for seen, entry, first_round in known.seen:
        if getattr(entry, "runs", 0) < 2 or first_round >= streams.rounds():
            continue  # not run again in a later round: maybe another layer's shape
        changed = [
            {axis for axis, (a, b) in enumerate(zip(first, now)) if a != b}
            for first, now in zip(seen, shapes)
        ]
        count = sum(len(axes) for axes in changed)
        if count == 0:
            continue
        rank = (count, _pattern(changed) not in used)
        if best is None or rank < best[0]:
            best = (rank, changed)
    if best is None:
        return None
    changed = best[1]
    if any(shapes[i][axis] < 2 for i, axes in enumerate(changed) for axis in axes):
        return None  # sizes 0 and 1 are never symbolic
    if _pattern(changed) in known.refused:
        return None
    return changed


def _compile(plan, tensors, scalar_dtypes, changed, traced_fn, chosen, fresh_count) -> Any:
    from torchneuron.compiler import eager
    from torchneuron.compiler.eager_padded import PaddingRefused, compile_padded

    specs = [eager.TensorSpec(tuple(t.shape), tuple(t.stride()), t.dtype) for t in tensors]
    specs += [eager.TensorSpec((), (), arrays.torch_dtype(d)) for d in scalar_dtypes]
    dynamic = [*changed, *(set() for _ in scalar_dtypes)]
    try:
        return compile_padded(plan.name, specs, dynamic, traced_fn, chosen, fresh_count)
    except PaddingRefused:
        return None


class PaddedRunner:
    """Runs a padded program on one call signature's host arrays: pads, runs, slices back.

    A signature's shapes are fixed, so ``prepare`` works out once what every call
    needs (the symbols' true sizes, the padding, the masks, the loaded program).
    """

    __slots__ = ("device", "grown", "loaded", "masks", "padded", "pending", "slices", "widths")

    def __init__(self, padded: Any):
        self.padded = padded
        self.pending = None  # specialize_later.Pending while the interpreter runs the calls

    @property
    def key(self) -> str:
        return f"padded:{self.padded.program.name}"

    def prepare(self, shapes: tuple, device: int) -> None:
        """Specialize and load the program for the bucket of ``shapes`` now, on the
        caller's thread (a queued call then only runs it)."""
        from torchneuron.compiler.buckets import BucketedFunction

        padded = self.padded
        bucket_plan = padded.plan
        true = _bind(padded, shapes)
        if true is None or not padded.admits(true):  # entry_for checked it: never here
            raise RuntimeError("torchneuron: a padded program was given sizes it does not take")
        sizes = BucketedFunction(None, bucket_plan, padded.admits, padded.chosen).choose(true)
        self.widths = {}
        grown = [list(shape) for shape in shapes]
        for position, dims in bucket_plan.tensor_inputs.items():
            widths = [(0, 0)] * len(shapes[position])
            for axis, symbol in dims:
                widths[axis] = (0, sizes[symbol] - true[symbol])
                grown[position][axis] = sizes[symbol]
            if any(w for _, w in widths):
                self.widths[position] = widths
        self.masks = [np.arange(sizes[s]) < true[s] for s in bucket_plan.mask_symbols]
        grown += [list(mask.shape) for mask in self.masks]
        self.slices = {
            position: {axis: true[symbol] for axis, symbol in dims}
            for position, dims in bucket_plan.outputs.items()
        }
        self.grown, self.device = grown, device
        # in memory only: a specialization on disk loads on the background thread
        if _interpret(padded) and padded.program.stored(grown, disk=False) is None:
            from torchneuron.compiler import specialize_later
            from torchneuron.runtime import get_core
            from torchneuron.runtime.interpreter import Interpreted

            # a bucket nothing specialized: its calls run interpreted until the
            # background thread has compiled it
            key = (id(padded.program), tuple(map(tuple, grown)), device)
            pending = specialize_later.submit(key, lambda: padded.program.loaded(grown, device))
            if not (pending.done and pending.error is not None):
                self.loaded = Interpreted(padded.interpreted, get_core(device))
                self.pending = pending
                STATS["interpreted_entries"] += 1
                return
            # its build failed before (or the process is exiting): compile here, where
            # a failure refuses the padded route as it always did
        self.loaded = padded.program.loaded(grown, device)

    def execute(self, device: int, inputs: list) -> list[np.ndarray]:
        """The outputs for ``inputs`` (the call's tensors, then its lifted scalars)."""
        from torchneuron.runtime.interpreter import Uninterpretable

        STATS["padded_calls" if self.widths else "exact_calls"] += 1
        pending = self.pending  # once: another device's thread may run this runner too
        if pending is not None and pending.done:
            self._take_compiled(pending)
        call = [
            np.pad(array, self.widths[i]) if i in self.widths else np.asarray(array)
            for i, array in enumerate(inputs)
        ]
        try:
            outputs = self.loaded.execute(call + self.masks)
        except Uninterpretable:  # this call's values need the compiled program
            STATS["interpreter_refusals"] += 1
            self._compile_now()
            outputs = self.loaded.execute(call + self.masks)
        if self.loaded.interpreted:
            STATS["interpreted_calls"] += 1
        for position, sizes in self.slices.items():
            index = tuple(
                slice(0, sizes[a]) if a in sizes else slice(None)
                for a in range(outputs[position].ndim)
            )
            outputs[position] = np.ascontiguousarray(outputs[position][index])
        return outputs

    def _take_compiled(self, pending: Any) -> None:
        """Run the finished specialization from now on. A dropped build (a fork, a
        cancel) compiles here; a failed one leaves the calls interpreted, with a warning
        (their results are right; the next signature of the bucket compiles on its own
        thread and meets the error there)."""
        from torchneuron.compiler.specialize_later import Abandoned

        self.pending = None
        error = pending.error
        if error is None:
            self.loaded = pending.value
        elif isinstance(error, Abandoned):
            self._compile_now()
        else:
            warnings.warn(
                f"torchneuron: {self.padded.program.name} for sizes {self.grown} did not "
                f"compile ({type(error).__name__}: {' '.join(str(error).split())[:300]}); "
                "its calls go on in the interpreter",
                stacklevel=2,
            )

    def _compile_now(self) -> None:
        """Wait for the background build of this bucket, or compile it on this thread."""
        pending = self.pending
        if pending is not None:
            pending.wait()
            self.pending = None
            if pending.error is None:
                self.loaded = pending.value
                return
        self.loaded = self.padded.program.loaded(self.grown, self.device)


def _interpret(padded: Any) -> bool:
    """Whether a new bucket of ``padded`` runs interpreted while it compiles."""
    from torchneuron.compiler.specialize_later import interpreting

    return padded.interpreted is not None and interpreting()
