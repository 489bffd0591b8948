"""The hardware table: figures agree with each other and each has a source."""

from __future__ import annotations

import dataclasses

import pytest

from torchneuron.target import hardware
from torchneuron.target.hardware import CHIPS, GiB, MiB

FIGURE_FIELDS = (
    "physical_cores_per_chip",
    "default_lnc",
    "supported_lnc",
    "hbm_bytes_per_chip",
    "hbm_bandwidth_bytes_per_s",
    "dma_engines_per_chip",
    "dma_engines_per_core",
    "dma_engine_bytes_per_s",
    "instruction_overhead_cycles",
    "dma_fixed_latency_s",
    "chip_dense_tflops",
    "tensor_engine",
    "vector_engine",
    "scalar_engine",
    "gpsimd_engine",
    "sbuf_bytes_per_partition",
    "psum_bytes_per_partition",
    "chips_per_node",
)


def test_table_holds_trainium2_and_trainium3():
    assert set(CHIPS) == {"trn2", "trn3"}
    assert CHIPS["trn2"].core_version == "NeuronCore-v3"
    assert CHIPS["trn3"].core_version == "NeuronCore-v4"
    for name, chip in CHIPS.items():
        assert chip.name == name


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_every_figure_has_a_source(target):
    chip = CHIPS[target]
    missing = [f for f in FIGURE_FIELDS if f not in chip.sources]
    assert not missing, f"{target}: no source for {missing}"
    for field, source in chip.sources.items():
        known = ("https://awsdocs-neuron.readthedocs-hosted.com/", "assumption")
        assert source.startswith(known), f"{target}.{field}: {source!r}"


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_tensor_engine_peak_matches_array_size_and_clock(target):
    engine = CHIPS[target].tensor_engine
    # rows x cols MACs, 2 FLOP each, per cycle
    derived_bf16 = engine.rows * engine.cols * 2 * engine.clock_hz
    assert engine.flops_per_core("bfloat16") == pytest.approx(derived_bf16, rel=0.01)
    # FP32 runs at a quarter of the BF16 rate on both generations
    assert engine.flops_per_core("float32") == pytest.approx(derived_bf16 / 4, rel=0.02)


def test_trn2_low_precision_rates():
    engine = CHIPS["trn2"].tensor_engine
    assert engine.flops_per_core("float8_e4m3fn") == 2 * engine.flops_per_core("bfloat16")
    assert engine.flops_per_core("float16") == engine.flops_per_core("bfloat16")
    with pytest.raises(hardware.MissingFigureError, match="mxfp8") as caught:
        engine.flops_per_core("mxfp8")
    assert isinstance(caught.value, KeyError)


def test_trn3_mx_rate_is_four_times_bf16():
    engine = CHIPS["trn3"].tensor_engine
    # 315 published vs 4 x 79 = 316: the published figures are rounded
    assert engine.flops_per_core("mxfp8") == pytest.approx(
        4 * engine.flops_per_core("bfloat16"), rel=0.01
    )


@pytest.mark.parametrize(
    ("target", "dtype"),
    [("trn2", "bfloat16"), ("trn2", "float8"), ("trn3", "bfloat16"), ("trn3", "mxfp8")],
)
def test_chip_totals_close_to_eight_cores(target, dtype):
    # Published chip totals run a few percent above 8 x the per-core figures (the table
    # keeps both as published); they must still describe the same 8-core chip.
    chip = CHIPS[target]
    per_core = chip.tensor_engine.tflops_per_core[dtype]
    total = chip.chip_dense_tflops[dtype]
    assert chip.physical_cores_per_chip == 8
    assert 0.99 <= total / (8 * per_core) <= 1.07


def test_fp32_chip_total_is_the_known_outlier():
    # 181 (trn2) and 183 (trn3) chip FP32 TFLOPS vs 8 x 20 per core: 13-15% apart.
    for chip in CHIPS.values():
        ratio = chip.chip_dense_tflops["float32"] / (
            8 * chip.tensor_engine.tflops_per_core["float32"]
        )
        assert 1.1 < ratio < 1.2


