"""torch.compile(backend="neuron") end to end: numerics and gradients against eager CPU."""

import copy
import re
import warnings

import pytest
import torch

from torchneuron import backend as backend_module
from torchneuron.compiler.pipeline import clear_memory_cache, compile_graph
from torchneuron.errors import CpuFallbackWarning
from torchneuron.lru import LRU
from torchneuron.settings import SettingsError
from torchneuron.target import topology
from torchneuron.zoo import ZOO

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def test_backend_is_registered_by_entry_point():
    assert "neuron" in torch._dynamo.list_backends()


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt"])
def test_inference_matches_eager(name):
    entry = ZOO[name]
    model = entry.build().eval()
    inputs = entry.example_inputs()
    expected = model(*inputs)
    compiled = torch.compile(model, backend="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no silent CPU fallback
        actual = compiled(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt"])
def test_training_step_gradients_match_eager(name):
    entry = ZOO[name]
    reference = entry.build().train()
    model = copy.deepcopy(reference)
    inputs = entry.example_inputs()

    loss_ref = entry.loss(reference(*inputs), inputs)
    loss_ref.backward()

    compiled = torch.compile(model, backend="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = entry.loss(compiled(*inputs), inputs)
        loss.backward()

    torch.testing.assert_close(loss, loss_ref, rtol=1e-4, atol=1e-5)
    for (pname, p), (_, p_ref) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.grad is not None, pname
        torch.testing.assert_close(p.grad, p_ref.grad, rtol=1e-3, atol=1e-5, msg=pname)
    # batch-norm running statistics are updated as in eager mode
    for (bname, b), (_, b_ref) in zip(model.named_buffers(), reference.named_buffers()):
        torch.testing.assert_close(b, b_ref, rtol=1e-4, atol=1e-5, msg=bname)


def test_optimizer_steps_follow_eager():
    entry = ZOO["mlp"]
    reference = entry.build()
    model = copy.deepcopy(reference)
    compiled = torch.compile(model, backend="neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1)
    inputs = entry.example_inputs()
    for _ in range(3):
        for m, o in ((compiled, opt), (reference, opt_ref)):
            o.zero_grad()
            entry.loss(m(*inputs), inputs).backward()
            o.step()
    for p, p_ref in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, p_ref, rtol=1e-4, atol=1e-5)


def test_changing_batch_size_recompiles_with_static_shapes():
    model = ZOO["mlp"].build()
    compiled = torch.compile(model, backend="neuron")
    for batch in (2, 3, 5):
        x = torch.randn(batch, 32)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)


def test_dtypes_bfloat16_and_int64():
    def f(x, idx):
        return (x * 2).to(torch.bfloat16) + 1, idx * 3 + (1 << 40)

    x = torch.randn(4, 4)
    idx = torch.arange(4, dtype=torch.int64)
    actual = torch.compile(f, backend="neuron")(x, idx)
    expected = f(x, idx)
    assert actual[0].dtype == torch.bfloat16
    torch.testing.assert_close(actual[0], expected[0])
    assert actual[1].dtype == torch.int64
    assert torch.equal(actual[1], expected[1])  # no int32 truncation of 2**40


def _unlowerable(x):
    # aten.linalg_ldl_factor_ex has no lowering (torch-mlir's or ours)
    return torch.linalg.ldl_factor(x @ x.T)[0] + 1


def test_unlowerable_op_falls_back_to_cpu_with_warning(monkeypatch):
    monkeypatch.delenv("TORCHNEURON_NO_FALLBACK", raising=False)
    x = torch.randn(4, 4)
    with pytest.warns(UserWarning, match="runs on the CPU") as caught:
        actual = torch.compile(_unlowerable, backend="neuron")(x)
    torch.testing.assert_close(actual, _unlowerable(x))
    # tools read the warning's fields, never its text: where, and why on one line
    (warning,) = [w.message for w in caught if isinstance(w.message, CpuFallbackWarning)]
    assert re.fullmatch(r"graph\d+_forward", warning.where)
    assert warning.reason.startswith("no lowering to StableHLO for aten.linalg_ldl_factor_ex")
    assert "\n" not in warning.reason and len(warning.reason) <= 300
    assert f"could not be compiled: {warning.reason}" in str(warning)


@pytest.mark.parametrize("word", ["false", "0", "off", ""])
def test_no_fallback_switched_off_in_any_spelling_allows_fallback(monkeypatch, word):
    # One set of switch words for eager and compile mode: "false" is off here too.
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", word)
    monkeypatch.setattr(backend_module, "_COMPILED_FRAMES", LRU(capacity=128))  # compile anew
    assert not backend_module.fallback_disabled()
    x = torch.randn(4, 4)
    with pytest.warns(UserWarning, match="runs on the CPU"):
        actual = torch.compile(_unlowerable, backend="neuron")(x)
    torch.testing.assert_close(actual, _unlowerable(x))


def test_a_malformed_no_fallback_switch_is_an_error_naming_it(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "maybe")
    with pytest.raises(SettingsError, match="TORCHNEURON_NO_FALLBACK"):
        backend_module.fallback_disabled()


def test_the_default_target_is_the_topology_s_in_any_case(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "TRN3")
    topology.reset_topology()
    try:
        assert backend_module.NeuronBackendOptions(None).target == "trn3"
    finally:
        monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE")
        topology.reset_topology()
    assert backend_module.NeuronBackendOptions({"target": "trn3"}).target == "trn3"


def test_no_fallback_switch_makes_it_an_error(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    with pytest.raises(Exception, match="no lowering to StableHLO for aten") as info:
        torch.compile(_unlowerable, backend="neuron")(torch.randn(4, 4))
    assert "f32[4, 4]" in str(info.value)
    assert "ldl_factor" in str(info.value)  # the user's source line


def test_second_compile_of_same_graph_is_a_memory_cache_hit(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path))  # nothing on disk yet
    clear_memory_cache()
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) * 2)
    x = torch.randn(3, 3)
    first = compile_graph(gm, [x], name="twice")
    second = compile_graph(gm, [x], name="twice")
    assert not first.cache_hit
    assert second.cache_hit
    assert second.neff == first.neff


