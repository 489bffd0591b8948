"""The seed corpus: real NEFFs made by our own compiler, built once and cached on disk.

Entries (each a ``<name>.neff`` plus ``<name>.mlir``, its program as MLIR text, which
the forbidden-op mutator edits):

- ``mlp``: the zoo's MLP through ``torch.export`` and ``compile_graph``: weights, a
  schedule (``sg00/schedule.json``), a memory plan and estimates; gzip-compressed;
- ``mlp-raw``: the same NEFF written with ``compression="none"``;
- ``index-checks``: ``index_select`` then a multiply: an int64 input and a run-time
  index check (the manifest's ``checks``);
- ``eager-mul``, ``eager-add-bf16``: NEFFs of single eager ops, as the ``neuron``
  device compiles them (``compiler.eager.compile_op``).

The folder is ``<tmp>/torchneuron-neff-fuzz-<uid>/<fingerprint>``, where the
fingerprint covers the versions of torch, torch-mlir and jaxlib and the size and
mtime of every compiler source file, so an edit of the compiler builds a fresh
corpus. Building imports torch and the compiler, so it runs in a child process
(``python -m torchneuron.testing.fuzz.neff.corpus DIR``): the fuzzer's own process stays light.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import torchneuron

# The packages whose sources shape a NEFF (a change there rebuilds the corpus).
_COMPILER_PACKAGES = ("target", "lowering", "passes", "estimate", "neff", "compiler", "zoo.py")
_DEPENDENCIES = ("torch", "torch-mlir", "jaxlib", "numpy")
INDEX_FILE = "corpus.json"


@dataclass(frozen=True)
class CorpusEntry:
    name: str
    neff: bytes
    program_text: str | None  # None for NEFFs given with --corpus (no text known)
    stablehlo_version: str | None


def fingerprint() -> str:
    digest = hashlib.sha256()
    for name in _DEPENDENCIES:
        try:
            digest.update(f"{name}={metadata.version(name)};".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=none;".encode())
    root = Path(torchneuron.__file__).parent
    for package in _COMPILER_PACKAGES:
        path = root / package
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            stat = file.stat()
            digest.update(f"{file.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:20]


def default_corpus_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"torchneuron-neff-fuzz-{os.getuid()}" / fingerprint()


def ensure_corpus(directory: Path | None = None, *, timeout: float = 600.0) -> Path:
    """The corpus folder, built now (in a child process) unless a complete one exists."""
    directory = Path(directory) if directory is not None else default_corpus_dir()
    if (directory / INDEX_FILE).is_file():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=directory.parent))
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "torchneuron.testing.fuzz.neff.corpus", str(staging)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if completed.returncode != 0:
            tail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"building the NEFF fuzz corpus failed: {tail}")
        try:
            staging.rename(directory)
        except OSError:  # another run finished first: use its corpus
            if not (directory / INDEX_FILE).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def load_corpus(directory: Path) -> list[CorpusEntry]:
    """The entries of a corpus folder; a folder without an index is read as plain
    ``*.neff`` files (``--corpus`` pointing at NEFFs of one's own)."""
    directory = Path(directory)
    index_path = directory / INDEX_FILE
    if not index_path.is_file():
        return [
            CorpusEntry(path.stem, path.read_bytes(), None, None)
            for path in sorted(directory.glob("*.neff"))
        ]
    index = json.loads(index_path.read_text())
    return [
        CorpusEntry(
            name,
            (directory / f"{name}.neff").read_bytes(),
            (directory / f"{name}.mlir").read_text(),
            index["stablehlo_version"],
        )
        for name in index["entries"]
    ]


def _build(directory: Path) -> None:
    import numpy as np
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch_mlir._mlir_libs import _stablehlo

    from torchneuron.compiler.cache import NeffCache
    from torchneuron.compiler.eager import TensorSpec, compile_op
    from torchneuron.compiler.exported import exported_graph
    from torchneuron.compiler.pipeline import compile_graph
    from torchneuron.compiler.versions import stablehlo_target_version
    from torchneuron.lowering import decomposition_table
    from torchneuron.mlir_context import new_context
    from torchneuron.neff import read_neff, write_neff
    from torchneuron.runtime import load_neff
    from torchneuron.zoo import ZOO

    neffs: dict[str, bytes] = {}
    entry = ZOO["mlp"]
    graph = exported_graph(torch.export.export(entry.build().eval(), entry.example_inputs()))
    neffs["mlp"] = compile_graph(
        graph.graph_module,
        name="mlp",
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        use_cache=False,
    ).neff
    raw = read_neff(neffs["mlp"])
    raw.compression = "none"
    neffs["mlp-raw"] = write_neff(raw)

    table, index = torch.arange(5.0), torch.tensor([1, 2])
    gm = make_fx(lambda t, i: t.index_select(0, i) * 2, decomposition_table())(table, index)
    neffs["index-checks"] = compile_graph(
        gm, [table, index], name="index_checks", use_cache=False
    ).neff

    memory_only = NeffCache(None)
    for name, dtype, fn in (
        ("eager-mul", torch.float32, lambda a, b: (a * b,)),
        ("eager-add-bf16", torch.bfloat16, lambda a, b: (a + b,)),
    ):
        spec = TensorSpec((4, 3), (3, 1), dtype)
        op = compile_op(name, ("neff-fuzz", name), [spec, spec], fn, 1, cache=memory_only)
        neffs[name] = op.neff

    texts = {}
    with new_context() as context:
        _stablehlo.register_dialect(context)
        for name, data in neffs.items():
            program = read_neff(data).program
            texts[name] = str(_stablehlo.deserialize_portable_artifact(context, program))
            loaded = load_neff(data)  # every seed must run, or the fuzzer measures nothing
            loaded.execute([np.zeros(s.shape, s.numpy_dtype) for s in loaded.input_specs])
            loaded.unload()
    for name, data in neffs.items():
        (directory / f"{name}.neff").write_bytes(data)
        (directory / f"{name}.mlir").write_text(texts[name])
    index = {"entries": list(neffs), "stablehlo_version": stablehlo_target_version()}
    (directory / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n")


if __name__ == "__main__":
    _build(Path(sys.argv[1]))
