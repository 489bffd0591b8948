"""Golden-IR checks: has what runs on the chip changed?

A *golden* is a folder of normalized text files, one per stage of one
program (named by the stage table's golden column, compiler/stages.py), plus a
summary of its NEFF:

    fx.txt          the ATen FX graph the lowering starts from
    torch.mlir      torch-mlir's backend-contract torch dialect
    stablehlo.mlir  StableHLO as lowered
    optimized.mlir  StableHLO after the pass pipeline (what the NEFF holds)
    neff.json       the NEFF's signature, weights (name/dtype/shape), variables,
                    target, LNC and pass pipeline

Normalization makes the files depend on the compiled program only: source
locations, absolute paths, timestamps, tool versions, hashes over unnormalized
text and inline weight data are dropped, so the files are identical across runs,
machines and checkouts and differ exactly when the program does.

    neuronc golden update model.pt2 --dir goldens/model
    neuronc golden check  model.pt2 --dir goldens/model

From Python, ``check``/``update`` take an ``ExportedProgram``, a ``.pt2`` path or
a module with example inputs; ``assert_golden`` is the pytest helper: it raises
``GoldenMismatch`` (an ``AssertionError``) carrying the unified diffs, and
refreshes the files instead only when ``TORCHNEURON_UPDATE_GOLDENS=1``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from torchneuron import settings
from torchneuron.compiler.stages import TABLE
from torchneuron.errors import TorchNeuronError
from torchneuron.files import atomic_write, output_folder

# Golden file name of each stage, from the stage table (compiler/stages.py).
STAGE_FILES = {stage.name: stage.golden for stage in TABLE}
UPDATE_ENV_VAR = settings.UPDATE_GOLDENS


class GoldenError(TorchNeuronError):
    """A golden check could not be run (no goldens yet, unreadable program, bad options)."""


class GoldenUpdated(UserWarning):
    """Goldens were rewritten on request (``TORCHNEURON_UPDATE_GOLDENS=1``); the message is the diff."""


class GoldenMismatch(TorchNeuronError, AssertionError):
    """The compiled program differs from its goldens; ``str()`` holds the unified diffs."""

    def __init__(self, result: GoldenResult):
        self.result = result
        super().__init__(result.report())


@dataclass
class GoldenResult:
    """Outcome of comparing freshly compiled artifacts with a golden folder.

    ``diffs`` maps a file name to its unified diff (golden -> current) for every
    file that changed, appeared (no golden yet) or disappeared.
    """

    directory: Path
    diffs: dict[str, str] = field(default_factory=dict)
    written: bool = False

    @property
    def ok(self) -> bool:
        return not self.diffs

    def report(self) -> str:
        if self.ok:
            return f"goldens in {self.directory} match ({len(STAGE_FILES)} files)"
        verb = "updated" if self.written else "differ from the compiled program"
        lines = [f"goldens in {self.directory} {verb}: {', '.join(sorted(self.diffs))}"]
        lines += [self.diffs[name] for name in sorted(self.diffs)]
        if not self.written:
            lines.append(
                f"(if the change is intended, refresh with `neuronc golden update ... --dir "
                f"{self.directory}` or {UPDATE_ENV_VAR}=1)"
            )
        return "\n".join(lines)


# -- compiling and normalizing ---------------------------------------------------


def golden_artifacts(
    program: Any,
    example_inputs: Sequence[torch.Tensor] | None = None,
    *,
    name: str = "model",
    target: str = "trn2",
    pipeline: str | None = None,
    weight_digests: bool = False,
) -> dict[str, str]:
    """Compile ``program`` and return ``{file name: normalized text}`` for every stage.

    ``program`` is an ``ExportedProgram``, a path to a ``.pt2`` file, or a module
    (exported here with ``example_inputs``). ``weight_digests`` adds the sha256
    of each weight's data to ``neff.json`` (off by default, so retraining a model
    does not change its goldens; on, a weight change shows too).
    """
    from torchneuron.compiler.exported import exported_graph
    from torchneuron.compiler.pipeline import compile_graph
    from torchneuron.neff import read_neff

    graph = exported_graph(_exported_program(program, example_inputs))
    compiled = compile_graph(
        graph.graph_module,
        name=name,
        target=target,
        pipeline=pipeline,
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        use_cache=False,
    )
    normalizers = {
        "fx": normalize_fx,
        "neff": lambda _: neff_summary(read_neff(compiled.neff), weight_digests),
    }
    texts = {
        STAGE_FILES[name]: normalizers.get(name, normalize_mlir)(compiled.artifacts[name])
        for name in STAGE_FILES
    }
    return texts


def _exported_program(program: Any, example_inputs) -> torch.export.ExportedProgram:
    from torchneuron.compiler.exported import load_exported_program

    if isinstance(program, torch.export.ExportedProgram):
        return program
    if isinstance(program, (str, os.PathLike)):
        return load_exported_program(program)
    if isinstance(program, torch.nn.Module):
        if example_inputs is None:
            raise GoldenError("a module needs example_inputs to be exported for a golden check")
        return torch.export.export(program, tuple(example_inputs))
    raise GoldenError(
        f"expected an ExportedProgram, a .pt2 path or a torch.nn.Module, got "
        f"{type(program).__name__}"
    )


# Comment lines of GraphModule.print_readable carry absolute paths and line numbers.
_FX_COMMENT = re.compile(r"^\s*#")
# MLIR locations, if a printer ever emits them: `loc(...)` suffixes and `#loc` aliases.
_MLIR_LOC_ALIAS = re.compile(r"^#loc\d*\s*=.*$")
_MLIR_LOC_SUFFIX = re.compile(r"\s+loc\((?:[^()]|\([^()]*\))*\)")
# Inline resource blobs are weight data, not program: keep a digest of each.
_MLIR_RESOURCE_BLOB = re.compile(r'^(\s*)([\w.$-]+): "0x([0-9A-Fa-f]+)"(,?)$')


def normalize_fx(text: str) -> str:
    """The FX graph's printout without comments (user file paths and line numbers)."""
    lines = [line.rstrip() for line in text.splitlines() if not _FX_COMMENT.match(line)]
    return _collapse_blank_lines(lines)


