"""README.md, run as a reader would: every fenced block runs here or says why it does not.

A block that is not run carries ``<!-- not run: <reason> -->`` on the line right before
its fence, the reason naming the test that covers the same behaviour; a block that is
neither run nor marked fails the first test, so a new block cannot go stale unnoticed.

The Python blocks run in one process, in order, as one script (the later ones go on with
the earlier ones' ``model`` and ``x``), given the variables ``torchrun`` gives a single
rank, since one block calls ``dist.init_process_group()`` (the launcher itself would add
seconds and nothing the blocks use).

The shell blocks run line by line, in README order, in one scratch folder, with this
environment's console scripts first on PATH and the repository's ``examples`` reachable:
a plain ``neuronc`` line in its own process forked from one runner that imported the CLI
once (``tests/cli/neuronc.py``, as the CLI tests run it: the console script's start-up,
seconds, is paid once, not a dozen times), any other line through ``bash -c``. README's
install step is the environment this test runs in (``.ci/run`` makes it), so a line that
starts with it runs only what follows it, with ``.venv`` pointing at this environment.
README's commands take "a program saved with torch.export.save" as ``model.pt2`` and an
``input.npy`` for its input ``x``: the test makes both first.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tests.cli.neuronc import RUNNER_ENV, NeuroncSession, neuronc_arguments
from tests.distributed.torchrun import free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NOT_RUN = re.compile(r"<!-- not run: (\S.*?) -->")
KINDS = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell", "console": "shell"}
INSTALL = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]'"
TIMEOUT_S = 600

# What README says a command prints, keyed by a part of the command line that names it.
SAYS = {
    "examples/demo.py": "neuronc run: max |neuron - cpu|",
    "--emit stablehlo": "stablehlo.dot_general",
    "--print-ir-after-all": "IR Dump After cse",
    "neuronc inspect model.neff": "signature:",
    "neuronc run": "output0: float32[1, 1]",
    "neuronc cache info": "cache folder:",
    "neuronc cache prune": "pruned",
    "--emit optimized": "neuron.engine",
    "neuronc estimate": "MFU",
    "neuronc inspect m.neff": "memory plan",
    "neuronc profile": "wrote trace.json",
    "neuronc golden update": "updated",
    "neuronc golden check": "match",
}
# The files README says the shell blocks write.
WRITES = (
    "model.neff",
    "m.neff",
    "m2.neff",
    "dump/model.fx.txt",
    "dump/model.torch.mlir",
    "dump/model.stablehlo.mlir",
    "dump/model.optimized.mlir",
    "dump/model.neff",
    "out/output0.npy",
    "trace.json",
    "goldens/model/fx.txt",
    "goldens/model/torch.mlir",
    "goldens/model/stablehlo.mlir",
    "goldens/model/optimized.mlir",
    "goldens/model/neff.json",
)


@dataclass(frozen=True)
class Block:
    line: int  # of its opening fence
    language: str
    code: str
    not_run: str | None  # the reason its marker gives

    @property
    def name(self) -> str:
        return f"README.md:{self.line} ({self.language or 'untyped'})"


def readme_blocks() -> list[Block]:
    lines = README.read_text().splitlines()
    blocks, start = [], None
    for number, line in enumerate(lines, 1):
        if not line.startswith("```"):
            continue
        if start is None:
            start = number
            continue
        marker = NOT_RUN.fullmatch(lines[start - 2].strip()) if start > 1 else None
        code = "\n".join(lines[start : number - 1]) + "\n"
        language = lines[start - 1][3:].strip()
        blocks.append(Block(start, language, code, marker[1] if marker else None))
        start = None
    assert start is None, f"README.md:{start}: a code fence that is never closed"
    return blocks


def _runnable(kind: str) -> list[Block]:
    return [b for b in readme_blocks() if b.not_run is None and KINDS.get(b.language) == kind]


def _environment(tmp_path: Path) -> dict[str, str]:
    env = dict(
        os.environ,
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=str(ROOT),
        TORCHNEURON_NO_FALLBACK="1",
        OMP_NUM_THREADS="1",
        TORCHNEURON_CACHE_DIR=str(tmp_path / "cache"),
    )
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    return env


def _commands(blocks: list[Block]) -> list[str]:
    """The blocks' command lines: continuations joined, comment lines and prompts dropped."""
    commands = []
    for block in blocks:
        for line in block.code.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def _run_line(command: str, cwd: Path, env: dict, session: NeuroncSession) -> tuple[int, str]:
    """One command line's exit status and its stdout and stderr together."""
    arguments = neuronc_arguments(command)
    if arguments is not None:
        done = session.run(*arguments, check=False, cwd=cwd)
        return done.returncode, done.stdout + done.stderr
    ran = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    return ran.returncode, ran.stdout


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(10, 1)

    def forward(self, x):
        return torch.relu(self.linear(x))


