"""Shared helpers for runtime tests: hand-written StableHLO programs packed into real NEFFs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from jaxlib.mlir._mlir_libs import _stablehlo as executor_stablehlo
from torch_mlir._mlir_libs import _stablehlo as compiler_stablehlo

from torchneuron.neff import Neff, read_neff, weight_file_path, write_neff
from torchneuron.runtime import reset_runtime
from torchneuron.target.dtypes import lookup, numpy_dtype
from torchneuron.target.topology import ENV_VARS


def tensor_type(shape: Sequence[int], dtype: str) -> str:
    dims = "x".join(str(d) for d in shape)
    return f"tensor<{dims + 'x' if dims else ''}{lookup(dtype).mlir}>"


def portable_artifact(text: str) -> bytes:
    """Serialize MLIR text at the StableHLO version both torch-mlir and jaxlib speak."""
    version = compiler_stablehlo.get_smaller_version(
        compiler_stablehlo.get_current_version(), executor_stablehlo.get_current_version()
    )
    return compiler_stablehlo.serialize_portable_artifact_str(text, version)


def variable(name: str, kind: str, shape: Sequence[int], dtype: str) -> dict:
    entry = {
        "name": name,
        "kind": kind,
        "shape": list(shape),
        "dtype": dtype,
        "size_bytes": math.prod(shape) * numpy_dtype(dtype).itemsize,
    }
    if kind == "weight":
        entry["file"] = weight_file_path(name)
    return entry


def signature(variables: list[dict], checks: Sequence[int] = ()) -> dict:
    """The manifest's signature for ``variables``: inputs, and the outputs that are not
    the run-time checks at positions ``checks`` among the outputs."""
    outputs = [v for v in variables if v["kind"] == "output"]
    return {
        "inputs": [spec(v) for v in variables if v["kind"] == "input"],
        "outputs": [spec(v) for i, v in enumerate(outputs) if i not in checks],
    }


def spec(variable: dict) -> dict:
    return {key: variable[key] for key in ("name", "shape", "dtype")}


def make_neff(
    name: str,
    body: str,
    variables: list[dict],
    weights: dict[str, np.ndarray] | None = None,
    *,
    target: str = "trn2",
    lnc: int = 2,
    roundtrip: bool = True,
) -> Neff:
    """A NEFF whose @main has the input/weight variables as arguments, in order.

    ``body`` is the function body using ``%<name>`` for each argument and ending in a
    ``return`` of the outputs. With ``roundtrip`` the NEFF is written and read back,
    so tests see what a loader sees (header and hash included).
    """
    arguments = [v for v in variables if v["kind"] in ("input", "weight")]
    results = [v for v in variables if v["kind"] == "output"]
    params = ", ".join(f"%{v['name']}: {tensor_type(v['shape'], v['dtype'])}" for v in arguments)
    result_types = ", ".join(tensor_type(v["shape"], v["dtype"]) for v in results)
    text = f"func.func @main({params}) -> ({result_types}) {{\n{body}\n}}\n"
    neff = Neff(
        name=name,
        manifest={
            "target": target,
            "lnc": lnc,
            "name": name,
            "signature": signature(variables),
        },
        definition={"variables": variables, "dma_queues": []},
        program=portable_artifact(text),
        weights=dict(weights or {}),
        num_tpb=1,
        lnc_size=lnc,
    )
    return read_neff(write_neff(neff)) if roundtrip else neff


def binary_neff(
    op: str, dtype: str, shape: Sequence[int] = (2, 3), name: str | None = None
) -> Neff:
    """out = op(x, y) elementwise, e.g. op="add"."""
    t = tensor_type(shape, dtype)
    body = f"  %0 = stablehlo.{op} %x, %y : {t}\n  return %0 : {t}"
    return make_neff(
        name or f"{op}_{dtype}",
        body,
        [
            variable("x", "input", shape, dtype),
            variable("y", "input", shape, dtype),
            variable("out", "output", shape, dtype),
        ],
    )


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    """Every test starts from the default topology with fresh cores."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    reset_runtime()
    yield
    reset_runtime()