def normalize_mlir(text: str) -> str:
    """MLIR text without locations, and with inline resource blobs reduced to a digest."""
    lines = []
    for line in text.splitlines():
        if _MLIR_LOC_ALIAS.match(line):
            continue
        line = _MLIR_LOC_SUFFIX.sub("", line).rstrip()
        blob = _MLIR_RESOURCE_BLOB.match(line)
        if blob:
            indent, key, data, comma = blob.groups()
            digest = hashlib.sha256(bytes.fromhex(data)).hexdigest()[:16]
            line = f'{indent}{key}: "<{len(data) // 2} bytes, sha256 {digest}>"{comma}'
        lines.append(line)
    return _collapse_blank_lines(lines)


def _collapse_blank_lines(lines: list[str]) -> str:
    kept: list[str] = []
    for line in lines:
        if not line and (not kept or not kept[-1]):
            continue
        kept.append(line)
    while kept and not kept[-1]:
        kept.pop()
    return "\n".join(kept) + "\n"


def neff_summary(neff, weight_digests: bool = False) -> str:
    """The parts of a NEFF that describe what runs: JSON with sorted keys.

    Left out on purpose: tool versions and the build string (an upgrade alone must
    not change a golden), the header's hash and uuid and the manifest's
    ``source_hash`` (digests of bytes that hold versions or paths), the program's
    bytecode (its text is ``optimized.mlir``) and the cost estimates (a model of
    the program, not the program).
    """
    import numpy as np

    manifest = neff.manifest
    weights = []
    for entry in manifest.get("weights", []):
        item = {k: entry[k] for k in ("name", "dtype", "shape", "source") if k in entry}
        if weight_digests and entry["name"] in neff.weights:
            data = np.ascontiguousarray(neff.weights[entry["name"]]).tobytes()
            item["sha256"] = hashlib.sha256(data).hexdigest()
        weights.append(item)
    summary = {
        "name": neff.name,
        "target": manifest.get("target"),
        "lnc": manifest.get("lnc"),
        "num_tpb": neff.num_tpb,
        "pipeline": manifest.get("pipeline"),
        "signature": manifest.get("signature"),
        "weights": weights,
        "variables": neff.definition.get("variables", []),
        "dma_queues": neff.definition.get("dma_queues", []),
        "extra_files": sorted(neff.extra_files),
    }
    return json.dumps(summary, sort_keys=True, indent=2) + "\n"


