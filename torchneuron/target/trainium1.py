"""Trainium1 (trn1, NeuronCore-v2) for planning only.

The emulator compiles and runs for Trainium2 and Trainium3 (``hardware.CHIPS``). The
planner also prices Trainium1, because the only published training throughput of real
Trainium runs is on trn1.32xlarge (the Neuron documentation's training performance
tables), and a plan checked against them is how we know how far our estimates are from
the hardware (docs/distributed-planning.md, "Checked against published runs").
``hardware.chip("trn1")`` and ``hardware.instance("trn1.32xlarge")`` find these; the
compiler's targets stay ``hardware.CHIPS``.

Every figure is from the pages below (read 2026-12); where they disagree, the comment
says which one we took.
"""

from __future__ import annotations

from types import MappingProxyType

from torchneuron.target.hardware import (
    ASSUMPTION,
    DMA_FIXED_LATENCY_S,
    DMA_OVERVIEW_PAGE,
    INSTRUCTION_OVERHEAD_CYCLES,
    ChipSpec,
    EngineSpec,
    GiB,
    InstanceSpec,
    KiB,
    TensorEngineSpec,
)

_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
TRAINIUM1_PAGE = f"{_DOCS}/general/arch/neuron-hardware/trainium.html"
TRAINIUM1_NKI_PAGE = f"{_DOCS}/nki/arch/trainium_inferentia2_arch.html"
NEURONCORE_V2_PAGE = f"{_DOCS}/general/arch/neuron-hardware/neuron-core-v2.html"
TRN1_INSTANCE_PAGE = f"{_DOCS}/general/arch/neuron-hardware/trn1-arch.html"
TRN1_LNC_PAGE = f"{_DOCS}/compiler/error-codes/EARG001.html"  # "On trn1, only lnc=1"


def _frozen(mapping):
    return MappingProxyType(dict(mapping))


TRN1 = ChipSpec(
    name="trn1",
    marketing_name="Trainium",
    core_version="NeuronCore-v2",
    physical_cores_per_chip=2,
    default_lnc=1,
    supported_lnc=(1,),
    hbm_bytes_per_chip=32 * GiB,
    # The NKI guide says 820 GB/s, the chip page 820 GiB/s; we take GB/s (the smaller).
    hbm_bandwidth_bytes_per_s=820e9,
    dma_engines_per_chip=32,
    dma_engines_per_core=16,
    dma_engine_bytes_per_s=27.2e9,
    instruction_overhead_cycles=INSTRUCTION_OVERHEAD_CYCLES,
    dma_fixed_latency_s=DMA_FIXED_LATENCY_S,
    # The chip page: 190 FP16/BF16/cFP8/TF32 TFLOPS and 47.5 FP32 for two cores.
    chip_dense_tflops=_frozen(
        {"bfloat16": 190, "float16": 190, "tfloat32": 190, "float8": 190, "float32": 47.5}
    ),
    tensor_engine=TensorEngineSpec(
        rows=128,
        cols=128,
        # 128 x 128 MACs x 2 FLOP x 2.8 GHz = 91.75 TFLOPS: the NKI guide's 92 per core.
        clock_hz=2.8e9,
        tflops_per_core=_frozen(
            {"bfloat16": 92, "float16": 92, "tfloat32": 92, "float8": 92, "float32": 23}
        ),
        max_stationary=(128, 128),
        max_moving_free=512,
    ),
    # 128 lanes in and out per engine (the NKI guide's table of engine clocks).
    vector_engine=EngineSpec("VectorE", clock_hz=1.12e9, elems_per_cycle=_frozen({"default": 128})),
    scalar_engine=EngineSpec("ScalarE", clock_hz=1.4e9, elems_per_cycle=_frozen({"default": 128})),
    gpsimd_engine=EngineSpec("GpSimdE", clock_hz=1.4e9, elems_per_cycle=_frozen({"default": 128})),
    sbuf_partitions=128,
    sbuf_bytes_per_partition=192 * KiB,  # 24 MiB per core
    psum_bytes_per_partition=16 * KiB,  # 2 MiB per core, 8 banks
    psum_banks=8,
    chips_per_node=16,
    instance_name="trn1.32xlarge",
    neuronlink_generation="NeuronLink-v2",
    neuronlink_links_per_chip=4,
    # The instance page: 384 GiB/s device to device on trn1.32xlarge (768 on trn1n).
    neuronlink_bytes_per_s_per_chip=384 * GiB,
    cc_cores_per_chip=6,
    chip_dma_bytes_per_s=1e12,
    sources=_frozen(
        {
            "physical_cores_per_chip": TRAINIUM1_PAGE,
            "default_lnc": TRN1_LNC_PAGE,
            "supported_lnc": TRN1_LNC_PAGE,
            "hbm_bytes_per_chip": TRAINIUM1_NKI_PAGE,
            "hbm_bandwidth_bytes_per_s": TRAINIUM1_NKI_PAGE,
            "dma_engines_per_chip": TRAINIUM1_NKI_PAGE,
            "dma_engines_per_core": TRAINIUM1_NKI_PAGE,
            "dma_engine_bytes_per_s": DMA_OVERVIEW_PAGE,
            "instruction_overhead_cycles": ASSUMPTION,
            "dma_fixed_latency_s": ASSUMPTION,
            "chip_dense_tflops": TRAINIUM1_PAGE,
            "tensor_engine": TRAINIUM1_NKI_PAGE,
            "vector_engine": TRAINIUM1_NKI_PAGE,
            "scalar_engine": TRAINIUM1_NKI_PAGE,
            "gpsimd_engine": NEURONCORE_V2_PAGE,
            "sbuf_bytes_per_partition": TRAINIUM1_NKI_PAGE,
            "psum_bytes_per_partition": TRAINIUM1_NKI_PAGE,
            "chips_per_node": TRN1_INSTANCE_PAGE,
            "neuronlink_generation": TRAINIUM1_NKI_PAGE,
            "neuronlink_links_per_chip": TRAINIUM1_NKI_PAGE,
            "neuronlink_bytes_per_s_per_chip": TRN1_INSTANCE_PAGE,
            "cc_cores_per_chip": TRAINIUM1_NKI_PAGE,
            "chip_dma_bytes_per_s": TRAINIUM1_PAGE,
        }
    ),
)

_INSTANCE_SOURCES = _frozen(
    {
        "chips": TRN1_INSTANCE_PAGE,
        "topology": TRN1_INSTANCE_PAGE,
        "neuronlink_bytes_per_s_per_chip": TRN1_INSTANCE_PAGE,
        "efa_bits_per_s": TRN1_INSTANCE_PAGE,
    }
)


def _instance(name: str, neuronlink_gib: int, efa_gbps: int) -> InstanceSpec:
    # The instance page: 16 chips in a 2-D torus; the page does not give its shape.
    return InstanceSpec(
        name=name,
        target="trn1",
        chips=16,
        chips_per_server=16,
        topology="16 chips in a 2-D torus of NeuronLink-v2",
        neuronlink_bytes_per_s_per_chip=neuronlink_gib * GiB,
        inter_server_bytes_per_s_per_chip=None,
        efa_bits_per_s=efa_gbps * 1e9,
        sources=_INSTANCE_SOURCES,
    )


CHIPS = _frozen({"trn1": TRN1})
INSTANCES = _frozen(
    {
        "trn1.32xlarge": _instance("trn1.32xlarge", 384, 800),
        "trn1n.32xlarge": _instance("trn1n.32xlarge", 768, 1600),
    }
)
DEFAULT_INSTANCE = _frozen({"trn1": "trn1.32xlarge"})
