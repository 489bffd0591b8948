"""docs/getting-started.md, run as a newcomer would: every block, in order.

The Python blocks run in one process (as one script, in a scratch folder); the shell
blocks run line by line in the same folder, with this environment's console scripts on
PATH and the repository's ``examples`` reachable; each ``neuronc`` line runs in its own
process, forked from one runner that imported the CLI once (as in tests/test_readme.py).
The install line is ``.ci/run``'s own and is not run again. The two-rank ``torchrun`` of examples/train_ddp.py is this suite's
check of that example too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.cli.neuronc import RUNNER_ENV, NeuroncSession, neuronc_arguments

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
BLOCK = re.compile(r"```(python|bash)\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(PAGE.read_text())


def test_every_block_of_the_getting_started_page_runs(tmp_path):
    blocks = _blocks()
    assert sum(kind == "python" for kind, _ in blocks) >= 8
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    bin_dir = os.path.dirname(sys.executable)
    env = dict(
        os.environ,
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=str(ROOT),
        TORCHNEURON_NO_FALLBACK="1",
        OMP_NUM_THREADS="1",
    )
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    script = "\n".join(code for kind, code in blocks if kind == "python")
    (tmp_path / "page.py").write_text(script)
    done = subprocess.run(
        [sys.executable, "page.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    assert out.splitlines()[0] == "4"  # one Trainium2 chip at LNC=2
    assert "torch.bfloat16" in out and "neuron:0 cpu" in out
    assert "graph(s) compiled for the neuron device" in out
    assert "True" in out.splitlines()  # the NKI kernel equals a + b
    assert (tmp_path / "trace.json").stat().st_size > 0
    assert "Self NEURON" in out  # torch.profiler's device columns
    commands = [
        line.strip()
        for kind, code in blocks
        if kind == "bash"
        for line in code.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    outputs = {}
    # neuronc lines: each its own process, forked from one runner that imported the CLI
    session = NeuroncSession(env={**env, **RUNNER_ENV})
    try:
        for command in commands:
            if "pip install" in command:
                continue  # the environment this test runs in is that install
            arguments = neuronc_arguments(command)
            if arguments is not None:
                ran = session.run(*arguments, check=False, cwd=tmp_path)
            else:
                ran = subprocess.run(
                    ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                    text=True, timeout=600,
                )  # fmt: skip
            assert ran.returncode == 0, f"{command}\n{ran.stdout[-2000:]}\n{ran.stderr[-3000:]}"
            outputs[arguments[0] if arguments is not None else command] = ran.stdout
    finally:
        session.close()
    assert (tmp_path / "small.neff").exists() and (tmp_path / "out").is_dir()
    assert "8030.26 M parameters" in outputs["plan"]
    ddp = outputs["torchrun --nproc-per-node 2 examples/train_ddp.py"]
    losses = [float(line.split()[3]) for line in ddp.splitlines() if line.startswith("step")]
    assert len(losses) == 3 and losses[0] > losses[1] > losses[2]
    assert "collectives, estimated" in ddp
