"""Start-up: ``neuronc --help`` and ``neuronc inspect`` import nothing they do not need
(measured in a real interpreter; timings are the benchmark's, never a test's)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.cli.neuronc import ENV
from tests.runtime.conftest import binary_neff
from torchneuron.neff import write_neff

HEAVY = ("jax", "jaxlib", "torch_mlir.extras.fx_importer", "transformers", "torch._dynamo")

RUN = textwrap.dedent(
    """
    import atexit, json, sys
    heavy = {heavy!r}
    atexit.register(lambda: print(json.dumps(sorted(m for m in heavy if m in sys.modules))))
    from torchneuron.cli import main
    sys.exit(main({argv!r}))
    """
)


@pytest.mark.parametrize("command", [["--help"], ["inspect", "{neff}"], ["cache", "info"]])
def test_a_command_imports_only_what_it_needs(tmp_path, command):
    neff = tmp_path / "add.neff"
    neff.write_bytes(write_neff(binary_neff("add", "float32")))
    argv = [part.format(neff=neff) for part in command]
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(heavy=HEAVY, argv=argv)],
        capture_output=True,
        text=True,
        env={**ENV, "PATH": "/usr/bin:/bin", "TORCHNEURON_CACHE_DIR": str(tmp_path / "c")},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
