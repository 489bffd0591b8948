"""docs/support.md is what ``torchneuron.testing.support_table`` makes from the expectations."""

from pathlib import Path

from torchneuron.testing import support_table

DOC = Path(__file__).resolve().parents[3] / "docs" / "support.md"


def test_the_support_table_is_in_sync_with_the_expectations():
    assert DOC.read_text() == support_table.render(), (
        "docs/support.md is stale: python -m torchneuron.testing.support_table "
        "--write docs/support.md"
    )


def test_the_support_table_counts_what_the_expectations_say():
    text = support_table.render()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    compile_native = sum(1 for row in rows if row.split(" | ")[1] == "native")
    assert f"compile mode, float32: {compile_native} native" in text
    linalg_eig = next(row for row in rows if row.startswith("| `linalg.eig` |"))
    assert "CPU fallback" in linalg_eig  # the expectations list it as a fallback