def test_unknown_backend_option_is_rejected():
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(lambda x: x + 1, backend="neuron", options={"bogus": 1})(torch.ones(2))


def test_fallback_helper_reads_environment(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "0")
    assert not backend_module.fallback_disabled()
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    assert backend_module.fallback_disabled()


@pytest.fixture
def graph_compiles(monkeypatch) -> list:
    """Grows by one for each Dynamo graph the backend compiles (not reused from memory),
    starting from an empty store of compiled frames."""
    monkeypatch.setattr(backend_module, "_COMPILED_FRAMES", LRU(capacity=128))
    calls = []
    real_compile = backend_module._compile_dynamo_graph
    monkeypatch.setattr(
        backend_module, "_compile_dynamo_graph", lambda *a: calls.append(1) or real_compile(*a)
    )
    return calls


def test_recompiling_same_graph_reuses_compiled_frame_with_new_weights(graph_compiles):
    calls = graph_compiles
    x = ZOO["mlp"].example_inputs()[0]
    first, second = ZOO["mlp"].build(), ZOO["mlp"].build()
    with torch.no_grad():
        for p in second.parameters():
            p.mul_(-0.5)  # same architecture, different weights
        torch.testing.assert_close(torch.compile(first, backend="neuron")(x), first(x))
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(second, backend="neuron")(x), second(x))
    assert len(calls) == 1  # the second model reused the compiled graph, fed its own weights


def test_training_after_a_dynamic_recompile_stays_on_the_device(monkeypatch):
    # A second module of the same class with other shapes makes Dynamo recompile with
    # symbolic sizes; the forward graph then returns sizes (numbers) saved for backward.
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    torch._dynamo.reset()
    for features, batch in [(4, 2), (5, 3), (6, 4)]:
        layer = torch.nn.Linear(features, 3)
        x = torch.randn(batch, features, requires_grad=True)
        reference = x.detach().clone().requires_grad_(True)
        torch.compile(layer, backend="neuron")(x).square().sum().backward()
        compiled_grad = layer.weight.grad.clone()
        layer.weight.grad = None
        layer(reference).square().sum().backward()
        torch.testing.assert_close(x.grad, reference.grad)
        torch.testing.assert_close(compiled_grad, layer.weight.grad)


