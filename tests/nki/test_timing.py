"""The schedule: engines overlap when instructions are independent and wait when they are
not; instruction costs match figures computed here from the hardware table; the profile
writes a Perfetto trace and a summary."""

from __future__ import annotations

import json

import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.target.hardware import DMA_FIXED_LATENCY_S, INSTRUCTION_OVERHEAD_CYCLES, TRN2

X = np.zeros((128, 512), np.float32)


def _slots(kernel, *args):
    run = nki.estimate(kernel)(*args)
    return {
        slot.instruction.name + f"#{slot.instruction.index}": slot for slot in run.schedule.slots
    }, run


def test_independent_instructions_on_different_engines_overlap():
    def kernel(x):
        a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a, 1.0)  # VectorE
        nisa.iota(b, pattern=[[1, 512]], offset=0)  # GpSimd, touches nothing of a
        return x

    slots, run = _slots(kernel, X)
    vector, gpsimd = slots["memset#0"], slots["iota#1"]
    assert (vector.lane, gpsimd.lane) == ("VectorE", "GpSimd")
    assert vector.start == gpsimd.start == 0.0
    assert run.seconds == pytest.approx(max(vector.end, gpsimd.end))
    assert run.seconds < (vector.end - vector.start) + (gpsimd.end - gpsimd.start)


def test_dependent_instructions_wait_read_after_write_and_write_after_read():
    def kernel(x):
        a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a, 1.0)  # VectorE writes a
        nisa.activation(dst=c, op=nl.exp, data=a)  # ScalarE reads a: waits (RAW)
        nisa.iota(a, pattern=[[1, 512]], offset=0)  # GpSimd overwrites a: waits for the read
        nisa.memset(c[:, 0:256], 0.0)  # VectorE writes part of c: waits (WAW)
        return x

    slots, _ = _slots(kernel, X)
    assert slots["activation#1"].start == slots["memset#0"].end
    assert slots["activation#1"].waited_for == 0
    assert slots["iota#2"].start == slots["activation#1"].end
    assert slots["memset#3"].start == slots["activation#1"].end


def test_disjoint_parts_of_one_tile_do_not_wait():
    def kernel(x):
        a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a[:, 0:256], 1.0)  # VectorE
        nisa.iota(a[:, 256:512], pattern=[[1, 256]], offset=0)  # GpSimd, other half
        return x

    slots, _ = _slots(kernel, X)
    assert slots["iota#1"].start == 0.0


@pytest.mark.parametrize(("dtype", "passes"), [("bfloat16", 1), ("float32", 4)])
def test_matmul_cycles_match_the_engine_table(dtype, passes):
    def kernel(x):
        s = nl.ndarray((128, 128), dtype=getattr(nl, dtype), buffer=nl.sbuf)
        m = nl.ndarray((128, 512), dtype=getattr(nl, dtype), buffer=nl.sbuf)
        p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, s, m)
        return x

    slots, _ = _slots(kernel, X)
    te = TRN2.tensor_engine
    # One array pass per moving column: 128 x 128 MACs (2 FLOP each) at the dtype's rate; FP32
    # at 20 of BF16's 79 TFLOPS takes round(79 / 20) = 4 passes, each with the fixed overhead.
    flops = te.tflops_per_core[dtype] * 1e12
    column_s = 2 * 128 * 128 / (flops * passes)
    expected = passes * (512 * column_s + INSTRUCTION_OVERHEAD_CYCLES / te.clock_hz)
    slot = slots["nc_matmul#0"]
    assert slot.end - slot.start == pytest.approx(expected, rel=1e-12)
    if dtype == "bfloat16":  # ~ one cycle per column at 2.4 GHz, plus 64 cycles
        assert (slot.end - slot.start) * te.clock_hz == pytest.approx(509.7 + 64, abs=0.1)


