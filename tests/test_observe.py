"""What the compiler did, in PyTorch's tools: TORCH_LOGS, TORCH_TRACE (+ tlparse), report().

One subprocess runs with ``TORCH_LOGS="+neuron"`` and ``TORCH_TRACE`` (both are read at
``import torch``): its log names each graph's route, stages and cache outcome, and its
trace holds our artifacts, which tlparse lists beside Dynamo's. ``torchneuron.report()``
is checked in this process with a forced recompile and a forced CPU fallback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import torch

import torchneuron
from torchneuron.compiler import observe

SCRIPT = """
import torch, torchneuron
f = torch.compile(lambda x: torch.sin(x) * 2, backend="neuron")
f(torch.randn(4))
torch._dynamo.reset()
f = torch.compile(lambda x: torch.sin(x) * 2, backend="neuron")
f(torch.randn(4))  # the same graph: the compile cache answers
print(torchneuron.report())
"""


def test_torch_logs_and_torch_trace_show_our_stages(tmp_path):
    trace = tmp_path / "trace"
    env = dict(
        os.environ,
        TORCH_LOGS="+neuron",
        TORCH_TRACE=str(trace),
        TORCHNEURON_CACHE_DIR=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stderr
    assert "graph graph0_forward: static route" in log
    assert "cache miss (fx " in log and "neff " in log  # stage timings
    assert "cache hit (memory)" in log
    assert "2 graph(s) compiled for the neuron device" in done.stdout
    (trace_file,) = trace.iterdir()
    text = trace_file.read_text()
    for name in ("neuron_stablehlo", "neuron_optimized", "neuron_compile"):
        assert f'"name": "{name}"' in text, name
    assert "stablehlo.sine" in text  # the program itself, before and after the passes
    out = tmp_path / "tlparse"
    tlparse = os.path.join(os.path.dirname(sys.executable), "tlparse")
    parsed = subprocess.run(
        [tlparse, str(trace_file), "-o", str(out), "--no-browser"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert parsed.returncode == 0, parsed.stderr
    directory = (out / "compile_directory.json").read_text()
    assert "neuron_stablehlo" in directory and "neuron_compile" in directory


def test_report_lists_a_recompile_and_a_fallback_with_reasons(fresh_dynamo, monkeypatch):
    monkeypatch.delenv("TORCHNEURON_NO_FALLBACK", raising=False)
    observe.clear()
    # Dynamo's own switch (monkeypatch would delete the config entry when it undoes)
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        _recompile_and_fall_back()
    report = torchneuron.report()

    assert [c.route for c in report.compiles] == ["static", "static"]
    assert any(
        fn == "scaled" and "size mismatch at index 0. expected 3, actual 6" in reason
        for fn, _, reason in report.recompiles
    ), report.recompiles
    (fallback,) = report.graph_fallbacks
    assert "linalg_eig" in fallback[2]
    text = str(report)
    assert "recompile(s)" in text and "CPU fallback(s)" in text and "linalg_eig" in text


def scaled(x):
    return torch.cos(x) + 1


def _recompile_and_fall_back() -> None:
    f = torch.compile(scaled, backend="neuron")
    f(torch.randn(3))
    f(torch.randn(6))  # a new size, not dynamic: Dynamo recompiles
    g = torch.compile(lambda x: torch.linalg.eigvals(x).real, backend="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g(torch.randn(3, 3))  # no lowering: the graph runs on the CPU
