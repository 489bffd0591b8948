"""Run many ``neuronc`` command lines, each in its own process, for the price of one start.

    python tests/cli/fork_runner.py

reads one case per line of stdin, ``{"argv": [...], "cwd": "...", "env": {...}}``
(``env``: variables set in the case's process only), and answers each with one line of
JSON, ``{"status", "stdout", "stderr", "seconds"}``, in order, until stdin closes. This
interpreter imports the CLI (and torch, which its parser needs) once; each case is then a
forked child that runs ``torchneuron.cli.main(argv)`` as the console script does, with
its stdout and stderr (file descriptors 1 and 2, so C++ and logging output too) sent to
files, and exits with its status (flushing the streams first, as the interpreter's exit
would). ``neuronc.py``'s ``NeuroncSession`` is its client.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import traceback

from jaxlib import xla_client  # noqa: F401  (run and profile execute with it)

import torchneuron.compiler.pipeline  # noqa: F401  (the parser imports it: once, here)
from torchneuron.cli import main


def run_case(argv: list[str], cwd: str, folder: str, env: dict | None = None) -> dict:
    out_path, err_path = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: becomes the neuronc process and never returns
        os.chdir(cwd)
        os.environ.update(env or {})
        for fd, path in ((1, out_path), (2, err_path)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        status = main(argv)
        # What the interpreter's exit does that matters here, without its seconds of
        # teardown (torch, MLIR): flush the streams, a failure being reported as Python
        # reports it (stderr, status 120).
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            traceback.print_exc()
            status = 120
        os._exit(status)
    start = time.perf_counter()
    _, wait_status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    with open(out_path, errors="replace") as out, open(err_path, errors="replace") as err:
        return {
            "status": os.waitstatus_to_exitcode(wait_status),
            "stdout": out.read(),
            "stderr": err.read(),
            "seconds": round(seconds, 2),
        }


def serve(folder: str) -> None:
    for line in sys.stdin:
        case = json.loads(line)
        result = run_case(case["argv"], case["cwd"], folder, case.get("env"))
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    # No `with` or `finally` here: a child's sys.exit unwinds through these frames too.
    folder = tempfile.mkdtemp()
    serve(folder)
    shutil.rmtree(folder)
