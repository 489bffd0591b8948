"""Plan a parallel training step: compute, communication, overlap and peak HBM per core.

``plan_training(model, layout, batch=..., seq=...)`` estimates one optimizer step of a
GPT-style language model (``TransformerShape``: embeddings, ``layers`` pre-LN blocks of
attention and an MLP, final LayerNorm, LM head, cross-entropy) trained with Adam or SGD
on ``dp x fsdp x tp`` logical NeuronCores (``Layout``):

- **compute** per core: every matmul of the forward and backward at the rank's shapes
  (its share of the batch, its TP shard of the weights) costed with the cost model's own
  matmul formula (``engine_cost.matmul_cost``: TensorE tiling, passes per dtype,
  instruction overhead), plus the element-wise work (norms, softmax, GELU, residuals,
  the optimizer update) as HBM traffic at the logical core's HBM rate;
- **communication** per core: each collective the layout issues, costed by
  ``collectives.estimate_collective`` on rank 0's groups (ranks fill a chip's cores,
  then the instance's chips, then instances; the mesh is ``(dp, fsdp, tp)`` with TP
  fastest, so a TP group is the first ``tp`` consecutive ranks);
- **overlap**: a two-stream timeline (one compute stream, one collective stream) with
  the rules of ``OVERLAP_RULES``; the step time is the timeline's length;
- **peak HBM** per core: fp32 master parameters, gradients and optimizer state (sharded
  by FSDP and TP), the working copies of gathered or cast parameters, and the
  activations saved for the backward, against the logical core's HBM.

Everything is an estimate from the cited hardware table; nothing here runs the model.
docs/distributed-planning.md explains the model, its assumptions and its limits.

Why this file is long: it is one model of one step; the compute, collective, timeline
and memory parts read the same shape, layout and per-rank sizes, and apart they would
be fragments that only make sense together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from torchneuron.errors import TorchNeuronError
from torchneuron.estimate.engine_cost import hbm_bytes_per_second, matmul_cost

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


@dataclass(frozen=True)
class Layout:
    """A parallel layout: data-parallel (DDP), fully sharded (FSDP) and TP degrees."""

    dp: int = 1
    fsdp: int = 1
    tp: int = 1
    target: str = "trn2"
    lnc: int | None = None  # None: the chip's default
    instance: str | None = None  # an instance type of hardware.INSTANCES; None: the default
    instances: int | None = None  # None: as few as the world size needs
    sequence_parallel: bool = False

    @property
    def world_size(self) -> int:
        return self.dp * self.fsdp * self.tp

    def groups(self) -> dict[str, tuple[int, ...]]:
        """Rank 0's group along each dimension of the ``(dp, fsdp, tp)`` mesh (TP fastest)."""
        return {
            "tp": tuple(range(self.tp)),
            "fsdp": tuple(i * self.tp for i in range(self.fsdp)),
            "dp": tuple(i * self.tp * self.fsdp for i in range(self.dp)),
        }


@dataclass
class CollectiveRow:
    """One kind of collective the step issues, summed over its calls."""

    name: str
    kind: str
    group: str  # "dp" | "fsdp" | "tp"
    group_size: int
    calls: int = 0
    nbytes: int = 0  # the estimate_collective nbytes, summed over calls
    wire_bytes_per_rank: float = 0.0
    seconds: float = 0.0
    algorithms: set = field(default_factory=set)
    levels: set = field(default_factory=set)


