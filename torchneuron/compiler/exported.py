"""Loading ``torch.export`` programs (``.pt2`` files) for compilation.

An exported program's parameters, buffers and lifted constants become NEFF
weights, so the compiled program needs only the user's inputs at run time.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

from torchneuron.errors import TorchNeuronError
from torchneuron.lowering import LoweringError, decomposition_table
from torchneuron.lowering.fx_to_torch import INPUT_NAME_META


class ProgramLoadError(TorchNeuronError):
    """A file is not a loadable ``torch.export`` program."""


@dataclass
class ExportedGraph:
    graph_module: torch.fx.GraphModule
    weights: dict[str, torch.Tensor]  # placeholder name -> value
    weight_sources: dict[str, str]  # placeholder name -> parameter/buffer FQN
    output_names: list[str]

    def symbolic_inputs(self) -> list[str]:
        """The user inputs with a symbolic dimension (exported with ``Dim``s): a graph
        with any compiles to one dynamic program (``compiler/dynamic.py``)."""
        found = []
        for node in self.graph_module.graph.nodes:
            value = node.meta.get("val") if node.op == "placeholder" else None
            if node.name in self.weights or not isinstance(value, torch.Tensor):
                continue
            if any(not isinstance(dim, int) for dim in value.shape):
                found.append(node.name)
        return found


def load_exported_program(path: str | Path) -> ExportedProgram:
    """The program saved at ``path``; ProgramLoadError naming the file if it is not one."""
    path = Path(path)
    if path.is_dir():
        raise ProgramLoadError(f"{path}: is a folder, not a torch.export program (.pt2 file)")
    if not path.exists():
        raise ProgramLoadError(f"{path}: no such file")
    try:
        is_zip = zipfile.is_zipfile(path)
    except OSError as error:
        raise ProgramLoadError(f"{path}: cannot read ({error.strerror or error})") from None
    # torch.export.load logs a traceback of its own for a file that is no archive.
    if not is_zip:
        raise ProgramLoadError(
            f"{path}: not a torch.export program saved with torch.export.save (not a zip archive)"
        )
    with _torch_export_log_captured() as logged:
        try:
            return torch.export.load(str(path))
        except MemoryError:
            raise
        except Exception as exc:
            # torch logs the real cause, then raises "check the warnings above".
            cause = logged[-1] if logged else exc
            raise ProgramLoadError(
                f"{path}: not a torch.export program saved with torch.export.save ({cause})"
            ) from None


@contextlib.contextmanager
def _torch_export_log_captured() -> Iterator[list[BaseException]]:
    """Keep torch.export's logger from printing while a program loads; collect the
    exceptions it logs (its traceback of a failed load) instead."""
    logger = logging.getLogger("torch.export")
    captured: list[BaseException] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info and record.exc_info[1] is not None:
                captured.append(record.exc_info[1])

    saved = logger.handlers[:], logger.propagate
    logger.handlers[:] = [Capture()]
    logger.propagate = False
    try:
        yield captured
    finally:
        logger.handlers[:], logger.propagate = saved


def exported_graph(program: ExportedProgram) -> ExportedGraph:
    """Decompose ``program`` to the ATen ops we lower, and name its parts."""
    with warnings.catch_warnings():
        # torch's copy of the program's tree specs warns that it uses an API torch
        # deprecated (``isinstance(treespec, LeafSpec)``): nothing a user can act on
        warnings.filterwarnings("ignore", message=r".*LeafSpec.*", category=FutureWarning)
        program = program.run_decompositions(decomposition_table())
    signature = program.graph_signature
    # each input keeps the user's name in the NEFF even where a later copy of the graph
    # renames its node (a node may not shadow a Python builtin: ``input`` -> ``input_1``)
    placeholders = {n.name: n for n in program.graph_module.graph.find_nodes(op="placeholder")}
    for spec in signature.input_specs:
        if spec.kind == InputKind.USER_INPUT and spec.arg.name in placeholders:
            placeholders[spec.arg.name].meta[INPUT_NAME_META] = spec.arg.name
    weights: dict[str, torch.Tensor] = {}
    sources: dict[str, str] = {}
    for spec in signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(spec.arg, TensorArgument):
                raise LoweringError(
                    f"program input {spec.arg} is not a tensor; only tensor inputs are supported"
                )
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            value = program.state_dict.get(spec.target)
            if value is None:
                value = program.constants.get(spec.target)
            if not isinstance(value, torch.Tensor):
                raise LoweringError(
                    f"program {spec.kind.name.lower()} {spec.target} has no tensor value"
                )
            weights[spec.arg.name] = value.detach()
            sources[spec.arg.name] = spec.target
            continue
        raise LoweringError(f"program input kind {spec.kind.name} ({spec.arg}) is not supported")
    output_names = []
    user_index = 0
    for spec in signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT:
            output_names.append(f"output{user_index}")
            user_index += 1
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            output_names.append("updated_" + spec.target.replace(".", "_"))
        else:
            output_names.append(f"{spec.kind.name.lower()}_{len(output_names)}")
    return ExportedGraph(program.graph_module, weights, sources, output_names)
