"""The stage table: every artifact the compiler produces, its file name, and how to read it back.

    fx ──► torch ──► stablehlo ──► optimized ──► neff

One row per stage, in order. ``suffix`` names the artifact on disk: a dump folder
holds ``<program>.<suffix>`` (``mlp.stablehlo.mlir``, ``mlp.neff``) and ``--emit``
prints the same text. ``golden`` is the file name of the stage's golden
(``torchneuron.golden``): the normalized artifact, and for the NEFF its JSON summary.

The MLIR stages are *re-enterable*: ``parse_artifact`` reads their text back into a
module, and ``compile_artifact`` (``neuronc compile --from <stage>``) runs the
remaining stages on it, so a dumped artifact can be edited and compiled onward.
``fx`` (Python source of a GraphModule) and ``neff`` (the end product) are not inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir

from torchneuron.errors import TorchNeuronError

from .program import find_main


class CompileError(TorchNeuronError):
    """A compile request was malformed (unknown stage, target or option, unusable artifact)."""


class ArtifactError(CompileError):
    """An artifact given to ``--from`` is not a valid program of that stage."""


@dataclass(frozen=True)
class Stage:
    name: str
    suffix: str  # file ending of its artifact: <program>.<suffix>
    golden: str  # file name of its golden
    mlir: bool  # its artifact is MLIR text that parse_artifact reads back
    about: str

    def file_name(self, program: str) -> str:
        return f"{program}.{self.suffix}"


TABLE: tuple[Stage, ...] = (
    Stage("fx", "fx.txt", "fx.txt", False, "the ATen FX graph the lowering starts from"),
    Stage("torch", "torch.mlir", "torch.mlir", True, "torch-mlir's backend-contract torch dialect"),
    Stage("stablehlo", "stablehlo.mlir", "stablehlo.mlir", True, "StableHLO as lowered"),
    Stage("optimized", "optimized.mlir", "optimized.mlir", True, "StableHLO after the passes"),
    Stage("neff", "neff", "neff.json", False, "the NEFF container (its golden: a JSON summary)"),
)
BY_NAME: dict[str, Stage] = {stage.name: stage for stage in TABLE}
STAGES: tuple[str, ...] = tuple(stage.name for stage in TABLE)
# Stages whose artifact can be fed back in (``--from``).
REENTERABLE: tuple[str, ...] = tuple(stage.name for stage in TABLE if stage.mlir)


def stage(name: str) -> Stage:
    """The row named ``name``; ``CompileError`` listing the stages otherwise."""
    found = BY_NAME.get(name)
    if found is None:
        raise CompileError(f"unknown stage {name!r}; stages are {', '.join(STAGES)}")
    return found


def after(name: str) -> tuple[str, ...]:
    """The stages that follow ``name``, in order."""
    return STAGES[STAGES.index(stage(name).name) + 1 :]


def make_context() -> ir.Context:
    """An MLIR context that reads every MLIR stage: the torch and StableHLO dialects."""
    from torch_mlir.dialects import torch as torch_d

    from torchneuron.passes.ir_utils import make_context as stablehlo_context

    context = stablehlo_context()
    torch_d.register_dialect(context)
    return context


def parse_artifact(name: str, text: str, where: str = "artifact") -> ir.Module:
    """The module in ``text``, an artifact of stage ``name``.

    Raises ``ArtifactError`` (naming ``where``, the first diagnostic and what the stage
    expects) when the text does not parse, has no ``func.func @main``, or holds ops of
    the wrong dialect for the stage; ``CompileError`` when the stage is not re-enterable.
    """
    row = stage(name)
    if not row.mlir:
        raise CompileError(
            f"the {name} stage cannot be an input; --from takes {', '.join(REENTERABLE)}"
        )
    try:
        module = ir.Module.parse(text, make_context())
    except ir.MLIRError as error:
        detail = _first_diagnostic(error)
        raise ArtifactError(f"{where}: not MLIR text of the {name} stage: {detail}") from None
    except ValueError as error:  # text the bindings cannot even hand to the parser
        raise ArtifactError(f"{where}: not MLIR text of the {name} stage: {error}") from None
    if find_main(module) is None:
        raise ArtifactError(f"{where}: the {name} artifact has no func.func @main")
    torch_ops = _has_torch_ops(module)
    if name == "torch" and not torch_ops:
        raise ArtifactError(
            f"{where}: holds no torch dialect ops; is it a later stage (--from stablehlo)?"
        )
    if name != "torch" and torch_ops:
        raise ArtifactError(f"{where}: holds torch dialect ops, not {name}; use --from torch")
    return module


def _has_torch_ops(module: ir.Module) -> bool:
    found = False

    def visit(op) -> ir.WalkResult:
        nonlocal found
        if op.operation.name.startswith("torch."):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        return True
    # A torch-dialect function may hold no torch op yet still take torch types.
    main = find_main(module)
    return "!torch." in str(main.attributes["function_type"])


def _first_diagnostic(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith("error:")), lines[-1] if lines else "")
    return detail.removeprefix("error:").strip().replace('"-":', "line ")
