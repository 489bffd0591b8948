"""An out-of-range index raises PyTorch's kind of error, in both modes, never a value.

StableHLO's gather and scatter clamp (or drop) an index out of range, so without the
run-time checks ``arange(5)[tensor([7])]`` read ``4``. Each case runs with one index
tensor shape, so a bad and a good index reuse one compiled program.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from torchneuron.lowering import checks
from torchneuron.neff import read_neff
from torchneuron.neff.reader import CHECK_ERROR_KINDS
from torchneuron.runtime.errors import CHECK_ERRORS, NeuronCheckError


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    # a CPU fallback would hide a wrong lowering (and raise PyTorch's own error)
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def vector():
    return torch.arange(5.0)


def matrix():
    return torch.arange(10.0).reshape(2, 5)


# name -> (fn(t, i), source, error kind PyTorch raises, bad indices, good indices); every
# fn builds its other operands from t, so it runs on t's device
CASES = {
    "index": (lambda t, i: t[i], vector, IndexError, ([7, 0], [0, -6]), [-1, 4]),
    "index-second-dim": (
        lambda t, i: t[:, i],
        matrix,
        IndexError,
        ([5, 0], [-6, 0]),
        [-5, 4],
    ),
    "index_put": (
        lambda t, i: t.index_put((i,), t.new_ones(2)),
        vector,
        IndexError,
        ([5, 0], [-6, 0]),
        [-1, 2],
    ),
    "index_put-accumulate": (
        lambda t, i: t.index_put((i,), t.new_ones(2), accumulate=True),
        vector,
        IndexError,
        ([5, 0], [-6, 0]),
        [-1, -1],
    ),
    "index_select": (
        lambda t, i: t.index_select(0, i),
        vector,
        IndexError,
        ([5, 0], [-1, 0]),
        [4, 0],
    ),
    "take": (lambda t, i: torch.take(t, i), matrix, IndexError, ([10, 0], [-11, 0]), [-10, 9]),
    "put": (
        lambda t, i: t.put(i, t.new_ones(2)),
        matrix,
        IndexError,
        ([10, 0], [-11, 0]),
        [-1, 3],
    ),
    "index_add": (
        lambda t, i: t.index_add(0, i, t.new_ones(2)),
        vector,
        IndexError,
        ([5, 0], [-1, 0]),
        [4, 4],
    ),
    "index_copy": (
        lambda t, i: t.index_copy(0, i, t.new_ones(2)),
        vector,
        IndexError,
        ([5, 0], [-1, 0]),
        [4, 1],
    ),
    "index_fill": (
        lambda t, i: t.index_fill(0, i, 9.0),
        vector,
        IndexError,
        ([5, 0], [-6, 0]),
        [-1, 2],
    ),
    "gather": (
        lambda t, i: torch.gather(t, 1, i.reshape(1, 2).expand(2, 2)),
        matrix,
        RuntimeError,
        ([5, 0], [-1, 0]),
        [4, 0],
    ),
    "scatter": (
        lambda t, i: t.scatter(1, i.reshape(1, 2), 7.0),
        matrix,
        RuntimeError,
        ([5, 0], [-1, 0]),
        [4, 0],
    ),
    "scatter_add": (
        lambda t, i: t.scatter_add(1, i.reshape(1, 2), t.new_ones(1, 2)),
        matrix,
        RuntimeError,
        ([5, 0], [-1, 0]),
        [4, 4],
    ),
    "scatter_reduce": (
        lambda t, i: t.scatter_reduce(1, i.reshape(1, 2), t.new_ones(1, 2), "amax"),
        matrix,
        RuntimeError,
        ([5, 0], [-1, 0]),
        [4, 0],
    ),
    "embedding": (
        lambda t, i: F.embedding(i, t.reshape(5, 2)),
        matrix,
        IndexError,
        ([5, 0], [-1, 0]),
        [4, 0],
    ),
    "embedding_bag": (
        lambda t, i: F.embedding_bag(i, t.reshape(5, 2), i.new_zeros(1)),
        matrix,
        RuntimeError,
        ([5, 0], [-1, 0]),
        [4, 0],
    ),
}


def assert_raises_like_pytorch(call, kind, *args):
    with pytest.raises(NeuronCheckError) as caught:
        call(*args)
    # the kind PyTorch raises: an IndexError, or a RuntimeError that is no IndexError
    assert isinstance(caught.value, kind)
    if kind is RuntimeError:
        assert not isinstance(caught.value, IndexError)


@pytest.mark.parametrize("case", CASES)
def test_out_of_range_index_raises_pytorch_error_kind_in_both_modes(case):
    fn, source, kind, bad, good = CASES[case]
    t = source()
    compiled = torch.compile(fn, backend="neuron")
    on_device = t.to("neuron")
    for indices in bad:
        i = torch.tensor(indices)
        with pytest.raises(kind):  # what PyTorch itself raises
            fn(t, i)
        assert_raises_like_pytorch(compiled, kind, t, i)
        assert_raises_like_pytorch(fn, kind, on_device, i.to("neuron"))
    # in range (negative ones included): exactly PyTorch's values, same programs
    i = torch.tensor(good)
    expected = fn(t, i)
    assert torch.equal(compiled(t, i), expected)
    assert torch.equal(fn(on_device, i.to("neuron")).cpu(), expected)


def test_index_computed_inside_compiled_graph_raises_at_run_time():
    def fn(t, i):
        return t[(i * 3) % 8] + 1  # the index exists only inside the program

    compiled = torch.compile(fn, backend="neuron")
    t = torch.arange(5.0)
    assert torch.equal(compiled(t, torch.tensor([1])), fn(t, torch.tensor([1])))
    with pytest.raises(IndexError):
        compiled(t, torch.tensor([2]))  # (2 * 3) % 8 = 6: out of bounds
    assert torch.equal(compiled(t, torch.tensor([0])), fn(t, torch.tensor([0])))


def test_gradient_through_checked_gather_matches_pytorch():
    def fn(t, i):
        return (torch.gather(t, 1, i) * 2).sum()

    t = torch.rand(2, 5, requires_grad=True)
    i = torch.tensor([[4, 0], [1, 1]])
    torch.compile(fn, backend="neuron")(t, i).backward()
    got, t.grad = t.grad, None
    fn(t, i).backward()
    assert torch.equal(got, t.grad)


def test_compiled_neff_records_its_checks_in_the_manifest():
    from torch.fx.experimental.proxy_tensor import make_fx

    from torchneuron.compiler.pipeline import compile_graph
    from torchneuron.lowering import decomposition_table

    t, i = torch.arange(5.0), torch.tensor([1, 2])
    gm = make_fx(lambda t, i: t.index_select(0, i) * 2, decomposition_table())(t, i)
    compiled = compile_graph(gm, [t, i], name="checked")
    manifest = read_neff(compiled.neff).manifest
    assert manifest["checks"] == [
        {"output": 1, "error": "IndexError", "message": "index out of range in self"}
    ]
    assert compiled.checks == manifest["checks"]
    assert [o["name"] for o in manifest["signature"]["outputs"]] == ["output0"]
    assert len(compiled.outputs) == 1


def test_graph_without_indexing_has_no_checks_field():
    from torch.fx.experimental.proxy_tensor import make_fx

    from torchneuron.compiler.pipeline import compile_graph
    from torchneuron.lowering import decomposition_table

    t = torch.arange(5.0)
    gm = make_fx(lambda t: t * 2, decomposition_table())(t)
    assert "checks" not in read_neff(compile_graph(gm, [t], name="plain").neff).manifest


def test_error_kinds_agree_across_layers():
    assert set(checks.ERROR_KINDS) == set(CHECK_ERROR_KINDS) == set(CHECK_ERRORS)


def test_gathering_from_a_zero_size_dim_raises_instead_of_aborting(tmp_path):
    # torch-mlir aborted the process (SIGABRT) on a gather from a zero-size dim: run the
    # case in a fresh interpreter so a crash fails this test only.
    import subprocess
    import sys

    code = (
        "import torch, torchneuron\n"
        "a = torch.zeros(2, 0)\n"
        "b = torch.tensor([[-1], [3]])\n"
        "for fn in (lambda a, b: torch.gather(a, 1, b),\n"
        "           lambda a, b: torch.index_select(a, 1, b.flatten().abs())):\n"
        "    try:\n"
        "        torch.compile(fn, backend='neuron')(a, b)\n"
        "    except RuntimeError as error:\n"
        "        print(type(error).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TORCHNEURON_CACHE_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["NeuronCheckError", "NeuronIndexError"]
