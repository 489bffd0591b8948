"""A ``neuronc`` that runs each command line in a forked process of one long-lived runner.

``NeuroncSession.run(*args)`` behaves like ``subprocess.run(["neuronc", *args])``: the
command runs in its own process (forked from ``fork_runner.py --serve``, which imported
the CLI once), and the result has ``returncode``, ``stdout`` and ``stderr``. A test that
runs several commands in a row pays for one interpreter start, not one per command.
"""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RUNNER = Path(__file__).with_name("fork_runner.py")


@dataclass
class Completed:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


class NeuroncSession:
    def __init__(self, env: dict[str, str] | None = None):
        self._process = subprocess.Popen(
            [sys.executable, str(RUNNER), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )

    def run(self, *args, check: bool = True, env: dict[str, str] | None = None) -> Completed:
        argv = [str(a) for a in args]
        case = {"argv": argv, "cwd": os.getcwd(), "env": env or {}}
        self._process.stdin.write(json.dumps(case) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise AssertionError(f"the neuronc runner died running neuronc {' '.join(argv)}")
        result = json.loads(line)
        completed = Completed(argv, result["status"], result["stdout"], result["stderr"])
        if check and completed.returncode != 0:
            raise AssertionError(f"neuronc {' '.join(argv)} failed:\n{completed.stderr}")
        return completed

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait(timeout=60)
