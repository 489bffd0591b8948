"""Quick compiles: a long program of small tensors is compiled at XLA's backend
optimization level 0, anything else at XLA's default, decided by the program alone."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.runtime import clear_executable_cache, load_neff, verifier
from torchneuron.runtime.executable_cache import executable_fingerprint
from torchneuron.runtime.program import program_size

from .conftest import make_neff, tensor_type, variable


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHNEURON_XLA_QUICK_COMPILE", raising=False)
    clear_executable_cache()
    verifier.clear_verified_programs()
    yield
    clear_executable_cache()


def chain_neff(ops: int, size: int, name: str):
    """out = x * 1.0001 ** ops + 0.5 * ops, one multiply and one add per step."""
    t = tensor_type((size,), "float32")
    lines = [
        f"  %scale = stablehlo.constant dense<1.0001> : {t}",
        f"  %half = stablehlo.constant dense<0.5> : {t}",
        f"  %v0 = stablehlo.add %x, %half : {t}",
    ]
    for step in range(1, ops // 2):
        lines.append(f"  %m{step} = stablehlo.multiply %v{step - 1}, %scale : {t}")
        lines.append(f"  %v{step} = stablehlo.add %m{step}, %half : {t}")
    lines.append(f"  return %v{ops // 2 - 1} : {t}")
    return make_neff(
        name,
        "\n".join(lines),
        [variable("x", "input", (size,), "float32"), variable("out", "output", (size,), "float32")],
    )


def expected(x: np.ndarray, ops: int) -> np.ndarray:
    value = x.astype(np.float64) + 0.5
    for _ in range(1, ops // 2):
        value = value * np.float32(1.0001) + 0.5
    return value


def run(neff, size: int):
    loaded = load_neff(neff)
    x = np.linspace(-1, 1, size, dtype=np.float32)
    (out,) = loaded.execute([x])
    return loaded.prepared, out, x


def test_program_size_counts_every_op_and_the_largest_result():
    neff = chain_neff(300, 64, "count")
    size = program_size(neff.program, "count")
    # 300 ops of the chain (2 constants, 1 add, 149 multiply-add pairs less one op)
    # plus the return, the function and the module
    assert size.ops == 2 + 1 + 2 * 149 + 3
    assert size.largest_elements == 64


def test_a_long_program_of_small_tensors_compiles_at_level_0_and_is_right():
    prepared, out, x = run(chain_neff(600, 256, "long_small"), 256)
    assert prepared.optimization_level == 0
    np.testing.assert_allclose(out, expected(x, 600), rtol=1e-5)


@pytest.mark.parametrize(
    "ops, size, why",
    [(600, 8192, "a tensor over 4096 elements"), (100, 256, "under 250 ops")],
)
def test_other_programs_keep_xlas_default(ops, size, why):
    prepared, out, x = run(chain_neff(ops, size, f"default_{ops}_{size}"), size)
    assert prepared.optimization_level is None, why
    np.testing.assert_allclose(out, expected(x, ops), rtol=1e-5)


def test_the_switch_turns_quick_compiles_off_and_is_part_of_the_executable_key(monkeypatch):
    quick = executable_fingerprint()
    monkeypatch.setenv("TORCHNEURON_XLA_QUICK_COMPILE", "0")
    assert executable_fingerprint() != quick
    prepared, out, x = run(chain_neff(600, 256, "switched_off"), 256)
    assert prepared.optimization_level is None
    np.testing.assert_allclose(out, expected(x, 600), rtol=1e-5)