# -- comparing and writing --------------------------------------------------------


def compare(current: dict[str, str], directory: str | os.PathLike) -> GoldenResult:
    """Diff ``current`` artifacts against the files in ``directory`` (nothing is written)."""
    directory = Path(directory)
    result = GoldenResult(directory)
    for file_name in sorted(set(current) | set(STAGE_FILES.values())):
        path = directory / file_name
        golden = path.read_text() if path.is_file() else None
        now = current.get(file_name)
        if golden == now:
            continue
        diff = difflib.unified_diff(
            (golden or "").splitlines(keepends=True),
            (now or "").splitlines(keepends=True),
            fromfile=f"golden/{file_name}" if golden is not None else "/dev/null",
            tofile=f"current/{file_name}" if now is not None else "/dev/null",
        )
        result.diffs[file_name] = "".join(_terminated(line) for line in diff)
    return result


def _terminated(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def check(
    program: Any,
    directory: str | os.PathLike,
    example_inputs: Sequence[torch.Tensor] | None = None,
    **options: Any,
) -> GoldenResult:
    """Compile ``program`` and compare it with the goldens in ``directory``.

    Raises ``GoldenError`` when ``directory`` holds no goldens at all (create them
    with ``update``). ``options`` are those of ``golden_artifacts``.
    """
    directory = Path(directory)
    if not any((directory / f).is_file() for f in STAGE_FILES.values()):
        raise GoldenError(
            f"no goldens in {directory}; create them with `neuronc golden update PROGRAM "
            f"--dir {directory}` (or torchneuron.golden.update)"
        )
    return compare(golden_artifacts(program, example_inputs, **options), directory)


def update(
    program: Any,
    directory: str | os.PathLike,
    example_inputs: Sequence[torch.Tensor] | None = None,
    **options: Any,
) -> GoldenResult:
    """Compile ``program`` and (re)write the goldens in ``directory``.

    Returns what changed, as diffs from the previous files (empty if nothing did);
    unchanged files are not rewritten.
    """
    directory = Path(directory)
    current = golden_artifacts(program, example_inputs, **options)
    result = compare(current, directory)
    output_folder(directory, "golden folder")
    for file_name in result.diffs:
        path = directory / file_name
        if file_name in current:
            atomic_write(path, current[file_name], "golden file")
        else:
            path.unlink(missing_ok=True)
    result.written = bool(result.diffs)
    return result


def update_requested() -> bool:
    """Whether ``TORCHNEURON_UPDATE_GOLDENS`` asks tests to refresh goldens."""
    return settings.env_flag(UPDATE_ENV_VAR)


def assert_golden(
    program: Any,
    directory: str | os.PathLike,
    example_inputs: Sequence[torch.Tensor] | None = None,
    **options: Any,
) -> GoldenResult:
    """pytest helper: fail with the unified diffs unless ``program`` matches its goldens.

    With ``TORCHNEURON_UPDATE_GOLDENS=1`` the goldens are rewritten instead, and the
    diff is issued as a ``GoldenUpdated`` warning (pytest lists it in its summary).
    """
    if update_requested():
        result = update(program, directory, example_inputs, **options)
        if result.written:
            # A warning, so pytest's summary shows what was refreshed without -s.
            warnings.warn(result.report(), GoldenUpdated, stacklevel=2)
        return result
    result = check(program, directory, example_inputs, **options)
    if not result.ok:
        raise GoldenMismatch(result)
    return result
