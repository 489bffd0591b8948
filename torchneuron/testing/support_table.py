"""docs/support.md: what runs natively, per ATen op and per OpInfo entry, and what verified it.

    python -m torchneuron.testing.support_table --write docs/support.md

The file is generated, not written by hand, in two tables:

- one row per ATen op overload of the installed torch: its status in eager and in
  compile mode, read from the code's own tables and the conformance results
  (``op_support``), whether an OpInfo entry that calls it passes, and whether the
  differential fuzzer covers such an entry. Which ops an entry calls is traced at
  generation from the float32 samples conformance runs, along each mode's path
  (``op_support.entry_traces``: 15 to 30 seconds on two busy cores);
- one row per entry of PyTorch's OpInfo database, with the status of each gated
  conformance line (tests/testing/conformance/expectations.txt: float32 in both modes,
  complex64 and the sparse layouts where gated) and whether the fuzzer covers it.

``tests/testing/conformance/test_support_table.py`` fails when the file differs from
what this module makes, and prints the command above.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchneuron.testing import op_support
from torchneuron.testing.conformance import expectations
from torchneuron.testing.conformance.expectations import DEFAULT_PATH
from torchneuron.testing.op_support import MODES, WORDS, OpSupport

COMMAND = "python -m torchneuron.testing.support_table --write docs/support.md"
STATUS_WORDS = {
    ("pass", "pass"): "native",
    ("xfail", "fallback"): "CPU fallback",
    ("xfail", "error"): "refused",
    ("xfail", "fail"): "wrong (known)",
    ("xfail", "crash"): "crash (known)",
    ("xfail", "timeout"): "timeout (known)",
}
COLUMNS = (
    ("compile", "float32"),
    ("eager", "float32"),
    ("compile", "complex64"),
    ("eager", "complex64"),
    ("compile", "sparse_coo.float32"),
    ("eager", "sparse_coo.float32"),
)
# OpInfo entries named in an ATen op's row before the rest are counted
SHOWN_CALLERS = 3


def _word(line) -> str:
    if line is None:
        return ""
    if line.kind == "skip":
        return "n/a"  # no sample the CPU runs in that dtype, or a random op
    return STATUS_WORDS.get((line.kind, line.status), line.status)


def fuzzed_entries() -> set[str]:
    """OpInfo entries the differential fuzzer draws inputs for (by name)."""
    from torchneuron.testing.fuzz.cases import REGISTRY
    from torchneuron.testing.fuzz.ops import select
    from torchneuron.testing.fuzz.ops.opinfo import PREFIX

    select(["opinfo.*"])  # registers the OpInfo-derived ops
    names = set()
    for name in REGISTRY:
        names.add(name[len(PREFIX) :] if name.startswith(PREFIX) else name)
    return names


# -- the ATen op table ------------------------------------------------------------------


def _counts(found: dict[str, int]) -> str:
    return ", ".join(f"{count} {word}" for word, count in found.items())


def _verified(row: OpSupport) -> str:
    if row.verified:
        return ", ".join(row.verified)
    return "no" if row.callers else ""


def _callers(row: OpSupport) -> str:
    shown = ", ".join(f"`{entry}`" for entry in row.callers[:SHOWN_CALLERS])
    more = len(row.callers) - SHOWN_CALLERS
    return f"{shown} +{more}" if more > 0 else shown


def _op_summary(rows: list[OpSupport]) -> list[str]:
    verified = {modes: 0 for modes in (MODES, *((mode,) for mode in MODES))}
    for row in rows:
        if row.verified:
            verified[row.verified] += 1
    called = sum(1 for row in rows if row.callers)
    return [
        f"- ATen ops (overloads, those listed in their functional op's row included): {len(rows)}",
        *(
            f"- {mode} mode: "
            + _counts(op_support.count_words(rows, lambda row, m=mode: getattr(row, m)))
            for mode in MODES
        ),
        f"- called by an OpInfo entry: {called}; verified (an entry that calls the op "
        f"passes in float32): {verified[MODES]} in both modes, "
        + ", ".join(f"{verified[(mode,)]} in {mode} mode only" for mode in MODES)
        + f"; fuzzed: {sum(1 for row in rows if row.fuzzed)}",
    ]


def _folded(rows: list[OpSupport]) -> tuple[list[OpSupport], dict[str, list[str]]]:
    """The rows to show, and for a functional op the in-place and out= forms shown in its
    row: those no entry calls whose statuses in both modes are its own, through it."""
    by_name = {row.name: row for row in rows}
    shown, forms = [], {}
    for row in rows:
        into = by_name.get(row.eager.form_of) if row.eager.form_of == row.compile.form_of else None
        if (
            into is not None
            and not row.callers
            and (row.eager.word, row.compile.word) == (into.eager.word, into.compile.word)
        ):
            forms.setdefault(into.name, []).append(row.name)
        else:
            shown.append(row)
    return shown, forms


def _op_table(rows: list[OpSupport]) -> list[str]:
    legend = [f"- **{word}**: {meaning}." for word, meaning in WORDS.items()]
    shown, forms = _folded(rows)
    table = [
        "| ATen op | eager | compile | verified | OpInfo entries that call it | fuzzed | "
        "its in-place and out= forms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in shown:
        also = ", ".join(f"`{name.removeprefix('aten::')}`" for name in forms.get(row.name, ()))
        table.append(
            f"| `{row.name}` | {row.eager} | {row.compile} | {_verified(row)} | "
            f"{_callers(row)} | {'yes' if row.fuzzed else ''} | {also} |"
        )
    return [
        "## Every ATen op",
        "",
        "One row per overload the dispatcher holds a schema for (`aten::add.Tensor`; the "
        "default overload has no suffix: `aten::abs`): every op of the `aten` namespace "
        "but TorchScript's scalar built-ins (`aten::acos.Scalar`, `aten::log.float`), "
        "implementations without a schema that never take a tensor. An in-place or out= "
        "form that no OpInfo entry calls, and whose statuses are its functional op's "
        "through it, is listed in that op's row (last column) rather than in a row of its "
        "own. The statuses are for dense tensors of a real dtype: a word, and in brackets "
        "what decided it, in the order the code decides:",
        "",
        "- *device kernel*: a kernel the device registers itself (the native layer's "
        "allocation, copies and views; `device/sparse.py`'s dense-to-sparse conversions);",
        "- *PyTorch kernel* (eager): PyTorch's composite kernel, which the dispatcher "
        "prefers to the device's fallback; its status is the worst of those of the ops it "
        "sent to the device in the conformance samples (*via `aten::x`*: the op that "
        "decided it), or **decomposed** where no sample called it. In compile mode: the "
        "CompositeImplicitAutograd decomposition tracing applies;",
        "- *random route*, *host route* (eager): the route the op's schema gives "
        "(`device/plan.py`);",
        "- *conformance*: a float32 line of an OpInfo entry that calls the op on that "
        "mode's path: it passed (native), or fell back naming the op (CPU fallback);",
        "- *as `aten::x`*: an in-place or out= form, with its functional form's status: "
        "functionalization writes it so before lowering (in eager mode too, where such a "
        "form runs PyTorch's composite kernel that no sample called, that kernel computes "
        "the op and writes the result);",
        "- *lowering rule*: one of ours (`lowering/rules/`; a rule may hand calls it does "
        "not cover to the decomposition beneath); *decomposition table*: "
        "`lowering/decompositions.py`;",
        "- *not a torch-mlir op*: torch-mlir's importer emits it as an opaque "
        "`torch.operator`, which no conversion lowers; *no CPU kernel*: nor has PyTorch a "
        "CPU kernel for it (its kernels are for other devices); *torch-mlir*: left to "
        "torch-mlir's conversion.",
        "",
        "The words:",
        "",
        *legend,
        "",
        "Every op may still refuse single calls that PyTorch's CPU kernel refuses "
        "(`lowering/refusals.py`). Complex values take the complex route (real pairs) "
        "in both modes: the second table's complex64 columns say how that goes"
        + _complex_refusals()
        + ". *Verified*: the modes in which an OpInfo entry that calls the op passes in "
        "float32; *no*: entries call it but none passes (random ops are not compared). "
        "What an entry calls is traced at generation from the first float32 samples "
        "conformance runs: on torch.compile's path on CPU tensors, through the "
        "decomposition table to any depth; on eager's path on fake tensors of the neuron "
        "device, into every composite kernel and no further than the ops the device runs "
        "(an op whose result depends on values ends a sample there). The entries that "
        "call the op directly are named first. *Fuzzed*: the fuzzer draws inputs for one "
        "of those entries (`python -m torchneuron.fuzz`); its hand-written cases that are "
        "no OpInfo entry are not traced.",
        "",
        *table,
    ]


def _complex_refusals() -> str:
    from torchneuron.lowering.complex_graph import _WRONG_UNDER_AOT_AUTOGRAD

    names = ", ".join(f"`aten::{name}`" for name in _WRONG_UNDER_AOT_AUTOGRAD)
    return f"; torch.compile refuses {names} on complex values (AOTAutograd gets it wrong)"


# -- the OpInfo entry table ------------------------------------------------------------


def _entry_rows(lines: dict, fuzzed: set[str]) -> tuple[list[str], list[str]]:
    entries = sorted({key[2] for key in lines})
    counts = {column: {} for column in COLUMNS[:2]}
    rows = []
    for entry in entries:
        cells = []
        for mode, dtype in COLUMNS:
            word = _word(lines.get((mode, dtype, entry)))
            if (mode, dtype) in counts and word:
                counts[(mode, dtype)][word] = counts[(mode, dtype)].get(word, 0) + 1
            cells.append(word)
        rows.append(
            f"| `{entry}` | " + " | ".join(cells) + f" | {'yes' if entry in fuzzed else ''} |"
        )
    summary = []
    for (mode, dtype), found in counts.items():
        total = sum(v for k, v in found.items() if k != "n/a")
        parts = ", ".join(f"{v} {k}" for k, v in sorted(found.items(), key=lambda kv: -kv[1]))
        summary.append(
            f"- OpInfo entries, {mode} mode, {dtype}: {parts} "
            f"({found.get('native', 0)}/{total} native)"
        )
    return summary, rows


def _entry_table(rows: list[str]) -> list[str]:
    return [
        "## Every OpInfo entry",
        "",
        "One row per entry of PyTorch's OpInfo database (the ops PyTorch's own device "
        "tests run). Each cell is the gated conformance result of that entry on the "
        "`neuron` device against the CPU, in that mode and dtype: **native** (runs on the "
        "device and matches), **CPU fallback** (runs on the CPU, warned and counted; an "
        "error with `TORCHNEURON_NO_FALLBACK=1`), **refused** (a clear error), **wrong "
        "(known)** (a known wrong value, listed until fixed), **n/a** (no sample the CPU "
        "runs in that dtype, or a random op compared by statistics elsewhere); empty: not "
        "gated. *Fuzzed*: the differential fuzzer draws inputs for the op.",
        "",
        "| op (OpInfo entry) | compile f32 | eager f32 | compile c64 | eager c64 | "
        "compile COO | eager COO | fuzzed |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ]


# -- the document ------------------------------------------------------------------------


def render(path: Path = DEFAULT_PATH) -> str:
    lines = expectations.load(path)
    fuzzed = fuzzed_entries()
    ops = op_support.op_support(lines, op_support.entry_traces(), fuzzed)
    entry_summary, entry_rows = _entry_rows(lines, fuzzed)
    header = [
        "# Operator support",
        "",
        f"Generated by `{COMMAND}` from the code's",
        "dispatch and lowering tables, the conformance expectations",
        "(`tests/testing/conformance/expectations.txt`) and the ops each OpInfo entry calls;",
        "a test keeps it in sync. Two tables: every ATen op of the installed torch, with how",
        "eager mode and torch.compile run it and whether conformance verified its numerics;",
        "then every OpInfo entry with its conformance results. Numerics are verified by",
        "PyTorch's OpInfo entries (run by `python -m torchneuron.conformance`) and by the",
        "differential fuzzer; PyTorch's own device test suites are not vendored yet (that",
        "waits on a decision), so no column reports them.",
        "",
        "## Summary",
        "",
        *_op_summary(ops),
        *entry_summary,
        "",
    ]
    return "\n".join(header + _op_table(ops) + [""] + _entry_table(entry_rows)) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the table here (default: print it)")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        args.write.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
