"""The one table of emulated hardware: Trainium2 and Trainium3 figures, each with its source.

Every number the runtime uses to model a chip (core counts, logical NeuronCore
configuration, HBM capacity and bandwidth, engine clocks and throughputs, on-chip
memories, DMA engines and their bandwidth, instruction and transfer overheads) lives
here, in ``CHIPS``; the cost model (``torchneuron.estimate``) reads them from here. Each ``ChipSpec`` carries a
``sources`` mapping from field name to the public aws-neuron-sdk documentation
page the figure was taken from, so a reader can check any figure; where public
pages disagree, the comment next to the figure says which one we chose and why.

Throughput keys use torch-style dtype names (``"bfloat16"``, ``"float32"`` ...)
plus ``"tfloat32"``, ``"float8"`` (either FP8 format), ``"mxfp8"`` and ``"mxfp4"``.
Engine throughput tables have a ``"default"`` entry for dtypes not listed.

``INSTANCES`` holds the instance types and UltraServers (chips, topology, NeuronLink and EFA
bandwidth) that ``torchneuron.estimate.collectives`` prices collectives on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from torchneuron.errors import TorchNeuronError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
TRAINIUM2_PAGE = f"{_DOCS}/about-neuron/arch/neuron-hardware/trainium2.html"
NEURONCORE_V3_PAGE = f"{_DOCS}/about-neuron/arch/neuron-hardware/neuron-core-v3.html"
TRAINIUM2_NKI_PAGE = f"{_DOCS}/nki/arch/trainium2_arch.html"
# The Trn2 instance page: trn2.48xlarge / trn2u.48xlarge (16 Trainium2 chips, 4x4 2-D torus),
# the Trn2 UltraServer (64 chips) and their NeuronLink-v3 and EFAv3 figures.
TRN2_INSTANCE_PAGE = f"{_DOCS}/general/arch/neuron-hardware/trn2-arch.html"
# The Trn3 page: Gen1 (64 chips, 4 servers x 16) and Gen2 (144 chips, 36 servers x 4)
# UltraServers, NeuronSwitch-v1, NeuronLink-v4 and EFA figures.
TRN3_INSTANCE_PAGE = f"{_DOCS}/about-neuron/arch/neuron-hardware/trn3-arch.html"
TRAINIUM3_PAGE = f"{_DOCS}/about-neuron/arch/neuron-hardware/trainium3.html"
NEURONCORE_V4_PAGE = f"{_DOCS}/about-neuron/arch/neuron-hardware/neuron-core-v4.html"
TRAINIUM3_NKI_PAGE = f"{_DOCS}/nki/about/trainium3_arch.html"
# States that neuronx-cc defaults to LNC=2 on Trn2 and later.
LNC_DEFAULT_PAGE = f"{_DOCS}/compiler/error-codes/EVRF066.html"
NKI_LNC_PAGE = f"{_DOCS}/nki/get-started/about/lnc.html"
# NKI "Introduction to DMA": DMA engines per NeuronCore and each engine's bandwidth.
DMA_OVERVIEW_PAGE = f"{_DOCS}/nki/about/nki-dma-overview.html"
# The source of a figure no public page gives; the comment next to the figure explains it.
ASSUMPTION = "assumption (see comment in hardware.py)"

# Fixed cost of issuing one engine instruction (decode, semaphore wait, pipeline fill),
# in cycles of that engine's clock. No public figure: an assumption of a few dozen
# cycles, chosen so that a 512-column matmul instruction (the longest the moving
# operand allows) runs at 512 / (512 + 64) = 89% of peak, in line with the ~90% the
# NKI performance guide calls good compute utilisation.
INSTRUCTION_OVERHEAD_CYCLES = 64

# Fixed latency of a kernel's DMA (descriptor generation, semaphore round trip, first
# packet) before its bytes stream. No public figure: an assumption of 2 us. It delays
# the kernel (and so chains of small dependent kernels, as the Neuron Explorer guide on
# inefficient DMA transfers describes) but overlaps with other kernels' transfers.
DMA_FIXED_LATENCY_S = 2e-6

# Fixed cost of one step of a collective algorithm (one send/receive round with its
# semaphore handshake), by the level the step crosses. No public figures: assumptions.
# Inside a chip a step is one DMA between logical cores' HBM regions, so it costs the DMA
# latency above; a NeuronLink hop adds the CC-core handshake with the neighbouring chip (an
# assumed 3 us); an EFA round trip between instances is an order of magnitude slower (an
# assumed 15 us, the usual small-message latency of RDMA-class fabrics).
COLLECTIVE_STEP_LATENCY_S: Mapping[str, float] = MappingProxyType(
    {"intra-chip": DMA_FIXED_LATENCY_S, "neuronlink": 3e-6, "efa": 15e-6}
)


class UnknownTargetError(TorchNeuronError, ValueError):
    """A target name or logical core size the hardware table does not hold."""


class MissingFigureError(TorchNeuronError, KeyError):
    """The table has no figure for what was asked (e.g. a dtype's matmul throughput)."""


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class TensorEngineSpec:
    """The systolic-array matrix engine of one physical NeuronCore."""

    rows: int
    cols: int
    clock_hz: float
    # Dense TFLOPS of one physical core, by input dtype.
    tflops_per_core: Mapping[str, float]
    # Largest stationary operand one matmul instruction takes (partition x free).
    max_stationary: tuple[int, int]
    # Largest free dimension of the moving operand: one PSUM bank of fp32.
    max_moving_free: int

    def flops_per_core(self, dtype: str) -> float:
        """Dense FLOP/s of one physical core for matmul inputs of ``dtype``."""
        if dtype in self.tflops_per_core:
            return self.tflops_per_core[dtype] * 1e12
        if dtype.startswith("float8"):
            return self.tflops_per_core["float8"] * 1e12
        raise MissingFigureError(
            f"TensorEngine has no throughput figure for dtype {dtype!r}; "
            f"known: {sorted(self.tflops_per_core)}"
        )


@dataclass(frozen=True)
class EngineSpec:
    """An element-wise engine (Vector, Scalar or GpSimd) of one physical NeuronCore."""

    name: str
    clock_hz: float
    # Elements processed per cycle by dtype; "default" covers dtypes not listed.
    elems_per_cycle: Mapping[str, int]

    def elements_per_second(self, dtype: str) -> float:
        """Peak elements/s of this engine for operands of ``dtype``."""
        per_cycle = self.elems_per_cycle.get(dtype)
        if per_cycle is None and dtype.startswith("float8"):
            per_cycle = self.elems_per_cycle.get("float8")
        if per_cycle is None:
            per_cycle = self.elems_per_cycle["default"]
        return per_cycle * self.clock_hz


@dataclass(frozen=True)
class ChipSpec:
    """One Trainium chip generation as the emulator models it."""

    name: str  # platform target name, as in NEURON_PLATFORM_TARGET_OVERRIDE
    marketing_name: str
    core_version: str
    physical_cores_per_chip: int
    default_lnc: int
    supported_lnc: tuple[int, ...]
    hbm_bytes_per_chip: int
    hbm_bandwidth_bytes_per_s: float
    dma_engines_per_chip: int
    # DMA engines serving one physical NeuronCore, and each one's bandwidth.
    dma_engines_per_core: int
    dma_engine_bytes_per_s: float
    # Cycles of fixed cost per engine instruction, and seconds before a transfer's first
    # bytes (both assumptions: INSTRUCTION_OVERHEAD_CYCLES, DMA_FIXED_LATENCY_S).
    instruction_overhead_cycles: int
    dma_fixed_latency_s: float
    # Dense TFLOPS of the whole chip as the chip page states it.
    chip_dense_tflops: Mapping[str, float]
    tensor_engine: TensorEngineSpec
    vector_engine: EngineSpec
    scalar_engine: EngineSpec
    gpsimd_engine: EngineSpec
    sbuf_partitions: int
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int
    psum_banks: int
    # Chips in the largest single instance we emulate; bounds NEURON_RT_VISIBLE_CORES.
    chips_per_node: int
    instance_name: str
    # Chip-to-chip interconnect: generation, links per chip, and the chip page's bandwidth
    # per chip (all its links, both directions together).
    neuronlink_generation: str
    neuronlink_links_per_chip: int
    neuronlink_bytes_per_s_per_chip: float
    # Collective-communication cores: they sequence the DMAs of collectives on and off chip.
    cc_cores_per_chip: int
    # The chip page's total DMA bandwidth ("Data movement").
    chip_dma_bytes_per_s: float
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def sbuf_bytes_per_core(self) -> int:
        return self.sbuf_partitions * self.sbuf_bytes_per_partition

    @property
    def psum_bytes_per_core(self) -> int:
        return self.sbuf_partitions * self.psum_bytes_per_partition

    def check_lnc(self, lnc: int) -> None:
        """Raise UnknownTargetError (a ValueError) if ``lnc`` is not a logical core size
        this chip supports."""
        if lnc not in self.supported_lnc:
            raise UnknownTargetError(
                f"{self.marketing_name} ({self.name}) supports LNC in {list(self.supported_lnc)}, "
                f"not {lnc}"
            )

    def logical_cores_per_chip(self, lnc: int) -> int:
        """Logical NeuronCores one chip exposes when ``lnc`` physical cores form one."""
        self.check_lnc(lnc)
        return self.physical_cores_per_chip // lnc

    def hbm_bytes_per_logical_core(self, lnc: int) -> int:
        """The chip's HBM split evenly over its logical cores."""
        return self.hbm_bytes_per_chip // self.logical_cores_per_chip(lnc)

    def hbm_bandwidth_per_logical_core(self, lnc: int) -> float:
        return self.hbm_bandwidth_bytes_per_s / self.logical_cores_per_chip(lnc)

    def dma_bytes_per_logical_core(self, lnc: int) -> float:
        """What the DMA engines of ``lnc`` physical cores can move per second together."""
        self.check_lnc(lnc)
        return lnc * self.dma_engines_per_core * self.dma_engine_bytes_per_s

    def intra_chip_bytes_per_logical_core(self, lnc: int) -> float:
        """What one logical core can send to another logical core of the same chip per second.

        No public core-to-core figure exists (ASSUMPTION): a transfer between two logical
        cores of one chip is a DMA from one HBM region to another, so each byte is read once
        and written once. We take the smaller of the logical core's DMA bandwidth and half its
        share of HBM bandwidth (trn2, LNC=2: min(870 GB/s, 2.9 TB/s / 4 / 2) = 362.5 GB/s).
        """
        share_of_hbm = self.hbm_bandwidth_per_logical_core(lnc) / 2
        return min(self.dma_bytes_per_logical_core(lnc), share_of_hbm)

    def tensor_flops_per_logical_core(self, dtype: str, lnc: int) -> float:
        """Dense matmul FLOP/s of one logical core: ``lnc`` physical TensorEngines."""
        self.check_lnc(lnc)
        return self.tensor_engine.flops_per_core(dtype) * lnc


TRN2 = ChipSpec(
    name="trn2",
    marketing_name="Trainium2",
    core_version="NeuronCore-v3",
    physical_cores_per_chip=8,
    default_lnc=2,
    supported_lnc=(1, 2),
    hbm_bytes_per_chip=96 * GiB,
    # The chip page and the current NKI guide say 2.9 TB/s; an older NKI guide said 3 TB/s.
    hbm_bandwidth_bytes_per_s=2.9e12,
    dma_engines_per_chip=128,
    dma_engines_per_core=16,
    dma_engine_bytes_per_s=27.2e9,
    instruction_overhead_cycles=INSTRUCTION_OVERHEAD_CYCLES,
    dma_fixed_latency_s=DMA_FIXED_LATENCY_S,
    # The chip page's totals exceed 8x the per-core figures (8 x 79 = 632 < 667; 8 x 20 = 160 <
    # 181); both are kept as published. Timing models should use the per-core figures.
    chip_dense_tflops=_frozen(
        {"bfloat16": 667, "float16": 667, "tfloat32": 667, "float8": 1299, "float32": 181}
    ),
    tensor_engine=TensorEngineSpec(
        rows=128,
        cols=128,
        # 128 x 128 MACs x 2 FLOP x 2.4 GHz = 78.6 TFLOPS, matching the published 79.
        clock_hz=2.4e9,
        tflops_per_core=_frozen(
            {"bfloat16": 79, "float16": 79, "tfloat32": 79, "float8": 158, "float32": 20}
        ),
        max_stationary=(128, 128),
        max_moving_free=512,
    ),
    vector_engine=EngineSpec(
        "VectorE",
        clock_hz=0.96e9,
        elems_per_cycle=_frozen({"bfloat16": 512, "float16": 512, "default": 256}),
    ),
    scalar_engine=EngineSpec("ScalarE", clock_hz=1.2e9, elems_per_cycle=_frozen({"default": 128})),
    # 8 general-purpose cores with 512-bit SIMD: 8 x 16 fp32 lanes per cycle.
    gpsimd_engine=EngineSpec("GpSimdE", clock_hz=1.2e9, elems_per_cycle=_frozen({"default": 128})),
    sbuf_partitions=128,
    # The NKI guide gives 24 MiB (128 x 192 KiB) usable by kernels; the core page says 28 MB of
    # on-chip SRAM in total. We model what a kernel can address.
    sbuf_bytes_per_partition=192 * KiB,
    psum_bytes_per_partition=16 * KiB,
    psum_banks=8,
    chips_per_node=16,
    instance_name="trn2.48xlarge",
    neuronlink_generation="NeuronLink-v3",
    neuronlink_links_per_chip=4,
    # The chip page: 1.28 TB/s per chip. The instance page splits it into 1,024 GB/s inside an
    # instance (the 4x4 torus) and 256 GB/s to the other instances of an UltraServer.
    neuronlink_bytes_per_s_per_chip=1.28e12,
    cc_cores_per_chip=20,
    chip_dma_bytes_per_s=3.5e12,
    sources=_frozen(
        {
            "physical_cores_per_chip": TRAINIUM2_PAGE,
            "default_lnc": LNC_DEFAULT_PAGE,
            "supported_lnc": NKI_LNC_PAGE,
            "hbm_bytes_per_chip": TRAINIUM2_NKI_PAGE,
            "hbm_bandwidth_bytes_per_s": TRAINIUM2_NKI_PAGE,
            "dma_engines_per_chip": TRAINIUM2_NKI_PAGE,
            "dma_engines_per_core": DMA_OVERVIEW_PAGE,
            "dma_engine_bytes_per_s": DMA_OVERVIEW_PAGE,
            "instruction_overhead_cycles": ASSUMPTION,
            "dma_fixed_latency_s": ASSUMPTION,
            "chip_dense_tflops": TRAINIUM2_PAGE,
            "tensor_engine": NEURONCORE_V3_PAGE,
            "tensor_engine.max_stationary": TRAINIUM2_NKI_PAGE,
            "vector_engine": TRAINIUM2_NKI_PAGE,
            "scalar_engine": TRAINIUM2_NKI_PAGE,
            "gpsimd_engine": TRAINIUM2_NKI_PAGE,
            "sbuf_bytes_per_partition": TRAINIUM2_NKI_PAGE,
            "psum_bytes_per_partition": TRAINIUM2_NKI_PAGE,
            "chips_per_node": TRN2_INSTANCE_PAGE,
            "neuronlink_generation": TRAINIUM2_PAGE,
            "neuronlink_links_per_chip": TRAINIUM2_NKI_PAGE,
            "neuronlink_bytes_per_s_per_chip": TRAINIUM2_PAGE,
            "cc_cores_per_chip": TRAINIUM2_PAGE,
            "chip_dma_bytes_per_s": TRAINIUM2_PAGE,
        }
    ),
)

TRN3 = ChipSpec(
    name="trn3",
    marketing_name="Trainium3",
    core_version="NeuronCore-v4",
    physical_cores_per_chip=8,
    default_lnc=2,
    supported_lnc=(1, 2),
    hbm_bytes_per_chip=144 * GiB,
    # The chip page says 4.9 TB/s; the NKI guide says 4.7 TB/s. We take the chip page.
    hbm_bandwidth_bytes_per_s=4.9e12,
    dma_engines_per_chip=128,
    dma_engines_per_core=16,
    dma_engine_bytes_per_s=38.4e9,
    instruction_overhead_cycles=INSTRUCTION_OVERHEAD_CYCLES,
    dma_fixed_latency_s=DMA_FIXED_LATENCY_S,
    chip_dense_tflops=_frozen(
        {
            "bfloat16": 671,
            "float16": 671,
            "tfloat32": 671,
            "mxfp8": 2517,
            "mxfp4": 2517,
            "float32": 183,
        }
    ),
    tensor_engine=TensorEngineSpec(
        rows=128,
        cols=128,
        clock_hz=2.4e9,
        tflops_per_core=_frozen(
            {
                "bfloat16": 79,
                "float16": 79,
                "tfloat32": 79,
                "mxfp8": 315,
                "mxfp4": 315,
                "float32": 20,
            }
        ),
        max_stationary=(128, 128),
        max_moving_free=512,
    ),
    vector_engine=EngineSpec(
        "VectorE",
        clock_hz=1.2e9,
        elems_per_cycle=_frozen({"bfloat16": 512, "float16": 512, "float8": 512, "default": 256}),
    ),
    scalar_engine=EngineSpec(
        "ScalarE",
        clock_hz=1.2e9,
        elems_per_cycle=_frozen({"bfloat16": 256, "float16": 256, "float8": 256, "default": 128}),
    ),
    gpsimd_engine=EngineSpec("GpSimdE", clock_hz=1.2e9, elems_per_cycle=_frozen({"default": 128})),
    sbuf_partitions=128,
    sbuf_bytes_per_partition=256 * KiB,
    psum_bytes_per_partition=16 * KiB,
    psum_banks=8,
    # No public per-instance chip count found for Trn3 (UltraServers hold 64-144 chips); we
    # assume a 16-chip node like trn2.48xlarge so NEURON_RT_VISIBLE_CORES behaves alike.
    chips_per_node=16,
    instance_name="trn3 (16-chip node, assumed)",
    neuronlink_generation="NeuronLink-v4",
    neuronlink_links_per_chip=4,
    # The chip page says 2.56 TB/s per device; the Trn3 UltraServer table says 2,048 GiB/s per
    # device (2.2 TB/s), and its connectivity section lists PCIe Gen6 links adding up to only
    # 704 GB/s (256 intra-server + 320 inter-server + 128 inter-rack). We keep the chip page
    # here, as for trn2; INSTANCES uses the UltraServer table.
    neuronlink_bytes_per_s_per_chip=2.56e12,
    # The chip page says 16 CC-cores; the NKI Trainium3 guide says 20. We take the chip page.
    cc_cores_per_chip=16,
    chip_dma_bytes_per_s=4.9e12,
    sources=_frozen(
        {
            "physical_cores_per_chip": TRAINIUM3_PAGE,
            "default_lnc": LNC_DEFAULT_PAGE,
            "supported_lnc": NKI_LNC_PAGE,
            "hbm_bytes_per_chip": TRAINIUM3_PAGE,
            "hbm_bandwidth_bytes_per_s": TRAINIUM3_PAGE,
            "dma_engines_per_chip": TRAINIUM3_NKI_PAGE,
            "dma_engines_per_core": DMA_OVERVIEW_PAGE,
            "dma_engine_bytes_per_s": DMA_OVERVIEW_PAGE,
            "instruction_overhead_cycles": ASSUMPTION,
            "dma_fixed_latency_s": ASSUMPTION,
            "chip_dense_tflops": TRAINIUM3_PAGE,
            "tensor_engine": NEURONCORE_V4_PAGE,
            "tensor_engine.max_stationary": TRAINIUM3_NKI_PAGE,
            "vector_engine": TRAINIUM3_NKI_PAGE,
            "scalar_engine": TRAINIUM3_NKI_PAGE,
            "gpsimd_engine": TRAINIUM3_NKI_PAGE,
            "sbuf_bytes_per_partition": TRAINIUM3_NKI_PAGE,
            "psum_bytes_per_partition": TRAINIUM3_NKI_PAGE,
            "chips_per_node": ASSUMPTION,
            "neuronlink_generation": TRAINIUM3_PAGE,
            "neuronlink_links_per_chip": TRAINIUM3_NKI_PAGE,
            "neuronlink_bytes_per_s_per_chip": TRAINIUM3_PAGE,
            "cc_cores_per_chip": TRAINIUM3_PAGE,
            "chip_dma_bytes_per_s": TRAINIUM3_PAGE,
        }
    ),
)

CHIPS: Mapping[str, ChipSpec] = MappingProxyType({"trn2": TRN2, "trn3": TRN3})


def chip(target: str) -> ChipSpec:
    """The ``ChipSpec`` for a platform target name ("trn2" or "trn3")."""
    try:
        return CHIPS[target]
    except KeyError:
        raise UnknownTargetError(
            f"unknown Neuron target {target!r}; known targets: {sorted(CHIPS)}"
        ) from None


@dataclass(frozen=True)
class InstanceSpec:
    """One instance type (or UltraServer) as collectives see it: its chips and their links.

    Chips are numbered 0..chips-1; a server holds ``chips_per_server`` consecutive ones.
    ``neuronlink_bytes_per_s_per_chip`` is a chip's NeuronLink bandwidth to the other chips
    of its server (both directions together, as the pages state it);
    ``inter_server_bytes_per_s_per_chip`` its bandwidth to the chips of the other servers of
    an UltraServer, or None where the scale-up fabric is switched (all chips of the instance
    reach each other at ``neuronlink_bytes_per_s_per_chip``). ``efa_bits_per_s`` is the EFA
    bandwidth of the whole instance to other instances.
    """

    name: str
    target: str
    chips: int
    chips_per_server: int
    topology: str
    neuronlink_bytes_per_s_per_chip: float
    inter_server_bytes_per_s_per_chip: float | None
    efa_bits_per_s: float
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def servers(self) -> int:
        return self.chips // self.chips_per_server

    @property
    def neuronlink_send_bytes_per_s(self) -> float:
        """What one chip can send per second to the other chips of its server.

        ASSUMPTION: the published per-chip figure counts both directions, so a chip sends at
        half of it (the convention of the bandwidth figures of comparable interconnects)."""
        return self.neuronlink_bytes_per_s_per_chip / 2

    @property
    def inter_server_send_bytes_per_s(self) -> float | None:
        """What one chip can send per second to the other servers of an UltraServer (same
        both-directions assumption as ``neuronlink_send_bytes_per_s``)."""
        if self.inter_server_bytes_per_s_per_chip is None:
            return None
        return self.inter_server_bytes_per_s_per_chip / 2

    @property
    def efa_send_bytes_per_s(self) -> float:
        """What the whole instance can send per second over EFA (a NIC's line rate is per
        direction)."""
        return self.efa_bits_per_s / 8

    @property
    def efa_send_bytes_per_s_per_chip(self) -> float:
        """One chip's share of the instance's EFA bandwidth.

        ASSUMPTION: the EFA devices are spread evenly over the chips (the runtime attaches
        EFA devices to Neuron devices), so a chip's traffic leaves through its own share."""
        return self.efa_send_bytes_per_s / self.chips


_TRN2_INSTANCE_SOURCES = _frozen(
    {
        "chips": TRN2_INSTANCE_PAGE,
        "topology": TRN2_INSTANCE_PAGE,
        "neuronlink_bytes_per_s_per_chip": TRN2_INSTANCE_PAGE,
        "inter_server_bytes_per_s_per_chip": TRN2_INSTANCE_PAGE,
        "efa_bits_per_s": TRN2_INSTANCE_PAGE,
    }
)
_TRN3_INSTANCE_SOURCES = _frozen(
    {
        "chips": TRN3_INSTANCE_PAGE,
        "topology": TRN3_INSTANCE_PAGE,
        "neuronlink_bytes_per_s_per_chip": TRN3_INSTANCE_PAGE,
        "efa_bits_per_s": TRN3_INSTANCE_PAGE,
    }
)


def _trn2_instance(name: str) -> InstanceSpec:
    # The instance page: 16 chips in a 4x4 2-D torus, 1,024 GB/s of NeuronLink-v3 per chip
    # inside the instance, 3,200 Gbps of EFAv3 per instance.
    return InstanceSpec(
        name=name,
        target="trn2",
        chips=16,
        chips_per_server=16,
        topology="4x4 2-D torus of NeuronLink-v3",
        neuronlink_bytes_per_s_per_chip=1024e9,
        inter_server_bytes_per_s_per_chip=None,
        efa_bits_per_s=3200e9,
        sources=_TRN2_INSTANCE_SOURCES,
    )


INSTANCES: Mapping[str, InstanceSpec] = MappingProxyType(
    {
        "trn2.48xlarge": _trn2_instance("trn2.48xlarge"),
        "trn2u.48xlarge": _trn2_instance("trn2u.48xlarge"),
        # Four trn2u.48xlarge joined by NeuronLink-v3: chips at the same torus position in the
        # four instances form a ring, at 256 GB/s per chip; EFAv3 3,200 Gbps per instance.
        "trn2-ultraserver": InstanceSpec(
            name="trn2-ultraserver",
            target="trn2",
            chips=64,
            chips_per_server=16,
            topology="4 x (4x4 2-D torus); same-position chips of the 4 instances in a ring",
            neuronlink_bytes_per_s_per_chip=1024e9,
            inter_server_bytes_per_s_per_chip=256e9,
            efa_bits_per_s=4 * 3200e9,
            sources=_TRN2_INSTANCE_SOURCES,
        ),
        # No Trn3 instance size is published, only UltraServers. ASSUMPTION: one 16-chip server
        # of a Gen1 UltraServer, with a quarter of the Gen1 UltraServer's 12,800 Gbps of EFA,
        # matching TRN3.chips_per_node.
        "trn3-gen1-server": InstanceSpec(
            name="trn3-gen1-server",
            target="trn3",
            chips=16,
            chips_per_server=16,
            topology="16 chips on NeuronSwitch-v1 (all-to-all)",
            neuronlink_bytes_per_s_per_chip=2048 * GiB,
            inter_server_bytes_per_s_per_chip=None,
            efa_bits_per_s=12800e9 / 4,
            sources=_frozen({**_TRN3_INSTANCE_SOURCES, "efa_bits_per_s": ASSUMPTION}),
        ),
        # The Trn3 table gives 2,048 GiB/s of NeuronLink-v4 per device for both generations,
        # over a switched all-to-all fabric, so servers are not a separate level.
        "trn3-gen1-ultraserver": InstanceSpec(
            name="trn3-gen1-ultraserver",
            target="trn3",
            chips=64,
            chips_per_server=16,
            topology="4 servers x 16 chips on NeuronSwitch-v1 (all-to-all)",
            neuronlink_bytes_per_s_per_chip=2048 * GiB,
            inter_server_bytes_per_s_per_chip=None,
            efa_bits_per_s=12800e9,
            sources=_TRN3_INSTANCE_SOURCES,
        ),
        "trn3-gen2-ultraserver": InstanceSpec(
            name="trn3-gen2-ultraserver",
            target="trn3",
            chips=144,
            chips_per_server=4,
            topology="36 servers x 4 chips on two levels of NeuronSwitch-v1 (all-to-all)",
            neuronlink_bytes_per_s_per_chip=2048 * GiB,
            inter_server_bytes_per_s_per_chip=None,
            efa_bits_per_s=28800e9,
            sources=_TRN3_INSTANCE_SOURCES,
        ),
    }
)

# The instance a target's ranks are placed on unless told otherwise.
DEFAULT_INSTANCE: Mapping[str, str] = MappingProxyType(
    {"trn2": "trn2.48xlarge", "trn3": "trn3-gen1-server"}
)


def instance(name: str) -> InstanceSpec:
    """The ``InstanceSpec`` of an instance type or UltraServer name (see ``INSTANCES``)."""
    try:
        return INSTANCES[name]
    except KeyError:
        raise UnknownTargetError(
            f"unknown instance {name!r}; known instances: {sorted(INSTANCES)}"
        ) from None
