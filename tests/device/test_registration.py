"""Registration of the neuron device: autoload with `import torch`, opt-out, failure handling."""

from __future__ import annotations

import pytest
import torch

from tests.device.conftest import run_python

SEED_EXAMPLE = """
import torch
model = torch.nn.Linear(10, 1)
model = model.to('neuron')
input_data = torch.randn(1, 10, device='neuron')
output = model(input_data)
print(output)
"""


def test_seed_example_runs_verbatim_after_only_import_torch():
    result = run_python(SEED_EXAMPLE, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"})
    assert result.returncode == 0, result.stderr
    assert "device='neuron:0'" in result.stdout
    assert "grad_fn=<AddmmBackward0>" in result.stdout
    assert result.stdout.strip().startswith("tensor([[")


def test_autoload_can_be_disabled_and_explicit_import_registers():
    code = (
        "import torch\n"
        "print('before', hasattr(torch, 'neuron'))\n"
        "import torchneuron\n"
        "print('after', torch.neuron.device_count(), torch.ones(2, device='neuron').device)\n"
    )
    result = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert result.returncode == 0, result.stderr
    assert "before False" in result.stdout
    assert "after 4 neuron:0" in result.stdout


def test_autoload_failure_warns_and_leaves_import_torch_working():
    code = (
        "import torch\n"
        "print('imported', torch.ones(1).item(), hasattr(torch, 'neuron'))\n"
        "print(torch._C._get_privateuse1_backend_name())\n"
    )
    result = run_python(code, env={"NEURON_PLATFORM_TARGET_OVERRIDE": "no-such-chip"})
    assert result.returncode == 0, result.stderr
    assert "imported 1.0 False" in result.stdout
    assert "privateuseone" in result.stdout
    assert result.stderr.count("RuntimeWarning") == 1


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("NEURON_RT_VISIBLE_CORES", "abc"),
        ("TORCHNEURON_HBM_BYTES_PER_CORE", "lots"),
        ("NEURON_PLATFORM_TARGET_OVERRIDE", "trn9"),
        # read only at first use (a fallback, the first launch): checked at import too
        ("TORCHNEURON_NO_FALLBACK", "maybe"),
        ("NEURON_LAUNCH_BLOCKING", "perhaps"),
        ("TORCHNEURON_XLA_THREADS", "lots"),
    ],
)
def test_a_malformed_setting_is_one_warning_line_at_the_users_import(tmp_path, variable, value):
    # PyTorch would turn an exception into a failed `import torch`: the warning is what the
    # user sees before device="neuron" fails with PyTorch's "Expected one of cpu, ..." error.
    script = tmp_path / "user_script.py"
    script.write_text("import torch\n")
    result = run_python(f"import runpy; runpy.run_path({str(script)!r})", env={variable: value})
    assert result.returncode == 0, result.stderr
    warning, *rest = result.stderr.splitlines()
    assert rest == ["  import torch"], result.stderr  # the warning points at the user's line
    assert warning.startswith(f"{script}:1: RuntimeWarning: torchneuron: "), warning
    assert f"{variable}={value!r}" in warning
    assert f"Fix or unset {variable};" in warning
    assert "device='neuron' fails" in warning


def test_device_is_privateuse1_renamed_and_accelerator_resolves_to_it():
    assert torch._C._get_privateuse1_backend_name() == "neuron"
    assert torch.accelerator.current_accelerator() == torch.device("neuron")
    assert torch.accelerator.device_count() == torch.neuron.device_count()
    assert torch.get_device_module("neuron") is torch.neuron
    tensor = torch.ones(2).neuron()
    assert tensor.is_neuron and tensor.device == torch.device("neuron", 0)
    module = torch.nn.Linear(2, 2).neuron()
    assert module.weight.device.type == "neuron"


def test_register_is_idempotent():
    from torchneuron import device

    device.register()
    device.register()
    assert device.is_registered()


def test_autoload_keeps_the_compiler_and_xla_out_of_import_torch():
    # Registration needs only cores and memory; the compiler, torch-mlir, XLA and
    # ml_dtypes load with the first compiled op, and the NEFF reader and describer with
    # the first program, so `import torch` stays fast.
    result = run_python(
        "import sys, torch\n"
        "assert torch.neuron.is_available()\n"
        "heavy = [m for m in ('torch_mlir', 'jax', 'jaxlib', 'ml_dtypes', 'torchneuron.compiler',"
        " 'torchneuron.runtime.executor', 'torchneuron.neff.reader',"
        " 'torchneuron.neff.description') if m in sys.modules]\n"
        "print('heavy', heavy)\n"
        "y = torch.ones(2, device='neuron') + 1\n"
        "print('first op', y.cpu().tolist(), 'jaxlib' in sys.modules, 'jax' in sys.modules)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "heavy []" in result.stdout
    # jaxlib runs the op; jax itself (~0.45 s to import) is never needed
    assert "first op [2.0, 2.0] True False" in result.stdout


@pytest.mark.parametrize(
    "code",
    [
        "import torchneuron.device\nimport torch\nprint(torch.ones(1, device='neuron').device)",
        "import torchneuron\nprint(torchneuron.get_fallback_ops())\nimport torch\n"
        "print(torch.ones(1, device='neuron').device)",
    ],
    ids=["device-package-first", "facade-first"],
)
def test_importing_our_package_before_torch_registers_through_the_autoload(code):
    # The autoload entry point runs inside `import torch`, which our package triggers
    # itself: it must not meet a half-initialised package.
    result = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("neuron:0")
