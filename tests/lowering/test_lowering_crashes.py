"""Forms that crashed torch-mlir (a segfault, or an endless loop) no longer reach it.

Each check runs in a subprocess: a crash kills the process, which a test in this
one could not report. The lowering rules rewrite the forms (variance of a 0-d input,
softmax of a 0-d input, ...) and give PyTorch's values; what still reaches a pipeline
in such a form is refused with ``UnsupportedOpError`` before torch-mlir runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

FORMS = [
    "torch.var(x)",
    "torch.std(x, 0, keepdim=True)",
    "torch.var_mean(x, correction=0)",
    "torch.std_mean(x, 0, correction=0)",
    "torch.linalg.vector_norm(x, 2, [], keepdim=True)",
    "torch.mean(x, [], keepdim=True)",
    "torch.softmax(x, 0)",
    "torch.log_softmax(x, 0)",
]


def _run(script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCHNEURON_NO_FALLBACK": "1"}
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-c", textwrap.dedent(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_zero_dim_variance_norm_and_softmax_do_not_crash_and_match_pytorch():
    script = f"""
        import torch, torchneuron
        x = torch.tensor(3.0)
        for form in {FORMS!r}:
            fn = eval("lambda x: " + form)
            want = fn(x)
            got = fn(x.to("neuron"))
            compiled = torch.compile(fn, backend="neuron")(x)
            for result in (got, compiled):
                result = [result] if isinstance(result, torch.Tensor) else result
                expected = [want] if isinstance(want, torch.Tensor) else want
                for r, w in zip(result, expected):
                    torch.testing.assert_close(r.cpu(), w, equal_nan=True)
            print("ok", form, flush=True)
    """
    result = _run(script)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-2000:])
    assert result.stdout.count("ok ") == len(FORMS)


CRASHING_OPS = [
    "torch.ops.aten.var.correction(x, None, correction=1)",
    "torch.ops.aten.std.correction(x, [0], correction=0)",
    "torch.ops.aten.sum.dim_IntList(x, [], True)",
    "torch.ops.aten._softmax(x, 0, False)",
]


def test_crashing_forms_reaching_torch_mlir_are_refused_with_unsupported_op_error():
    # the graphs are built without our rules, as torch-mlir's own decompositions could
    script = f"""
        import torch
        from torch.fx.experimental.proxy_tensor import make_fx
        from torchneuron.lowering import UnsupportedOpError, fx_to_torch, torch_to_stablehlo
        for op in {CRASHING_OPS!r}:
            gm = make_fx(eval("lambda x: " + op))(torch.tensor(3.0))
            module = fx_to_torch.import_graph(fx_to_torch.prepare_graph(gm))
            try:
                torch_to_stablehlo.lower_to_torch_backend(module, gm.graph)
                torch_to_stablehlo.lower_to_stablehlo(module, gm.graph)
            except UnsupportedOpError as error:
                print("refused:", error.op, flush=True)
    """
    result = _run(script)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.count("refused:") == len(CRASHING_OPS), result.stdout
