"""Golden-IR checks: run a pipeline over each case of a .mlir file and FileCheck the output.

A golden file holds its inputs and CHECK lines together::

    // RUN: fold-constants
    // CHECK-LABEL: func.func @main
    // CHECK: stablehlo.constant dense<2.000000e+00>
    func.func @main() -> tensor<f32> { ... }
    // -----
    (next case)

The ``// RUN:`` line names the pipeline (a torchneuron pass pipeline string;
``$DEFAULT_PIPELINE`` and ``$NEFF_PIPELINE`` stand for the named pipelines).
Cases separated by ``// -----`` are parsed and run independently; their
outputs, joined by ``// -----``, are matched against the whole file by the
``filecheck`` package's FileCheck clone. The CHECK lines are written by hand:
there is nothing to regenerate.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from torchneuron.passes import (
    DEFAULT_PIPELINE,
    NEFF_PIPELINE,
    PassContext,
    PassManager,
    parse_module,
)

GOLDEN_DIR = Path(__file__).parent / "golden"
_RUN_LINE = re.compile(r"^// RUN: (.+)$", re.MULTILINE)
_SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)


def filecheck_executable() -> str:
    """The ``filecheck`` console script installed next to this interpreter."""
    return str(Path(sys.executable).parent / "filecheck")


def run_golden(path: Path) -> str:
    """Run ``path``'s pipeline over its cases; return the joined output IR."""
    text = path.read_text()
    run_lines = _RUN_LINE.findall(text)
    if len(run_lines) != 1:
        raise ValueError(
            f"{path}: expected exactly one '// RUN: <pipeline>' line, found {len(run_lines)}"
        )
    pipeline = run_lines[0].strip()
    pipeline = pipeline.replace("$DEFAULT_PIPELINE", DEFAULT_PIPELINE).replace(
        "$NEFF_PIPELINE", NEFF_PIPELINE
    )
    outputs = []
    for case in _SPLIT.split(text):
        module = parse_module(case)
        PassManager.from_pipeline(pipeline).run(module, PassContext())
        outputs.append(str(module))
    return "\n// -----\n".join(outputs)


def check_golden(path: Path) -> None:
    """Assert that FileCheck accepts the pipeline's output for ``path``."""
    output = run_golden(path)
    completed = subprocess.run(
        [filecheck_executable(), str(path)],
        input=output,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, (
        f"FileCheck failed for {path.name}:\n{completed.stdout}{completed.stderr}\n--- output ---\n{output}"
    )
