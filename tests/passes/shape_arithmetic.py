"""Shape-arithmetic tests' two steps: legalize a dynamic program, then refine it to
concrete argument types and settle it, as a specialization does."""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.passmanager import PassManager as UpstreamPassManager

from torchneuron.compiler import stages
from torchneuron.compiler.dynamic_program import _settle
from torchneuron.passes import PassContext, PassManager
from torchneuron.passes.upstream import _register_stablehlo_passes


def legalized(text: str) -> ir.Module:
    """``text`` parsed and run through ``legalize-to-stablehlo`` (verified)."""
    _register_stablehlo_passes()
    module = ir.Module.parse(text, stages.make_context())
    PassManager.from_pipeline("legalize-to-stablehlo", verify=True).run(module, PassContext())
    return module


def refined(module: ir.Module, argument_types: str) -> str:
    """``module`` refined to ``argument_types`` (e.g. ``tensor<4xf32>``) and settled."""
    UpstreamPassManager.parse(
        f"builtin.module(stablehlo-refine-arguments{{types={argument_types}}},"
        "stablehlo-refine-shapes)",
        context=module.context,
    ).run(module.operation)
    _settle(module)
    return str(module)
