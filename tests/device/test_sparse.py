"""Sparse COO and CSR tensors on the neuron device, each result compared with PyTorch on CPU.

The tests of native kernels run with ``TORCHNEURON_NO_FALLBACK=1`` (any CPU fallback
would raise); ``test_unlowered_sparse_op_falls_back_listed`` checks the fallback.
"""

from __future__ import annotations

import pytest
import torch

import torchneuron
from torchneuron.device import fallback, sparse

DEVICE = "neuron"


@pytest.fixture
def native(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def _random_coo(size, nnz, dense_dims=(), seed=0, dtype=torch.float32):
    """An uncoalesced COO tensor on CPU (duplicate indices included)."""
    generator = torch.Generator().manual_seed(seed)
    indices = torch.stack(
        [torch.randint(0, extent, (nnz,), generator=generator) for extent in size]
    )
    values = torch.randn((nnz, *dense_dims), generator=generator).to(dtype)
    return torch.sparse_coo_tensor(indices, values, (*size, *dense_dims))


# Most tests share these two matrices: their ops then compile once for the whole file.
def _matrix_a():
    return _random_coo((4, 5), 9, seed=7)


def _matrix_b():
    return _random_coo((4, 5), 8, seed=8)


def _assert_same_sparse(device_tensor, cpu_tensor):
    assert device_tensor.device.type == DEVICE
    assert device_tensor.layout == cpu_tensor.layout
    assert device_tensor.shape == cpu_tensor.shape
    assert device_tensor.dtype == cpu_tensor.dtype
    torch.testing.assert_close(device_tensor.cpu().to_dense(), cpu_tensor.to_dense())


def test_coo_creation_and_inspection(native):
    indices = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    values = torch.tensor([3.0, 4.0, 5.0, 1.0])
    expected = torch.sparse_coo_tensor(indices, values, (2, 3))
    for made in (
        torch.sparse_coo_tensor(indices.to(DEVICE), values.to(DEVICE), (2, 3), device=DEVICE),
        torch.sparse_coo_tensor(indices, values, (2, 3), device=DEVICE),
        expected.to(DEVICE),
    ):
        assert made.is_sparse and made.device.type == DEVICE
        assert (made._nnz(), made.sparse_dim(), made.dense_dim()) == (4, 2, 0)
        assert not made.is_coalesced()
        assert made._indices().device.type == DEVICE and made._values().device.type == DEVICE
        assert torch.equal(made._indices().cpu(), indices)
        assert torch.equal(made._values().cpu(), values)
        dense = made.to_dense()
        assert dense.device.type == DEVICE and dense.layout == torch.strided
        torch.testing.assert_close(dense.cpu(), expected.to_dense())
        back = made.cpu()
        assert back.device.type == "cpu" and back.is_sparse
        assert torch.equal(back.to_dense(), expected.to_dense())


@pytest.mark.parametrize(
    ("size", "nnz", "dense_dims"),
    [((4, 5), 9, ()), ((3, 4, 2), 10, ()), ((6, 3), 9, (2,)), ((4, 4), 0, ())],
)
def test_coalesce_matches_cpu(native, size, nnz, dense_dims):
    cpu = _matrix_a() if size == (4, 5) else _random_coo(size, nnz, dense_dims, seed=nnz)
    expected = cpu.coalesce()
    result = cpu.to(DEVICE).coalesce()
    assert result.is_coalesced()
    assert torch.equal(result.indices().cpu(), expected.indices())
    torch.testing.assert_close(result.values().cpu(), expected.values())
    assert result._nnz() == expected._nnz()


def test_dense_to_sparse_and_csr(native):
    dense = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0], [0.0, 0.0, 0.0], [4.0, 0.0, 0.0]])
    on_device = dense.to(DEVICE)
    coo = on_device.to_sparse()
    expected = dense.to_sparse()
    assert coo.is_coalesced()
    assert torch.equal(coo.indices().cpu(), expected.indices())
    assert torch.equal(coo.values().cpu(), expected.values())
    # sparse_dim=1: rows with any nonzero entry, each a dense row of values
    hybrid, expected_hybrid = on_device.to_sparse(1), dense.to_sparse(1)
    assert torch.equal(hybrid.indices().cpu(), expected_hybrid.indices())
    assert torch.equal(hybrid.values().cpu(), expected_hybrid.values())
    csr, expected_csr = on_device.to_sparse_csr(), dense.to_sparse_csr()
    assert csr.layout == torch.sparse_csr and csr.device.type == DEVICE
    assert torch.equal(csr.crow_indices().cpu(), expected_csr.crow_indices())
    assert torch.equal(csr.col_indices().cpu(), expected_csr.col_indices())
    assert torch.equal(csr.values().cpu(), expected_csr.values())
    assert csr._nnz() == expected_csr._nnz()
    torch.testing.assert_close(csr.to_dense().cpu(), dense)
    torch.testing.assert_close((csr * 2.5).to_dense().cpu(), dense * 2.5)
    # between layouts on the device
    torch.testing.assert_close(csr.to_sparse().to_dense().cpu(), dense)
    torch.testing.assert_close(coo.to_sparse_csr().to_dense().cpu(), dense)
    # CSR built from its parts, moved both ways
    made = torch.sparse_csr_tensor(
        expected_csr.crow_indices(), expected_csr.col_indices(), expected_csr.values(),
        dense.shape, device=DEVICE,
    )  # fmt: skip
    _assert_same_sparse(made, expected_csr)
    _assert_same_sparse(expected_csr.to(DEVICE), expected_csr)


