"""Every hardware limit the emulator enforces, violated once: one NKIError whose one-line
message names the instruction, the kernel's file:line and the limit.

Each limit is a kernel below whose refused line ends with ``# REFUSED`` and one row of
``LIMITS``: the instruction the message names, the limit's words, and any further words
the message must hold."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.errors import TorchNeuronError
from torchneuron.nki import NKIError

X = np.zeros((256, 64), np.float32)


def _refused_line(kernel) -> str:
    """``test_limits.py:<n>`` of the kernel's line carrying ``# REFUSED``."""
    lines, first = inspect.getsourcelines(kernel)
    hits = [first + i for i, text in enumerate(lines) if text.rstrip().endswith("# REFUSED")]
    assert len(hits) == 1, kernel.__name__
    return f"test_limits.py:{hits[0]}"


# -- the kernels, one limit each -------------------------------------------------------------


def partition_dimension_over_128(x):
    nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)  # REFUSED
    return x


def matmul_stationary_over_128x128(x):
    s = nl.ndarray((128, 256), dtype=nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(p[:, :], s, m)  # REFUSED
    return x


def matmul_moving_free_over_512(x):
    s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(p, s, m)  # REFUSED
    return x


def psum_bank_overflow(x):
    nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)  # REFUSED
    return x


def psum_capacity_nine_live_banks(x):
    s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(s, 0.0)
    nisa.memset(m, 0.0)
    tiles = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(9)]
    for k in range(8):
        nisa.nc_matmul(tiles[k], s, m)
    nisa.memset(tiles[8], 0.0)  # REFUSED
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for t in tiles:
        nisa.tensor_copy(out, t)
    return x


def sbuf_capacity_exceeded(x):
    a = nl.ndarray((128, 30000), dtype=nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((128, 30000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(a, 0.0)
    nisa.memset(b, 1.0)  # REFUSED
    nisa.tensor_tensor(a, a, b, nl.add)
    return x


def tensor_engine_cannot_read_hbm(x):
    m = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    p = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(p, x[0:128, :], m)  # REFUSED
    return x


def matmul_output_must_be_psum(x):
    s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_matmul(out, s, s)  # REFUSED
    return x


def gpsimd_cannot_access_psum(x):
    p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.iota(p, pattern=[[1, 64]], offset=0)  # REFUSED
    return x


def dma_cannot_reach_psum(x):
    p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.dma_copy(dst=p, src=x[0:128, :])  # REFUSED
    return x


def matmul_dtype_not_supported(x):
    s = nl.ndarray((128, 64), dtype=nl.int8, buffer=nl.sbuf)
    p = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(p, s, s)  # REFUSED
    return x


def out_of_bounds_access(x):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[200:328, :])  # REFUSED
    return x


def out_of_bounds_integer_index(x):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(t[128], 0.0)  # REFUSED
    return x


def storing_values_computed_from_memory_no_instruction_wrote(x):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(t[:, 0:32], 0.0)
    u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(u, t)  # computing on undefined elements is allowed
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, u)  # REFUSED
    return out


def accumulating_onto_unwritten_psum(x):
    s = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(s, 1.0)
    p = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(p, s, s, accumulate=True)  # REFUSED
    return x


# -- the table: (kernel, instruction named, limit, further words the message holds) ----------

LIMITS = [
    (partition_dimension_over_128, "nl.ndarray", "exceeds the 128", ()),
    (matmul_stationary_over_128x128, "nki.isa.nc_matmul", "128x128", ()),
    (matmul_moving_free_over_512, "nki.isa.nc_matmul", "1024 exceeds TensorE's 512", ()),
    (psum_bank_overflow, "nl.ndarray", "a PSUM bank holds 2048", ()),
    (psum_capacity_nine_live_banks, "nki.isa.memset", "PSUM has 8 banks", ()),
    (
        sbuf_capacity_exceeded,
        "nki.isa.memset",
        "SBUF capacity exceeded",
        ("120000 bytes per partition", "196608"),
    ),
    (tensor_engine_cannot_read_hbm, "nki.isa.nc_matmul", "TensorE cannot read HBM", ()),
    (matmul_output_must_be_psum, "nki.isa.nc_matmul", "TensorE cannot write SBUF", ()),
    (gpsimd_cannot_access_psum, "nki.isa.iota", "GpSimd cannot write PSUM", ()),
    (dma_cannot_reach_psum, "nki.isa.dma_copy", "DMA cannot write PSUM", ()),
    (matmul_dtype_not_supported, "nki.isa.nc_matmul", "TensorE does not multiply int8", ()),
    (
        out_of_bounds_access,
        "tile indexing",
        "out-of-bounds access: slice 200:328 of dimension 0 of length 256",
        (),
    ),
    (
        out_of_bounds_integer_index,
        "tile indexing",
        "index 128 of dimension 0 of length 128",
        (),
    ),
    (
        storing_values_computed_from_memory_no_instruction_wrote,
        "nki.isa.dma_copy",
        "undefined elements",
        ("writes 4096 undefined elements of its 8192",),
    ),
    (accumulating_onto_unwritten_psum, "nki.isa.nc_matmul", "uninitialized", ()),
]


@pytest.mark.parametrize(
    ("kernel", "instruction", "limit", "also"),
    [pytest.param(*row, id=row[0].__name__) for row in LIMITS],
)
def test_a_limit_is_one_line_naming_instruction_kernel_line_and_limit(
    kernel, instruction, limit, also
):
    with pytest.raises(NKIError) as info:
        nki.simulate(kernel)(X)
    message = str(info.value)
    assert isinstance(info.value, TorchNeuronError)
    assert "\n" not in message
    assert instruction in message, message
    assert _refused_line(kernel) in message, message
    assert limit in message, message
    for words in also:
        assert words in message, message


def test_kernel_must_return_hbm_and_torch_inputs_are_refused():
    def kernel(x):
        return nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)

    with pytest.raises(NKIError, match="returns sbuf"):
        nki.simulate(kernel)(X)
    torch = pytest.importorskip("torch")
    with pytest.raises(NKIError, match="returns sbuf"):  # torch tensors: the same rule
        nki.jit(kernel)(torch.zeros(2))
    with pytest.raises(NKIError, match="only inside a kernel"):
        nl.ndarray((2, 2), dtype=nl.float32)