def test_empty_outputs_are_made_at_call_time(monkeypatch):
    # torch-mlir cannot lower an empty uint8 literal (batch norm's reserve buffer); an
    # output with no elements is made by the caller instead of the program.
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")

    def step(x, running_mean, running_var):
        return torch.ops.aten._batch_norm_with_update(
            x, None, None, running_mean, running_var, 0.1, 1e-5
        )

    x = torch.randn(4, 3, 5)
    mean, var = torch.zeros(3), torch.ones(3)
    want = step(x, mean, var)
    mean_compiled, var_compiled = torch.zeros(3), torch.ones(3)
    got = torch.compile(step, backend="neuron")(x, mean_compiled, var_compiled)
    for mine, theirs in zip(got, want):
        assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(mean_compiled, mean)
    torch.testing.assert_close(var_compiled, var)


def test_complex_pinv_is_refused_even_with_fallback_on(monkeypatch):
    # AOTAutograd's runtime returns wrong values for complex pinv with any backend
    # (aot_eager included), so a CPU fallback inside the graph would be wrong too.
    monkeypatch.delenv("TORCHNEURON_NO_FALLBACK", raising=False)
    torch._dynamo.reset()
    a = torch.randn(3, 4, dtype=torch.complex64)
    with pytest.raises(Exception, match=r"linalg_pinv.*complex64\[3, 4\][\s\S]*wrong values"):
        torch.compile(torch.linalg.pinv, backend="neuron", fullgraph=True)(a)
    torch._dynamo.reset()
    real = torch.randn(3, 4)  # real pinv is unaffected: native, right values
    with warnings.catch_warnings():
        warnings.simplefilter("error", CpuFallbackWarning)
        got = torch.compile(torch.linalg.pinv, backend="neuron", fullgraph=True)(real)
    torch.testing.assert_close(got, torch.linalg.pinv(real), rtol=1e-4, atol=1e-4)


FIRST_COMPILES_AT_ONCE = """
import threading, torch
errors, barrier = [], threading.Barrier(4)
def first_compile():
    try:
        barrier.wait()
        torch.compile(lambda x: x + 1, backend="neuron")(torch.ones(2))
    except Exception as error:
        errors.append(repr(error))
threads = [threading.Thread(target=first_compile) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("errors", errors)
"""


def _python(code: str, **env: str):
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


def test_first_compiles_in_several_threads_at_once_do_not_collide():
    # Dynamo's entry-point lookup registered the name once per thread: "duplicate name".
    result = _python(FIRST_COMPILES_AT_ONCE, TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    assert result.returncode == 0, result.stderr
    assert "errors []" in result.stdout, result.stdout


def test_backend_registers_once_when_dynamo_was_imported_first():
    # Autoload off, Dynamo loaded before torchneuron: registered at once, and again is a no-op.
    code = (
        "import torch, torch._dynamo\n"
        "import torchneuron\n"
        "from torchneuron.autoload import register_compile_backend\n"
        "register_compile_backend()\n"
        "from torch._dynamo.backends.registry import _COMPILER_FNS\n"
        "print('registered', _COMPILER_FNS['neuron'].__module__)\n"
        "print(torch.compile(lambda x: x * 2, backend='neuron')(torch.ones(2)).tolist())\n"
    )
    result = _python(code, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert result.returncode == 0, result.stderr
    assert "registered torchneuron.autoload" in result.stdout
    assert "[2.0, 2.0]" in result.stdout


@pytest.mark.parametrize("fn", [torch.linalg.eig, torch.linalg.eigvals])
def test_real_op_with_complex_results_is_refused_by_name_not_retraced_for_ever(fn, monkeypatch):
    # linalg_eig takes a real matrix and returns complex ones: the real-pair retrace ran
    # it as it was and recursed on its own complex graph until RecursionError
    torch._dynamo.reset()
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    a = torch.randn(4, 4)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match=r"aten\.linalg_eig"):
        torch.compile(fn, backend="neuron")(a)
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "0")
    torch._dynamo.reset()
    with warnings.catch_warnings():  # with fallback on: the CPU's values
        warnings.simplefilter("ignore", CpuFallbackWarning)
        got = torch.compile(torch.linalg.eigvals, backend="neuron")(a)
    torch.testing.assert_close(got, torch.linalg.eigvals(a))
    torch._dynamo.reset()


