"""AOTAutograd's result kept in our disk cache (torchneuron/aot_cache.py): a new process
loads it instead of tracing the joint graph again, gets the same answers and gradients,
and a bad entry is a miss with one warning; Inductor's entries are left to PyTorch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
from torch._dynamo.utils import counters

from torchneuron import aot_cache, backend
from torchneuron.compiler.graph_cache import AOT_ENTRY, AotResultCache
from torchneuron.compiler.pipeline import clear_memory_cache
from torchneuron.lru import LRU
from torchneuron.runtime.cache_entry import unwrap_entry, wrap_entry
from torchneuron.runtime.disk_cache import default_cache

# A training step with an embedding (whose index check is one of our own ops in the
# graph: the loading process must know it) and a reduction, forward and backward.
SCRIPT = textwrap.dedent(
    """
    import json, torch
    from torch._dynamo.utils import counters
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(11, 6), torch.nn.Linear(6, 3), torch.nn.Tanh())
    step = torch.compile(model, backend="neuron")
    tokens = torch.tensor([[1, 4, 9], [10, 0, 2]])
    loss = step(tokens).square().mean()
    loss.backward()
    print(json.dumps({
        "loss": loss.item(),
        "grads": [p.grad.flatten().tolist() for p in model.parameters()],
        "aot": dict(counters["aot_autograd"]),
    }))
    """
)


def run_step(cache_dir) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={**os.environ, "TORCHNEURON_CACHE_DIR": str(cache_dir),
             "TORCHNEURON_NO_FALLBACK": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_aot_autograds_result_instead_of_tracing(tmp_path):
    cold = run_step(tmp_path)
    assert cold["aot"].get("autograd_cache_miss") == 1
    assert cold["aot"].get("autograd_cache_saved") == 1  # saved at the first backward
    assert len(list((tmp_path / "aot").glob("*/*.pkl"))) == 1

    warm = run_step(tmp_path)
    assert warm["aot"].get("autograd_cache_hit") == 1
    assert "autograd_cache_miss" not in warm["aot"] and "autograd_cache_bypass" not in warm["aot"]
    assert warm["loss"] == cold["loss"] and warm["grads"] == cold["grads"]


# -- in one process: "a new process" is every in-memory layer emptied ---------------


@pytest.fixture
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    monkeypatch.delenv("TORCHNEURON_CACHE", raising=False)
    as_new_process(monkeypatch)  # an earlier test's graph is not found in memory
    yield tmp_path
    torch._dynamo.reset()


def as_new_process(monkeypatch):
    torch._dynamo.reset()
    monkeypatch.setattr(backend, "_COMPILED_FRAMES", LRU(capacity=128))
    clear_memory_cache()
    default_cache(AotResultCache).clear_memory()
    counters.clear()


def train_once():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = torch.randn(3, 5)
    loss = torch.compile(model, backend="neuron")(x).sum()
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


def expected():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    loss = model(torch.randn(3, 5)).sum()
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


def assert_right(result):
    loss, grads = result
    want_loss, want_grads = expected()
    assert loss == pytest.approx(want_loss, rel=1e-5, abs=1e-6)
    for got, want in zip(grads, want_grads, strict=True):
        torch.testing.assert_close(got, want)


def only_entry(folder):
    (path,) = (folder / "aot").glob("*/*.pkl")
    return path


def flip_a_byte(data: bytes) -> bytes:
    """One byte of the pickle (past the header) changed."""
    middle = len(data) * 2 // 3
    return data[:middle] + bytes([data[middle] ^ 0x20]) + data[middle + 1 :]


def swap_in_another_entry(path):
    """A whole, valid entry of another key copied over this one."""
    other = "0" * 64
    payload = unwrap_entry(path.stem, path.read_bytes(), AOT_ENTRY)
    path.write_bytes(wrap_entry(other, payload, AOT_ENTRY))


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2]),
        lambda path: path.write_bytes(flip_a_byte(path.read_bytes())),
        swap_in_another_entry,
    ],
    ids=["truncated", "altered", "swapped"],
)
def test_a_bad_entry_is_traced_again_with_one_warning_and_replaced(own_cache, monkeypatch, damage):
    assert_right(train_once())
    damage(only_entry(own_cache))
    as_new_process(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_right(train_once())
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "corrupt AOTAutograd result cache entry" in messages[0]
    assert counters["aot_autograd"]["autograd_cache_miss"] == 1
    assert counters["aot_autograd"]["autograd_cache_saved"] == 1

    as_new_process(monkeypatch)  # replaced by a whole entry
    assert_right(train_once())
    assert counters["aot_autograd"]["autograd_cache_hit"] == 1


def test_an_entry_nobody_else_may_write_is_the_only_kind_read(own_cache, monkeypatch):
    train_once()
    only_entry(own_cache).chmod(0o666)  # others may write it: it could be anyone's code
    as_new_process(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_right(train_once())
    assert any("others may write it" in str(w.message) for w in caught)
    assert counters["aot_autograd"]["autograd_cache_miss"] == 1


def test_cache_off_writes_nothing(own_cache, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_CACHE", "0")
    assert_right(train_once())
    assert not (own_cache / "aot").exists()
    assert "autograd_cache_saved" not in counters["aot_autograd"]


def test_pytorchs_own_entries_and_storage_are_left_alone(own_cache):
    from torch._functorch._aot_autograd import autograd_cache, graph_compile
    from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache

    before = (autograd_cache.autograd_cache_key, AOTAutogradCache.__dict__["_get_tmp_dir_for_key"])
    train_once()
    after = (autograd_cache.autograd_cache_key, AOTAutogradCache.__dict__["_get_tmp_dir_for_key"])
    assert before == after  # the key and the storage are ours only inside our backend

    def inductors():  # a compiled graph of Inductor's, not in PyTorch's FX cache
        pass

    ours = aot_cache.NeuronOutputCode("forward", torch.fx.symbolic_trace(torch.nn.ReLU()), print)
    assert graph_compile._should_save_cache(inductors) is False  # PyTorch's answer
    assert graph_compile._should_save_cache(ours) is True
