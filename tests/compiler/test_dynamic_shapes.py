"""Dynamic shapes compiled once (compiler/dynamic*.py, DynamicGraphFunction).

Each test counts front-half compiles (Dynamo graph -> StableHLO with ``?`` dims) and
per-shape specializations (refinement + back half), and compares every result with
PyTorch eager on the CPU.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn as nn

from torchneuron.compiler import dynamic
from torchneuron.compiler.dynamic import ShapeConstraintError, SymbolicSignature


def _settled() -> dict:
    """``dynamic.stats()`` once the background thread has built what calls submitted
    (a new shape runs interpreted while it specializes there)."""
    from torchneuron.compiler import specialize_later

    specialize_later.drain()
    return dynamic.stats()


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    # the counts below assume no specialization of an earlier test or process on disk
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    # exact sizes: this file tests the dynamic program itself (test_buckets.py pads)
    monkeypatch.setenv("TORCHNEURON_BUCKETS", "off")
    torch._dynamo.reset()
    dynamic.reset_stats()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*compiled once per shape.*")
        yield
    torch._dynamo.reset()


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))


def test_mlp_dynamic_batch_front_half_once():
    model = _mlp()
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    with torch.no_grad():
        for batch in (3, 5, 11, 5):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    stats = _settled()
    assert stats["front_half"] == 1
    assert stats["specializations"] == 3  # 3, 5 and 11; the second 5 is a hit
    assert stats["specialization_hits"] == 1
    assert stats["per_shape_front_half"] == 0


def test_a_new_process_reuses_the_specializations_of_an_earlier_one():
    """What a second process finds on disk: the front half and every shape the first
    one specialized, so it lowers and specializes nothing (Dynamo's trace is per
    process)."""
    import itertools

    from torchneuron import backend

    model = _mlp()
    inputs = [torch.randn(batch, 8) for batch in (3, 5, 11)]
    runs = []
    for _process in range(2):
        # a new process: no trace, no program, no specialization, graphs numbered from 0
        torch._dynamo.reset()
        dynamic.reset_stats()
        backend._graph_ids = itertools.count()
        compiled = torch.compile(model, backend="neuron", dynamic=True)
        with torch.no_grad():
            outputs = [compiled(x) for x in inputs]
        runs.append((_settled(), outputs))
    (first, first_out), (second, second_out) = runs
    assert first["specializations"] == 3 and first["disk_specializations"] == 0
    assert first["front_half"] == 1 and first["disk_front_half"] == 0
    assert second["front_half"] == 0 and second["disk_front_half"] == 1
    assert second["specializations"] == 0 and second["disk_specializations"] == 3
    with torch.no_grad():
        for got, x in zip(second_out, inputs):
            torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-5)


def test_a_front_half_with_run_time_checks_is_reused_by_a_new_process():
    """The zoo GPT's embeddings check their indices at run time (results marked
    neuron.check after the outputs): its stored front half must read back."""
    import itertools

    from torchneuron import backend
    from torchneuron.zoo import ZOO

    model = ZOO["gpt"].build().eval()
    tokens = torch.randint(0, 128, (2, 19))
    for _process in range(2):
        torch._dynamo.reset()
        dynamic.reset_stats()
        backend._graph_ids = itertools.count()
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no "corrupt entry" warning
            with torch.no_grad():
                out = torch.compile(model, backend="neuron", dynamic=True)(tokens)
    with torch.no_grad():
        torch.testing.assert_close(out, model(tokens), rtol=1e-4, atol=1e-4)
    assert _settled()["disk_front_half"] == 1 and _settled()["front_half"] == 0


def test_gpt_inference_over_sequence_lengths_is_native():
    """The zoo GPT's positions come from ``arange(T)``, whose length the lowering computes
    in float arithmetic: the refined program is static only after folding (it used to
    keep dynamic ops and fall back to the CPU)."""
    from torchneuron.zoo import ZOO

    model = ZOO["gpt"].build().eval()
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    with torch.no_grad():
        for length in (16, 23):
            tokens = torch.randint(0, 128, (2, length))
            torch.testing.assert_close(compiled(tokens), model(tokens), rtol=1e-4, atol=1e-4)
    assert _settled()["front_half"] == 1
    assert _settled()["specializations"] == 2


def test_a_size_less_a_constant_is_a_size_expression():
    """A language model's shifted loss (``logits[:, :-1]``) has sizes like s0 - 1, which
    sympy holds as s0 + (-1); training the zoo GPT on it used to fail with a bare
    ValueError from the dynamic signature, then to compile its graphs per shape, then
    its backward per shape (its slice_scatter along the length had no symbolic form)."""
    from torchneuron.zoo import ZOO

    entry = ZOO["gpt"]
    model = entry.build()
    reference = entry.build()

    def step(net, tokens):
        loss = entry.loss(net(tokens), (tokens,))
        loss.backward()
        return loss

    compiled = torch.compile(lambda tokens: step(model, tokens), backend="neuron", dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for length in (16, 11):  # two lengths show the front halves reused
            tokens = torch.randint(0, 128, (2, length))
            torch.testing.assert_close(compiled(tokens), step(reference, tokens))
    assert not [w for w in caught if "compiled once per shape" in str(w.message)]
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5)
    stats = _settled()
    # each graph is lowered once: the forward's x[:, :-1] counts its end from the start
    # (s0 - 1), its reshape(-1, V) floor-divides a size; the backward scatters the
    # gradient of x[:, :-1] back as a concatenation
    assert stats["front_half"] == 2 and stats["per_shape_front_half"] == 0


@pytest.mark.parametrize(("start", "end"), [(0, -1), (1, None), (2, -2), (1, 2**63 - 1)], ids=str)
def test_slice_scatter_along_a_symbolic_dimension_is_lowered_once(start, end):
    """The backward of x[:, start:end] at a dynamic length: slice_scatter with bounds
    counted from the end, which torch-mlir lowers only with a constant end."""

    def scatter(x):
        return torch.slice_scatter(torch.ones_like(x), x[:, start:end] * 2, 1, start, end)

    compiled = torch.compile(scatter, backend="neuron")
    for length in (7, 10, 6):
        x = torch.randn(3, length)
        torch._dynamo.mark_dynamic(x, 1)  # the length only (the bounds stay constants)
        assert torch.equal(compiled(x), scatter(x))
    stats = _settled()
    assert stats["front_half"] == 1 and stats["per_shape_front_half"] == 0


def test_a_view_that_infers_a_dimension_from_the_element_count_is_lowered_once():
    """transformers' causal-LM loss: labels padded and shifted, logits viewed as
    (-1, vocab). The -1 is the element count divided by the vocabulary (an unsigned
    division in torch-mlir's shape arithmetic)."""
    vocab = 11

    def loss(logits, labels):
        labels = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
        flat = logits.float().view(-1, vocab)
        return torch.nn.functional.cross_entropy(flat, labels.view(-1), ignore_index=-100)

    compiled = torch.compile(loss, backend="neuron", dynamic=True)
    for length in (9, 6, 13):
        logits = torch.randn(2, length, vocab, requires_grad=True)
        labels = torch.randint(0, vocab, (2, length))
        expected_logits = logits.detach().clone().requires_grad_(True)
        compiled(logits, labels).backward()
        loss(expected_logits, labels).backward()
        torch.testing.assert_close(logits.grad, expected_logits.grad, rtol=1e-5, atol=1e-6)
    stats = _settled()
    assert stats["front_half"] == 2 and stats["per_shape_front_half"] == 0


def _train_keeping(lengths_and_keeps) -> dict:
    """``(x @ w)[:, -keep:]``'s loss trained at each (length, keep) under dynamic=True,
    loss and gradient against eager; the settled stats."""
    torch.manual_seed(0)
    reference = torch.randn(6, 6, requires_grad=True)
    weight = reference.detach().clone().requires_grad_(True)

    def step(w, x, keep):
        loss = (x @ w)[:, -keep:].pow(2).mean()
        loss.backward()
        return loss

    compiled = torch.compile(step, backend="neuron", dynamic=True)
    for length, keep in lengths_and_keeps:
        x = torch.randn(2, length, 6)
        weight.grad = reference.grad = None
        loss = compiled(weight, x, keep)
        torch.testing.assert_close(loss, step(reference, x, keep), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(weight.grad, reference.grad, rtol=1e-5, atol=1e-6)
    return _settled()


def test_an_int_argument_that_may_be_negative_is_a_constant_of_each_program():
    """A language model's ``logits_to_keep=0``: a Python int Dynamo makes symbolic, used
    as a slice's start (``hidden[:, -keep:]``), whose range ([-inf, 0] for 0 and for -2)
    admits negative values, so no tensor dimension can carry it. Each value of it
    compiles the graph once, symbolic in the length."""
    stats = _train_keeping(((7, 0), (10, 0), (6, 0), (9, -2), (12, -2), (5, 0)))
    # forward and backward, once for keep=0 and once for keep=-2
    assert stats["front_half"] == 4 and stats["per_shape_front_half"] == 0


def test_a_slice_start_counted_from_the_end_by_an_int_argument_is_lowered_once():
    """``x[:, -keep:]`` with keep >= 1 an int argument: its symbol is carried, and the
    backward's slice_scatter starts at ``-keep``, which Dynamo guarded to lie in
    [-length, 0); counted from the start, the concatenation takes it."""
    stats = _train_keeping(((7, 3), (10, 3), (9, 5), (12, 4)))
    assert stats["front_half"] == 2 and stats["per_shape_front_half"] == 0


def test_a_python_float_dynamo_makes_an_input_is_lowered_once():
    """Under dynamic=True, ``math.pi`` becomes a 0-d float64 input, and ``2.0 / math.pi``
    a true_divide after the decompositions ran (GPT-2's GELU)."""

    def gelu(x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))

    compiled = torch.compile(gelu, backend="neuron", dynamic=True)
    for length in (5, 8, 3):
        x = torch.randn(length)
        torch.testing.assert_close(compiled(x), gelu(x), rtol=1e-5, atol=1e-6)
    stats = _settled()
    assert stats["front_half"] == 1 and stats["per_shape_front_half"] == 0


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_a_size_only_products_carry_is_passed_as_an_empty_tensor(device):
    """The backward of a step that flattens [batch, length, D] sees the batch size only
    in products (batch * length) and as a size input of its own: the program takes it
    as a [batch, 0] tensor (on the inputs' device), so the backward is lowered once."""
    torch.manual_seed(0)
    reference = torch.randn(8, 5, requires_grad=True)
    weight = reference.detach().to(device).requires_grad_(True)

    def step(w, x):
        y = (x @ w)[:, :-1]
        loss = y.reshape(-1, 5).pow(2).sum()
        loss.backward()
        return loss

    compiled = torch.compile(lambda x: step(weight, x), backend="neuron", dynamic=True)
    for batch, length in ((6, 7), (9, 7), (4, 11), (9, 7)):
        x = torch.randn(batch, length, 8)
        loss = compiled(x.to(device))
        torch.testing.assert_close(loss.cpu(), step(reference, x), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(weight.grad.cpu(), reference.grad, rtol=1e-5, atol=1e-4)
    stats = _settled()
    assert stats["front_half"] == 2 and stats["per_shape_front_half"] == 0


def test_a_size_input_the_tracer_knows_is_a_constant_of_the_program():
    """At length 4, x[:, 2:-2] is empty: Dynamo traces a second graph, which takes the
    size 4 as an input (a size with no symbol); it is lowered with the constant."""

    def scatter(x):
        return torch.slice_scatter(torch.ones_like(x), x[:, 2:-2] * 2, 1, 2, -2)

    compiled = torch.compile(scatter, backend="neuron")
    for length in (7, 4):
        x = torch.randn(3, length)
        torch._dynamo.maybe_mark_dynamic(x, 1)
        assert torch.equal(compiled(x), scatter(x))
    stats = _settled()
    assert stats["front_half"] == 2 and stats["per_shape_front_half"] == 0  # a graph each


def test_neuron_device_inputs_dynamic_batch():
    model = _mlp()
    on_device = _mlp().to("neuron")
    compiled = torch.compile(on_device, backend="neuron", dynamic=True)
    with torch.no_grad():
        for batch in (3, 6):
            x = torch.randn(batch, 8)
            out = compiled(x.to("neuron"))
            assert out.device.type == "neuron"
            torch.testing.assert_close(out.cpu(), model(x), rtol=1e-5, atol=1e-5)
    assert _settled()["front_half"] == 1
    assert _settled()["specializations"] == 2


def test_compiled_dynamic_graph_dumps_one_dynamic_neff(tmp_path):
    model = _mlp()
    options = {"dump_dir": str(tmp_path)}
    compiled = torch.compile(model, backend="neuron", dynamic=True, options=options)
    with torch.no_grad():
        for batch in (3, 5, 9):
            compiled(torch.randn(batch, 8))
    neffs = sorted(tmp_path.glob("*.neff"))
    assert len(neffs) == 1  # the dynamic program, once; no NEFF per shape
    stored = dynamic.DynamicProgram.from_neff(neffs[0])
    assert any(isinstance(d, str) for spec in stored.signature.inputs for d in spec["shape"])
    arrays = [p.detach().numpy() for p in model.parameters()]
    x = torch.randn(6, 8)
    by_shape = {tuple(a.shape): a for a in arrays}
    inputs = [
        x.numpy() if isinstance(spec["shape"][0], str) else by_shape[tuple(spec["shape"])]
        for spec in stored.signature.inputs
    ]
    (out,) = stored.run(inputs)
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(out), model(x), rtol=1e-5, atol=1e-5)


def test_automatic_dynamic_after_a_second_shape():
    model = _mlp()
    compiled = torch.compile(model, backend="neuron")  # static first, then automatic dynamic
    with torch.no_grad():
        for batch in (3, 5, 7):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    stats = _settled()
    assert stats["front_half"] == 1  # batch 3 compiled static; 5 and 7 share one program
    assert stats["specializations"] == 2
    assert stats["per_shape_front_half"] == 0


def test_mlp_training_dynamic_gradients():
    model = _mlp()
    compiled = torch.compile(model, backend="neuron", dynamic=True)
    for batch in (3, 6):
        x = torch.randn(batch, 8)
        compiled(x).square().sum().backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).square().sum().backward()
        for g, p in zip(got, model.parameters()):
            torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
        model.zero_grad()
    stats = _settled()
    assert stats["front_half"] == 2  # forward and backward, once each
    assert stats["specializations"] == 4
    assert stats["per_shape_front_half"] == 0