@dataclass
class TrainingPlan:
    shape: TransformerShape
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
                f"(LNC={self.lnc}); shard more (raise --fsdp or --tp) or shrink the batch"
            )
        if self.layout.tp > self.cores_per_instance:
            found.append("the TP group spans instances: its activations cross EFA every layer")
        return found

    def summary(self) -> dict:
        """Every figure, JSON-ready (``neuronc plan --json``)."""
        layout = self.layout
        return {
            "model": {
                "vocab": self.shape.vocab,
                "d_model": self.shape.d_model,
                "heads": self.shape.heads,
                "layers": self.shape.layers,
                "ffn": self.shape.ffn,
                "context": self.shape.context,
                "parameters": self.shape.parameter_count(),
            },
            "layout": {
                "dp": layout.dp,
                "fsdp": layout.fsdp,
                "tp": layout.tp,
                "world_size": layout.world_size,
                "sequence_parallel": layout.sequence_parallel,
                "target": layout.target,
                "lnc": self.lnc,
                "instance": self.instance,
                "instances": self.instances,
                "cores_per_instance": self.cores_per_instance,
                "groups_of_rank_0": {k: list(v) for k, v in layout.groups().items()},
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
        }


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB"


def rank_parameters(shape: TransformerShape, tp: int) -> list[tuple[str, int, str]]:
    """(name, elements one TP rank holds before FSDP shards them, piece), in registration
    order; a vocabulary that ``tp`` does not divide is padded to a multiple of it."""
    return [
        (name, math.ceil(size / tp) if sharded else size, piece)
        for name, size, sharded, piece in shape.parameters()
    ]


def check_layout(
    shape: TransformerShape,
    layout: Layout,
    *,
    batch: int,
    seq: int,
    world_size: int | None = None,
) -> None:
    """Raise ``PlanError`` naming the degrees or sizes when the layout cannot train the model."""
    degrees = {"--dp": layout.dp, "--fsdp": layout.fsdp, "--tp": layout.tp}
    for flag, degree in degrees.items():
        if degree < 1:
            raise PlanError(f"{flag} {degree}: a parallel degree is 1 or more")
    if world_size is not None and world_size != layout.world_size:
        raise PlanError(
            f"--dp {layout.dp} x --fsdp {layout.fsdp} x --tp {layout.tp} = "
            f"{layout.world_size} ranks, but --world-size is {world_size}; the product of "
            "the degrees must equal the world size"
        )
    for name in ("vocab", "d_model", "heads", "layers", "ffn", "context"):
        if getattr(shape, name) < 1:
            raise PlanError(f"model {name} {getattr(shape, name)}: must be 1 or more")
    if shape.d_model % shape.heads:
        raise PlanError(f"d_model {shape.d_model} is not a multiple of {shape.heads} heads")
    if batch < 1 or seq < 1:
        raise PlanError(f"batch {batch} and sequence length {seq} must be 1 or more")
    if seq > shape.context:
        raise PlanError(
            f"sequence length {seq} is longer than the model's {shape.context} positions"
        )
    tp = layout.tp
    if tp > shape.heads:
        raise PlanError(
            f"--tp {tp} is more than the model's {shape.heads} attention heads: "
            "each TP rank needs at least one whole head"
        )
    for what, size in (("attention heads", shape.heads), ("MLP width (ffn)", shape.ffn)):
        if size % tp:
            raise PlanError(f"--tp {tp} does not divide the model's {size} {what}")
    data_ranks = layout.dp * layout.fsdp
    if batch % data_ranks:
        raise PlanError(
            f"global batch {batch} does not split evenly over --dp {layout.dp} x "
            f"--fsdp {layout.fsdp} = {data_ranks} data-parallel ranks"
        )
    if layout.sequence_parallel and seq % tp:
        raise PlanError(f"sequence parallel: --tp {tp} does not divide sequence length {seq}")


def placement_of(layout: Layout):
    """The ``collectives.Placement`` of ``layout``'s ranks (checks target, LNC and instance)."""
    from torchneuron.estimate.collectives import Placement

    return Placement(target=layout.target, lnc=layout.lnc, instance=layout.instance)


def plan_training(
    shape: TransformerShape,
    layout: Layout,
    *,
    batch: int,
    seq: int,
    precision: str = "bf16",
    optimizer: str = "adam",
    world_size: int | None = None,
) -> TrainingPlan:
    """Estimate one training step of ``shape`` laid out as ``layout`` (see the module doc).

    ``batch`` is the global batch (sequences per optimizer step over all data-parallel
    ranks); ``precision`` "bf16" computes in bfloat16 on fp32 master weights
    (FSDP2 ``MixedPrecisionPolicy(param_dtype=bfloat16)``, DDP under autocast), "fp32"
    computes in float32.
    """
    if precision not in PRECISIONS:
        raise PlanError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    if optimizer not in OPTIMIZERS:
        raise PlanError(f"optimizer {optimizer!r}: expected one of {', '.join(OPTIMIZERS)}")
    check_layout(shape, layout, batch=batch, seq=seq, world_size=world_size)
    placement = placement_of(layout)
    chip, lnc = placement.chip_spec, placement.lnc
    per_instance = placement.cores_per_instance
    needed = math.ceil(layout.world_size / per_instance)
    instances = layout.instances if layout.instances is not None else needed
    if instances < 1:
        raise PlanError(f"--instances {instances}: one or more")
    if layout.world_size > instances * per_instance:
        raise PlanError(
            f"{layout.world_size} ranks do not fit on {instances} {placement.instance} "
            f"instance(s) of {placement.instance_spec.chips} chips x "
            f"{placement.cores_per_chip} logical cores (LNC={lnc}) = {per_instance} ranks "
            f"each; use --instances {needed} or fewer ranks"
        )
    costs = _StepCosts(chip, lnc, shape, layout, batch // (layout.dp * layout.fsdp), seq, precision)
    plan_parts = _Collectives(layout, placement)
    step_s = _timeline(costs, plan_parts, shape, layout, precision, optimizer)
    memory = _memory(shape, layout, costs, precision, optimizer)
    dtype = "bfloat16" if precision == "bf16" else "float32"
    return TrainingPlan(
        shape=shape,
        layout=layout,
        precision=precision,
        optimizer=optimizer,
        batch=batch,
        seq=seq,
        lnc=lnc,
        instance=placement.instance,
        cores_per_instance=per_instance,
        instances=instances,
        forward_s=sum(costs.forward.values()),
        backward_s=sum(costs.backward.values()),
        optimizer_s=costs.optimizer_seconds(optimizer),
        matmul_flops=costs.flops,
        collectives=plan_parts.rows(),
        step_s=step_s,
        memory=memory,
        hbm_capacity_bytes=chip.hbm_bytes_per_logical_core(lnc),
        peak_tensor_flops=chip.tensor_flops_per_logical_core(dtype, lnc),
    )


class _StepCosts:
    """Compute seconds of each piece ("embed", "block<i>", "head") on one rank."""

    def __init__(self, chip, lnc, shape: TransformerShape, layout: Layout, b, s, precision):
        self.chip, self.lnc, self.shape, self.layout = chip, lnc, shape, layout
        self.b, self.s = b, s
        self.e = 2 if precision == "bf16" else 4
        self.dtype = "bfloat16" if precision == "bf16" else "float32"
        self.hbm = hbm_bytes_per_second(chip, lnc)
        self.flops = 0
        t, d, f = layout.tp, shape.d_model, shape.ffn
        tokens = b * s
        self.tokens = tokens
        self.vocab_shard = math.ceil(shape.vocab / t)
        # Activations LayerNorm and residuals see: replicated over TP unless sequence parallel.
        self.replicated = tokens * d // (t if layout.sequence_parallel else 1)
        heads, dh = shape.heads // t, d // shape.heads
        linears = [(tokens, d, 3 * d // t), (tokens, d // t, d), (tokens, d, f // t)]
        linears.append((tokens, f // t, d))
        attention = [(b * heads, s, dh, s), (b * heads, s, s, dh)]
        attention_back = [(b * heads, s, s, dh)] * 3 + [(b * heads, s, dh, s)]
        block_fwd = sum(self._mm(1, *mk) for mk in linears) + sum(self._mm(*a) for a in attention)
        block_bwd = sum(self._mm(1, m, n, k) + self._mm(1, k, m, n) for m, k, n in linears)
        block_bwd += sum(self._mm(*a) for a in attention_back)
        rep = self.replicated
        # Unfused element-wise traffic: two norms (read, write), two residual adds (read 2,
        # write 1), GELU (read, write), softmax (read, write); the backward moves twice that.
        block_bytes = self.e * (10 * rep + 2 * tokens * f // t + 2 * b * heads * s * s)
        v = self.vocab_shard
        head_fwd = self._mm(1, tokens, d, v)
        head_bwd = self._mm(1, tokens, v, d) + self._mm(1, d, tokens, v)
        # Final norm, and the cross-entropy's softmax over the rank's logits in fp32.
        head_bytes = self.e * 2 * rep + 3 * tokens * v * FP32_BYTES
        embed_bytes = 3 * tokens * d * self.e
        self.forward = {"embed": embed_bytes / self.hbm}
        self.backward = {"embed": 2 * embed_bytes / self.hbm}
        for i in range(shape.layers):
            self.forward[f"block{i}"] = block_fwd + block_bytes / self.hbm
            self.backward[f"block{i}"] = block_bwd + 2 * block_bytes / self.hbm
        self.forward["head"] = head_fwd + head_bytes / self.hbm
        self.backward["head"] = head_bwd + 2 * head_bytes / self.hbm
        self.flops = self.flops_fwd_bwd(linears, attention, attention_back, tokens, d, v)

    def _mm(self, batch, m, k, n) -> float:
        cost = matmul_cost(self.chip, self.lnc, batch, m, k, n, self.dtype, (self.e, self.e, 4))
        return cost.seconds

    def flops_fwd_bwd(self, linears, attention, attention_back, tokens, d, v) -> int:
        """Matmul FLOPs of one rank's forward and backward (for the MFU)."""
        block = sum(3 * 2 * m * k * n for m, k, n in linears)
        block += sum(2 * bt * m * k * n for bt, m, k, n in attention + attention_back)
        return self.shape.layers * block + 3 * 2 * tokens * d * v

    def local_parameters(self) -> list[tuple[str, int, str]]:
        return rank_parameters(self.shape, self.layout.tp)

    def optimizer_seconds(self, optimizer: str) -> float:
        fsdp = self.layout.fsdp
        shard = sum(math.ceil(n / fsdp) for _, n, _ in self.local_parameters())
        return shard * OPTIMIZER_TRAFFIC_BYTES[optimizer] / self.hbm


class _Collectives:
    """Estimates collectives on rank 0's groups and sums them into rows by name."""

    def __init__(self, layout: Layout, placement):
        self.groups = layout.groups()
        self.placement = placement
        self._rows: dict[str, CollectiveRow] = {}
        self._cache: dict[tuple, object] = {}

    def seconds(self, name: str, kind: str, group: str, nbytes: int, calls: int = 1) -> float:
        """Record ``calls`` of one collective; return the seconds of one."""
        from torchneuron.estimate.collectives import estimate_collective

        ranks = self.groups[group]
        key = (kind, nbytes, group)
        if key not in self._cache:
            self._cache[key] = estimate_collective(kind, nbytes, ranks, self.placement)
        estimate = self._cache[key]
        row = self._rows.setdefault(name, CollectiveRow(name, kind, group, len(ranks)))
        row.calls += calls
        row.nbytes += calls * nbytes
        row.wire_bytes_per_rank += calls * estimate.bytes_per_rank
        row.seconds += calls * estimate.seconds
        row.algorithms.add(estimate.algorithm)
        row.levels.update(level.name for level in estimate.levels)
        return estimate.seconds

    def rows(self) -> list[CollectiveRow]:
        return [row for row in self._rows.values() if row.calls]


def _tp_seconds(comm: _Collectives, costs: _StepCosts, piece: str, backward: bool) -> float:
    """Exposed seconds of the TP collectives of one piece's forward or backward."""
    if costs.layout.tp == 1:
        return 0.0
    act = costs.tokens * costs.shape.d_model * costs.e
    sp = costs.layout.sequence_parallel
    if piece.startswith("block"):
        # Megatron: attention and MLP each end in a row-parallel matmul (all-reduce, or
        # with sequence parallel an all-gather before and a reduce-scatter after); the
        # backward mirrors the forward.
        kinds = ["all_gather", "reduce_scatter"] * 2 if sp else ["all_reduce"] * 2
    elif piece == "embed":
        # Vocabulary-parallel embedding: its output is summed over the TP ranks.
        if sp:
            kinds = ["all_gather"] if backward else ["reduce_scatter"]
        else:
            kinds = [] if backward else ["all_reduce"]
    elif sp:
        # Column-parallel head on a gathered sequence; the backward scatters it again.
        kinds = ["reduce_scatter"] if backward else ["all_gather"]
    else:
        # Column-parallel head: the gradient of its input is summed.
        kinds = ["all_reduce"] if backward else []
    total = 0.0
    for kind in kinds:
        name = f"TP {kind.replace('_', '-')} (activations)"
        total += comm.seconds(name, kind, "tp", act)
    if piece == "head" and not backward:
        # Vocabulary-parallel cross-entropy: max, sum of exponentials and the target's
        # logit, one fp32 value per token each.
        total += (
            comm.seconds(
                "TP all-reduce (cross-entropy)", "all_reduce", "tp", costs.tokens * FP32_BYTES, 3
            )
            * 3
        )
    return total


class _Streams:
    """One compute stream and one collective stream; work runs in the order it is issued."""

    def __init__(self):
        self.compute_free = 0.0
        self.comm_free = 0.0

    def compute(self, seconds: float, after: float = 0.0) -> float:
        self.compute_free = max(self.compute_free, after) + seconds
        return self.compute_free

    def comm(self, seconds: float, after: float = 0.0) -> float:
        self.comm_free = max(self.comm_free, after) + seconds
        return self.comm_free


def _timeline(costs, comm, shape, layout, precision, optimizer) -> float:
    """The step's length on the two streams, under ``OVERLAP_RULES``."""
    blocks = [f"block{i}" for i in range(shape.layers)]
    pieces = ["embed", *blocks, "head"]
    fwd = {p: costs.forward[p] + _tp_seconds(comm, costs, p, False) for p in pieces}
    bwd = {p: costs.backward[p] + _tp_seconds(comm, costs, p, True) for p in pieces}
    streams = _Streams()
    params = costs.local_parameters()
    if layout.fsdp > 1:
        _fsdp_step(streams, comm, costs, params, blocks, fwd, bwd, precision, layout)
    else:
        for piece in pieces:
            streams.compute(fwd[piece])
        buckets = _ddp_buckets(params) if layout.dp > 1 else []
        for piece in reversed(pieces):
            done = streams.compute(bwd[piece])
            for nbytes, ready in buckets:
                if ready == piece:
                    seconds = comm.seconds("DDP gradient all-reduce", "all_reduce", "dp", nbytes)
                    streams.comm(seconds, after=done)
    last = max(streams.compute_free, streams.comm_free)
    return streams.compute(costs.optimizer_seconds(optimizer), after=last)


def _ddp_buckets(params: list[tuple[str, int, str]]) -> list[tuple[int, str]]:
    """(bytes, piece whose backward completes it) of DDP's fp32 gradient buckets."""
    buckets, size, cap = [], 0, DDP_FIRST_BUCKET_BYTES
    for _, numel, piece in reversed(params):
        size += numel * FP32_BYTES
        ready = piece
        if size >= cap:
            buckets.append((size, ready))
            size, cap = 0, DDP_BUCKET_BYTES
    if size:
        buckets.append((size, ready))
    return buckets


def _unit_elements(params, fsdp: int) -> dict[str, int]:
    """Elements of each FSDP unit as gathered (each parameter padded to ``fsdp`` shards)."""
    units: dict[str, int] = {}
    for _, numel, piece in params:
        unit = piece if piece.startswith("block") else "root"
        units[unit] = units.get(unit, 0) + math.ceil(numel / fsdp) * fsdp
    return units


def _fsdp_step(streams, comm, costs, params, blocks, fwd, bwd, precision, layout) -> None:
    units = _unit_elements(params, layout.fsdp)
    gather_bytes = 2 if precision == "bf16" else 4  # param_dtype
    reduce_bytes = gather_bytes  # FSDP2 reduces in param_dtype unless told otherwise

    def gather(unit, name, after=0.0):
        seconds = comm.seconds(name, "all_gather", "fsdp", units[unit] * gather_bytes)
        return streams.comm(seconds, after)

    def reduce(unit, after):
        nbytes = units[unit] * reduce_bytes
        done = streams.comm(
            comm.seconds("FSDP reduce-scatter (gradients)", "reduce_scatter", "fsdp", nbytes),
            after,
        )
        if layout.dp > 1:
            shard = nbytes // layout.fsdp
            seconds = comm.seconds("HSDP all-reduce (gradient shards)", "all_reduce", "dp", shard)
            done = streams.comm(seconds, done)
        return done

    forward = "FSDP all-gather (forward)"
    root = gather("root", forward)
    gathered = {}
    if blocks:
        gathered[blocks[0]] = gather(blocks[0], forward)
    ends = [streams.compute(fwd["embed"], after=root)]
    for i, block in enumerate(blocks):
        if i + 1 < len(blocks):
            # Prefetch depth 1: the next block is gathered once the one before this one
            # is done (at most two blocks gathered).
            gathered[blocks[i + 1]] = gather(blocks[i + 1], forward, ends[-1])
        ends.append(streams.compute(fwd[block], after=gathered[block]))
    forward_end = streams.compute(fwd["head"])
    backward = "FSDP all-gather (backward)"
    order = list(reversed(blocks))
    if order:
        gathered[order[0]] = gather(order[0], backward, forward_end)
    ends = [streams.compute(bwd["head"])]
    for i, block in enumerate(order):
        if i + 1 < len(order):
            gathered[order[i + 1]] = gather(order[i + 1], backward, ends[-1])
        ends.append(streams.compute(bwd[block], after=gathered[block]))
        reduce(block, ends[-1])
    reduce("root", streams.compute(bwd["embed"]))


def _memory(shape, layout, costs: _StepCosts, precision, optimizer) -> dict[str, int]:
    """Peak HBM of one rank by kind (bytes), at the end of the forward (activations held)."""
    params = costs.local_parameters()
    fsdp = layout.fsdp
    shard = sum(math.ceil(n / fsdp) for _, n, _ in params)
    local = sum(n for _, n, _ in params)
    compute_bytes = 2 if precision == "bf16" else 4
    if fsdp > 1:
        units = _unit_elements(params, fsdp)
        block = max((v for k, v in units.items() if k != "root"), default=0)
        # The root stays gathered; two blocks gathered (current and prefetched); one
        # block's unsharded gradients wait for their reduce-scatter.
        working = (units["root"] + 2 * block) * compute_bytes + block * compute_bytes
    else:
        working = local * 2 if precision == "bf16" else 0  # autocast's bf16 weight copies
    e, t = costs.e, layout.tp
    tokens, d, f, b, s = costs.tokens, shape.d_model, shape.ffn, costs.b, costs.s
    rep = costs.replicated
    norm_stats = 2 * 2 * FP32_BYTES * tokens // (t if layout.sequence_parallel else 1)
    # Saved for the backward: norm inputs and outputs (4 replicated), q, k, v and the
    # attention output, the softmax probabilities (no flash attention), the MLP's hidden
    # activations before and after GELU.
    per_block = e * (4 * rep + 4 * tokens * d // t + 2 * tokens * f // t)
    per_block += e * b * (shape.heads // t) * s * s + norm_stats
    # Token ids, the final norm's input and output, and the fp32 logits the loss keeps.
    root = 8 * tokens + e * 2 * rep + tokens * costs.vocab_shard * FP32_BYTES
    memory = {
        "parameters": shard * FP32_BYTES,
        "gradients": shard * FP32_BYTES,
        "optimizer_state": shard * OPTIMIZER_STATE_BYTES[optimizer],
        "working_parameters": working,
        "activations": shape.layers * per_block + root,
    }
    memory["peak"] = sum(memory.values())
    return memory
