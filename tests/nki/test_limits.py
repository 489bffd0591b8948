"""Every hardware limit the emulator enforces, violated once: one NKIError whose one-line
message names the instruction, the kernel's file:line and the limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.errors import TorchNeuronError
from torchneuron.nki import NKIError

SOURCE = Path(__file__).read_text().splitlines()


def _line(marker: str) -> str:
    """``test_limits.py:<n>`` of the line carrying ``# <marker>``."""
    hits = [i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return f"test_limits.py:{hits[0]}"


def _refused(kernel, *args, instruction: str, marker: str, limit: str) -> str:
    with pytest.raises(NKIError) as info:
        nki.simulate(kernel)(*args)
    message = str(info.value)
    assert isinstance(info.value, TorchNeuronError)
    assert "\n" not in message
    assert instruction in message, message
    assert _line(marker) in message, message
    assert limit in message, message
    return message


X = np.zeros((256, 64), np.float32)


def test_partition_dimension_over_128():
    def kernel(x):
        nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)  # PARTITIONS
        return x

    _refused(kernel, X, instruction="nl.ndarray", marker="PARTITIONS", limit="exceeds the 128")


def test_matmul_stationary_over_128x128():
    def kernel(x):
        s = nl.ndarray((128, 256), dtype=nl.bfloat16, buffer=nl.sbuf)
        m = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
        p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p[:, :], s, m)  # STATIONARY
        return x

    _refused(kernel, X, instruction="nki.isa.nc_matmul", marker="STATIONARY", limit="128x128")


def test_matmul_moving_free_over_512():
    def kernel(x):
        s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        m = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
        p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, s, m)  # MOVING
        return x

    _refused(
        kernel,
        X,
        instruction="nki.isa.nc_matmul",
        marker="MOVING",
        limit="1024 exceeds TensorE's 512",
    )


def test_psum_bank_overflow():
    def kernel(x):
        nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)  # BANK
        return x

    _refused(kernel, X, instruction="nl.ndarray", marker="BANK", limit="a PSUM bank holds 2048")


def test_psum_capacity_nine_live_banks():
    def kernel(x):
        s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        m = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(s, 0.0)
        nisa.memset(m, 0.0)
        tiles = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(9)]
        for k in range(8):
            nisa.nc_matmul(tiles[k], s, m)
        nisa.memset(tiles[8], 0.0)  # NINTH
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        for t in tiles:
            nisa.tensor_copy(out, t)
        return x

    _refused(kernel, X, instruction="nki.isa.memset", marker="NINTH", limit="PSUM has 8 banks")


def test_sbuf_capacity_exceeded():
    def kernel(x):
        a = nl.ndarray((128, 30000), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((128, 30000), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a, 0.0)
        nisa.memset(b, 1.0)  # SBUF
        nisa.tensor_tensor(a, a, b, nl.add)
        return x

    message = _refused(
        kernel, X, instruction="nki.isa.memset", marker="SBUF", limit="SBUF capacity exceeded"
    )
    assert "120000 bytes per partition" in message and "196608" in message


def test_tensor_engine_cannot_read_hbm():
    def kernel(x):
        m = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        p = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, x[0:128, :], m)  # HBM
        return x

    _refused(
        kernel, X, instruction="nki.isa.nc_matmul", marker="HBM", limit="TensorE cannot read HBM"
    )


def test_matmul_output_must_be_psum():
    def kernel(x):
        s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_matmul(out, s, s)  # NOTPSUM
        return x

    _refused(
        kernel,
        X,
        instruction="nki.isa.nc_matmul",
        marker="NOTPSUM",
        limit="TensorE cannot write SBUF",
    )


def test_gpsimd_cannot_access_psum():
    def kernel(x):
        p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.iota(p, pattern=[[1, 64]], offset=0)  # GPSIMD
        return x

    _refused(
        kernel, X, instruction="nki.isa.iota", marker="GPSIMD", limit="GpSimd cannot write PSUM"
    )


def test_dma_cannot_reach_psum():
    def kernel(x):
        p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.dma_copy(dst=p, src=x[0:128, :])  # DMAPSUM
        return x

    _refused(
        kernel, X, instruction="nki.isa.dma_copy", marker="DMAPSUM", limit="DMA cannot write PSUM"
    )


def test_matmul_dtype_not_supported():
    def kernel(x):
        s = nl.ndarray((128, 64), dtype=nl.int8, buffer=nl.sbuf)
        p = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, s, s)  # DTYPE
        return x

    _refused(
        kernel,
        X,
        instruction="nki.isa.nc_matmul",
        marker="DTYPE",
        limit="TensorE does not multiply int8",
    )


def test_out_of_bounds_access():
    def kernel(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[200:328, :])  # OOB
        return x

    _refused(
        kernel,
        X,
        instruction="tile indexing",
        marker="OOB",
        limit="out-of-bounds access: slice 200:328 of dimension 0 of length 256",
    )


def test_out_of_bounds_integer_index():
    def kernel(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(t[128], 0.0)  # OOBINT
        return x

    _refused(
        kernel,
        X,
        instruction="tile indexing",
        marker="OOBINT",
        limit="index 128 of dimension 0 of length 128",
    )


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


def test_storing_values_computed_from_memory_no_instruction_wrote():
    def kernel(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(t[:, 0:32], 0.0)
        u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(u, t)  # computing on undefined elements is allowed
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(out, u)  # UNINIT
        return out

    message = _refused(
        kernel, X, instruction="nki.isa.dma_copy", marker="UNINIT", limit="undefined elements"
    )
    assert "writes 4096 undefined elements of its 8192" in message


def test_accumulating_onto_unwritten_psum_is_refused():
    def kernel(x):
        s = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(s, 1.0)
        p = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, s, s, accumulate=True)  # ACCUMULATE
        return x

    _refused(kernel, X, instruction="nki.isa.nc_matmul", marker="ACCUMULATE", limit="uninitialized")
