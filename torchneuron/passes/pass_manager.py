"""The pass manager: runs a pipeline over a module, verifying, timing and counting each pass.

After every pass the module is verified; when a pass raises or leaves invalid
IR, the IR it started from is written to a file and the PassError names the
pass and the one command that reproduces the failure. Optionally the IR is
printed after each pass in MLIR's ``--mlir-print-ir-after-all`` form.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.errors import PassError
from torchneuron.passes.ir_utils import count_ops
from torchneuron.passes.registry import Pass, parse_pipeline


@dataclass
class PassStep:
    """One pass as it ran: its pipeline entry, time, and operation count before and after."""

    spec: str
    seconds: float
    ops_before: int
    ops_after: int


@dataclass
class PassReport:
    """What a pipeline run did.

    ``timings`` maps a pass name to its seconds (summed if it ran more than
    once); ``counters`` maps ``"<pass>.<pattern>"`` to how often that rewrite
    fired in this run; ``steps`` lists the passes in the order they ran.
    """

    pipeline: str
    timings: dict[str, float] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    steps: list[PassStep] = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        return sum(step.seconds for step in self.steps)

    def summary(self) -> str:
        """A human-readable table of passes, times, op counts and counters."""
        lines = [f"pipeline: {self.pipeline}"]
        for step in self.steps:
            lines.append(
                f"  {step.seconds * 1e3:8.2f} ms  {step.ops_before:6d} -> {step.ops_after:6d} ops"
                f"  {step.spec}"
            )
        lines.append(f"  {self.total_seconds * 1e3:8.2f} ms  total")
        for key in sorted(self.counters):
            lines.append(f"  {self.counters[key]:8d}  {key}")
        return "\n".join(lines)


def _reproduce_command(spec: str, path: Path) -> str:
    return f"python -m torchneuron.passes --pipeline {shlex.quote(spec)} {shlex.quote(str(path))}"


class PassManager:
    """Runs a fixed list of passes over modules.

    ``verify``: verify the module after every pass. ``print_ir_after_all``:
    print the module after every pass to ``ir_stream`` (stderr when None).
    ``repro_dir``: where to write the input IR of a failing pass (a fresh
    temporary directory when None).
    """

    def __init__(
        self,
        passes: Sequence[Pass],
        *,
        verify: bool = True,
        print_ir_after_all: bool = False,
        ir_stream: TextIO | None = None,
        repro_dir: str | Path | None = None,
    ) -> None:
        self.passes = list(passes)
        self.verify = verify
        self.print_ir_after_all = print_ir_after_all
        self.ir_stream = ir_stream
        self.repro_dir = Path(repro_dir) if repro_dir is not None else None

    @classmethod
    def from_pipeline(cls, pipeline: str, **options: object) -> PassManager:
        """A manager for a pipeline string such as ``"canonicalize,fold-constants,cse"``."""
        return cls(parse_pipeline(pipeline), **options)  # type: ignore[arg-type]

    @property
    def pipeline(self) -> str:
        """The pipeline string that rebuilds this manager's passes."""
        return ",".join(p.spec() for p in self.passes)

    def run(self, module: ir.Module, ctx: PassContext | None = None) -> PassReport:
        """Run every pass over ``module`` in place; PassError if one fails."""
        ctx = ctx if ctx is not None else PassContext()
        report = PassReport(pipeline=self.pipeline)
        counters_at_start = dict(ctx.counters)
        with module.context, ir.Location.unknown():
            ops_before = count_ops(module)
            for index, pass_ in enumerate(self.passes):
                ops_before = self._run_one(module, ctx, index, pass_, ops_before, report)
        report.counters = {
            key: value - counters_at_start.get(key, 0)
            for key, value in ctx.counters.items()
            if value != counters_at_start.get(key, 0)
        }
        return report

    def _run_one(
        self,
        module: ir.Module,
        ctx: PassContext,
        index: int,
        pass_: Pass,
        ops_before: int,
        report: PassReport,
    ) -> int:
        # A clone shares the (uniqued) constant payloads, so it is cheap to keep.
        snapshot = module.operation.clone()
        ctx.current_pass = pass_.name
        start = time.perf_counter()
        try:
            pass_.run(module, ctx)
        except Exception as error:
            self._fail(
                index, pass_, snapshot, module, f"raised {type(error).__name__}: {error}", error
            )
        finally:
            ctx.current_pass = ""
        seconds = time.perf_counter() - start
        if self.verify:
            try:
                module.operation.verify()
            except ir.MLIRError as error:
                self._fail(index, pass_, snapshot, module, f"produced invalid IR: {error}", error)
        ops_after = count_ops(module)
        report.timings[pass_.name] = report.timings.get(pass_.name, 0.0) + seconds
        report.steps.append(PassStep(pass_.spec(), seconds, ops_before, ops_after))
        if self.print_ir_after_all:
            self._dump(module, f"IR Dump After {pass_.spec()}")
        return ops_after

    def _dump(self, module: ir.Module, title: str) -> None:
        stream = self.ir_stream if self.ir_stream is not None else sys.stderr
        stream.write(f"// -----// {title} //----- //\n")
        stream.write(str(module))
        stream.write("\n")

    def _fail(
        self,
        index: int,
        pass_: Pass,
        snapshot: ir.Operation,
        module: ir.Module,
        reason: str,
        cause: BaseException,
    ) -> None:
        if self.print_ir_after_all:
            self._dump(module, f"IR Dump After {pass_.spec()} Failed")
        directory = self.repro_dir or Path(tempfile.mkdtemp(prefix="torchneuron-passes-"))
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{index:02d}-{pass_.name}.mlir"
        command = _reproduce_command(pass_.spec(), path)
        path.write_text(
            f"// Input IR of pass '{pass_.spec()}' (pipeline entry {index}), which {reason.split(':')[0]}.\n"
            f"// Reproduce: {command}\n{snapshot}\n"
        )
        raise PassError(
            f"pass '{pass_.spec()}' (pipeline entry {index}) {reason}\n"
            f"  input IR written to {path}\n"
            f"  reproduce with: {command}",
            pass_name=pass_.name,
            repro_path=path,
            repro_command=command,
        ) from cause
