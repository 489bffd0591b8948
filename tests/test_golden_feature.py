"""The golden-IR feature: normalization, check/update from Python and ``neuronc golden``."""

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import torch

from torchneuron import golden


class TinyNet(torch.nn.Module):
    def __init__(self, activation=torch.relu):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)
        self.activation = activation

    def forward(self, x):
        return self.activation(self.linear(x))


def tiny(activation=torch.relu, seed=0):
    torch.manual_seed(seed)
    return TinyNet(activation).eval(), (torch.randn(2, 4),)


def test_normalize_fx_drops_source_comments_and_paths():
    text = (
        "class GraphModule(torch.nn.Module):\n"
        '    def forward(self, x: "f32[2]"):\n'
        "        # File: /home/someone/project/model.py:12 in forward, code: return x.relu()\n"
        '        relu: "f32[2]" = torch.ops.aten.relu.default(x);  x = None   \n'
        "\n\n"
        "        # No stacktrace found for following nodes\n"
        "        return (relu,)\n"
    )
    normalized = golden.normalize_fx(text)
    assert "/home/someone" not in normalized and "#" not in normalized
    assert "torch.ops.aten.relu.default(x);  x = None\n" in normalized
    assert "\n\n\n" not in normalized


def test_normalize_mlir_drops_locations_and_reduces_blobs_to_a_digest():
    text = (
        '#loc1 = loc("/tmp/abc/model.py":3:4)\n'
        "module {\n"
        '  %0 = stablehlo.add %a, %b : tensor<2xf32> loc("/tmp/abc/model.py":7:1)\n'
        "}\n"
        "{-#\n  dialect_resources: {\n    builtin: {\n"
        '      torch_tensor_2_torch.float32: "0x040000000000803F00000040"\n'
        "    }\n  }\n#-}\n"
    )
    normalized = golden.normalize_mlir(text)
    assert "loc" not in normalized and "/tmp/abc" not in normalized
    assert "%0 = stablehlo.add %a, %b : tensor<2xf32>\n" in normalized
    assert '"<12 bytes, sha256 ' in normalized and "0x0400" not in normalized


def test_update_then_check_matches_and_a_model_change_shows_as_a_diff(tmp_path):
    model, inputs = tiny()
    created = golden.update(model, tmp_path, inputs)
    assert created.written and set(created.diffs) == set(golden.STAGE_FILES.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(golden.STAGE_FILES.values())
    assert golden.check(model, tmp_path, inputs).ok

    changed, inputs = tiny(activation=torch.tanh)
    result = golden.check(changed, tmp_path, inputs)
    assert not result.ok
    assert {"fx.txt", "torch.mlir", "stablehlo.mlir", "optimized.mlir"} <= set(result.diffs)
    assert "neff.json" not in result.diffs  # same signature and weights
    diff = result.diffs["fx.txt"]
    assert diff.startswith("--- golden/fx.txt\n+++ current/fx.txt\n")
    removed = [line for line in diff.splitlines() if line.startswith("-")]
    added = [line for line in diff.splitlines() if line.startswith("+")]
    # relu is written out as a select (it keeps -0.0 and NaN), tanh stays itself
    assert any("aten.where" in line for line in removed)
    assert any("aten.tanh" in line for line in added)
    assert "optimized.mlir" in result.report() and "neuronc golden update" in result.report()

    refreshed = golden.update(changed, tmp_path, inputs)
    assert refreshed.written and "aten.tanh" in refreshed.diffs["fx.txt"]
    assert golden.check(changed, tmp_path, inputs).ok
    assert not golden.update(changed, tmp_path, inputs).written


def test_weight_values_matter_only_with_weight_digests(tmp_path):
    model, inputs = tiny(seed=0)
    retrained, _ = tiny(seed=1)
    golden.update(model, tmp_path, inputs, weight_digests=True)
    assert golden.check(retrained, tmp_path, inputs, weight_digests=False).diffs.keys() == {
        "neff.json"
    }  # only the digests, absent now, differ
    result = golden.check(retrained, tmp_path, inputs, weight_digests=True)
    assert set(result.diffs) == {"neff.json"} and "sha256" in result.diffs["neff.json"]
    assert golden.check(model, tmp_path, inputs, weight_digests=True).ok


def test_check_without_goldens_is_a_clear_error(tmp_path):
    model, inputs = tiny()
    with pytest.raises(golden.GoldenError, match="no goldens in .*neuronc golden update"):
        golden.check(model, tmp_path / "missing", inputs)
    with pytest.raises(golden.GoldenError, match="needs example_inputs"):
        golden.update(model, tmp_path, None)
    with pytest.raises(golden.GoldenError, match="expected an ExportedProgram"):
        golden.update(42, tmp_path)


def test_assert_golden_raises_with_the_diff_and_refreshes_only_on_request(tmp_path, monkeypatch):
    model, inputs = tiny()
    monkeypatch.delenv(golden.UPDATE_ENV_VAR, raising=False)
    golden.update(model, tmp_path, inputs)
    golden.assert_golden(model, tmp_path, inputs)

    changed, _ = tiny(activation=torch.sigmoid)
    with pytest.raises(AssertionError) as failure:
        golden.assert_golden(changed, tmp_path, inputs)
    assert isinstance(failure.value, golden.GoldenMismatch)
    assert "+++ current/optimized.mlir" in str(failure.value)
    assert "logistic" in str(failure.value) or "sigmoid" in str(failure.value)
    assert golden.check(model, tmp_path, inputs).ok  # a failing check writes nothing

    monkeypatch.setenv(golden.UPDATE_ENV_VAR, "1")
    with pytest.warns(golden.GoldenUpdated, match="aten.sigmoid"):
        golden.assert_golden(changed, tmp_path, inputs)
    monkeypatch.delenv(golden.UPDATE_ENV_VAR)
    golden.assert_golden(changed, tmp_path, inputs)


def _neuronc() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "neuronc"
    found = str(script) if script.exists() else shutil.which("neuronc")
    assert found, "the neuronc console script is not installed"
    return [found]


def neuronc(*args, cwd):
    return subprocess.run(
        _neuronc() + [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
        env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )


def test_cli_update_and_check(tmp_path, capsys):
    from torchneuron.cli import main

    model, inputs = tiny()
    program = tmp_path / "tiny.pt2"
    torch.export.save(torch.export.export(model, inputs), str(program))
    changed, _ = tiny(activation=torch.tanh)
    changed_program = tmp_path / "changed.pt2"
    torch.export.save(torch.export.export(changed, inputs), str(changed_program))
    goldens = tmp_path / "goldens" / "tiny"

    assert main(["golden", "check", str(program), "--dir", str(goldens)]) == 2
    assert "no goldens in" in capsys.readouterr().err

    assert main(["golden", "update", str(program), "--dir", str(goldens)]) == 0
    assert "+++ current/optimized.mlir" in capsys.readouterr().out  # update shows what it wrote
    assert len(list(goldens.iterdir())) == len(golden.STAGE_FILES)

    assert (
        main(["golden", "check", str(changed_program), "--dir", str(goldens), "--name", "tiny"])
        == 1
    )
    shown = capsys.readouterr().out
    assert "--- golden/optimized.mlir" in shown and "tanh" in shown

    assert main(["golden", "update", str(program), "--dir", str(goldens)]) == 0
    assert "unchanged" in capsys.readouterr().out

    # The console script, in another process and working directory: identical files.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    same = neuronc("golden", "check", program, "--dir", goldens, cwd=elsewhere)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "match" in same.stdout