def test_every_readme_block_runs_or_says_why_not():
    blocks = readme_blocks()
    assert len(blocks) >= 17, [b.name for b in blocks]
    unmarked = [b.name for b in blocks if b.not_run is None and b.language not in KINDS]
    assert not unmarked, (
        f"{unmarked}: this test cannot run these blocks; put <!-- not run: <reason> --> on "
        "the line before each fence, naming the test that covers it"
    )
    lines = README.read_text().splitlines() + [""]  # the last line has a next one too
    stray = [
        f"README.md:{number}"
        for number, line in enumerate(lines, 1)
        if line.strip().startswith("<!-- not run")
        and not (NOT_RUN.fullmatch(line.strip()) and lines[number].startswith("```"))
    ]
    assert not stray, (
        f"{stray}: a not-run marker reads <!-- not run: <reason> --> on the line right "
        "before a code fence"
    )


def test_the_python_blocks_run_as_one_script(tmp_path):
    blocks = _runnable("python")
    assert len(blocks) >= 4, [b.name for b in blocks]
    (tmp_path / "readme.py").write_text("\n".join(b.code for b in blocks))
    one_rank = dict(
        RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "readme.py"], cwd=tmp_path, env={**_environment(tmp_path), **one_rank},
        capture_output=True, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    assert "device='neuron:0', grad_fn=<AddmmBackward0>" in out  # print(model(x))
    assert "estimated device time" in out  # prof.table()
    assert (tmp_path / "trace.json").stat().st_size > 0  # prof.export_chrome_trace
    assert "kernel rmsnorm on trn2" in out and "SBUF high water" in out  # nki.profile
    assert (tmp_path / "k.json").stat().st_size > 0


def test_the_shell_blocks_run_line_by_line_in_order(tmp_path):
    commands = _commands(_runnable("shell"))
    assert len(commands) >= 15, commands
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / ".venv").symlink_to(sys.prefix)
    torch.export.save(torch.export.export(_Model(), (torch.randn(1, 10),)), tmp_path / "model.pt2")
    np.save(tmp_path / "input.npy", np.random.rand(1, 10).astype(np.float32))
    env = _environment(tmp_path)
    session = NeuroncSession(env={**env, **RUNNER_ENV})
    unsaid = dict(SAYS)
    try:
        for command in commands:
            if command.startswith(INSTALL):
                command = command.removeprefix(INSTALL).strip().removeprefix("&&").strip()
                if not command:
                    continue
            status, output = _run_line(command, tmp_path, env, session)
            assert status == 0, f"{command}\n{output[-4000:]}"
            for part, said in SAYS.items():
                if part in command:
                    assert said in output, f"{command}: {said!r} not in\n{output[-4000:]}"
                    unsaid.pop(part, None)
    finally:
        session.close()
    assert not unsaid, f"no README command matches {list(unsaid)}: update SAYS"
    missing = [path for path in WRITES if not (tmp_path / path).is_file()]
    assert not missing, missing
