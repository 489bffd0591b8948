"""fuse-kernels and assign-engines: attributes only, acyclic kernel graphs, options.

The golden files (golden/fuse_kernels.mlir, golden/assign_engines.mlir) pin the
grouping of small cases; here: the program computes the same values after the passes
(checked by running both on XLA), every kernel only depends on kernels before it on a
real model, and the pass options and attribute readers behave.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.passes.execute import assert_same_values, execute
from torchneuron.passes import PassContext, PassError, PassManager, parse_module
from torchneuron.passes.assign_engines import read_engines
from torchneuron.passes.dataflow import ARGUMENT, Dataflow, main_function
from torchneuron.passes.fuse_kernels import read_kernels

BLOCK = """
func.func @main(%x: tensor<16x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>,
                %g: tensor<64xf32>) -> (tensor<16x64xf32>, tensor<16xf32>) {
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %half = stablehlo.constant dense<5.000000e-01> : tensor<16x64xf32>
  %one = stablehlo.constant dense<1.000000e+00> : tensor<16x64xf32>
  %n = stablehlo.constant dense<6.400000e+01> : tensor<16xf32>
  %wt = stablehlo.transpose %w, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
  %y = stablehlo.dot_general %x, %wt, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<16x64xf32>
  %z = stablehlo.add %y, %bb : tensor<16x64xf32>
  %t = stablehlo.tanh %z : tensor<16x64xf32>
  %u = stablehlo.add %t, %one : tensor<16x64xf32>
  %v = stablehlo.multiply %z, %u : tensor<16x64xf32>
  %gelu = stablehlo.multiply %v, %half : tensor<16x64xf32>
  %s = stablehlo.reduce(%gelu init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
  %mean = stablehlo.divide %s, %n : tensor<16xf32>
  %mb = stablehlo.broadcast_in_dim %mean, dims = [0] : (tensor<16xf32>) -> tensor<16x64xf32>
  %c = stablehlo.subtract %gelu, %mb : tensor<16x64xf32>
  %gb = stablehlo.broadcast_in_dim %g, dims = [1] : (tensor<64xf32>) -> tensor<16x64xf32>
  %out = stablehlo.multiply %c, %gb : tensor<16x64xf32>
  %mx = stablehlo.reduce(%out init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
  %e = stablehlo.exponential %mx : tensor<16xf32>
  return %out, %e : tensor<16x64xf32>, tensor<16xf32>
}
"""

ANNOTATE = "fuse-kernels,assign-engines"


def _annotated(text: str, pipeline: str = ANNOTATE):
    module = parse_module(text)
    report = PassManager.from_pipeline(pipeline).run(module, PassContext())
    return module, report


def test_annotated_program_computes_the_same_values():
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal(shape).astype(np.float32)
        for shape in ((16, 32), (64, 32), (64,), (64,))
    ]
    before = execute(parse_module(BLOCK), inputs)
    module, _ = _annotated(BLOCK)
    assert "neuron.kernel" in str(module) and "neuron.engine" in str(module)
    after = execute(module, inputs)
    for i, (a, b) in enumerate(zip(after, before)):
        assert_same_values(a, b, f"result {i}")


def test_block_fuses_into_one_kernel_with_all_engines():
    module, report = _annotated(BLOCK)
    with module.context:
        flow = Dataflow.of_function(main_function(module))
        kernels = read_kernels(flow)
        engines, islands = read_engines(flow)
    used = {k for k in kernels if k is not None}
    # matmul + bias + GELU + mean-centering + scale + row max + exp: one kernel.
    assert used == {0}
    assert report.counters["fuse-kernels.kernel"] == 1
    by_name = {node.name: engine for node, engine in zip(flow.nodes, engines)}
    assert by_name["stablehlo.dot_general"] == "TensorE"
    assert by_name["stablehlo.exponential"] == "ScalarE"
    assert by_name["stablehlo.reduce"] == "VectorE"
    assert by_name["stablehlo.transpose"] == "DMA"
    # The tanh-GELU of %z is one activation island.
    island_ids = {i for i in islands if i is not None}
    assert len(island_ids) == 1
    assert report.counters["assign-engines.activation-island"] == 1


def test_fuse_option_false_gives_one_op_per_kernel():
    module, report = _annotated(BLOCK, "fuse-kernels{fuse=false},assign-engines")
    with module.context:
        flow = Dataflow.of_function(main_function(module))
        kernels = read_kernels(flow)
    real = [k for k, node in zip(kernels, flow.nodes) if node.kind != "constant"]
    assert len(real) == len(set(real)) == report.counters["fuse-kernels.kernel"]
    assert "fuse-kernels.fused-op" not in report.counters


def test_kernels_only_depend_on_earlier_kernels_in_a_transformer():
    import torch

    from torchneuron.compiler.exported import exported_graph
    from torchneuron.compiler.pipeline import compile_graph
    from torchneuron.zoo import ZOO

    entry = ZOO["gpt"]
    graph = exported_graph(torch.export.export(entry.build().eval(), entry.example_inputs()))
    compiled = compile_graph(
        graph.graph_module,
        name="gpt",
        weights=graph.weights,
        stop_after="optimized",
        use_cache=False,
    )
    module = parse_module(compiled.artifacts["optimized"])
    with module.context:
        flow = Dataflow.of_function(main_function(module))
        kernels = read_kernels(flow)
    assert kernels is not None, "compile_graph annotates every op"
    # Kernel ids are a topological order of the kernel graph: a kernel only reads values
    # of kernels with smaller ids (so the graph has no cycle).
    for node, kernel in zip(flow.nodes, kernels):
        for producer, _ in node.operands:
            if producer == ARGUMENT or kernels[producer] is None:
                continue
            assert kernels[producer] <= kernel, (node.name, kernels[producer], kernel)
    count = len({k for k in kernels if k is not None})
    matmuls = sum(node.name == "stablehlo.dot_general" for node in flow.nodes)
    # At least one kernel per matmul, and far fewer kernels than ops.
    assert matmuls <= count < len(flow.nodes) // 4


def test_unknown_engine_attribute_is_an_error():
    module, _ = _annotated(BLOCK)
    text = str(module).replace('neuron.engine = "VectorE"', 'neuron.engine = "FancyE"', 1)
    broken = parse_module(text)
    with broken.context, pytest.raises(ValueError, match="FancyE"):
        read_engines(Dataflow.of_function(main_function(broken)))


def test_unknown_pass_option_is_rejected():
    with pytest.raises(PassError, match="unknown option"):
        PassManager.from_pipeline("fuse-kernels{fusion=false}")
