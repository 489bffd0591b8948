"""torch.compile(dynamic=True): a shape not yet specialized runs interpreted meanwhile.

A new shape (bucket) of a dynamic graph runs on the numpy interpreter of its program
while the background thread specializes it (``DynamicGraphFunction._function_for``,
``specialize_later``); later calls run the compiled program. Every result is compared
with PyTorch eager on the CPU; the execute hooks say which program ran each call.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torchneuron import settings
from torchneuron.compiler import dynamic, specialize_later
from torchneuron.runtime import loaded_neff


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(settings.BUCKETS, raising=False)
    specialize_later.drain()
    torch._dynamo.reset()
    dynamic.reset_stats()
    yield
    torch._dynamo.reset()


@pytest.fixture
def runs():
    """The name of each program run, in order (``(interpreted)`` marks the interpreter's)."""
    names: list[str] = []

    def record(loaded, start, seconds):
        names.append(loaded.name)

    loaded_neff.add_execute_hook(record)
    yield names
    loaded_neff.remove_execute_hook(record)


def _gpt():
    from torchneuron.zoo import ZOO

    return ZOO["gpt"].build().eval()


def test_a_new_length_runs_interpreted_then_compiled(runs):
    model = _gpt()
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    with torch.no_grad():
        for length in (17, 17):  # bucket 24: interpreted while it specializes, then ...
            tokens = torch.randint(0, 128, (2, length))
            torch.testing.assert_close(compiled(tokens), model(tokens), rtol=1e-4, atol=1e-4)
        first = list(runs)
        specialize_later.drain()
        runs.clear()
        for length in (17, 21):  # ... compiled: 21 shares the bucket
            tokens = torch.randint(0, 128, (2, length))
            torch.testing.assert_close(compiled(tokens), model(tokens), rtol=1e-4, atol=1e-4)
    assert first and first[0].endswith("(interpreted)")
    assert runs and not any(name.endswith("(interpreted)") for name in runs)
    stats = dynamic.stats()
    assert stats["interpreted_shapes"] == 1 and stats["specializations"] == 1
    assert stats["interpreter_refusals"] == 0


def test_a_training_step_at_new_sizes_equals_the_cpu_while_interpreted(runs):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
    reference = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    for batch in (3, 5, 7, 13):  # each a new bucket: forward and backward interpreted
        x, y = torch.randn(batch, 8), torch.arange(batch) % 4
        loss = F.cross_entropy(compiled(x), y)
        loss.backward()
        want = F.cross_entropy(reference(x), y)
        want.backward()
        torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6)
        for got, ref in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(got.grad, ref.grad, rtol=1e-4, atol=1e-6)
            got.grad = ref.grad = None
    assert sum(name.endswith("(interpreted)") for name in runs) >= 2
    assert dynamic.stats()["interpreted_shapes"] >= 2


CHILD = """
import json, sys, torch
from torchneuron.compiler import dynamic, specialize_later
from torchneuron.runtime import loaded_neff

names = []
loaded_neff.add_execute_hook(lambda loaded, start, seconds: names.append(loaded.name))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
compiled = torch.compile(model, backend="neuron", dynamic=True)
x = torch.randn(5, 8)
with torch.no_grad():
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    specialize_later.drain()
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
print(json.dumps({"stats": dynamic.stats(), "names": names}))
"""


def test_a_later_process_loads_the_specialization_on_disk_in_the_background(tmp_path):
    import json
    import os
    import subprocess
    import sys

    environment = {**os.environ, "TORCHNEURON_CACHE_DIR": str(tmp_path / "shared")}
    reports = []
    for _ in range(2):
        completed = subprocess.run(
            [sys.executable, "-c", CHILD], env=environment, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr[-2000:]
        reports.append(json.loads(completed.stdout.strip().splitlines()[-1]))
    first, second = reports
    assert first["stats"]["specializations"] == 1 and first["stats"]["interpreted_shapes"] == 1
    # the second process interprets its first call while the stored program loads
    assert second["stats"]["specializations"] == 0
    assert second["stats"]["disk_specializations"] == 1
    for report in reports:
        names = report["names"]
        assert names[0].endswith("(interpreted)") and not names[-1].endswith("(interpreted)")


def _scaled(x):
    return (x * 2).sum(-1) + 1


def test_the_switch_off_specializes_at_once(monkeypatch, runs):
    monkeypatch.setenv("TORCHNEURON_INTERPRET", "0")
    compiled = torch.compile(_scaled, backend="neuron", dynamic=True)
    x = torch.randn(5, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), _scaled(x))
    assert dynamic.stats()["interpreted_shapes"] == 0 and dynamic.stats()["specializations"] == 1
    assert runs and not any(name.endswith("(interpreted)") for name in runs)


def test_a_program_of_many_input_elements_specializes_at_once(monkeypatch, runs):
    # interpreting GPT-2 124M's step while its build runs was slower than waiting
    from torchneuron.compiler import dynamic_functions

    monkeypatch.setattr(dynamic_functions, "INTERPRET_ELEMENTS_LIMIT", 25)
    compiled = torch.compile(_scaled, backend="neuron", dynamic=True)
    with torch.no_grad():
        # buckets 4x3 (12 elements and the masks' 4 + 3: interpreted) and 8x3 (35: not)
        for rows in (4, 7):
            x = torch.randn(rows, 3)
            torch.testing.assert_close(compiled(x), _scaled(x))
    assert dynamic.stats()["interpreted_shapes"] == 1
    assert [name.endswith("(interpreted)") for name in runs] == [True, False]


def test_a_call_the_interpreter_refuses_waits_for_the_compiled_program(monkeypatch):
    from torchneuron.runtime import interpreter

    def refuse(self, inputs):
        raise interpreter.Uninterpretable("a value the interpreter leaves to the compiled program")

    monkeypatch.setattr(interpreter.InterpretedProgram, "run", refuse)
    compiled = torch.compile(_scaled, backend="neuron", dynamic=True)
    x = torch.randn(5, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), _scaled(x))
    stats = dynamic.stats()
    assert stats["interpreted_shapes"] == stats["interpreter_refusals"] == 1
    assert stats["specializations"] == 1


def test_a_shape_whose_background_build_fails_specializes_on_the_callers_thread(monkeypatch):
    import threading

    from torchneuron.compiler import dynamic_program

    real = dynamic_program.DynamicProgram.specialize

    def failing(self, shapes):
        if threading.current_thread().name == "torchneuron-specialize":
            raise dynamic.ShapeConstraintError("refinement failed in the background")
        return real(self, shapes)

    monkeypatch.setattr(dynamic_program.DynamicProgram, "specialize", failing)

    compiled = torch.compile(_scaled, backend="neuron", dynamic=True)
    x = torch.randn(5, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), _scaled(x))  # interpreted
        specialize_later.drain()
        # the build failed: the next call specializes on this thread, as before
        torch.testing.assert_close(compiled(x), _scaled(x))
    assert dynamic.stats()["interpreted_shapes"] == 1
    assert dynamic.stats()["specializations"] == 1
