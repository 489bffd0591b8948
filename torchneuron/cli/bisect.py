"""``neuronc bisect model.pt2``: check mode from the command line.

The program (saved with ``torch.export.save``) is compiled for the ``neuron`` device and
run there, and run on the CPU as PyTorch runs it, from the same inputs: the program's
own example inputs, or ``--inputs FILE.pt`` (a tensor, or a tuple or list of them, saved
with ``torch.save``; read with ``weights_only=True``, so the file can hold nothing but
tensors), or random ones of the inputs' shapes (``--seed``). Equal outputs print one
line and exit 0; a difference names the first node wrong by itself, run node by node
(``torchneuron/check.py``), its source line and the max error, and exits 1. With
``--repro-dir`` that node is written as the smallest failing program.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .usage import UsageError


def add_bisect_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("program", help="a program saved with torch.export.save (.pt2)")
    command.add_argument(
        "--inputs",
        metavar="FILE.pt",
        help="the inputs: a tensor or a tuple/list of tensors saved with torch.save "
        "(default: the program's example inputs, else random ones)",
    )
    command.add_argument("--seed", type=int, default=0, help="seed of random inputs (default 0)")
    command.add_argument(
        "--repro-dir", help="write the node found wrong here as a standalone program"
    )


def bisect_command(args) -> int:
    import torch

    from torchneuron.check import checked_graph
    from torchneuron.compiler.exported import load_exported_program
    from torchneuron.device.registration import register
    from torchneuron.errors import NumericsMismatchError

    register()  # the node-by-node runs use the neuron device (idempotent)
    program = load_exported_program(args.program)
    module = program.module()
    inputs = _inputs(args, program, module)
    name = Path(args.program).stem
    # the weights stay where the program keeps them (the CPU): the backend runs the
    # compiled graph on the emulated device from CPU tensors as from neuron ones
    compiled = torch.compile(module, backend="neuron")
    checked = checked_graph(module, compiled, name, {"repro_dir": args.repro_dir})
    try:
        outputs = checked(*inputs)
    except NumericsMismatchError as error:
        print(f"neuronc: {name}: {error}", file=sys.stderr)
        return 1
    count = len(torch.utils._pytree.tree_leaves(outputs))
    print(f"{name}: {count} output(s) equal the CPU's within their dtypes' tolerances")
    return 0


def _inputs(args, program, module) -> list:
    import torch

    if args.inputs:
        path = Path(args.inputs)
        if not path.is_file():
            raise UsageError(f"--inputs {path}: no such file")
        try:
            loaded = torch.load(path, weights_only=True, map_location="cpu")
        except Exception as error:  # torch.load's errors are of many types
            raise UsageError(
                f"--inputs {path}: not tensors saved with torch.save ({type(error).__name__}: "
                f"{' '.join(str(error).split())[:300]})"
            ) from None
        values = list(loaded) if isinstance(loaded, (tuple, list)) else [loaded]
        expected = _placeholder_values(module)
        if len(values) != len(expected):
            raise UsageError(
                f"--inputs {path}: {len(values)} value(s), the program takes {len(expected)}"
            )
        return values
    example = getattr(program, "example_inputs", None)
    if example is not None:
        positional, keywords = example
        if not keywords:
            return list(positional)
    generator = torch.Generator().manual_seed(args.seed)
    return [_random_like(value, generator) for value in _placeholder_values(module)]


def _placeholder_values(module) -> list:
    return [node.meta.get("val") for node in module.graph.find_nodes(op="placeholder")]


def _random_like(value, generator):
    import torch

    if not isinstance(value, torch.Tensor):
        raise UsageError("the program takes a value that is not a tensor; give --inputs")
    if any(not isinstance(size, int) for size in value.shape):
        raise UsageError("the program has symbolic dimensions; give concrete --inputs")
    if value.dtype.is_floating_point or value.dtype.is_complex:
        return torch.randn(value.shape, dtype=value.dtype, generator=generator)
    if value.dtype == torch.bool:
        return torch.randint(0, 2, value.shape, generator=generator).bool()
    return torch.randint(0, 8, value.shape, dtype=value.dtype, generator=generator)
