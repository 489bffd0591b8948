"""A dynamic program in one NEFF: what ``DynamicProgram.to_neff`` and ``from_neff`` call.

The layout is the NEFF format's (``torchneuron/neff/dynamic.py``, docs/neff-format.md
section 3.1): the manifest's ``dynamic`` entry (symbolic signature, guards, outputs),
the StableHLO text with ``?`` dimensions as the program member, the weights as in any
NEFF. The reader checks the entry; ``program_fields`` parses the program, which needs
MLIR, and checks it against the entry (``_check_stored_program``), so a hostile program
is one ``NeffError`` line, never a crash or a wrong answer.

The program's class (``dynamic_program.py``) calls this module and is not imported
by it: ``dynamic_neff`` takes any object with the program's fields and gives back the
fields of a stored one.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np
from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.neff import Neff, NeffError, read_neff, write_neff
from torchneuron.neff import dynamic as neff_dynamic
from torchneuron.neff.container import MANIFEST_PATH, PROGRAM_PATH
from torchneuron.neff.schema import MANIFEST_FORMAT
from torchneuron.neff.weights import weight_dtype_name

from . import program, stages
from .compilation import logical_core_size
from .dynamic_signature import SymbolicSignature, arguments_of, numpy_dtype_name, shape_text
from .versions import build_version, dependency_versions


def dynamic_neff(graph) -> bytes:
    """One NEFF holding the ``DynamicProgram`` ``graph`` with its symbolic signature,
    guards and weights (``neff/dynamic.py`` gives the layout); ``program_fields`` reads
    it back."""

    arguments, _ = arguments_of(ir.Module.parse(graph.text, stages.make_context()))
    weights = [name for kind, name in arguments if kind == "weight"]
    lnc = logical_core_size(graph.target)
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": graph.name,
        "signature": {"inputs": [], "outputs": []},
        "weights": [
            {
                "name": name,
                "shape": list(graph.weights[name].shape),
                "dtype": weight_dtype_name(graph.weights[name].dtype),
                "source": graph.weight_sources.get(name, name),
            }
            for name in weights
        ],
        "target": graph.target,
        "lnc": lnc,
        "versions": dependency_versions(),
        "source_hash": hashlib.sha256(graph.text.encode()).hexdigest(),
        "dynamic": {
            "format": neff_dynamic.PROGRAM_FORMAT,
            "signature": graph.signature.to_json(),
            "guards": list(graph.signature.guards),
            "outputs": {
                "count": graph.output_count,
                "names": list(graph.output_names) if graph.output_names is not None else None,
                "none": list(graph.none_outputs),
                "constants": {str(i): v for i, v in graph.constant_outputs.items()},
                "sizes": {str(i): text for i, text in graph.size_outputs.items()},
            },
        },
    }
    if graph.pipeline is not None:
        manifest["pipeline"] = graph.pipeline
    neff = Neff(
        name=graph.name,
        manifest=manifest,
        definition={"dma_queues": []},
        program=graph.text.encode(),
        weights={name: graph.weights[name] for name in weights},
        lnc_size=lnc,
        build_version=build_version(),
    )
    return write_neff(neff)


def program_fields(
    source: Any, *, target: str | None = None, where: str | None = None
) -> dict[str, Any]:
    """The fields of the ``DynamicProgram`` a NEFF holds (a ``Neff``, NEFF bytes or a path), checked as
    input from strangers: the reader checks the manifest's ``dynamic`` entry, this
    parses the program and checks it against that entry. Every failure is one
    ``NeffError`` line naming the field (after ``where``, e.g. the file)."""
    if isinstance(source, (str, os.PathLike)) and where is None:
        where = str(source)
    neff = source if isinstance(source, Neff) else read_neff(source)  # names the file
    try:
        try:
            return _program_of(neff, target)
        except ValueError as error:  # a Neff built in memory, not checked by the reader
            raise NeffError(f"{MANIFEST_PATH}: dynamic is malformed: {error}") from None
    except NeffError as error:
        raise NeffError(f"{where}: {error}" if where else str(error)) from None


def _program_of(neff: Neff, target: str | None) -> dict[str, Any]:
    entry = neff.manifest.get("dynamic")
    if entry is None:
        raise NeffError(
            f"NEFF {neff.name!r} holds a static program, not a dynamic one "
            "(its manifest has no dynamic entry)"
        )
    neff_dynamic.check_dynamic(entry)  # the reader did; a Neff built in memory too
    text = neff_dynamic.check_program_text(neff.program)
    inputs, symbols = neff_dynamic.parse_signature(entry["signature"])
    signature = SymbolicSignature(inputs, symbols, tuple(entry["guards"]))
    outputs = entry["outputs"]
    try:
        module = ir.Module.parse(text, stages.make_context())
    except Exception as error:  # the bindings raise a generic MLIRError
        detail = " ".join(str(error).split())[:300]
        raise NeffError(f"{PROGRAM_PATH}: not StableHLO text ({detail})") from None
    try:
        _check_stored_program(module, signature, neff.weights, outputs)
    except (ValueError, TorchNeuronError) as error:
        raise NeffError(f"{PROGRAM_PATH}: {error}") from None
    manifest_weights = neff.manifest.get("weights", [])
    sources = {w["name"]: w.get("source", w["name"]) for w in manifest_weights}
    count = outputs["count"]
    return dict(
        name=neff.manifest.get("name", neff.name),
        target=target or neff.manifest.get("target", "trn2"),
        pipeline=neff.manifest.get("pipeline"),
        text=text,
        signature=signature,
        weights={k: np.asarray(v) for k, v in neff.weights.items()},
        weight_sources=sources,
        output_names=outputs["names"],
        output_count=count,
        none_outputs=tuple(outputs["none"]),
        constant_outputs={int(k): v for k, v in outputs["constants"].items()},
        size_outputs={int(k): v for k, v in outputs["sizes"].items()},
    )


def _check_stored_program(
    module: ir.Module, signature: SymbolicSignature, weights: dict, outputs: dict
) -> None:
    """A stored dynamic program agrees with its entry: @main's marked arguments are the
    signature's inputs (names, ranks, static sizes, dtypes) and the NEFF's weights
    (shapes, dtypes), its results what the entry says; its ops are StableHLO ops the
    runtime runs once static, or the dynamic ops refinement makes static."""
    from torchneuron.runtime.verifier_allowlist import ALLOWED_OPS, EXCLUDED_OPS
    from torchneuron.target import dtypes

    if program.find_main(module) is None:
        raise ValueError("has no func.func @main")
    dynamic_ops = {name for name, why in EXCLUDED_OPS.items() if "dynamic" in why}
    refused: set[str] = set()

    def visit(op) -> ir.WalkResult:
        name = op.operation.name
        if name == "stablehlo.custom_call" or (
            name not in ALLOWED_OPS and name not in dynamic_ops and name != "builtin.module"
        ):
            refused.add(name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if refused:
        raise ValueError(f"holds ops a dynamic program may not: {', '.join(sorted(refused))}")
    func = program.main_function(module)
    if "arg_attrs" not in func.attributes:
        raise ValueError("@main's arguments are not marked neuron.input / neuron.weight")
    try:
        arguments, _ = arguments_of(module)
    except (KeyError, ValueError):
        raise ValueError("@main's arguments are not marked neuron.input / neuron.weight") from None
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = iter(signature.inputs)
    used_weights = set()
    for (kind, name), mlir_type in zip(arguments, function_type.inputs):
        try:
            tensor_type = ir.RankedTensorType(mlir_type)
        except ValueError:
            raise ValueError(
                f"@main argument {name!r} is {mlir_type}, not a ranked tensor"
            ) from None
        row = dtypes.from_mlir(str(tensor_type.element_type))
        dtype = row.name if row is not None else str(tensor_type.element_type)
        shape = [
            None if tensor_type.is_dynamic_dim(i) else d for i, d in enumerate(tensor_type.shape)
        ]
        if kind == "weight":
            array = weights.get(name)
            if array is None:
                raise ValueError(f"@main takes weight {name!r}, which the NEFF does not hold")
            if list(array.shape) != shape or numpy_dtype_name(array) != dtype:
                raise ValueError(
                    f"@main takes weight {name!r} as {dtype}{shape}, the NEFF holds "
                    f"{numpy_dtype_name(array)}{list(array.shape)}"
                )
            used_weights.add(name)
            continue
        spec = next(inputs, None)
        if spec is None or spec["name"] != name:
            raise ValueError(
                f"@main input {name!r} is not the signature's next input "
                f"{spec['name'] if spec else 'none'!r}"
            )
        if spec["dtype"] != dtype or len(spec["shape"]) != len(shape):
            raise ValueError(
                f"@main input {name!r} is {dtype} of rank {len(shape)}, the signature says "
                f"{spec['dtype']}{shape_text(spec['shape'])}"
            )
        for axis, (dim, size) in enumerate(zip(spec["shape"], shape)):
            if isinstance(dim, int) and size is not None and dim != size:
                raise ValueError(
                    f"@main input {name!r} dimension {axis} is {size}, the signature says {dim}"
                )
    if next(inputs, None) is not None:
        raise ValueError("@main takes fewer inputs than the signature lists")
    if len(arguments) != len(function_type.inputs):
        raise ValueError("@main's argument marks do not match its arguments")
    unused = set(weights) - used_weights
    if unused:
        raise ValueError(f"the NEFF holds weights @main does not take: {sorted(unused)[:5]}")
    computed = outputs["count"] - len(outputs["none"]) - len(outputs["constants"])
    computed -= len(outputs["sizes"])
    # run-time checks (neuron.check results) follow the graph's outputs; no entry counts them
    results = len(function_type.results) - len(program.checks_of(module))
    if results != computed:
        raise ValueError(
            f"@main returns {results} results besides its run-time checks, the manifest's "
            f"dynamic outputs say {computed}"
        )
    if outputs["names"] is not None and len(outputs["names"]) not in (computed, outputs["count"]):
        raise ValueError("the manifest's dynamic output names do not match @main's results")
