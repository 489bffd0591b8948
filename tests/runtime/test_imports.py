"""Importing the runtime or the NEFF package loads no torch, MLIR, XLA or stage above them;
their errors hang off the one error root."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchneuron.errors import TorchNeuronError
from torchneuron.neff import NeffError
from torchneuron.runtime import NeuronRuntimeError

REPO = Path(__file__).resolve().parents[2]

# With torch's backend autoload on, importing torch would also register the device.
FORBIDDEN_ROOTS = ("torch", "torch_mlir", "jax", "jaxlib", "ml_dtypes")
FORBIDDEN_PACKAGES = ("torchneuron.compiler", "torchneuron.device", "torchneuron.passes")


def modules_after(statement: str) -> list[str]:
    """The modules loaded by ``statement`` in a fresh interpreter."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "statement",
    [
        "import torchneuron.runtime",
        "import torchneuron.neff",
        "import torchneuron.runtime, torchneuron.neff; torchneuron.runtime.get_core(0).hbm",
        "from torchneuron.runtime.errors import NeuronRuntimeError",
    ],
)
def test_import_loads_no_torch_mlir_xla_or_upper_stage(statement):
    loaded = modules_after(statement)
    forbidden = [
        m for m in loaded if m.split(".")[0] in FORBIDDEN_ROOTS or m.startswith(FORBIDDEN_PACKAGES)
    ]
    assert not forbidden, f"{statement!r} loaded {forbidden[:10]}"
    assert "torchneuron.runtime" in loaded or "torchneuron.neff" in loaded


def test_the_package_facade_loads_no_stage():
    # `import torchneuron` alone (torch not imported) loads only the base layer.
    loaded = modules_after("import torchneuron")
    ours = sorted(m for m in loaded if m.startswith("torchneuron"))
    assert ours == ["torchneuron", "torchneuron.version"], ours
    assert not [m for m in loaded if m.split(".")[0] in FORBIDDEN_ROOTS]


def test_loading_the_executor_pulls_in_no_compiler_or_passes():
    # load_neff needs the MLIR bindings and XLA, but never the compiler or its passes.
    loaded = modules_after("from torchneuron.runtime import load_neff")
    assert "torchneuron.runtime.loaded_neff" in loaded
    upper = [m for m in loaded if m.startswith(FORBIDDEN_PACKAGES)]
    assert not upper, upper
    assert not [m for m in loaded if m.startswith("torchneuron.estimate.cost_model")]


def test_out_of_memory_error_is_torchs_and_ours():
    from torchneuron.runtime import NeuronOutOfMemoryError
    from torchneuron.runtime.errors import NeuronOutOfMemoryError as same
    from torchneuron.runtime.errors import out_of_memory

    assert NeuronOutOfMemoryError is same
    assert issubclass(NeuronOutOfMemoryError, torch.OutOfMemoryError)
    assert issubclass(NeuronOutOfMemoryError, NeuronRuntimeError)
    assert NeuronOutOfMemoryError.__qualname__ == "NeuronOutOfMemoryError"
    error = out_of_memory("no room")
    assert type(error) is NeuronOutOfMemoryError and str(error) == "no room"
    assert type(pickle.loads(pickle.dumps(error))) is NeuronOutOfMemoryError


def test_errors_share_the_root():
    assert issubclass(NeuronRuntimeError, TorchNeuronError)
    assert issubclass(NeffError, TorchNeuronError)
    assert issubclass(NeuronRuntimeError, RuntimeError)  # what callers caught before
