"""PassManager, registry and pipeline strings: counters, timings, verification, repro files, IR printing."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from torch_mlir import ir

from torchneuron.passes import (
    DEFAULT_PIPELINE,
    Pass,
    PassContext,
    PassError,
    PassManager,
    get_pass,
    list_passes,
    parse_module,
    parse_pipeline,
    register_pass,
    unregister_pass,
)
from torchneuron.passes.ir_utils import find_function, ops_in_program_order

TORCH_STYLE = """
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %cst = arith.constant dense<1.000000e+00> : tensor<1xf64>
  %0 = stablehlo.convert %cst : (tensor<1xf64>) -> tensor<1xf32>
  %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %3 = stablehlo.multiply %arg0, %2 : tensor<4xf32>
  %4 = stablehlo.transpose %3, dims = [0] : (tensor<4xf32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}
"""


def _op_names(module: ir.Module) -> list[str]:
    return [op.name for op in ops_in_program_order(find_function(module))]


# --- registry and pipeline strings -------------------------------------------------


def test_our_passes_and_upstream_passes_are_registered():
    names = list_passes()
    for name in (
        "legalize-to-stablehlo",
        "fold-constants",
        "algebraic-simplify",
        "dce",
        "externalize-constants",
        "canonicalize",
        "cse",
        "symbol-dce",
        "stablehlo-aggressive-simplification",
        "stablehlo-canonicalize-dynamism",
    ):
        assert name in names
    assert names == sorted(names)
    assert get_pass("fold-constants").name == "fold-constants"


def test_file_name_is_pass_name_with_underscores():
    import torchneuron.passes as package

    folder = Path(package.__file__).parent
    for name in (
        "legalize-to-stablehlo",
        "fold-constants",
        "algebraic-simplify",
        "externalize-constants",
    ):
        module = get_pass(name).__module__.rsplit(".", 1)[-1]
        assert module == name.replace("-", "_")
        assert (folder / f"{module}.py").is_file()
    assert get_pass("dce").__module__.endswith(".dce")


def test_unknown_pass_lists_known_ones():
    with pytest.raises(PassError) as caught:
        PassManager.from_pipeline("canonicalize,fold-constnats")
    message = str(caught.value)
    assert "unknown pass 'fold-constnats'" in message
    assert "fold-constants" in message and "cse" in message


@pytest.mark.parametrize(
    "pipeline,fragment",
    [
        ("cse,,dce", "empty pass name at position 1"),
        ("cse,", "empty pass name at position 1"),
        ("fold-constants{max-folded-elements=3", "unbalanced '{'"),
        ("fold-constants}", "unbalanced '}'"),
        ("fold-constants{max-folded-elements=3}x", "text after the options"),
        ("fold-constants{bogus=1}", "unknown option 'bogus=1' (options: max-folded-elements)"),
        ("fold-constants{max-folded-elements=many}", "expects int, got 'many'"),
        ("externalize-constants{threshold-bytes}", "unknown option 'threshold-bytes'"),
    ],
)
def test_malformed_pipelines_are_rejected(pipeline: str, fragment: str):
    with pytest.raises(PassError) as caught:
        parse_pipeline(pipeline)
    assert fragment in str(caught.value)


def test_options_and_spec_round_trip():
    passes = parse_pipeline(
        " fold-constants{max-folded-elements=7} , externalize-constants{threshold-bytes=0 name-prefix=w} ,cse"
    )
    assert [p.name for p in passes] == ["fold-constants", "externalize-constants", "cse"]
    assert passes[0].max_folded_elements == 7
    assert passes[1].threshold_bytes == 0 and passes[1].name_prefix == "w"
    manager = PassManager(passes)
    assert (
        manager.pipeline
        == "fold-constants{max-folded-elements=7},externalize-constants{threshold-bytes=0 name-prefix=w},cse"
    )
    assert [p.spec() for p in parse_pipeline(manager.pipeline)] == [p.spec() for p in passes]


@pytest.mark.parametrize("name", list_passes())
def test_pass_options_are_frozen_once_built(name):
    # every registered pass is a frozen dataclass: pipeline strings build it, nothing edits it
    built = get_pass(name)()
    assert type(built).__dataclass_params__.frozen
    option = next(iter(dataclasses.fields(built)), None)
    if option is not None:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(built, option.name, getattr(built, option.name))


def test_a_pass_with_unfrozen_options_cannot_be_declared():
    with pytest.raises(TypeError, match="non-frozen"):

        @dataclass
        class Mutable(Pass):
            name = "test-mutable"
            level: int = 1


def test_upstream_options_are_forwarded_verbatim():
    (canonicalize,) = parse_pipeline("canonicalize{max-iterations=2 region-simplify=disabled}")
    assert (
        canonicalize.mlir_pipeline()
        == "builtin.module(canonicalize{max-iterations=2 region-simplify=disabled})"
    )
    (dynamism,) = parse_pipeline("stablehlo-canonicalize-dynamism")
    assert dynamism.mlir_pipeline() == "builtin.module(func.func(stablehlo-canonicalize-dynamism))"


def test_duplicate_registration_is_rejected():
    @dataclass(frozen=True)
    class AnotherCse(Pass):
        name = "cse"

    with pytest.raises(PassError, match="a pass named 'cse' is already registered"):
        register_pass(AnotherCse)
    assert get_pass("cse").__name__ == "CsePass"

    @dataclass(frozen=True)
    class Nameless(Pass):
        pass

    with pytest.raises(PassError, match="has no 'name'"):
        register_pass(Nameless)


# --- running --------------------------------------------------------------------


def test_counters_count_each_rewrite():
    module = parse_module(TORCH_STYLE)
    report = PassManager.from_pipeline(
        "legalize-to-stablehlo,fold-constants,algebraic-simplify"
    ).run(module)
    assert report.counters == {
        "legalize-to-stablehlo.arith-constant": 1,
        "fold-constants.convert": 1,
        "fold-constants.reshape": 1,
        "fold-constants.broadcast_in_dim": 1,
        "algebraic-simplify.mul-by-one": 1,
        "algebraic-simplify.identity-transpose": 1,
    }
    assert _op_names(module) == ["func.return"]


def test_counters_of_a_run_exclude_earlier_runs_but_context_accumulates():
    ctx = PassContext()
    manager = PassManager.from_pipeline("legalize-to-stablehlo")
    first = manager.run(parse_module(TORCH_STYLE), ctx)
    second = manager.run(parse_module(TORCH_STYLE), ctx)
    assert first.counters == second.counters == {"legalize-to-stablehlo.arith-constant": 1}
    assert ctx.counters == {"legalize-to-stablehlo.arith-constant": 2}


def test_upstream_passes_report_ops_removed():
    module = parse_module(
        """
        func.func @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
          %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
          %1 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
          return %0, %1 : tensor<4xf32>, tensor<4xf32>
        }"""
    )
    report = PassManager.from_pipeline("cse").run(module)
    assert report.counters == {"cse.ops-removed": 1}
    assert _op_names(module).count("stablehlo.add") == 1


def test_timings_and_steps_cover_every_pass():
    report = PassManager.from_pipeline(
        "legalize-to-stablehlo,fold-constants,cse,fold-constants"
    ).run(parse_module(TORCH_STYLE))
    assert set(report.timings) == {"legalize-to-stablehlo", "fold-constants", "cse"}
    assert all(isinstance(t, float) and t > 0 for t in report.timings.values())
    assert [s.spec for s in report.steps] == [
        "legalize-to-stablehlo",
        "fold-constants",
        "cse",
        "fold-constants",
    ]
    fold_steps = [s.seconds for s in report.steps if s.spec == "fold-constants"]
    assert report.timings["fold-constants"] == pytest.approx(sum(fold_steps))
    # func.func + 7 ops; after folding: func.func, constant, multiply, transpose, return
    assert report.steps[0].ops_before == 8 and report.steps[-1].ops_after == 5
    assert "fold-constants" in report.summary() and "total" in report.summary()


def test_print_ir_after_all():
    stream = io.StringIO()
    PassManager.from_pipeline(
        "legalize-to-stablehlo,fold-constants", print_ir_after_all=True, ir_stream=stream
    ).run(parse_module(TORCH_STYLE))
    text = stream.getvalue()
    first = text.index("// -----// IR Dump After legalize-to-stablehlo //----- //\n")
    second = text.index("// -----// IR Dump After fold-constants //----- //\n")
    assert first == 0 and second > first
    after_legalize = text[first:second]
    assert "arith.constant" not in after_legalize and "stablehlo.convert" in after_legalize
    assert "stablehlo.convert" not in text[second:]


def test_no_printing_unless_asked(capsys):
    PassManager.from_pipeline("legalize-to-stablehlo").run(parse_module(TORCH_STYLE))
    assert "IR Dump" not in capsys.readouterr().err


def test_empty_pipeline_runs_nothing():
    report = PassManager.from_pipeline("").run(parse_module(TORCH_STYLE))
    assert report.steps == [] and report.counters == {}


# --- failures ---------------------------------------------------------------------


@pytest.fixture
def breaking_pass():
    """A pass that leaves invalid IR: an add whose result type disagrees with its operands."""

    @register_pass
    @dataclass(frozen=True)
    class BreakTypes(Pass):
        name = "test-break-types"

        def run(self, module: ir.Module, ctx: PassContext) -> None:
            entry = find_function(module).regions[0].blocks[0]
            argument = entry.arguments[0]
            ir.Operation.create(
                "stablehlo.add",
                results=[ir.RankedTensorType.get([7], ir.F32Type.get())],
                operands=[argument, argument],
                ip=ir.InsertionPoint.at_block_begin(entry),
            )

    yield BreakTypes
    unregister_pass("test-break-types")


def test_verification_failure_names_pass_and_writes_repro(tmp_path: Path, breaking_pass):
    module = parse_module(TORCH_STYLE)
    manager = PassManager.from_pipeline(
        "legalize-to-stablehlo,test-break-types,cse", repro_dir=tmp_path
    )
    with pytest.raises(PassError) as caught:
        manager.run(module)
    error = caught.value
    assert error.pass_name == "test-break-types"
    assert "pass 'test-break-types' (pipeline entry 1) produced invalid IR" in str(error)
    assert "requires the same shape" in str(error)
    assert error.repro_path == tmp_path / "01-test-break-types.mlir"
    assert (
        error.repro_command
        == f"python -m torchneuron.passes --pipeline test-break-types {error.repro_path}"
    )
    assert error.repro_command in str(error)
    # The repro holds the input of the failing pass: after legalize, before the break.
    repro = parse_module(error.repro_path.read_text())
    names = _op_names(repro)
    assert "arith.constant" not in names and len(names) == 7
    assert repro.operation.verify()


def test_failure_without_repro_dir_uses_a_temporary_directory(breaking_pass):
    with pytest.raises(PassError) as caught:
        PassManager.from_pipeline("test-break-types").run(parse_module(TORCH_STYLE))
    assert caught.value.repro_path.is_file()
    assert "torchneuron-passes-" in str(caught.value.repro_path.parent)


def test_verification_can_be_disabled(breaking_pass):
    PassManager.from_pipeline("test-break-types", verify=False).run(parse_module(TORCH_STYLE))


def test_failed_pass_is_dumped_when_printing(tmp_path: Path, breaking_pass):
    stream = io.StringIO()
    with pytest.raises(PassError):
        PassManager.from_pipeline(
            "test-break-types", print_ir_after_all=True, ir_stream=stream, repro_dir=tmp_path
        ).run(parse_module(TORCH_STYLE))
    assert "// -----// IR Dump After test-break-types Failed //----- //" in stream.getvalue()


def test_raising_pass_repro_command_reproduces_it(tmp_path: Path):
    module = parse_module(TORCH_STYLE)
    with pytest.raises(PassError) as caught:
        PassManager.from_pipeline(
            "externalize-constants{function=forward}", repro_dir=tmp_path
        ).run(module)
    error = caught.value
    assert (
        "raised PassError: externalize-constants: module has no func.func @forward; functions: main"
        in str(error)
    )
    completed = subprocess.run(
        error.repro_command.replace("python", sys.executable, 1),
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1
    assert "module has no func.func @forward" in completed.stderr


def test_failing_upstream_pass_becomes_pass_error(tmp_path: Path):
    with pytest.raises(PassError, match="pass 'canonicalize\\{no-such-option=1\\}'"):
        PassManager.from_pipeline("canonicalize{no-such-option=1}", repro_dir=tmp_path).run(
            parse_module(TORCH_STYLE)
        )


# --- upstream stablehlo passes ------------------------------------------------------


def test_aggressive_simplification_rewrites_the_module_in_place():
    module = parse_module(
        """
        func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.transpose %arg0, dims = [0] : (tensor<4xf32>) -> tensor<4xf32>
          %1 = stablehlo.reshape %0 : (tensor<4xf32>) -> tensor<2x2xf32>
          %2 = stablehlo.reshape %1 : (tensor<2x2xf32>) -> tensor<4xf32>
          return %2 : tensor<4xf32>
        }"""
    )
    same_object = module
    report = PassManager.from_pipeline("stablehlo-aggressive-simplification").run(module)
    assert same_object is module
    assert _op_names(module) == ["func.return"]
    assert report.counters["stablehlo-aggressive-simplification.ops-removed"] == 3


def test_default_pipeline_is_made_of_registered_passes():
    names = [p.name for p in parse_pipeline(DEFAULT_PIPELINE)]
    assert names[0] == "legalize-to-stablehlo"
    assert {"fold-constants", "algebraic-simplify", "dce", "canonicalize", "cse"} <= set(names)
    assert "externalize-constants" not in names  # -O keeps the signature


# --- command line ---------------------------------------------------------------------


def test_command_line_runs_a_pipeline(tmp_path: Path):
    source = tmp_path / "in.mlir"
    source.write_text(TORCH_STYLE)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchneuron.passes",
            "--pipeline",
            "legalize-to-stablehlo,fold-constants",
            "--print-ir-after-all",
            "--timings",
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    output = parse_module(completed.stdout)
    assert "stablehlo.convert" not in _op_names(output) and "stablehlo.multiply" in _op_names(
        output
    )
    assert "// -----// IR Dump After fold-constants //----- //" in completed.stderr
    assert "fold-constants.convert" in completed.stderr


def test_stage_errors_share_the_package_root():
    from torchneuron.errors import TorchNeuronError
    from torchneuron.passes.ir_constants import UnsupportedConstantError

    assert issubclass(PassError, TorchNeuronError)
    # stays a ValueError for callers that catch those
    assert issubclass(UnsupportedConstantError, TorchNeuronError)
    assert issubclass(UnsupportedConstantError, ValueError)
    with pytest.raises(PassError) as caught:
        parse_pipeline("no-such-pass")
    assert isinstance(caught.value, TorchNeuronError)