def test_sparse_matmul_matches_cpu(native):
    coo = _matrix_a()
    dense = torch.randn(5, 3, generator=torch.Generator().manual_seed(4))
    left = torch.randn(2, 4, generator=torch.Generator().manual_seed(5))
    bias = torch.randn(4, 3, generator=torch.Generator().manual_seed(6))
    s, d, b = coo.to(DEVICE), dense.to(DEVICE), bias.to(DEVICE)
    on_left = left.to(DEVICE)
    cases = {
        "sparse.mm": (torch.sparse.mm(s, d), torch.sparse.mm(coo, dense)),
        "mm": (torch.mm(s, d), torch.mm(coo, dense)),
        "matmul": (s @ d, coo @ dense),
        "dense @ sparse": (torch.mm(on_left, s), torch.mm(left, coo)),
        "addmm": (torch.addmm(b, s, d), torch.addmm(bias, coo, dense)),
        "sparse.addmm": (
            torch.sparse.addmm(b, s, d, beta=0.5, alpha=2.0),
            torch.sparse.addmm(bias, coo, dense, beta=0.5, alpha=2.0),
        ),
        "csr @ dense": (s.to_sparse_csr() @ d, coo.to_sparse_csr() @ dense),
    }
    for name, (result, expected) in cases.items():
        assert result.device.type == DEVICE and result.layout == torch.strided, name
        torch.testing.assert_close(result.cpu(), expected, msg=name)


def test_sparse_elementwise_matches_cpu(native):
    a_cpu, b_cpu = _matrix_a(), _matrix_b()
    dense_cpu = torch.randn(4, 5, generator=torch.Generator().manual_seed(9))
    a, b, dense = a_cpu.to(DEVICE), b_cpu.to(DEVICE), dense_cpu.to(DEVICE)
    cases = {
        "sparse * 2.5": (a * 2.5, a_cpu * 2.5),
        "3 * sparse": (3 * a, 3 * a_cpu),
        "sparse / 2": (a / 2, a_cpu / 2),
        "sparse + sparse": (a + b, a_cpu + b_cpu),
        "sparse - sparse": (a - b, a_cpu - b_cpu),
        "sparse * sparse": (a * b, a_cpu.coalesce() * b_cpu.coalesce()),
        "sparse * dense": (a * dense, a_cpu * dense_cpu),
        "dense + sparse": (dense + a, dense_cpu + a_cpu),
        "torch.add alpha": (torch.add(dense, a, alpha=-2), torch.add(dense_cpu, a_cpu, alpha=-2)),
        "sin": (torch.sin(a), torch.sin(a_cpu)),
        "neg": (-a, -a_cpu),
        "sparse_mask": (dense.sparse_mask(b.coalesce()), dense_cpu.sparse_mask(b_cpu.coalesce())),
    }
    for name, (result, expected) in cases.items():
        assert result.device.type == DEVICE, name
        assert result.layout == expected.layout, name
        torch.testing.assert_close(result.cpu().to_dense(), expected.to_dense(), msg=name)
    in_place, in_place_cpu = dense.clone(), dense_cpu.clone()
    in_place.add_(a, alpha=0.5)
    in_place_cpu.add_(a_cpu, alpha=0.5)
    torch.testing.assert_close(in_place.cpu(), in_place_cpu)


