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

# What no command that only reads imports: the executor, the FX importer, the model zoo's
# transformers and Dynamo.
HEAVY = ("jax", "jaxlib", "torch_mlir.extras.fx_importer", "transformers", "torch._dynamo")
# Reading a NEFF and printing help need neither torch nor torch-mlir at all (the compile
# command's stage options, which do, load when that command is parsed).
COMPILER = ("torch", "torch_mlir")

RUN = textwrap.dedent(
    """
    import atexit, json, sys
    heavy = {heavy!r}
    atexit.register(lambda: print(json.dumps(sorted(m for m in heavy if m in sys.modules))))
    from torchneuron.cli import main
    sys.exit(main({argv!r}))
    """
)


def _imported(tmp_path, command: list[str], modules: tuple[str, ...]) -> tuple[str, list[str]]:
    """Run ``neuronc *command`` in a new interpreter: its stdout and which of ``modules``
    it imported (``{neff}`` in the command is a small NEFF)."""
    neff = tmp_path / "add.neff"
    neff.write_bytes(write_neff(binary_neff("add", "float32")))
    argv = [part.format(neff=neff) for part in command]
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(heavy=modules, argv=argv)],
        capture_output=True,
        text=True,
        env={**ENV, "PATH": "/usr/bin:/bin", "TORCHNEURON_CACHE_DIR": str(tmp_path / "c")},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    *output, imported = done.stdout.splitlines()
    return "\n".join(output), json.loads(imported)


@pytest.mark.parametrize(
    ("command", "absent"),
    [
        (["--help"], HEAVY + COMPILER),
        (["inspect", "{neff}"], HEAVY + COMPILER),
        (["cache", "info"], HEAVY),
    ],
)
def test_a_command_imports_only_what_it_needs(tmp_path, command, absent):
    _, imported = _imported(tmp_path, command, absent)
    assert imported == []


def test_the_compile_command_still_offers_every_stage(tmp_path):
    # Its stage options are added late (when `compile` is parsed): its help lists them.
    shown, imported = _imported(tmp_path, ["compile", "--help"], COMPILER)
    assert "--emit {fx,torch,stablehlo,optimized}" in shown
    assert "--from {torch,stablehlo,optimized}" in shown
    assert imported == ["torch", "torch_mlir"]
