"""Lowering stage: graph preparation, import, StableHLO lowering and its errors."""

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from torchneuron import lowering
from torchneuron.lowering import DynamicShapeError, UnsupportedOpError


def _lower(gm):
    prepared = lowering.prepare_graph(gm)
    module = lowering.import_graph(prepared)
    lowering.lower_to_torch_backend(module, prepared.graph_module.graph)
    lowering.lower_to_stablehlo(module, prepared.graph_module.graph)
    return prepared, str(module)


def test_matmul_becomes_dot_general():
    gm = make_fx(lambda a, b: torch.relu(a @ b))(torch.randn(2, 3), torch.randn(3, 4))
    prepared, text = _lower(gm)
    assert "stablehlo.dot_general" in text
    assert "torch." not in text.replace("torch.vtensor", "")
    assert [a.kind for a in prepared.arguments] == ["input", "input"]


def test_module_constants_become_weight_arguments_not_inline_literals():
    class WithConstant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.arange(4096, dtype=torch.float32))

        def forward(self, x):
            return x + self.table

    gm = torch.fx.symbolic_trace(WithConstant())
    gm = make_fx(gm)(torch.randn(4096))
    prepared, text = _lower(gm)
    assert [a.kind for a in prepared.arguments].count("weight") == 1
    assert "dense_resource" not in text
    weight = next(iter(prepared.weights.values()))
    assert torch.equal(weight, torch.arange(4096, dtype=torch.float32))


def test_none_outputs_are_dropped_and_remembered():
    def f(x):
        return (None, x * 2, None)

    gm = make_fx(f)(torch.randn(2))
    prepared = lowering.prepare_graph(gm)
    assert prepared.output_count == 3
    assert prepared.none_outputs == (0, 2)
    # the caller's graph is untouched
    assert len(next(n for n in gm.graph.nodes if n.op == "output").args[0]) == 3


def test_unsupported_op_error_names_op_shapes_and_source_line():
    def user_function(x):
        return torch.linalg.eigvalsh(x)

    gm = make_fx(user_function, pre_dispatch=False)(torch.randn(3, 3))
    for node in gm.graph.nodes:  # make_fx does not record user stack traces; Dynamo does
        if node.op == "call_function":
            node.meta["stack_trace"] = '  File "model.py", line 7, in forward\n    y = eigvalsh(x)'
    with pytest.raises(UnsupportedOpError) as info:
        _lower(gm)
    message = str(info.value)
    assert info.value.op.startswith("aten._linalg_eigh")
    assert "f32[3, 3]" in message
    assert 'model.py", line 7' in message and "y = eigvalsh(x)" in message


def test_symbolic_shapes_raise_dynamic_shape_error():
    gm = make_fx(lambda x: x * 2, tracing_mode="symbolic")(torch.randn(3, 4))
    with pytest.raises(DynamicShapeError, match="symbolic"):
        lowering.prepare_graph(gm)


def test_decomposition_table_contains_torch_mlir_base_and_our_extras():
    table = lowering.decomposition_table()
    for op in lowering.EXTRA_DECOMPOSITIONS:
        assert any(key.overloadpacket is op for key in table), op
    assert torch.ops.aten.native_batch_norm.default in table or any(
        k.overloadpacket is torch.ops.aten._native_batch_norm_legit_functional for k in table
    )


def test_lowering_errors_share_the_package_root():
    from torchneuron.errors import TorchNeuronError

    for error in (lowering.LoweringError, UnsupportedOpError, DynamicShapeError):
        assert issubclass(error, TorchNeuronError)
    assert issubclass(UnsupportedOpError, lowering.LoweringError)


def test_opaque_custom_op_is_named_not_an_aten_op_beside_it():
    # torch.nn.functional.linear_cross_entropy's chunked path (reduction="none") is a
    # torch_nn:: custom op that stays a torch.operator; the error named the aten ops
    # around it (aten.unsqueeze, aten.eq.Scalar) or "operator"
    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=4)

    def loss(x, w, t):
        return torch.nn.functional.linear_cross_entropy(
            x.unsqueeze(0).squeeze(0), w, t, options=options, reduction="none"
        ) * (t == 1)

    gm = make_fx(loss)(torch.randn(8, 4), torch.randn(5, 4), torch.randint(0, 5, (8,)))
    with pytest.raises(UnsupportedOpError) as info:
        _lower(gm)
    assert info.value.op == "torch_nn._linear_cross_entropy_batch_chunked_no_reduction.default"
    assert "f32[8, 4], f32[5, 4], i64[8]" in str(info.value)


def test_quantized_tensor_types_are_refused_naming_the_op(monkeypatch, fresh_dynamo):
    # torch-mlir's importer has no type for torch.qint8: it raised a bare KeyError
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")

    def fn(x):
        return torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).dequantize()

    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as info:
        torch.compile(fn, backend="neuron")(torch.randn(4, 4))
    assert isinstance(info.value.inner_exception, UnsupportedOpError)
    assert info.value.inner_exception.op == "aten.quantize_per_tensor.default"
    assert "quantized_decomposed" in str(info.value)
