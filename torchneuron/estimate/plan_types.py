"""What a parallel training plan is about and what it reports: the model's shape, the
layout, the rows and totals of a plan, and the figures every part of the planner shares.

``parallel_plan.plan_training`` computes a ``TrainingPlan``; the types live here so the
planner's model of a step reads as one file (docs/distributed-planning.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torchneuron.errors import TorchNeuronError

# DDP's default gradient buckets (torch.nn.parallel.DistributedDataParallel): the first
# bucket is capped at 1 MiB so the first all-reduce starts early, the others at 25 MiB.
DDP_FIRST_BUCKET_BYTES = 1024 * 1024
DDP_BUCKET_BYTES = 25 * 1024 * 1024

PRECISIONS = ("bf16", "fp32")
OPTIMIZERS = ("adam", "sgd")
# Bytes per parameter of optimizer state (fp32): Adam keeps two moments, plain SGD none.
OPTIMIZER_STATE_BYTES = {"adam": 8, "sgd": 0}
# HBM bytes the update moves per parameter: Adam reads p, g, m, v and writes p, m, v; SGD
# reads p, g and writes p (all fp32).
OPTIMIZER_TRAFFIC_BYTES = {"adam": 28, "sgd": 12}
FP32_BYTES = 4

OVERLAP_RULES = (
    "DDP: gradients fill 25 MiB buckets (the first 1 MiB) in backward order; a bucket's "
    "all-reduce starts when the layer holding its last gradient finishes its backward and "
    "runs while the backward goes on; the last bucket (the embeddings') is exposed.",
    "FSDP: each block is a unit, the embeddings, final norm and head the root unit; the "
    "all-gather of block i+1 runs during block i's compute (prefetch depth 1: at most two "
    "blocks gathered); the root's forward all-gather is exposed; blocks are resharded after "
    "the forward and gathered again for the backward; a block's gradient reduce-scatter "
    "(then, with dp > 1, the all-reduce of its shard) runs during the next block's backward; "
    "the root's comes after the whole backward and is exposed.",
    "TP: activation collectives sit between dependent matmuls of the same rank and are "
    "exposed (added to the compute stream).",
    "One collective at a time per rank (one stream); the optimizer step waits for every "
    "gradient collective.",
)


class PlanError(TorchNeuronError, ValueError):
    """A parallel layout or model the planner cannot estimate (says which and why)."""


@dataclass(frozen=True)
class TransformerShape:
    """A GPT-style language model (the zoo's ``GPTBlockLM`` layout), by its sizes."""

    vocab: int
    d_model: int
    heads: int
    layers: int
    ffn: int  # hidden width of the MLP (4 x d_model in the zoo's model)
    context: int  # rows of the position embedding

    def parameters(self) -> list[tuple[str, int, bool, str]]:
        """(name, elements, TP-sharded, piece) of every parameter in registration order.

        ``piece`` is where its gradient is computed: "embed", "block<i>" or "head".
        TP shards the embedding and head over the vocabulary, ``qkv``/``fc`` by output
        columns and ``proj``/``fc_out`` by input rows (Megatron-style); norms and the
        row-parallel biases are replicated.
        """
        d, f = self.d_model, self.ffn
        params = [
            ("tok.weight", self.vocab * d, True, "embed"),
            ("pos.weight", self.context * d, False, "embed"),
        ]
        for i in range(self.layers):
            block = [
                ("ln1.weight", d, False),
                ("ln1.bias", d, False),
                ("qkv.weight", 3 * d * d, True),
                ("qkv.bias", 3 * d, True),
                ("proj.weight", d * d, True),
                ("proj.bias", d, False),
                ("ln2.weight", d, False),
                ("ln2.bias", d, False),
                ("fc.weight", f * d, True),
                ("fc.bias", f, True),
                ("fc_out.weight", d * f, True),
                ("fc_out.bias", d, False),
            ]
            params += [(f"blocks.{i}.{n}", size, tp, f"block{i}") for n, size, tp in block]
        params += [
            ("ln_f.weight", d, False, "head"),
            ("ln_f.bias", d, False, "head"),
            ("head.weight", self.vocab * d, True, "head"),
        ]
        return params

    def parameter_count(self) -> int:
        return sum(size for _, size, _, _ in self.parameters())

    def describe(self) -> dict:
        return {
            "vocab": self.vocab,
            "d_model": self.d_model,
            "heads": self.heads,
            "layers": self.layers,
            "ffn": self.ffn,
            "context": self.context,
            "parameters": self.parameter_count(),
        }


@dataclass(frozen=True)
class ModelDescription:
    """The user's model as ``neuronc plan --model`` traced it."""

    name: str
    source: str  # as given to --model
    parameters: int  # of the whole model
    layers: int
    d_model: int  # width of the activations between layers
    architecture: str | None = None
    experts: int = 0
    top_k: int = 0

    def parameter_count(self) -> int:
        return self.parameters

    def describe(self) -> dict:
        described = {
            "name": self.name,
            "source": self.source,
            "architecture": self.architecture,
            "layers": self.layers,
            "d_model": self.d_model,
            "parameters": self.parameters,
        }
        if self.experts:
            described.update(experts=self.experts, top_k=self.top_k)
        return described


@dataclass(frozen=True)
class Layout:
    """A parallel layout: data-parallel (DDP), fully sharded (FSDP), tensor (TP), pipeline
    (PP), context (CP) and expert (EP, inside the data-parallel ranks) degrees."""

    dp: int = 1
    fsdp: int = 1
    tp: int = 1
    target: str = "trn2"
    lnc: int | None = None  # None: the chip's default
    instance: str | None = None  # an instance type of hardware.INSTANCES; None: the default
    instances: int | None = None  # None: as few as the world size needs
    sequence_parallel: bool = False
    pp: int = 1
    cp: int = 1
    ep: int = 1

    @property
    def world_size(self) -> int:
        return self.dp * self.fsdp * self.tp * self.pp * self.cp

    def groups(self) -> dict[str, tuple[int, ...]]:
        """Rank 0's group along each dimension of the ``(pp, dp, fsdp, cp, tp)`` mesh (TP
        fastest); the EP group is the first ``ep`` ranks of the ``(dp, fsdp)`` ranks."""
        tp, cp, fsdp, dp = self.tp, self.cp, self.fsdp, self.dp
        data = [i * tp * cp for i in range(fsdp * dp)]
        return {
            "tp": tuple(range(tp)),
            "cp": tuple(i * tp for i in range(cp)),
            "fsdp": tuple(i * tp * cp for i in range(fsdp)),
            "dp": tuple(i * tp * cp * fsdp for i in range(dp)),
            "pp": tuple(i * tp * cp * fsdp * dp for i in range(self.pp)),
            "pp_next": (0, tp * cp * fsdp * dp),  # a stage and the next one's rank
            "ep": tuple(data[: self.ep]),
        }


@dataclass
class CollectiveRow:
    """One kind of collective the step issues, summed over its calls."""

    name: str
    kind: str
    group: str  # "dp" | "fsdp" | "tp" | "pp" | "cp" | "ep"
    group_size: int
    calls: int = 0
    nbytes: int = 0  # the estimate_collective nbytes, summed over calls
    wire_bytes_per_rank: float = 0.0
    seconds: float = 0.0
    algorithms: set = field(default_factory=set)
    levels: set = field(default_factory=set)


@dataclass
class TrainingPlan:
    shape: TransformerShape | ModelDescription
    layout: Layout
    precision: str
    optimizer: str
    batch: int
    seq: int
    lnc: int
    instance: str
    cores_per_instance: int
    instances: int
    forward_s: float
    backward_s: float
    optimizer_s: float
    matmul_flops: int
    collectives: list[CollectiveRow]
    step_s: float
    memory: dict[str, int]
    hbm_capacity_bytes: int
    peak_tensor_flops: float
    details: dict = field(default_factory=dict)  # what a plan of the user's model adds

    @property
    def compute_s(self) -> float:
        return self.forward_s + self.backward_s + self.optimizer_s

    @property
    def communication_s(self) -> float:
        return sum(row.seconds for row in self.collectives)

    @property
    def exposed_communication_s(self) -> float:
        return max(0.0, self.step_s - self.compute_s)

    @property
    def fits(self) -> bool:
        return self.memory["peak"] <= self.hbm_capacity_bytes

    @property
    def mfu(self) -> float:
        return self.matmul_flops / (self.step_s * self.peak_tensor_flops) if self.step_s else 0.0

    def warnings(self) -> list[str]:
        found = []
        if not self.fits:
            found.append(
                f"does not fit: peak HBM per core {_gib(self.memory['peak'])} exceeds the "
                f"{_gib(self.hbm_capacity_bytes)} of one {self.layout.target} logical core "
                f"(LNC={self.lnc}); shard more (raise --fsdp, --tp or --pp), checkpoint "
                "activations (--ac) or shrink the batch"
            )
        if self.layout.tp > self.cores_per_instance:
            found.append("the TP group spans instances: its activations cross EFA every layer")
        return found

    def summary(self) -> dict:
        """Every figure, JSON-ready (``neuronc plan --json``)."""
        layout = self.layout
        return {
            "model": self.shape.describe(),
            "layout": {
                "dp": layout.dp,
                "fsdp": layout.fsdp,
                "tp": layout.tp,
                "pp": layout.pp,
                "cp": layout.cp,
                "ep": layout.ep,
                "world_size": layout.world_size,
                "sequence_parallel": layout.sequence_parallel,
                "target": layout.target,
                "lnc": self.lnc,
                "instance": self.instance,
                "instances": self.instances,
                "cores_per_instance": self.cores_per_instance,
                "groups_of_rank_0": {
                    k: list(v)
                    for k, v in layout.groups().items()
                    if k in ("tp", "fsdp", "dp") or (k != "pp_next" and len(v) > 1)
                },
            },
            "training": {
                "precision": self.precision,
                "optimizer": self.optimizer,
                "global_batch": self.batch,
                "batch_per_rank": self.batch // (layout.dp * layout.fsdp),
                "seq": self.seq,
            },
            "compute": {
                "forward_s": self.forward_s,
                "backward_s": self.backward_s,
                "optimizer_s": self.optimizer_s,
                "total_s": self.compute_s,
                "matmul_flops": self.matmul_flops,
            },
            "communication": [
                {
                    "name": row.name,
                    "kind": row.kind,
                    "group": row.group,
                    "group_size": row.group_size,
                    "calls": row.calls,
                    "nbytes": row.nbytes,
                    "wire_bytes_per_rank": row.wire_bytes_per_rank,
                    "seconds": row.seconds,
                    "algorithms": sorted(row.algorithms),
                    "levels": sorted(row.levels),
                }
                for row in self.collectives
            ],
            "communication_s": self.communication_s,
            "exposed_communication_s": self.exposed_communication_s,
            "overlapped_communication_s": self.communication_s - self.exposed_communication_s,
            "overlap_rules": list(OVERLAP_RULES),
            "step_s": self.step_s,
            "tokens_per_s": self.batch * self.seq / self.step_s if self.step_s else 0.0,
            "mfu": self.mfu,
            "memory": {
                **{f"{k}_bytes": v for k, v in self.memory.items()},
                "hbm_capacity_bytes": self.hbm_capacity_bytes,
                "fits": self.fits,
            },
            "warnings": self.warnings(),
            **self.details,
        }


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB"
