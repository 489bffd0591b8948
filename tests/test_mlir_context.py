"""torch-mlir contexts load their dialects when a module first names them."""

import ast
from pathlib import Path

import torchneuron
from torchneuron.mlir_context import new_context

_STABLEHLO = """
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""

_TORCH = """
func.func @main(%a: !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32> {
  %0 = torch.aten.neg %a : !torch.vtensor<[2],f32> -> !torch.vtensor<[2],f32>
  return %0 : !torch.vtensor<[2],f32>
}
"""


def test_a_new_context_loads_a_dialect_only_when_a_module_names_it():
    from torch_mlir import ir
    from torch_mlir._mlir_libs import _stablehlo
    from torch_mlir.dialects import torch as torch_dialect

    context = new_context()
    assert not context.is_dialect_loaded("func") and not context.is_dialect_loaded("linalg")
    _stablehlo.register_dialect(context)  # as every reader of programs does
    module = ir.Module.parse(_STABLEHLO, context)
    assert module.operation.verify()
    assert context.is_dialect_loaded("func")  # loaded by the parser, on first use
    assert not context.is_dialect_loaded("linalg")  # nothing named it

    context = new_context()
    torch_dialect.register_dialect(context)
    module = ir.Module.parse(_TORCH, context)
    assert "torch.aten.neg" in str(module)
    assert not context.is_dialect_loaded("linalg")


def test_every_context_the_package_makes_loads_dialects_lazily():
    """A plain ``ir.Context()`` loads every dialect (~24 ms); the package makes its
    contexts with ``new_context`` (the verifier's child, which imports nothing of ours,
    passes the same argument)."""
    root = Path(torchneuron.__file__).parent
    eager = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "Context"
                and not any(k.arg == "load_on_create_dialects" for k in node.keywords)
            ):
                eager.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not eager, f"contexts that load every dialect: {eager}"