class _Block(nn.Module):
    """A GPT-style block whose causal mask is sliced to the sequence length."""

    def __init__(self, d=16, heads=2, vocab=32, max_seq=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.head = nn.Linear(d, vocab)
        mask = torch.triu(torch.full((max_seq, max_seq), float("-inf")), 1)
        self.register_buffer("mask", mask)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.head(x)


def test_gpt_block_dynamic_sequence_length_mark_dynamic():
    torch.manual_seed(0)
    model = _Block().eval()
    compiled = torch.compile(model, backend="neuron")
    with torch.no_grad():
        for seq in (5, 9, 17):
            tokens = torch.randint(0, 32, (2, seq))
            torch._dynamo.mark_dynamic(tokens, 1)
            torch.testing.assert_close(compiled(tokens), model(tokens), rtol=1e-4, atol=1e-5)
    stats = _settled()
    assert stats["front_half"] == 1
    assert stats["specializations"] == 3
    assert stats["per_shape_front_half"] == 0


def test_a_training_step_whose_backward_takes_a_product_of_sizes():
    # flatten(0, 1) of (batch, length) logits: the backward takes the size s0*s1
    torch.manual_seed(0)
    model = _Block()
    compiled = torch.compile(model, backend="neuron", dynamic=True)

    def loss_of(fn, tokens):
        return nn.functional.cross_entropy(fn(tokens).flatten(0, 1), tokens.flatten())

    for seq in (5, 9):
        tokens = torch.randint(0, 32, (2, seq))
        loss_of(compiled, tokens).backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        loss_of(model, tokens).backward()
        for g, p in zip(got, model.parameters()):
            torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
        model.zero_grad()
    stats = _settled()
    assert stats["front_half"] == 2 and stats["per_shape_front_half"] == 0


def test_export_with_dims_compiles_once_and_refuses_out_of_range(tmp_path):
    from torchneuron.compiler.exported import exported_graph

    model = _mlp()
    batch = torch.export.Dim("batch", min=2, max=16)
    program = torch.export.export(model, (torch.randn(4, 8),), dynamic_shapes=({0: batch},))
    graph = exported_graph(program)
    dyn, sizes = dynamic.compile_dynamic_graph(
        graph.graph_module,
        name="mlp",
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        dump_dir=tmp_path,
    )
    assert sizes == []
    # dumped once: the stored program and its dynamic NEFF, no NEFF per shape
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.neff", "mlp.stablehlo.mlir"]
    assert (tmp_path / "mlp.stablehlo.mlir").read_text() == dyn.text
    assert dynamic.DynamicProgram.from_neff(tmp_path / "mlp.neff").signature == dyn.signature
    (spec,) = dyn.signature.inputs
    symbol = spec["shape"][0]
    assert spec["shape"][1] == 8 and isinstance(symbol, str)
    assert dyn.signature.symbols[symbol] == (2, 16)
    assert "tensor<?x8xf32>" in dyn.text
    from torchneuron.runtime import load_neff

    for n in (2, 7, 16):
        compiled = dyn.specialize([(n, 8)])
        assert compiled.inputs[0]["shape"] == [n, 8]
        x = torch.randn(n, 8)
        (out,) = load_neff(compiled.neff).execute([x.numpy()])
        torch.testing.assert_close(torch.from_numpy(out), model(x).detach(), rtol=1e-5, atol=1e-5)
    assert _settled()["front_half"] == 1
    assert dyn.specializations == 3
    with pytest.raises(ShapeConstraintError, match=r"outside its range \[2, 16\]"):
        dyn.specialize([(17, 8)])
    with pytest.raises(ShapeConstraintError, match="dimension 1 is 9"):
        dyn.specialize([(4, 9)])


def test_refinement_makes_every_shape_static():
    from torchneuron.compiler.exported import exported_graph

    model = _mlp()
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(model, (torch.randn(4, 8),), dynamic_shapes=({0: batch},))
    graph = exported_graph(program)
    dyn, _ = dynamic.compile_dynamic_graph(graph.graph_module, weights=graph.weights)
    refined = dynamic.refine(dyn.text, [(6, 8)], dyn.signature)
    assert "?" not in refined
    assert "tensor<6x8xf32>" in refined and "tensor<6x4xf32>" in refined


# -- the symbolic signature ---------------------------------------------------------


def _signature():
    return SymbolicSignature(
        (
            {"name": "x", "dtype": "float32", "shape": ["s0", 8]},
            {"name": "y", "dtype": "float32", "shape": ["s0", "(2*s1)"]},
            {"name": "z", "dtype": "float32", "shape": ["s1"]},
        ),
        {"s0": (2, 100), "s1": (1, None)},
    )


def test_signature_binds_and_checks_each_rule():
    signature = _signature()
    assert signature.bind([(5, 8), (5, 6), (3,)]) == {"s0": 5, "s1": 3}
    with pytest.raises(ShapeConstraintError, match="symbol s0 is 5"):
        signature.bind([(5, 8), (4, 6), (3,)])
    with pytest.raises(ShapeConstraintError, match="requires"):
        signature.bind([(5, 8), (5, 7), (3,)])
    with pytest.raises(ShapeConstraintError, match="outside its range"):
        signature.bind([(101, 8), (101, 6), (3,)])
    with pytest.raises(ShapeConstraintError, match="dimension 1 is 9"):
        signature.bind([(5, 9), (5, 6), (3,)])
    with pytest.raises(ShapeConstraintError, match="3 inputs"):
        signature.bind([(5, 8)])


def test_signature_json_round_trip():
    signature = _signature()
    again = SymbolicSignature.from_json(signature.to_json())
    assert again == signature


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d["symbols"].update({"s 0": {"min": 1, "max": 2}}),
        lambda d: d["symbols"]["s0"].update({"min": -1}),
        lambda d: d["symbols"]["s0"].update({"max": 1}),
        lambda d: d["symbols"]["s0"].update({"min": 1.5}),
        lambda d: d["inputs"][1].update({"shape": ["s0", "__import__('os').getcwd()"]}),
        lambda d: d["inputs"][1].update({"shape": ["s0", "s0 ** 2"]}),
        lambda d: d["inputs"][1].update({"shape": ["s0", "s9"]}),
        lambda d: d["inputs"][2].update({"shape": ["(s1+1)"]}),  # s1 bound by no input
        lambda d: d["inputs"][0].pop("dtype"),
        lambda d: d.update({"extra": 1}),
    ],
)
def test_malformed_signature_refused(corrupt):
    data = _signature().to_json()
    corrupt(data)
    with pytest.raises(ValueError, match="dynamic signature"):
        SymbolicSignature.from_json(data)


