"""The one launcher of rank processes in tests: torchrun, or ranks started by hand.

``torchrun(script, *args, nproc=N)`` runs ``python -m torch.distributed.run`` with N
ranks on a free port; ``run_together(commands, envs)`` starts several commands at once
(torchrun "nodes", or ranks given torchrun's environment by the test) and waits for all.
Each command runs in a session of its own, so a timeout kills the launcher and every
rank it started; the test fails then with what the processes printed. Output goes to
files, not pipes: a rank blocked on a full pipe while its peer waits in a collective
would hang the launch.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Variables of this process that would make a rank think it is one already.
RANK_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # from the start of the launch to this process's exit

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(**extra: str) -> dict[str, str]:
    """This process's environment without its rank variables, plus ``extra``: one
    thread per rank (ranks share the host's cores), the repository importable."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    for name in RANK_VARIABLES:
        env.pop(name, None)
    return env | extra


def torchrun_command(script: Path, *args: str, launcher: tuple[str, ...] = ()) -> list[str]:
    """``torchrun [launcher options] script args`` as this interpreter runs it."""
    return [sys.executable, "-m", "torch.distributed.run", *launcher, str(script), *args]


def run_together(commands: list[list[str]], envs: list[dict], timeout: float) -> list[Finished]:
    """Run the commands at once from the repository root; kill them all at the timeout."""
    start = time.monotonic()
    streams = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in commands]
    processes = [
        subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=err, text=True, start_new_session=True
        )
        for command, env, (out, err) in zip(commands, envs, streams, strict=True)
    ]
    ended = []
    try:
        for process in processes:
            process.wait(timeout=max(1.0, timeout - (time.monotonic() - start)))
            ended.append(time.monotonic() - start)
    except subprocess.TimeoutExpired:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    outputs = []
    for out, err in streams:
        out.seek(0)
        err.seek(0)
        outputs.append((out.read(), err.read()))
        out.close()
        err.close()
    if len(ended) < len(processes):
        pytest.fail(
            f"launch passed {timeout} s:\n" + "\n".join((o + e)[-3000:] for o, e in outputs)
        )
    return [
        Finished(process.returncode, out, err, seconds)
        for process, (out, err), seconds in zip(processes, outputs, ended, strict=True)
    ]


def torchrun(
    script: Path, *args: str, nproc: int, env: dict | None = None, timeout: float
) -> Finished:
    """``torchrun --nproc-per-node=nproc script args`` on a free port, ``env`` added to
    ``environment()``."""
    launcher = (f"--nproc-per-node={nproc}", f"--master-port={free_port()}")
    command = torchrun_command(script, *args, launcher=launcher)
    (finished,) = run_together([command], [environment(**(env or {}))], timeout)
    return finished
