"""Golden-IR checks of the model zoo: CI fails when a change alters what runs on the chip.

Each zoo model (inference mode) is exported, compiled, and every stage's
normalized IR is compared with the files under ``tests/golden/zoo/<model>/``.
When a change is intended, refresh them explicitly and review the diff:

    TORCHNEURON_UPDATE_GOLDENS=1 pytest tests/golden -q
"""

from pathlib import Path

import pytest

from torchneuron import golden
from torchneuron.zoo import ZOO

GOLDEN_ROOT = Path(__file__).parent / "zoo"


@pytest.mark.parametrize("model_name", sorted(ZOO))
def test_zoo_model_matches_its_goldens(model_name):
    entry = ZOO[model_name]
    model = entry.build().eval()
    result = golden.assert_golden(
        model, GOLDEN_ROOT / model_name, entry.example_inputs(), name=model_name
    )
    assert result.ok or result.written


def test_every_zoo_model_has_goldens_and_no_stale_folders():
    folders = {p.name for p in GOLDEN_ROOT.iterdir() if p.is_dir()}
    assert folders == set(ZOO), (
        f"golden folders {sorted(folders)} do not match the zoo {sorted(ZOO)}; "
        "add goldens for new models (TORCHNEURON_UPDATE_GOLDENS=1) and delete removed ones"
    )
    for name in folders:
        assert sorted(p.name for p in (GOLDEN_ROOT / name).iterdir()) == sorted(
            golden.STAGE_FILES.values()
        )