def test_sparse_sum_matches_cpu(native):
    cpu = _matrix_a()
    s = cpu.to(DEVICE)
    torch.testing.assert_close(torch.sparse.sum(s).cpu(), torch.sparse.sum(cpu))
    for dim in (0, 1, (0, 1)):
        result, expected = torch.sparse.sum(s, dim=dim), torch.sparse.sum(cpu, dim=dim)
        assert result.device.type == DEVICE and result.layout == expected.layout, dim
        torch.testing.assert_close(result.cpu().to_dense(), expected.to_dense(), msg=str(dim))


def _embedding_steps(device, optimizer_factory, steps=3):
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(10, 4, sparse=True)
    head = torch.nn.Linear(4, 1)
    embedding.to(device)
    head.to(device)
    optimizer = optimizer_factory(list(embedding.parameters()))
    # Same batch shape and number of distinct rows each step (repeats included): the
    # device compiles each op once.
    batches = [
        torch.tensor([[1, 3, 3], [7, 1, 0]]),
        torch.tensor([[2, 2, 9], [5, 4, 2]]),
        torch.tensor([[6, 8, 8], [6, 1, 3]]),
    ]
    weights, gradients = [], []
    for step in range(steps):
        optimizer.zero_grad()
        loss = head(embedding(batches[step % len(batches)].to(device))).pow(2).sum()
        loss.backward()
        gradient = embedding.weight.grad
        assert gradient.is_sparse and gradient.device.type == torch.device(device).type
        gradients.append(gradient.cpu().to_dense())
        optimizer.step()
        weights.append(embedding.weight.detach().cpu().clone())
    return weights, gradients


@pytest.mark.parametrize(
    "optimizer_factory",
    [
        lambda params: torch.optim.SGD(params, lr=0.1),
        lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
        lambda params: torch.optim.SparseAdam(params, lr=0.05),
        lambda params: torch.optim.Adagrad(params, lr=0.1),
    ],
    ids=["sgd", "sgd-momentum", "sparse-adam", "adagrad"],
)
def test_sparse_embedding_training_matches_cpu(native, optimizer_factory):
    weights, gradients = _embedding_steps(DEVICE, optimizer_factory)
    expected_weights, expected_gradients = _embedding_steps("cpu", optimizer_factory)
    for step, (got, expected) in enumerate(zip(gradients, expected_gradients)):
        torch.testing.assert_close(got, expected, msg=f"gradient at step {step}")
    for step, (got, expected) in enumerate(zip(weights, expected_weights)):
        torch.testing.assert_close(got, expected, msg=f"weight after step {step}")


def test_zero_preserving_unary_ops_and_predicates_on_coo_and_csr(native):
    inf, nan = float("inf"), float("nan")
    dense = torch.tensor([[0.0, nan, -2.0, 0.0], [inf, 0.0, -inf, 0.5], [0.0, 0.0, 0.0, -3.0]])
    for cpu in (dense.to_sparse(), dense.to_sparse_csr()):
        s = cpu.to(DEVICE)
        for op in (torch.sin, torch.abs, torch.sgn, torch.isnan, torch.isinf, torch.signbit):
            result, expected = op(s), op(cpu)
            what = f"{op.__name__} of {cpu.layout}"
            assert result.device.type == DEVICE and result.layout == expected.layout, what
            assert result.dtype == expected.dtype, what
            torch.testing.assert_close(
                result.cpu().to_dense(), expected.to_dense(), equal_nan=True, msg=what
            )


