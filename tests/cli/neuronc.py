"""The one way tests run ``neuronc`` as a real process.

``console_script(*args)`` runs the installed console script in a new interpreter, as a
user's shell does. ``NeuroncSession.run(*args)`` behaves like it too: the command runs
in its own process with its own exit status, stdout and stderr, but that process is
forked from one long-lived runner (``fork_runner.py``) that imported the CLI once, so a
test that runs many commands pays for one interpreter start, not one per command.
"""

import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

RUNNER = Path(__file__).with_name("fork_runner.py")
# What every neuronc process of the tests runs with: no device autoload at import.
ENV = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
# Warnings (torch's own deprecations) are not errors: the runner's commands show none.
RUNNER_ENV = {**ENV, "PYTHONWARNINGS": "ignore"}


# A command line holding any of these needs a shell: it is not one neuronc process.
SHELL_SYNTAX = frozenset("|&;<>()$`")


def neuronc_arguments(command: str) -> list[str] | None:
    """The arguments of a documented command line that is one plain ``neuronc`` command
    (``# comments`` dropped), for ``NeuroncSession.run``; None for any other line."""
    argv = shlex.split(command, comments=True)
    if argv[:1] != ["neuronc"] or SHELL_SYNTAX & set(command.split("#")[0]):
        return None
    return argv[1:]


def console_script_path() -> str:
    """The installed ``neuronc`` console script of this interpreter's environment."""
    script = Path(sysconfig.get_path("scripts")) / "neuronc"
    if script.exists():
        return str(script)
    found = shutil.which("neuronc")
    assert found, "the neuronc console script is not installed"
    return found


def console_script(*args, check: bool = True, **options) -> subprocess.CompletedProcess:
    """``neuronc *args`` as the installed console script, in a new interpreter.

    ``options`` go to ``subprocess.run`` (``stdout=``, ``cwd=``, ``env=``: an ``env``
    is added to this process's environment and ENV).
    """
    argv = [str(a) for a in args]
    options.setdefault("timeout", 300)
    options.setdefault("text", True)
    if "stdout" not in options and "stderr" not in options:
        options["capture_output"] = True
    options["env"] = {**os.environ, **ENV, **options.get("env", {})}
    result = subprocess.run([console_script_path(), *argv], **options)
    if check and result.returncode != 0:
        raise AssertionError(f"neuronc {' '.join(argv)} failed:\n{result.stderr}")
    return result


@dataclass
class Completed:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


class NeuroncSession:
    """A runner process that forks one ``neuronc`` process per ``run``."""

    def __init__(self, env: dict[str, str] | None = None):
        self._process = subprocess.Popen(
            [sys.executable, str(RUNNER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env if env is not None else RUNNER_ENV)},
        )

    def run(
        self,
        *args,
        check: bool = True,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float = 300,
    ) -> Completed:
        """``neuronc *args`` in a forked process; ``env`` is set in that process only. A
        command that has not answered within ``timeout`` seconds ends the runner."""
        argv = [str(a) for a in args]
        case = {"argv": argv, "cwd": str(cwd or os.getcwd()), "env": env or {}}
        self._process.stdin.write(json.dumps(case) + "\n")
        self._process.stdin.flush()
        # one reply line per command, read whole: nothing is left buffered between calls
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        if not ready:
            self._process.kill()
            raise AssertionError(f"neuronc {' '.join(argv)} gave no answer in {timeout} s")
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
