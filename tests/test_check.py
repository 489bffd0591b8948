"""Check mode: compiled graphs and eager ops compared with the CPU, a wrong value named.

A wrong lowering rule is injected (``remainder`` off by 0.1) and check mode must find
it: the graph, the output, the node, the user's line, the max error, and the smallest
failing program on disk.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import pytest
import torch

from torchneuron import backend
from torchneuron import check as check_module
from torchneuron.compiler.cache import get_default_cache
from torchneuron.compiler.pipeline import clear_memory_cache
from torchneuron.device import compiled as compiled_ops
from torchneuron.errors import NumericsMismatchError
from torchneuron.lowering import decompositions
from torchneuron.lowering.rules import lowering_rules, registry
from torchneuron.lru import LRU
from torchneuron.settings import SettingsError

aten = torch.ops.aten

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_CACHE", "0")
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.fixture
def wrong_remainder(monkeypatch, no_disk_cache):
    """``remainder`` lowered 0.1 too high, in both modes (every family of rules is
    loaded first, so none registers over the injected one)."""
    lowering_rules()

    def off_by_a_tenth(self, other):
        quotient = aten.floor.default(aten.div.Tensor(self, other))
        return aten.add.Tensor(aten.sub.Tensor(self, aten.mul.Tensor(quotient, other)), 0.1)

    for op in (aten.remainder.Scalar, aten.remainder.Tensor):
        monkeypatch.setitem(registry.LOWERING_RULES, op, off_by_a_tenth)
    frames = backend._COMPILED_FRAMES
    backend._COMPILED_FRAMES = LRU(capacity=128)
    _forget_compiled_programs()
    yield
    get_default_cache().clear_memory()  # the NEFFs of this test's cache (no disk)
    monkeypatch.undo()  # the right rule back first, then nothing made with the wrong one
    backend._COMPILED_FRAMES = frames
    _forget_compiled_programs()


def _forget_compiled_programs():
    # programs compiled with the other rule, in this process's memory caches
    decompositions.decomposition_table.cache_clear()
    clear_memory_cache()
    compiled_ops.cache.clear()
    get_default_cache().clear_memory()


@pytest.fixture
def eager_check():
    check_module.set_eager_check(True)
    yield
    check_module.set_eager_check(False)


def _model(x, w):
    y = x @ w
    z = torch.remainder(y, 0.7)  # the line check mode must name
    return torch.tanh(z) + 1


_Z_LINE = inspect.getsourcelines(_model)[1] + 2


def test_a_correct_graph_runs_checked_and_unchanged(no_disk_cache):
    x, w = torch.randn(4, 9), torch.randn(9, 3)
    compiled = torch.compile(_model, backend="neuron", options={"check": True})
    torch.testing.assert_close(compiled(x, w), _model(x, w), rtol=1e-4, atol=1e-5)


def test_a_wrong_rule_is_found_and_named(wrong_remainder, tmp_path):
    x, w = torch.randn(4, 9), torch.randn(9, 3)
    compiled = torch.compile(_model, backend="neuron", options={"check": {"repro_dir": tmp_path}})
    with pytest.raises(NumericsMismatchError) as caught:
        compiled(x, w)
    error = caught.value
    assert error.output == 0
    assert error.node == "z"
    assert (
        error.source
        == f"{__file__}:{_Z_LINE}: z = torch.remainder(y, 0.7)  # the line check mode must name"
    )
    assert error.max_error == pytest.approx(0.1, abs=0.02)  # tanh's slope is at most 1
    assert "first wrong node: node z (call_function remainder)" in str(error)
    # the smallest failing program: a script, its inputs and the node's stages
    stem = f"{error.graph}_z"
    assert error.repro == str(tmp_path / f"{stem}.py")
    for suffix in (".py", ".pt", ".stablehlo.mlir", ".neff"):
        assert (tmp_path / f"{stem}{suffix}").is_file(), suffix
    assert "stablehlo" in (tmp_path / f"{stem}.stablehlo.mlir").read_text()


def test_the_repro_script_runs_alone(no_disk_cache, tmp_path):
    # without the injected rule the script finds the two devices equal (exit 0); with a
    # saved input whose CPU value it recomputes, it is a real program, not a template
    x, w = torch.randn(4, 9), torch.randn(9, 3)
    recorder = check_module._Recorder(torch.fx.symbolic_trace(_model))
    recorder.run(x, w)
    node = next(n for n in recorder.module.graph.nodes if n.name == "remainder")
    from torchneuron.check_repro import write_repro

    script = write_repro(tmp_path, "graph_t", node, recorder)
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("equal")


def test_a_difference_no_single_node_makes_names_the_output_node(no_disk_cache):
    # a fault in compiling nodes together (here: the compiled callable's output
    # perturbed) is not found node by node; the error says so
    gm = torch.fx.symbolic_trace(_model)
    x, w = torch.randn(4, 9), torch.randn(9, 3)

    def compiled(*args):
        return (gm(*args) + 0.5,)

    checked = check_module.checked_graph(gm, compiled, "graph_t", {"repro_dir": None})
    with pytest.raises(NumericsMismatchError, match="compiling them together") as caught:
        checked(x, w)
    assert caught.value.node == "add"
    assert caught.value.max_error == pytest.approx(0.5)


def test_random_graphs_run_unchecked_with_a_warning(no_disk_cache):
    def noisy(x):
        return torch.nn.functional.dropout(x, 0.5, training=True) * 2

    compiled = torch.compile(noisy, backend="neuron", options={"check": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(torch.ones(8, 8))
    assert any("random ops, so it runs unchecked" in str(w.message) for w in caught)


def test_the_environment_turns_compile_checks_on(wrong_remainder, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_CHECK", "1")
    compiled = torch.compile(_model, backend="neuron")
    with pytest.raises(NumericsMismatchError):
        compiled(torch.randn(4, 9), torch.randn(9, 3))


def test_a_malformed_check_option_is_refused():
    with pytest.raises(SettingsError, match="option 'check'"):
        check_module.check_requested("yes please")


def test_eager_ops_are_checked(wrong_remainder, eager_check):
    x = torch.randn(5, 13, device="neuron")
    assert torch.equal((x * 2).cpu(), x.cpu() * 2)  # a right op passes
    with pytest.raises(NumericsMismatchError) as caught:
        torch.remainder(x, 0.7)
    error = caught.value
    assert error.node == "aten.remainder.Tensor"
    assert error.source is not None and error.source.startswith(f"{__file__}:")
    assert "torch.remainder(x, 0.7)" in error.source
    assert error.max_error == pytest.approx(0.1, abs=1e-5)


def test_eager_check_from_the_environment_at_import(tmp_path):
    code = (
        "import torch, torchneuron.device.dispatch as d, torchneuron.check as c\n"
        "assert d.op_check is c._check_op\n"
        "x = torch.arange(6.0, device='neuron')\n"
        "print((x + 1).cpu().tolist())\n"
    )
    env = {**__import__("os").environ, "TORCHNEURON_CHECK": "1", "TORCHNEURON_CACHE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]"


def test_an_input_updated_in_place_is_checked_too(wrong_remainder):
    # an optimizer-like step: the parameter is written in place, nothing is returned
    def step(parameter, gradient):
        parameter.sub_(torch.remainder(gradient, 0.7))

    parameter, gradient = torch.zeros(6, 5), torch.randn(6, 5)
    compiled = torch.compile(step, backend="neuron", options={"check": True})
    with pytest.raises(NumericsMismatchError, match=r"input 0 \(updated in place\)") as caught:
        compiled(parameter, gradient)
    assert "remainder" in str(caught.value)
