"""Advanced indexing counts negative indices from the end, natively, in both modes.

StableHLO's gather and scatter clamp out-of-range indices, so without the lowering
rules ``t[tensor([-1])]`` silently read ``t[0]``.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    # a CPU fallback would hide a wrong lowering: these must run on the device
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


CASES = {
    "one-index": (lambda t, i, j: t[i], [-1, 0, -3, 2], [0]),
    "two-indices-broadcast": (lambda t, i, j: t[:, i[:, None] % 4 - 4, j], [-1, 1], [-5, 4]),
    "index_put": (lambda t, i, j: t.index_put((i,), torch.ones(4, 4, 5)), [-1, -2, 0, 0], [0]),
    "index_put-accumulate": (
        lambda t, i, j: t.index_put((i,), torch.ones(4, 4, 5), accumulate=True),
        [-1, -1, -3, 2],
        [0],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_compiled_negative_indices_match_pytorch(case):
    fn, i, j = CASES[case]
    t = torch.rand(3, 4, 5)
    i, j = torch.tensor(i), torch.tensor(j)
    got = torch.compile(fn, backend="neuron")(t, i, j)
    assert torch.equal(got, fn(t, i, j))


def test_eager_negative_indices_match_pytorch():
    t = torch.rand(3, 4, 5)
    i = torch.tensor([-1, 0, -3])
    assert torch.equal(t.to("neuron")[i.to("neuron")].cpu(), t[i])
    written = t.clone().to("neuron")
    written[torch.tensor([-1]).to("neuron")] = 7.0
    expected = t.clone()
    expected[torch.tensor([-1])] = 7.0
    assert torch.equal(written.cpu(), expected)
