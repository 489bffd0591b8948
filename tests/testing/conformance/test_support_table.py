"""docs/support.md is what ``torchneuron.testing.support_table`` makes, and its statuses
come from the tables the code decides by."""

import functools
import re
from pathlib import Path

from torchneuron.testing import op_support, support_table
from torchneuron.testing.conformance.expectations import parse
from torchneuron.testing.op_support import Traces

DOC = Path(__file__).resolve().parents[3] / "docs" / "support.md"


@functools.lru_cache(maxsize=1)
def _rendered() -> str:
    return support_table.render()  # traces every OpInfo entry: 15 to 30 seconds


def test_the_support_table_is_in_sync_with_the_code_and_the_expectations():
    assert DOC.read_text() == _rendered(), f"docs/support.md is stale: {support_table.COMMAND}"


def test_the_summary_counts_the_rows_of_both_tables():
    text = _rendered()
    ops, entries = text.split("## Every OpInfo entry")
    entry_rows = [line.split(" | ") for line in entries.splitlines() if line.startswith("| `")]
    compile_native = sum(1 for row in entry_rows if row[1] == "native")
    assert f"OpInfo entries, compile mode, float32: {compile_native} native" in text
    linalg_eig = next(row for row in entry_rows if row[0] == "| `linalg.eig`")
    assert "CPU fallback" in linalg_eig  # the expectations list it as a fallback

    # every overload is counted once: its own row, or the last column of its functional op's
    counts = {mode: {} for mode in op_support.MODES}
    for line in ops.splitlines():
        if not line.startswith("| `aten::"):
            continue
        cells = line.split(" | ")
        weight = 1 + len(re.findall(r"`[^`]+`", cells[-1]))
        for mode, cell in zip(op_support.MODES, cells[1:3]):
            word = cell.split(" (")[0]
            counts[mode][word] = counts[mode].get(word, 0) + weight
    total = sum(counts["eager"].values())
    assert f"included): {total}\n" in text
    assert total == len(op_support.aten_ops())
    for mode, found in counts.items():
        listed = ", ".join(f"{found[word]} {word}" for word in op_support.WORDS if word in found)
        assert f"- {mode} mode: {listed}\n" in text


# -- the statuses, from the real tables, on made-up conformance results ------------------


def _support(names, lines="", eager=None, compiled=None, calls=None, finished=()):
    ops = op_support.aten_ops()
    traces = Traces(
        compile=compiled or {},
        eager=eager or {},
        kernel_calls={name: frozenset(sent) for name, sent in (calls or {}).items()},
        finished=frozenset(finished),
    )
    rows = op_support.op_support(parse(lines), traces, {"fuzzed"}, ops)
    return {row.name: row for row in rows if row.name in names}


def test_the_dispatcher_and_the_eager_routes_decide_what_needs_no_sample():
    rows = _support(["aten::view", "aten::bernoulli.p", "aten::nonzero", "aten::cudnn_convolution"])
    assert str(rows["aten::view"].eager) == "native (device kernel)"
    assert str(rows["aten::bernoulli.p"].eager) == "host (random route)"
    assert str(rows["aten::nonzero"].eager) == "host (host route)"
    # CUDA only: nothing lowers it and the CPU cannot run it
    assert str(rows["aten::cudnn_convolution"].compile) == "refused (no CPU kernel)"
    assert not rows["aten::view"].callers and not rows["aten::view"].verified


def test_the_lowering_tables_decide_an_op_no_sample_calls():
    from torchneuron.lowering.rules import lowering_rules

    ruled = next(
        op_support.op_name(op)
        for op in lowering_rules()
        if not op._schema.is_mutable and op_support.op_name(op) in op_support.aten_ops()
    )
    rows = _support([ruled, "aten::_add_relu.Tensor", "aten::_add_relu_.Tensor"])
    assert str(rows[ruled].compile) == "native (lowering rule)"
    # torch-mlir's importer has no op for it: opaque, so the graph falls back
    assert str(rows["aten::_add_relu.Tensor"].compile) == "CPU fallback (not a torch-mlir op)"
    # its in-place form is functionalized into it
    in_place = rows["aten::_add_relu_.Tensor"].compile
    assert (in_place.word, in_place.form_of) == ("CPU fallback", "aten::_add_relu.Tensor")


def test_conformance_lines_decide_what_the_samples_called():
    lines = (
        "eager float32 tanh pass\n"
        "compile float32 tanh pass\n"
        "eager float32 ugly xfail fallback: aten::tanh ran on the CPU: no lowering\n"
        "eager float32 gone xfail fallback: aten::erf ran on the CPU: no lowering\n"
    )
    called = {"tanh": {"aten::tanh": 0}, "ugly": {"aten::tanh": 0}, "gone": {"aten::erf": 0}}
    rows = _support(["aten::tanh", "aten::erf"], lines, eager=called, compiled=called)
    tanh, erf = rows["aten::tanh"], rows["aten::erf"]
    assert str(tanh.eager) == "depends (conformance)"  # native in one entry, fell back in one
    assert str(tanh.compile) == "native (conformance)"
    assert tanh.verified == ("eager", "compile")
    assert tanh.callers == ("tanh", "ugly")
    assert str(erf.eager) == "CPU fallback (conformance)"
    assert erf.verified == ()


def test_a_composite_kernel_has_the_worst_status_of_the_ops_it_sent_to_the_device():
    calls = {
        "aten::rand": {"aten::empty.memory_format", "aten::uniform_"},
        "aten::randn": {"aten::empty.memory_format"},
    }
    rows = _support(["aten::rand", "aten::randn"], calls=calls, finished={"aten::rand"})
    assert str(rows["aten::rand"].eager) == "host (via `aten::uniform_`)"
    # its kernel stopped before the end: what it did not reach is not known
    assert str(rows["aten::randn"].eager) == "decomposed (PyTorch kernel)"


def test_tracing_an_entry_follows_each_modes_path():
    from torchneuron.lowering import decomposition_table
    from torchneuron.testing.conformance.opinfo import find_entry

    lowering = op_support._LoweringPath(decomposition_table())
    device = op_support._EagerPath(op_support.EagerKernels())
    op_support._trace_entry(find_entry("nn.functional.conv2d"), [lowering, device])
    # on the device, PyTorch's _convolution picks the overridable convolution
    assert "aten::convolution_overrideable" in device.ops
    assert "aten::_slow_conv2d_forward" not in device.ops
    assert "aten::convolution_overrideable" in device.calls["aten::_convolution"]
    assert lowering.ops["aten::conv2d"] == 0 and lowering.ops["aten::convolution"] > 0