def test_a_graph_with_an_effect_token_is_not_traced_again(native_compile, monkeypatch):
    """``linalg.solve`` checks its result (``_linalg_check_errors``, which AOTAutograd wraps
    in ``with_effects``): the ATen graph AOTAutograd made is lowered as it is, not traced
    a second time through the lowering rules (which doubled the compile of a solve)."""
    from torchneuron.compiler import pipeline

    retraced = []
    original = pipeline._aten_graph

    def spy(gm, example_inputs):
        result = original(gm, example_inputs)
        retraced.append(result is not gm)
        return result

    monkeypatch.setattr(pipeline, "_aten_graph", spy)
    a, b = torch.randn(4, 4) + 4 * torch.eye(4), torch.randn(4, 2)
    got = torch.compile(torch.linalg.solve, backend="neuron")(a, b)
    torch.testing.assert_close(got, torch.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
    assert retraced == [False]


def test_one_graph_under_each_autocast_state_is_compiled_for_that_state():
    """The backend reuses what it compiled for a Dynamo graph of the same code and inputs;
    autocast's casts are made by AOTAutograd's trace, so its state is part of what is
    reused. It was not: the same compiled function called outside autocast returned
    bfloat16, and under float16 autocast bfloat16 again (the CPU's autocast likewise)."""

    def product(x, w):
        return x @ w

    x, w = torch.randn(4, 4), torch.randn(4, 4)
    compiled = torch.compile(product, backend="neuron")
    on_device = (x.to("neuron"), w.to("neuron"))
    seen = []
    for device, dtype in [("neuron", torch.bfloat16), (None, None), ("neuron", torch.float16)]:
        if device is None:
            result = compiled(*on_device)
            expected = product(x, w)
        else:
            with torch.autocast(device, dtype=dtype):
                result = compiled(*on_device)
            expected = product(x.to(dtype), w.to(dtype))
        seen.append(result.dtype)
        torch.testing.assert_close(result.cpu(), expected, rtol=1e-2, atol=1e-2)
    assert seen == [torch.bfloat16, torch.float32, torch.float16]
    for dtype in (torch.float16, torch.bfloat16):
        with torch.autocast("cpu", dtype=dtype):
            result = torch.compile(lambda a, b: a @ b, backend="neuron")(x, w)
        assert result.dtype == dtype


def test_a_checkpointed_graph_is_reused_by_its_bodys_code_and_only_by_it(graph_compiles):
    """Activation checkpointing's region reaches the backend as a higher-order op whose
    body is a submodule: the compiled-frame key (which the AOTAutograd cache on disk
    uses too) takes the body's code. It gave no key at all before, so every such graph
    was traced again; two regions alike but for their bodies must not share one."""
    from torch.utils.checkpoint import checkpoint

    calls = graph_compiles

    def region(activation):
        def body(x, w):
            return activation(x @ w)

        def step(x, w):
            return checkpoint(body, x, w, use_reentrant=False).sum()

        return step

    x, w = torch.randn(4, 8), torch.randn(8, 8, requires_grad=True)
    for activation, expected_calls in [(torch.relu, 1), (torch.relu, 1), (torch.tanh, 2)]:
        torch._dynamo.reset()
        step = region(activation)
        loss = torch.compile(step, backend="neuron")(x, w)
        (grad,) = torch.autograd.grad(loss, w)
        (want,) = torch.autograd.grad(step(x, w), w)
        torch.testing.assert_close(grad, want, rtol=1e-4, atol=1e-5)
        assert len(calls) == expected_calls
