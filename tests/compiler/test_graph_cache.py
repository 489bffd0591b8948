"""Compiled graphs on disk: a graph compiled by an earlier process is loaded, not
compiled again, and equals a fresh compile; a bad entry is a miss with one warning."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from torchneuron.compiler import graph_cache
from torchneuron.compiler.graph_cache import GRAPH_ENTRY, GraphCache
from torchneuron.compiler.pipeline import clear_memory_cache, compile_graph
from torchneuron.runtime.cache_entry import unwrap_entry, wrap_entry
from torchneuron.runtime.disk_cache import default_cache

# What a hit must reproduce (stage_seconds, artifacts, schedule: the compile's own record)
SAME = (
    "name", "target", "neff", "inputs", "weights", "outputs", "output_count",
    "none_outputs", "constant_outputs", "checks", "takes_random_key",
)  # fmt: skip


@pytest.fixture(autouse=True)
def own_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHNEURON_CACHE", raising=False)
    clear_memory_cache()
    yield
    clear_memory_cache()


def graph():
    def f(x, y):
        return (torch.relu(x @ y) + 1, None, x.shape[0] * 2, x.sum(0))

    x, y = torch.randn(4, 3), torch.randn(3, 5)
    return make_fx(f)(x, y), [x, y]


def compile_again():
    gm, inputs = graph()
    return compile_graph(gm, inputs, name="g")


def only_entry():
    (path,) = default_cache(GraphCache).disk_entries()
    return path


def test_a_new_process_loads_the_graph_instead_of_compiling_it():
    fresh = compile_again()
    assert not fresh.cache_hit and fresh.stage_seconds
    clear_memory_cache()  # what a new process starts with
    loaded = compile_again()
    assert loaded.cache_hit and not loaded.stage_seconds
    for field in SAME:
        assert getattr(loaded, field) == getattr(fresh, field), field
    assert loaded.none_outputs == (1,) and loaded.constant_outputs == {2: 8}


def test_a_hit_reads_its_neff_once_with_its_checks(monkeypatch):
    """The disk cache's check decodes the entry (every NEFF check included); the load
    takes that decoding instead of reading the NEFF a second time."""
    import torchneuron.neff

    fresh = compile_again()
    clear_memory_cache()
    reads = []
    real = torchneuron.neff.read_neff

    def counted(data, **keywords):
        reads.append(len(data))
        return real(data, **keywords)

    monkeypatch.setattr(torchneuron.neff, "read_neff", counted)
    loaded = compile_again()
    assert loaded.cache_hit and reads == [len(fresh.neff)]
    assert (loaded.name, loaded.neff, loaded.outputs) == ("g", fresh.neff, fresh.outputs)


def rewrite_facts(path, **changes):
    payload = unwrap_entry(path.stem, path.read_bytes(), GRAPH_ENTRY)
    line, neff = payload.split(b"\n", 1)
    facts = {**json.loads(line), **changes}
    path.write_bytes(wrap_entry(path.stem, json.dumps(facts).encode() + b"\n" + neff, GRAPH_ENTRY))


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(path.read_bytes()[:-10]),  # truncated
        lambda path: rewrite_facts(path, output_count=-1),
        lambda path: rewrite_facts(path, none_outputs=[99]),
        lambda path: rewrite_facts(path, takes_random_key="yes"),
        lambda path: rewrite_facts(path, output_count=1),  # fewer than the NEFF's outputs
    ],
    ids=["truncated", "negative count", "none out of range", "flag", "count too small"],
)
def test_a_bad_entry_is_compiled_again_with_one_warning(damage):
    fresh = compile_again()
    damage(only_entry())
    clear_memory_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = compile_again()
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "corrupt compiled graph cache entry" in messages[0]
    assert not again.cache_hit
    assert dataclasses.replace(again, stage_seconds={}).neff == fresh.neff
    clear_memory_cache()
    assert compile_again().cache_hit  # replaced by a whole entry


def test_another_request_is_another_entry():
    compile_again()
    gm, inputs = graph()
    compile_graph(gm, inputs, name="other name")
    assert len(default_cache(GraphCache).disk_entries()) == 2


def test_a_graph_not_compiled_to_a_neff_is_not_kept():
    gm, inputs = graph()
    compile_graph(gm, inputs, name="g", stop_after="optimized")
    assert default_cache(GraphCache).disk_entries() == []
    assert graph_cache.load("00" * 32, "g", "trn2") is None


def test_a_damaged_front_half_is_lowered_again_with_one_warning(monkeypatch):
    """A whole entry whose dynamic NEFF holds another program than its signature says is
    refused by DynamicProgram.from_neff's checks, lowered again and replaced."""
    import itertools

    from torchneuron import backend
    from torchneuron.compiler import dynamic
    from torchneuron.compiler.graph_cache import (
        FRONT_HALF_ENTRY,
        FrontHalfCache,
        decode_front_half,
        encode_front_half,
    )
    from torchneuron.neff import read_neff, write_neff

    monkeypatch.setenv("TORCHNEURON_BUCKETS", "off")
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(5, 8)

    def new_process():
        torch._dynamo.reset()
        backend._graph_ids = itertools.count()
        dynamic.reset_stats()
        with torch.no_grad():
            return torch.compile(model, backend="neuron", dynamic=True)(x)

    new_process()
    (path,) = default_cache(FrontHalfCache).disk_entries()
    positions, neff_bytes = decode_front_half(
        unwrap_entry(path.stem, path.read_bytes(), FRONT_HALF_ENTRY)
    )
    neff = read_neff(neff_bytes)
    neff.program = b"module {}"  # no @main: not the program the signature describes
    payload = encode_front_half(positions, write_neff(neff))
    path.write_bytes(wrap_entry(path.stem, payload, FRONT_HALF_ENTRY))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = new_process()
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "corrupt front half cache entry" in messages[0]
    assert dynamic.stats()["front_half"] == 1 and dynamic.stats()["disk_front_half"] == 0
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
    new_process()
    assert dynamic.stats()["disk_front_half"] == 1  # the replacement is whole
