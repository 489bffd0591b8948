"""Upstream MLIR and StableHLO passes, wrapped as registered passes.

Most run in-process through ``torch_mlir.passmanager``. The StableHLO passes
need ``_stablehlo.register_stablehlo_passes()`` first, which registers the
core set (canonicalize-dynamism, refine-shapes, legalize-deprecated-ops, ...)
but not the optimization passes: ``stablehlo-aggressive-simplification`` is
only reachable through the ``torch-mlir-opt`` tool shipped in the torch-mlir
wheel, so that wrapper round-trips the module text through a subprocess
(which does not know the ``shape`` dialect: run legalize-to-stablehlo first).
That wrapper replaces the module's body with the tool's output, so Python
handles to operations inside the module do not survive it.

Options of a wrapped pass are forwarded verbatim:
``canonicalize{max-iterations=3}``. Upstream passes report one counter,
``<pass>.ops-removed``: the net number of operations the pass removed.
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch_mlir
from torch_mlir import ir, passmanager
from torch_mlir._mlir_libs import _stablehlo

from torchneuron.passes.context import PassContext
from torchneuron.passes.errors import PassError
from torchneuron.passes.ir_utils import count_ops
from torchneuron.passes.registry import Pass, register_pass

_stablehlo_passes_registered = False
_registration_lock = threading.Lock()


def _register_stablehlo_passes() -> None:
    """Register the StableHLO passes with MLIR once per process.

    The flag is set only after registration succeeded (a failed attempt is retried by
    the next caller), and the lock keeps two threads from registering at once.
    """
    global _stablehlo_passes_registered
    if _stablehlo_passes_registered:
        return
    with _registration_lock:
        if not _stablehlo_passes_registered:
            _stablehlo.register_stablehlo_passes()
            _stablehlo_passes_registered = True


@dataclass(frozen=True)
class UpstreamPass(Pass):
    """An MLIR pass run through the bindings; ``options`` is MLIR's option text."""

    options: str = ""
    mlir_pass: ClassVar[str] = ""
    # "module": runs on builtin.module; "func": nested on every func.func.
    nesting: ClassVar[str] = "module"

    @classmethod
    def from_options(cls, options: str) -> Pass:
        return cls(options=options)

    def spec(self) -> str:
        return f"{self.name}{{{self.options}}}" if self.options else self.name

    def mlir_pipeline(self) -> str:
        """The textual MLIR pass pipeline this wrapper runs."""
        entry = f"{self.mlir_pass}{{{self.options}}}" if self.options else self.mlir_pass
        if self.nesting == "func":
            entry = f"func.func({entry})"
        return f"builtin.module({entry})"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        before = count_ops(module)
        self.run_mlir(module)
        ctx.count("ops-removed", before - count_ops(module))

    def run_mlir(self, module: ir.Module) -> None:
        _register_stablehlo_passes()
        manager = passmanager.PassManager.parse(self.mlir_pipeline(), context=module.context)
        manager.run(module.operation)


def _torch_mlir_opt() -> Path:
    return Path(next(iter(torch_mlir.__path__))) / "_mlir_libs" / "torch-mlir-opt"


class ExternalToolPass(UpstreamPass):
    """An upstream pass only ``torch-mlir-opt`` can run: the module text goes through it."""

    def run_mlir(self, module: ir.Module) -> None:
        completed = subprocess.run(
            [str(_torch_mlir_opt()), f"--pass-pipeline={self.mlir_pipeline()}", "-"],
            input=module.operation.get_asm(assume_verified=True),
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise PassError(
                f"torch-mlir-opt failed running {self.mlir_pipeline()}:\n{completed.stderr.strip()}"
            )
        rewritten = ir.Module.parse(completed.stdout, context=module.context)
        # Swap the body so the caller's module object is rewritten in place.
        body = module.body
        for op in list(body.operations):
            op.operation.erase()
        insertion_point = ir.InsertionPoint(body)
        for op in list(rewritten.body.operations):
            op.operation.detach_from_parent()
            insertion_point.insert(op.operation)


# (pipeline name, nesting, wrapper base, one-line description)
_UPSTREAM_PASSES = [
    (
        "canonicalize",
        "module",
        UpstreamPass,
        "MLIR canonicalizer: folders and canonicalization patterns",
    ),
    ("cse", "module", UpstreamPass, "MLIR common subexpression elimination"),
    ("symbol-dce", "module", UpstreamPass, "MLIR: erase private functions nothing references"),
    (
        "stablehlo-canonicalize-dynamism",
        "func",
        UpstreamPass,
        "dynamic_* ops with constant shape operands -> their static forms",
    ),
    (
        "stablehlo-refine-shapes",
        "module",
        UpstreamPass,
        "propagate static shapes through the program",
    ),
    (
        "stablehlo-legalize-deprecated-ops",
        "func",
        UpstreamPass,
        "deprecated StableHLO ops -> supported ones",
    ),
    ("chlo-legalize-to-stablehlo", "func", UpstreamPass, "CHLO ops -> StableHLO"),
    (
        "shape-legalize-to-stablehlo",
        "func",
        UpstreamPass,
        "shape/tensor/arith index computations -> StableHLO",
    ),
    (
        "stablehlo-aggressive-simplification",
        "func",
        ExternalToolPass,
        "StableHLO's canonicalization patterns (run through torch-mlir-opt)",
    ),
]


def _class_name(pass_name: str) -> str:
    return "".join(part.capitalize() for part in pass_name.split("-")) + "Pass"


for _name, _nesting, _base, _doc in _UPSTREAM_PASSES:
    register_pass(
        type(
            _class_name(_name),
            (_base,),
            {
                "name": _name,
                "mlir_pass": _name,
                "nesting": _nesting,
                "__doc__": _doc,
                "__module__": __name__,
            },
        )
    )
