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

The types it takes and returns (``TransformerShape``, ``Layout``, ``TrainingPlan``, ...)
and the shared figures are in ``plan_types.py``.
"""

from __future__ import annotations

import math

from torchneuron.estimate.engine_cost import hbm_bytes_per_second, matmul_cost
from torchneuron.estimate.plan_types import (
    DDP_BUCKET_BYTES,
    DDP_FIRST_BUCKET_BYTES,
    FP32_BYTES,
    OPTIMIZER_STATE_BYTES,
    OPTIMIZER_TRAFFIC_BYTES,
    OPTIMIZERS,
    OVERLAP_RULES,
    PRECISIONS,
    CollectiveRow,
    Layout,
    PlanError,
    TrainingPlan,
    TransformerShape,
)

__all__ = [
    "DDP_BUCKET_BYTES",
    "DDP_FIRST_BUCKET_BYTES",
    "OPTIMIZERS",
    "OPTIMIZER_STATE_BYTES",
    "OPTIMIZER_TRAFFIC_BYTES",
    "OVERLAP_RULES",
    "PRECISIONS",
    "CollectiveRow",
    "Layout",
    "PlanError",
    "TrainingPlan",
    "TransformerShape",
    "check_layout",
    "instances_for",
    "optimizer_seconds",
    "placement_of",
    "plan_training",
    "rank_parameters",
]


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


def instances_for(layout: Layout, placement) -> int:
    """Instances the job runs on (``layout.instances``, else as few as its ranks need);
    ``PlanError`` naming the fix when they cannot hold the ranks."""
    per_instance = placement.cores_per_instance
    needed = math.ceil(layout.world_size / per_instance)
    instances = layout.instances if layout.instances is not None else needed
    if instances < 1:
        raise PlanError(f"--instances {instances}: one or more")
    if layout.world_size > instances * per_instance:
        raise PlanError(
            f"{layout.world_size} ranks do not fit on {instances} {placement.instance} "
            f"instance(s) of {placement.instance_spec.chips} chips x "
            f"{placement.cores_per_chip} logical cores (LNC={placement.lnc}) = {per_instance} "
            f"ranks each; use --instances {needed} or fewer ranks"
        )
    return instances


def optimizer_seconds(params, fsdp: int, optimizer: str, hbm_bytes_per_s: float) -> float:
    """The optimizer update of a rank's FSDP shard of ``params`` ((name, elements, piece)
    rows) as HBM traffic."""
    shard = sum(math.ceil(n / fsdp) for _, n, _ in params)
    return shard * OPTIMIZER_TRAFFIC_BYTES[optimizer] / hbm_bytes_per_s


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
    instances = instances_for(layout, placement)
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
        return optimizer_seconds(self.local_parameters(), self.layout.fsdp, optimizer, self.hbm)


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
