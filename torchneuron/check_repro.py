"""The smallest failing program check mode found, written out to be run alone.

``write_repro(directory, graph, node, recorder)`` writes, for the one node found wrong:

- ``<graph>_<node>.pt``: the CPU's values of its inputs (``torch.save``);
- ``<graph>_<node>.py``: a standalone script that runs the node on the CPU and on the
  ``neuron`` device from those inputs and prints both and their largest difference
  (exit status 1 when they differ beyond the check's tolerance);
- ``<graph>_<node>.stablehlo.mlir`` and the other stages (``dump_dir`` of
  ``compile_graph``) of the node traced alone, ready for ``neuronc compile --from
  stablehlo``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.node import _get_qualified_name
from torch.utils import _pytree as pytree

from torchneuron.files import write_atomically

_SCRIPT = '''"""Check mode's smallest failing program: node {node} of graph {graph}.

Source line: {source}
Run: python {script}
"""

import sys

import torch

import torchneuron.testing.compare as compare

saved = torch.load({inputs!r}, weights_only=False)


def call(args, kwargs):
{call}


expected = call(saved["args"], saved["kwargs"])
to_neuron = lambda v: v.to("neuron") if isinstance(v, torch.Tensor) else v
args, kwargs = torch.utils._pytree.tree_map(to_neuron, (saved["args"], saved["kwargs"]))
got = call(args, kwargs)
print("cpu:   ", expected)
print("neuron:", got)
try:
    compare.check_close(got, expected)
except compare.Mismatch as mismatch:
    print("differs:", mismatch)
    sys.exit(1)
print("equal")
'''


def _call_text(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return f"    return getattr(args[0], {node.target!r})(*args[1:], **kwargs)"
    name = _get_qualified_name(node.target)
    module, _, attribute = name.rpartition(".")
    return (
        f"    import importlib\n"
        f"    target = getattr(importlib.import_module({module!r}), {attribute!r})\n"
        f"    return target(*args, **kwargs)"
    )


def write_repro(directory: Path, graph: str, node: torch.fx.Node, recorder) -> str:
    """Write the node's repro files into ``directory``; the script's path."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_]", "_", f"{graph}_{node.name}")
    args, kwargs = recorder.fetch_args_kwargs_from_env(node)
    inputs = directory / f"{stem}.pt"
    torch.save({"args": args, "kwargs": kwargs}, inputs)
    script = directory / f"{stem}.py"
    source = node.meta.get("stack_trace", "").strip().splitlines()
    write_atomically(
        script,
        _SCRIPT.format(
            node=node.name,
            graph=graph,
            source=source[-1].strip() if source else "unknown",
            script=script.name,
            inputs=str(inputs),
            call=_call_text(node),
        ).encode(),
    )
    _dump_stages(directory, stem, node, recorder, args, kwargs)
    return str(script)


def _dump_stages(directory: Path, stem: str, node, recorder, args, kwargs) -> None:
    """The node traced alone to ATen and compiled, every stage dumped (best effort: a
    node that does not compile alone still has its script)."""
    from torchneuron.compiler.pipeline import compile_graph
    from torchneuron.lowering import decomposition_table

    leaves, spec = pytree.tree_flatten((args, kwargs))
    positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    def alone(*tensors: torch.Tensor) -> Any:
        filled = list(leaves)
        for position, tensor in zip(positions, tensors):
            filled[position] = tensor
        call_args, call_kwargs = pytree.tree_unflatten(filled, spec)
        return getattr(recorder, node.op)(node.target, call_args, call_kwargs)

    tensors = [leaves[i] for i in positions]
    try:
        gm = make_fx(alone, decomposition_table=decomposition_table())(*tensors)
        compile_graph(gm, tensors, name=stem, dump_dir=directory, use_cache=False)
    except Exception as error:  # the script alone still reproduces the difference
        write_atomically(
            directory / f"{stem}.stages-error.txt",
            f"the node alone did not compile: {type(error).__name__}: {error}\n".encode(),
        )