def test_random_graph_takes_the_per_shape_path_warned_and_counted():
    def f(x):
        return torch.nn.functional.dropout(x, p=0.5, training=True)

    compiled = torch.compile(f, backend="neuron", dynamic=True)
    with pytest.warns(UserWarning, match="compiled once per shape.*random ops"):
        for n in (64, 96):
            x = torch.rand(n, 8) + 1
            out = compiled(x)
            kept = out != 0
            torch.testing.assert_close(out[kept], 2 * x[kept])
            assert 0 < kept.sum() < n * 8
    stats = _settled()
    assert stats["front_half"] == 0
    assert stats["per_shape_front_half"] == 2


def test_tracer_guards_become_checked_guards():
    import types

    import sympy

    s0, s1 = sympy.Symbol("s0"), sympy.Symbol("s1")
    env = types.SimpleNamespace(
        guards=[
            types.SimpleNamespace(expr=expr)
            for expr in (
                sympy.Gt(s0, 3),
                sympy.Ne(s1, 1),
                sympy.Eq(sympy.Mod(s0, 2), 0),  # no NEFF form: stays Dynamo's
                sympy.Gt(sympy.Symbol("u0"), 1),  # a symbol no input carries
                sympy.Gt(s0, 3),  # twice: once
            )
        ]
    )
    guards = dynamic._guards(env, {"s0", "s1"})
    assert guards == ("s0 > 3", "s1 != 1")
    signature = SymbolicSignature(
        ({"name": "x", "dtype": "float32", "shape": ["s0", "s1"]},),
        {"s0": (2, None), "s1": (0, None)},
        guards,
    )
    assert signature.bind([(4, 2)]) == {"s0": 4, "s1": 2}
    with pytest.raises(ShapeConstraintError, match="guard s1 != 1 fails for s1 = 1"):
        signature.bind([(4, 1)])