@pytest.mark.parametrize(
    ("target", "lnc", "cores", "hbm_gib"),
    [
        ("trn2", 2, 4, 24),
        ("trn2", 1, 8, 12),
        ("trn3", 2, 4, 36),
        ("trn3", 1, 8, 18),
    ],
)
def test_lnc_divides_chip_into_logical_cores(target, lnc, cores, hbm_gib):
    chip = CHIPS[target]
    assert chip.logical_cores_per_chip(lnc) == cores
    assert chip.hbm_bytes_per_logical_core(lnc) == hbm_gib * GiB
    assert chip.hbm_bytes_per_logical_core(lnc) * cores == chip.hbm_bytes_per_chip
    assert chip.tensor_flops_per_logical_core("bfloat16", lnc) == (
        lnc * chip.tensor_engine.flops_per_core("bfloat16")
    )


def test_defaults_and_memories():
    trn2, trn3 = CHIPS["trn2"], CHIPS["trn3"]
    assert trn2.default_lnc == trn3.default_lnc == 2
    assert trn2.hbm_bytes_per_chip == 96 * GiB and trn3.hbm_bytes_per_chip == 144 * GiB
    assert trn2.hbm_bandwidth_bytes_per_s == 2.9e12 and trn3.hbm_bandwidth_bytes_per_s == 4.9e12
    assert trn2.sbuf_bytes_per_core == 24 * MiB and trn3.sbuf_bytes_per_core == 32 * MiB
    assert trn2.psum_bytes_per_core == trn3.psum_bytes_per_core == 2 * MiB
    # one PSUM bank holds 512 fp32 per partition: the moving operand's free-dim limit
    assert (
        trn2.psum_bytes_per_partition // trn2.psum_banks // 4 == trn2.tensor_engine.max_moving_free
    )
    assert trn2.dma_engines_per_chip == trn3.dma_engines_per_chip == 128


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_dma_engines_per_core_add_up_to_the_chip(target):
    chip = CHIPS[target]
    assert chip.dma_engines_per_core * chip.physical_cores_per_chip == chip.dma_engines_per_chip
    # a logical core's DMA engines move at least its share of HBM bandwidth (within 1%)
    lnc = chip.default_lnc
    assert chip.dma_bytes_per_logical_core(lnc) >= 0.99 * chip.hbm_bandwidth_per_logical_core(lnc)


def test_dma_engine_rates():
    # NKI "Introduction to DMA": 27.2 GB/s per engine on NeuronCore-v3, 38.4 GB/s on v4
    assert CHIPS["trn2"].dma_bytes_per_logical_core(2) == pytest.approx(2 * 16 * 27.2e9)
    assert CHIPS["trn3"].dma_bytes_per_logical_core(1) == pytest.approx(16 * 38.4e9)


def test_engine_throughput_lookup():
    trn2, trn3 = CHIPS["trn2"], CHIPS["trn3"]
    assert trn2.vector_engine.elements_per_second("bfloat16") == 512 * 0.96e9
    assert trn2.vector_engine.elements_per_second("float32") == 256 * 0.96e9
    assert trn3.vector_engine.elements_per_second("float8_e5m2") == 512 * 1.2e9
    assert trn3.scalar_engine.elements_per_second(
        "bfloat16"
    ) == 2 * trn2.scalar_engine.elements_per_second("bfloat16")


def test_table_is_read_only():
    chip = CHIPS["trn2"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        chip.hbm_bytes_per_chip = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        chip.chip_dense_tflops["bfloat16"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        CHIPS["trn4"] = chip  # type: ignore[index]


def test_unsupported_lnc_and_target_are_named():
    with pytest.raises(ValueError, match="LNC in \\[1, 2\\], not 4"):
        CHIPS["trn2"].logical_cores_per_chip(4)
    with pytest.raises(ValueError, match="'trn9'"):
        hardware.chip("trn9")
