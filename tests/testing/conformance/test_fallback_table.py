"""The README's table of ops that run on the CPU is the one the expectations file gives."""

from __future__ import annotations

from pathlib import Path

from torchneuron.testing.conformance.fallbacks import FallbackRow, fallback_rows, markdown_table

README = Path(__file__).resolve().parents[3] / "README.md"
START, END = "<!-- fallback-table:start -->\n", "<!-- fallback-table:end -->"


def test_readme_fallback_table_matches_the_expectations_file():
    text = README.read_text()
    shown = text[text.index(START) + len(START) : text.index(END)]
    expected = markdown_table(fallback_rows())
    assert shown == expected, (
        "README's fallback table is out of date: replace it with the output of "
        "`python -m torchneuron.conformance --fallback-table`"
    )


def test_fallback_rows_name_the_op_and_merge_the_modes(tmp_path):
    path = tmp_path / "expectations.txt"
    path.write_text(
        "eager float32 fft.fft xfail fallback: aten::_fft_r2c ran on the CPU: no lowering to "
        "StableHLO for aten._fft_r2c.default with inputs (f32[5])\n"
        "compile float32 fft.fft xfail fallback: no lowering to StableHLO for "
        "aten._fft_r2c.default with inputs (f32[5])\n"
        "compile float32 nonzero xfail fallback: output 0 has symbolic shape (u3, 0)\n"
        "eager float32 add pass\n"
    )
    rows = fallback_rows(path)
    assert [row.op for row in rows] == ["(a whole graph)", "aten::_fft_r2c"]
    fft = rows[1]
    assert fft.entries == ["fft.fft (eager)", "fft.fft (compile)"]
    assert fft.reason == "no lowering to StableHLO for aten._fft_r2c.default"
    assert "| `aten::_fft_r2c` |" in markdown_table([fft])
    assert isinstance(rows[0], FallbackRow) and "symbolic shape" in rows[0].reason