def test_vector_and_dma_costs_match_the_tables():
    def kernel(x):
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        u = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(u, t)
        return x

    slots, _ = _slots(kernel, X)
    dma, copy = slots["dma_copy#0"], slots["tensor_copy#1"]
    # One core's share of HBM bandwidth (2.9 TB/s over 8 cores), below its 16 DMA engines.
    bandwidth = min(TRN2.hbm_bandwidth_bytes_per_s / 8, 16 * TRN2.dma_engine_bytes_per_s)
    assert dma.end - dma.start == pytest.approx(DMA_FIXED_LATENCY_S + X.nbytes / bandwidth)
    ve = TRN2.vector_engine
    expected = 128 * 512 / (ve.elems_per_cycle["default"] * ve.clock_hz) + 64 / ve.clock_hz
    assert copy.end - copy.start == pytest.approx(expected)
    assert copy.start == dma.end


def test_dma_latency_overlaps_across_queues():
    def kernel(x):
        for i in range(4):
            t = nl.ndarray((32, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[i * 32 : (i + 1) * 32, :])
        return x

    slots, run = _slots(kernel, X)
    lanes = {slot.lane for slot in slots.values()}
    assert len(lanes) == 4 and all(slot.start == 0.0 for slot in slots.values())
    bandwidth = min(TRN2.hbm_bandwidth_bytes_per_s / 8, 16 * TRN2.dma_engine_bytes_per_s)
    # The latencies overlap; the bytes share the bandwidth.
    assert run.seconds == pytest.approx(DMA_FIXED_LATENCY_S + X.nbytes / bandwidth)


def test_profile_writes_a_perfetto_trace_and_summary(tmp_path):
    path = tmp_path / "kernel.json"

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(x)))
        return out

    result = nki.profile(kernel, trace_file=path)(X)
    np.testing.assert_array_equal(result.outputs, np.ones_like(X))
    trace = json.loads(path.read_text())
    lanes = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"TensorE", "VectorE", "ScalarE", "GpSimd", "DMA0", "DMA1"} <= lanes
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in slices] == ["dma_copy", "activation", "dma_copy"]
    assert (
        slices[1]["args"]["operands"]
        == "sbuf:sbuf1[128x512] float32 <- sbuf:sbuf0[128x512] float32"
    )
    assert slices[1]["args"]["line"].startswith("test_timing.py:")
    summary = result.summary()
    assert "ScalarE" in summary and "SBUF high water: 4096 of 196608" in summary


def test_a_tile_reusing_memory_waits_for_the_previous_occupant():
    def kernel(x):
        a = nl.ndarray((128, 48 * 1024), dtype=nl.float32, buffer=nl.sbuf)  # all of SBUF
        nisa.memset(a, 1.0)
        p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.activation(dst=p, op=nl.exp, data=a[:, 0:512])  # a's last use (ScalarE)
        b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.iota(b, pattern=[[1, 512]], offset=0)  # GpSimd: nothing in common with a but bytes
        nisa.tensor_copy(b, p)
        return x

    slots, run = _slots(kernel, X)
    assert run.plan.placements[run.trace.allocations[-1].id].offset == 0
    assert slots["iota#2"].start == slots["activation#1"].end


def test_sbuf_capacity_is_the_targets():
    def kernel(x):
        a = nl.ndarray((128, 60000), dtype=nl.float32, buffer=nl.sbuf)  # 240,000 bytes
        nisa.memset(a, 0.0)
        return x

    with pytest.raises(nki.NKIError, match="SBUF capacity exceeded"):
        nki.estimate(kernel)(X)  # trn2: 192 KiB per partition
    run = nki.estimate(kernel, target="trn3")(X)  # trn3: 256 KiB per partition
    assert run.plan.sbuf_high_water == 240000


def test_listing_names_each_instruction_engine_and_line():
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(x)))
        return out

    text = nki.estimate(kernel)(X).listing()
    lines = text.splitlines()
    assert len(lines) == 3
    assert "activation" in lines[1] and "ScalarE" in lines[1] and "test_timing.py:" in lines[1]
