"""benchmarks/suite_cpu.py: each test's CPU, its own and its child processes', by file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BURN = """
import subprocess, sys, time

SPIN = "import time\\nend = time.process_time() + 0.4\\nwhile time.process_time() < end: pass"

def test_own():
    end = time.process_time() + 0.4
    while time.process_time() < end:
        pass

def test_child():
    subprocess.run([sys.executable, "-c", SPIN], check=True)
"""


def test_a_tests_own_cpu_and_its_childrens_are_recorded_and_summed_by_file(tmp_path):
    (tmp_path / "test_burn.py").write_text(BURN)
    out = tmp_path / "cpu"

    def run():
        # (the rootdir named: pytest would take the common folder of this checkout and the
        # test file, which names the tests by a longer path when the checkout is under /tmp)
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
             "-p", "benchmarks.suite_cpu", "--suite-cpu", str(out), str(tmp_path / "test_burn.py")],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    # without a configuration file the run is not the project's (its -m 'not slow' lost)
    refused = run()
    assert refused.returncode != 0 and "found no configuration file" in refused.stderr
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = run()
    assert done.returncode == 0, done.stdout + done.stderr
    records = {r["test"]: r for r in map(json.loads, (out / "main.jsonl").read_text().splitlines())}
    own, child = records["test_burn.py::test_own"], records["test_burn.py::test_child"]
    assert own["own"] >= 0.35 and own["children"] < 0.1
    assert child["children"] >= 0.35
    assert "(outside tests)" in records

    summary = subprocess.run(
        [sys.executable, "benchmarks/suite_cpu.py", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    row = next(line for line in summary.splitlines() if line.startswith("| test_burn.py"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "2" and float(cells[3]) >= 0.35 and float(cells[4]) >= 0.35
