"""Golden IR of dynamic programs: compiled once with ``?`` dims, refined per shape.

Each graph is exported with a ``Dim`` and goes once through the front half
(``compiler.dynamic.compile_dynamic_graph``); its stored StableHLO
(``DynamicProgram.text``) is FileChecked for the ``?`` dims and the shape arithmetic
in plain StableHLO. ``DynamicProgram.specialize`` then compiles it for two concrete
shapes; each refined program (the ``stablehlo`` artifact) is FileChecked for static
types and folded shape constants, its ``optimized`` artifact for no ``dynamic_*`` op
left, and its NEFF is run against PyTorch eager.

``golden_dynamic/<graph>.check`` holds every check of one graph, one FileCheck prefix
per program (``DYNAMIC``, then one per shape). The CHECK lines are written by hand, as
in ``tests/passes/golden``: there is nothing to regenerate.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from torchneuron.compiler import dynamic


def _settled() -> dict:
    """``dynamic.stats()`` once the background thread has built what calls submitted
    (a new shape runs interpreted while it specializes there)."""
    from torchneuron.compiler import specialize_later

    specialize_later.drain()
    return dynamic.stats()


GOLDEN = Path(__file__).parent / "golden_dynamic"


class _SeqReshape(nn.Module):
    def forward(self, x):
        b, s, d = x.shape
        return (x.reshape(b * s, d) * 2).sum(0)


def _mlp_batch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 8), nn.ReLU())
    return model, torch.randn(4, 16), {0: torch.export.Dim("batch", min=2, max=64)}


def _seq_reshape():
    return _SeqReshape(), torch.randn(2, 5, 16), {1: torch.export.Dim("seq", min=2, max=128)}


# graph -> build, the input's shape (None: the symbol), the symbol's range, the two sizes
# it is specialized to and the check prefix of a refined program (+ size)
CASES = {
    "mlp_batch": (_mlp_batch, (None, 16), (2, 64), (4, 7), "BATCH"),
    "seq_reshape": (_seq_reshape, (2, None, 16), (2, 128), (5, 9), "SEQ"),
}


def _shape(graph: str, size: int) -> tuple[int, ...]:
    return tuple(size if d is None else d for d in CASES[graph][1])


def _prefix(graph: str, size: int) -> str:
    return f"{CASES[graph][4]}{size}"


def _filecheck(check: Path, prefix: str, text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "filecheck"), "--check-prefix", prefix, str(check)],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )


def _assert_checks(check: Path, prefix: str, text: str) -> None:
    completed = _filecheck(check, prefix, text)
    assert completed.returncode == 0, (
        f"FileCheck {check.name} --check-prefix {prefix} failed:\n"
        f"{completed.stdout}{completed.stderr}\n--- program ---\n{text}"
    )


def _assert_mismatch(check: Path, prefix: str, text: str) -> None:
    # exit status 1: a check did not match (2 would be a broken check file or prefix)
    completed = _filecheck(check, prefix, text)
    assert completed.returncode == 1, (prefix, completed.returncode, completed.stderr)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Per graph: the model, the DynamicProgram and {size: CompiledGraph}."""
    from torchneuron.compiler.exported import exported_graph

    built = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHNEURON_NO_FALLBACK", "1")
        # specialized here, not loaded from an earlier run's disk cache: the refined
        # programs' artifacts are what the goldens read
        patch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        dynamic.reset_stats()
        for graph, (build, _shape_spec, _range, sizes, _prefix_name) in CASES.items():
            model, example, dims = build()
            exported = torch.export.export(model, (example,), dynamic_shapes=(dims,))
            g = exported_graph(exported)
            program, size_inputs = dynamic.compile_dynamic_graph(
                g.graph_module,
                name=graph,
                weights=g.weights,
                weight_sources=g.weight_sources,
                output_names=g.output_names,
            )
            assert size_inputs == []
            compiled = {n: program.specialize([_shape(graph, n)]) for n in sizes}
            built[graph] = (model, program, compiled)
        stats = _settled()
    assert stats["front_half"] == len(CASES)  # once per graph, not per shape
    assert stats["specializations"] == 2 * len(CASES)
    assert stats["per_shape_front_half"] == 0
    return built


@pytest.mark.parametrize("graph", sorted(CASES))
def test_stored_dynamic_program(programs, graph):
    _model, program, _compiled = programs[graph]
    _build, shape, bounds, _sizes, _prefix_name = CASES[graph]
    (spec,) = program.signature.inputs
    axis = shape.index(None)
    symbol = spec["shape"][axis]
    assert isinstance(symbol, str) and program.signature.symbols == {symbol: bounds}
    assert spec["shape"] == [symbol if d is None else d for d in shape]
    _assert_checks(GOLDEN / f"{graph}.check", "DYNAMIC", program.text)
    # stored in one NEFF and read back: the same program, signature and outputs, which
    # the same checks accept
    again = dynamic.DynamicProgram.from_neff(program.to_neff())
    assert again.text == program.text and again.signature == program.signature
    assert again.output_names == list(program.output_names)
    assert again.output_count == program.output_count
    _assert_checks(GOLDEN / f"{graph}.check", "DYNAMIC", again.text)


@pytest.mark.parametrize(
    "graph,size", [(g, n) for g in sorted(CASES) for n in CASES[g][3]], ids=str
)
def test_refined_program(programs, graph, size):
    from torchneuron.runtime import load_neff

    model, program, compiled = programs[graph]
    result = compiled[size]
    assert result.inputs[0]["shape"] == list(_shape(graph, size))
    check = GOLDEN / f"{graph}.check"
    _assert_checks(check, _prefix(graph, size), result.artifacts["stablehlo"])
    _assert_checks(check, f"OPT{size}", result.artifacts["optimized"])
    x = torch.randn(*_shape(graph, size), generator=torch.Generator().manual_seed(size))
    (out,) = load_neff(result.neff).execute([x.numpy()])
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(out), model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("graph", sorted(CASES))
def test_checks_fail_on_the_wrong_shape(programs, graph):
    # The checks pin the shapes: each refined program fails the other size's checks and
    # the dynamic ones, and the stored program fails every refined check.
    _model, program, compiled = programs[graph]
    check = GOLDEN / f"{graph}.check"
    first, second = CASES[graph][3]
    for mine, other in ((first, second), (second, first)):
        refined = compiled[mine].artifacts["stablehlo"]
        _assert_mismatch(check, _prefix(graph, other), refined)
        _assert_mismatch(check, "DYNAMIC", refined)
        _assert_mismatch(check, f"OPT{other}", compiled[mine].artifacts["optimized"])
        _assert_mismatch(check, _prefix(graph, mine), program.text)
        _assert_mismatch(check, f"OPT{mine}", program.text)
