"""A failing case as a runnable Python snippet: inputs, the call, expected vs got."""

from __future__ import annotations

from .cases import Case, FuzzOp


def snippet(case: Case, op: FuzzOp, mode: str) -> str:
    """Source that rebuilds the case's inputs and runs it on the CPU and in ``mode``."""
    lines = [
        "import torch",
        "import torchneuron  # noqa: F401 - registers the neuron device",
        "",
        'nan, inf = float("nan"), float("inf")',
    ]
    if case.default_dtype:
        lines.append(f"torch.set_default_dtype(torch.{case.default_dtype})")
    lines += ["", "", "def inputs(device):"]
    items = "".join(f"{source}, " for source in case.input_sources("device"))
    lines += [f"    return ({items.rstrip(' ')})", "", ""]
    lines += _as_fn(case.source)
    if op.device_source:
        lines += ["", "", "# the fuzzer's self-test runs this on the device instead of fn:"]
        lines += _as_fn(op.device_source, "device_fn")
    device_fn = "device_fn" if op.device_source else "fn"
    lines += ["", "", 'expected = fn(*inputs("cpu"))']
    if mode == "eager":
        lines.append(f'got = {device_fn}(*inputs("neuron"))')
    else:
        lines.append(
            f'got = torch.compile({device_fn}, backend="neuron")(*inputs({case.compile_device!r}))'
        )
    lines += ['print("expected:", expected)', 'print("got:     ", got)']
    return "\n".join(lines) + "\n"


def _as_fn(source: str, name: str = "fn") -> list[str]:
    if source.lstrip().startswith("def "):
        return source.strip().replace("def fn(", f"def {name}(", 1).splitlines()
    return [f"{name} = {source}"]