def test_unlowered_sparse_op_falls_back_listed(monkeypatch):
    cpu = _random_coo((3, 4), 6, seed=11).coalesce()
    s = cpu.to(DEVICE)
    fallback.clear_fallback_ops()
    with pytest.warns(RuntimeWarning, match="aten::_sparse_softmax"):
        result = torch.sparse.softmax(s, dim=1)
    assert result.is_sparse and result.device.type == DEVICE
    torch.testing.assert_close(result.cpu().to_dense(), torch.sparse.softmax(cpu, dim=1).to_dense())
    assert "aten::_sparse_softmax" in torchneuron.get_fallback_ops()
    # an op whose composite kernel would fail on a CSR layout takes the fallback too
    csr_cpu = cpu.to_sparse_csr()
    with pytest.warns(RuntimeWarning, match="aten::sum.dim_IntList"):
        csr_sum = csr_cpu.to(DEVICE).sum(dim=1, keepdim=True)
    expected = csr_cpu.sum(dim=1, keepdim=True)
    assert csr_sum.layout == expected.layout and csr_sum.device.type == DEVICE
    torch.testing.assert_close(csr_sum.cpu().to_dense(), expected.to_dense())
    assert "aten::sum.dim_IntList" in torchneuron.get_fallback_ops()
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    with pytest.raises(fallback.NeuronFallbackError, match="aten::_sparse_softmax"):
        torch.sparse.softmax(s, dim=1)


def test_in_place_fallback_writes_back(monkeypatch):
    # abs_ on a sparse tensor has no native kernel: its CPU result must land in the original
    # tensor (PyTorch's in-place sparse abs_ wants a coalesced input).
    cpu = _random_coo((3, 4), 6, seed=12).coalesce()
    s = cpu.to(DEVICE)
    fallback.clear_fallback_ops()
    with pytest.warns(RuntimeWarning, match="aten::abs_"):
        returned = s.abs_()
    assert returned is s
    _assert_same_sparse(s, cpu.abs())


def test_native_op_list_names_the_kernels():
    names = sparse.native_ops()
    for op in ("aten::mm", "aten::_coalesce", "aten::_to_dense", "aten::add.Tensor"):
        assert op in names


def test_sparse_shape_ops_match_cpu(native):
    cpu = _matrix_a()
    hybrid_cpu = _random_coo((4, 3), 6, dense_dims=(2,), seed=14)
    s, hybrid = cpu.to(DEVICE), hybrid_cpu.to(DEVICE)
    index_cpu = torch.tensor([3, 0, 3, 1])
    index = index_cpu.to(DEVICE)
    cases = {
        "unsqueeze(0)": (s.unsqueeze(0), cpu.unsqueeze(0)),
        "unsqueeze(-1) hybrid": (hybrid.unsqueeze(-1), hybrid_cpu.unsqueeze(-1)),
        "t": (s.t(), cpu.t()),
        "permute": (s.permute(1, 0), cpu.permute(1, 0)),
        "index_select sparse dim": (s.index_select(1, index), cpu.index_select(1, index_cpu)),
        "index_select dense dim": (
            hybrid.index_select(2, torch.tensor([1, 1, 0], device=DEVICE)),
            hybrid_cpu.index_select(2, torch.tensor([1, 1, 0])),
        ),
        "cat": (torch.cat([s, s * 2], dim=1), torch.cat([cpu, cpu * 2], dim=1)),
        "pow": (s.pow(2), cpu.pow(2)),
        "sparse_mask sparse": (
            s.sparse_mask(s.t().t().coalesce()),
            cpu.sparse_mask(cpu.coalesce()),
        ),
    }
    for name, (result, expected) in cases.items():
        assert result.is_sparse and result.device.type == DEVICE, name
        assert result.shape == expected.shape, name
        torch.testing.assert_close(result.cpu().to_dense(), expected.to_dense(), msg=name)


def test_gradients_through_sparse_ops_match_cpu(native):
    cpu = _matrix_a()
    weight_cpu = torch.randn(5, 3, generator=torch.Generator().manual_seed(4))

    def run(device):
        indices = cpu._indices().to(device)
        values = cpu._values().to(device).requires_grad_()
        weight = weight_cpu.to(device).requires_grad_()
        matrix = torch.sparse_coo_tensor(indices, values, cpu.shape)
        loss = torch.sparse.mm(matrix, weight).pow(2).sum() + matrix.to_dense().pow(3).sum()
        loss.backward()
        return loss.detach().cpu(), values.grad.cpu(), weight.grad.cpu()

    for got, expected in zip(run(DEVICE), run("cpu")):
        torch.testing.assert_close(got, expected)
