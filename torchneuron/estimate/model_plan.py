"""Plan a training step of the user's own model (``neuronc plan --model``).

``plan_model(source, layout, batch=, seq=)`` traces one rank's forward and backward on
fake tensors (``model_trace.trace_step``: the real per-layer graphs, costed op by op)
and lays the pieces out in time and memory as ``parallel_plan`` does for the zoo's GPT:

- **compute**: each piece's traced seconds (embed, every layer, head);
- **TP** (Megatron): two all-reduces of the activations per layer in the forward and two
  in the backward (all-gather + reduce-scatter with sequence parallelism), the
  vocabulary-parallel embedding's and cross-entropy's, exposed;
- **CP** (ring attention, causal load-balanced): each layer all-gathers the keys and
  values of its ``cp`` group in the forward, again in the backward, and reduce-scatters
  their gradients, exposed; attention is costed against all ``seq`` keys;
- **EP**: each MoE layer's dispatch and combine are all-to-alls of ``tokens x top_k``
  rows over the EP group, forward and backward, exposed;
- **FSDP / DDP**: the two-stream timeline of ``parallel_plan`` (prefetch depth 1,
  buckets of 25 MiB);
- **PP**: contiguous stages of layers (embed on the first, head on the last); a step
  runs ``m`` micro-batches through a 1F1B schedule, ``(m + pp - 1) x`` the slowest
  stage's forward + backward of one micro-batch (``(m + (pp - 1) / v)`` for the
  interleaved schedule with ``v`` stages per rank), plus the point-to-point sends of
  activations and gradients; the stage's gradient reduction follows, exposed;
- **activation checkpointing** (``ac=True``): a layer keeps only its input; its forward
  runs again in the backward.

Peak HBM is the worst stage's: fp32 master parameters, gradients and optimizer state
(sharded by FSDP; TP and EP shards are what the rank holds), gathered or cast working
copies, and the activations the traced step saves (``min(m, pp)`` micro-batches in
flight under 1F1B). docs/distributed-planning.md states the model and its limits.
"""

from __future__ import annotations

import math

from torchneuron.estimate.engine_cost import hbm_bytes_per_second
from torchneuron.estimate.model_source import ModelSource
from torchneuron.estimate.model_trace import StepTrace, trace_step
from torchneuron.estimate.parallel_plan import (
    _Collectives,
    _timeline,
    _tp_seconds,
    _unit_elements,
    instances_for,
    optimizer_seconds,
    placement_of,
)
from torchneuron.estimate.plan_types import (
    FP32_BYTES,
    OPTIMIZER_STATE_BYTES,
    OPTIMIZERS,
    Layout,
    ModelDescription,
    PlanError,
    TrainingPlan,
)

PRECISIONS = ("bf16", "fp32", "fp8", "mx")
# Matmul input dtype of the linear layers per precision (attention stays bf16, as in
# float8 training recipes); activations and gathers are bf16 except under fp32.
MATMUL_DTYPES = {"bf16": None, "fp32": None, "fp8": "float8_e4m3fn", "mx": "mxfp8"}
SCHEDULES = ("1f1b", "interleaved")


def plan_model(
    source: ModelSource,
    layout: Layout,
    *,
    batch: int,
    seq: int,
    precision: str = "bf16",
    optimizer: str = "adam",
    ac: bool = False,
    microbatch: int = 1,
    schedule: str = "1f1b",
    virtual_stages: int = 2,
    description: ModelDescription | None = None,
    traces: dict | None = None,
) -> TrainingPlan:
    """Estimate one optimizer step of ``source``'s model under ``layout`` (module doc).

    ``batch`` is the global batch in sequences; under PP each data-parallel rank splits
    its share into micro-batches of ``microbatch`` sequences. ``traces`` caches traces
    between calls (``--search``).
    """
    if precision not in PRECISIONS:
        raise PlanError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    if optimizer not in OPTIMIZERS:
        raise PlanError(f"optimizer {optimizer!r}: expected one of {', '.join(OPTIMIZERS)}")
    if schedule not in SCHEDULES:
        raise PlanError(f"schedule {schedule!r}: expected one of {', '.join(SCHEDULES)}")
    _check(layout, batch, seq, microbatch)
    placement = placement_of(layout)
    chip, lnc = placement.chip_spec, placement.lnc
    if precision == "mx" and "mxfp8" not in chip.tensor_engine.tflops_per_core:
        raise PlanError(
            f"--precision mx: {chip.marketing_name} lists no MX matmul rate (Trainium3 "
            "does); use --precision fp8"
        )
    per_instance = placement.cores_per_instance
    instances = instances_for(layout, placement)
    data_ranks = layout.dp * layout.fsdp
    per_rank = batch // data_ranks
    micro = microbatch
    if per_rank % micro:
        raise PlanError(
            f"--microbatch {microbatch} does not divide the {per_rank} sequences of each "
            "data-parallel rank"
        )
    microbatches = per_rank // micro
    if layout.pp > 1 and microbatches < layout.pp:
        raise PlanError(
            f"{microbatches} micro-batches for {layout.pp} pipeline stages: 1F1B needs at "
            f"least as many micro-batches as stages; raise --batch or lower --microbatch"
        )
    sp = layout.sequence_parallel
    key = (layout.tp, layout.ep, layout.cp, micro, seq, precision, layout.target, lnc, sp)
    traces = {} if traces is None else traces
    if key not in traces:
        traces[key] = trace_step(
            source,
            chip,
            lnc,
            batch=micro,
            seq=seq,
            precision="fp32" if precision == "fp32" else "bf16",
            tp=layout.tp,
            ep=layout.ep,
            cp=layout.cp,
            matmul_dtype=MATMUL_DTYPES[precision],
            sequence_parallel=sp,
        )
    trace = traces[key]
    if layout.pp > 1 and layout.pp > trace.layers:
        raise PlanError(f"--pp {layout.pp} is more than the model's {trace.layers} layers")
    description = _describe(source, trace, description)
    step = _Step(trace, layout, placement, chip, lnc, precision, ac, description)
    step_s, memory, details = step.run(optimizer, microbatches, schedule, virtual_stages)
    # The model's matmul FLOPs of one rank's step (a recomputed forward does not count).
    flops = microbatches * sum(p.flops for p in trace.pieces.values()) / layout.pp
    compute = step.compute_seconds(optimizer, microbatches)
    return TrainingPlan(
        shape=description,
        layout=layout,
        precision=precision,
        optimizer=optimizer,
        batch=batch,
        seq=seq,
        lnc=lnc,
        instance=placement.instance,
        cores_per_instance=per_instance,
        instances=instances,
        forward_s=compute["forward"],
        backward_s=compute["backward"],
        optimizer_s=compute["optimizer"],
        matmul_flops=int(flops),
        collectives=step.comm.rows(),
        step_s=step_s,
        memory=memory,
        hbm_capacity_bytes=chip.hbm_bytes_per_logical_core(lnc),
        peak_tensor_flops=chip.tensor_flops_per_logical_core("bfloat16", lnc),
        details=details,
    )


def describe_source(source: ModelSource) -> ModelDescription:
    """The whole model's parameter count and sizes (built once on the meta device)."""
    config = source.config or {}
    return ModelDescription(
        name=source.name,
        source=source.text,
        parameters=source.parameter_count(),
        layers=int(config.get("num_hidden_layers", 0) or 0),
        d_model=int(config.get("hidden_size", 0) or 0),
        architecture=source.architecture,
        experts=int(config.get("num_local_experts", 0) or config.get("num_experts", 0) or 0),
        top_k=int(config.get("num_experts_per_tok", 0) or 0),
    )


def _describe(source, trace: StepTrace, described: ModelDescription | None) -> ModelDescription:
    """The description, its sizes taken from the trace where the source does not say."""
    described = described or describe_source(source)
    if not described.layers or not described.d_model:
        from dataclasses import replace

        described = replace(described, layers=trace.layers, d_model=trace.hidden)
    return described


def _check(layout: Layout, batch: int, seq: int, microbatch: int) -> None:
    for flag in ("dp", "fsdp", "tp", "pp", "cp", "ep"):
        if getattr(layout, flag) < 1:
            raise PlanError(f"--{flag} {getattr(layout, flag)}: a parallel degree is 1 or more")
    if batch < 1 or seq < 1 or microbatch < 1:
        raise PlanError("--batch, --seq and --microbatch must be 1 or more")
    data_ranks = layout.dp * layout.fsdp
    if batch % data_ranks:
        raise PlanError(
            f"global batch {batch} does not split evenly over --dp {layout.dp} x --fsdp "
            f"{layout.fsdp} = {data_ranks} data-parallel ranks"
        )
    if data_ranks % layout.ep:
        raise PlanError(
            f"--ep {layout.ep} must divide the {data_ranks} data-parallel ranks (--dp x --fsdp)"
        )
    if seq % layout.cp:
        raise PlanError(f"--cp {layout.cp} does not divide sequence length {seq}")
    if layout.sequence_parallel and (seq // layout.cp) % layout.tp:
        raise PlanError(f"sequence parallel: --tp {layout.tp} does not divide the local sequence")


class _Shape:
    """What ``parallel_plan``'s timeline reads of a model."""

    def __init__(self, layers: int, d_model: int):
        self.layers, self.d_model = layers, d_model


class _Step:
    """One rank's step: pieces in time, collectives, memory (the worst stage)."""

    def __init__(self, trace, layout, placement, chip, lnc, precision, ac, description):
        self.trace, self.layout, self.chip, self.lnc = trace, layout, chip, lnc
        self.precision, self.ac, self.description = precision, ac, description
        self.e = 4 if precision == "fp32" else 2
        self.hbm = hbm_bytes_per_second(chip, lnc)
        self.placement = placement
        self.comm = _Collectives(layout, placement)
        self.blocks = [f"block{i}" for i in range(trace.layers)]
        self.stages = _stages(self.blocks, layout.pp)
        self.tokens = trace.tokens
        self.shape = _Shape(trace.layers, trace.hidden)
        self.forward = {k: p.forward_s for k, p in trace.pieces.items()}
        self.backward = {k: p.backward_s for k, p in trace.pieces.items()}
        if ac:  # the layer's forward runs again before its backward
            for block in self.blocks:
                self.backward[block] += self.forward[block]
        self.compute_forward, self.compute_backward = dict(self.forward), dict(self.backward)

    # what parallel_plan's timeline reads
    def local_parameters(self, pieces=None):
        rows = self.trace.parameters
        return rows if pieces is None else [r for r in rows if r[2] in pieces]

    def optimizer_seconds(self, optimizer: str, pieces=None) -> float:
        params = self.local_parameters(pieces)
        return optimizer_seconds(params, self.layout.fsdp, optimizer, self.hbm)

    def _exposed(self, piece: str, backward: bool) -> float:
        """CP and EP collectives of one piece: they sit between dependent ops."""
        seconds = 0.0
        if not piece.startswith("block"):
            return seconds
        layout, d = self.layout, self.description
        if layout.cp > 1:
            kv = self._kv_bytes()
            seconds += self.comm.seconds("CP all-gather (keys, values)", "all_gather", "cp", kv)
            if backward:
                seconds += self.comm.seconds(
                    "CP reduce-scatter (key, value gradients)", "reduce_scatter", "cp", kv
                )
        if layout.ep > 1 and d.experts:
            rows = self.tokens * d.top_k * self.trace.hidden * self.e
            for what in ("dispatch", "combine"):
                seconds += self.comm.seconds(f"EP all-to-all ({what})", "all_to_all", "ep", rows)
        return seconds

    def _kv_bytes(self) -> int:
        """Keys and values of the whole sequence, gathered from the ``cp`` ranks."""
        width = self.trace.kv_width or self.trace.hidden
        return 2 * self.layout.cp * self.tokens * width * self.e

    def compute_seconds(self, optimizer: str, microbatches: int) -> dict:
        stage = self.stages[0] if self.layout.pp == 1 else self._worst_stage()
        forward = sum(self.compute_forward[p] for p in stage) * microbatches
        backward = sum(self.compute_backward[p] for p in stage) * microbatches
        return {
            "forward": forward,
            "backward": backward,
            "optimizer": self.optimizer_seconds(optimizer, set(stage)),
        }

    def _worst_stage(self) -> list[str]:
        return max(
            self.stages,
            key=lambda s: sum(self.compute_forward[p] + self.compute_backward[p] for p in s),
        )

    def run(self, optimizer, microbatches, schedule, virtual) -> tuple[float, dict, dict]:
        layout = self.layout
        fwd = {p: self.forward[p] + self._exposed(p, False) for p in self.forward}
        bwd = {p: self.backward[p] + self._exposed(p, True) for p in self.backward}
        details = {
            "trace": self._trace_details(),
            "activation_checkpointing": self.ac,
            "microbatches": microbatches,
        }
        if layout.pp == 1:
            step_s = self._accumulated_step(fwd, bwd, optimizer, microbatches)
            memory = self._memory(self.stages[0], optimizer, in_flight=1)
            return step_s, memory, details
        fwd = {p: t + _tp_seconds(self.comm, self, p, False) for p, t in fwd.items()}
        bwd = {p: t + _tp_seconds(self.comm, self, p, True) for p, t in bwd.items()}
        send = self.tokens * self.trace.hidden * self.e
        p2p = self.comm.seconds("PP send/recv (activations)", "send_recv", "pp_next", send)
        p2p += self.comm.seconds("PP send/recv (gradients)", "send_recv", "pp_next", send)
        _repeat_rows(self.comm, microbatches)
        per_stage = [sum(fwd[p] + bwd[p] for p in stage) + p2p for stage in self.stages]
        slowest = max(per_stage)
        bubble = (layout.pp - 1) / (virtual if schedule == "interleaved" else 1)
        pipeline_s = (microbatches + bubble) * slowest
        stage = self._worst_stage()
        sync_s = self._stage_gradient_sync(stage)
        step_s = pipeline_s + sync_s + self.optimizer_seconds(optimizer, set(stage))
        in_flight = min(microbatches, layout.pp)
        memory = self._memory(stage, optimizer, in_flight)
        details["pipeline"] = {
            "stages": layout.pp,
            "schedule": schedule,
            "virtual_stages": virtual if schedule == "interleaved" else 1,
            "layers_per_stage": [sum(p.startswith("block") for p in s) for s in self.stages],
            "slowest_stage_microbatch_s": slowest,
            "bubble_fraction": bubble / (microbatches + bubble),
            "gradient_sync_s": sync_s,
        }
        return step_s, memory, details

    def _accumulated_step(self, fwd, bwd, optimizer, microbatches) -> float:
        """``microbatches`` forward + backward passes, then the optimizer. FSDP gathers
        and reduce-scatters in every pass (FSDP2's default); DDP all-reduces in the last
        (``no_sync`` before it). The shared timeline adds the TP collectives itself."""
        layout = self.layout
        self.forward, self.backward = fwd, bwd
        precision = "fp32" if self.precision == "fp32" else "bf16"
        last = _timeline(self, self.comm, self.shape, layout, precision, optimizer)
        if microbatches == 1:
            return last
        if layout.fsdp > 1:
            earlier = last - self.optimizer_seconds(optimizer)
            _repeat_rows(self.comm, microbatches)
        else:
            scratch = _Collectives(layout, self.placement)  # priced, not recorded twice
            earlier = sum(
                fwd[p]
                + bwd[p]
                + _tp_seconds(scratch, self, p, False)
                + _tp_seconds(scratch, self, p, True)
                for p in fwd
            )
            _repeat_rows(self.comm, microbatches, keep=("DDP gradient all-reduce",))
        return (microbatches - 1) * earlier + last

    def _stage_gradient_sync(self, stage) -> float:
        """The stage's parameters gathered before the first micro-batch (kept gathered)
        and its gradients reduced after the last one, exposed."""
        layout = self.layout
        elements = sum(n for _, n, _ in self.local_parameters(set(stage)))
        seconds = 0.0
        wire_bytes = FP32_BYTES if self.precision == "fp32" else 2
        if layout.fsdp > 1:
            seconds += self.comm.seconds(
                "FSDP all-gather (parameters)", "all_gather", "fsdp", elements * wire_bytes
            )
            seconds += self.comm.seconds(
                "FSDP reduce-scatter (gradients)", "reduce_scatter", "fsdp", elements * wire_bytes
            )
        if layout.dp > 1:
            shard = elements * wire_bytes // layout.fsdp
            seconds += self.comm.seconds("DP all-reduce (gradients)", "all_reduce", "dp", shard)
        return seconds

    def _memory(self, stage, optimizer, in_flight: int) -> dict[str, int]:
        layout = self.layout
        params = self.local_parameters(set(stage))
        fsdp = layout.fsdp
        shard = sum(math.ceil(n / fsdp) for _, n, _ in params)
        local = sum(n for _, n, _ in params)
        compute_bytes = 4 if self.precision == "fp32" else 2
        if fsdp > 1:
            units = _unit_elements(params, fsdp)
            block = max((v for k, v in units.items() if k != "root"), default=0)
            root = units.get("root", 0)
            working = (root + 3 * block) * compute_bytes
            if layout.pp > 1:  # kept gathered across the micro-batches
                working = sum(units.values()) * compute_bytes + block * compute_bytes
        else:
            working = local * 2 if compute_bytes == 2 else 0
        pieces = self.trace.pieces
        saved = 0
        for piece in stage:
            if self.ac and piece.startswith("block"):
                saved += pieces[piece].input_bytes
            else:
                saved += pieces[piece].saved_bytes
        if self.ac:
            saved += max((pieces[p].saved_bytes for p in stage if p.startswith("block")), default=0)
        memory = {
            "parameters": shard * FP32_BYTES,
            "gradients": shard * FP32_BYTES,
            "optimizer_state": shard * OPTIMIZER_STATE_BYTES[optimizer],
            "working_parameters": working,
            "activations": saved * in_flight,
        }
        memory["peak"] = sum(memory.values())
        return memory

    def _trace_details(self) -> dict:
        trace = self.trace
        first = trace.pieces["block0"] if trace.layers else None
        return {
            "layers": trace.layers,
            "layers_traced": trace.traced_layers,
            "tokens_per_microbatch": trace.tokens,
            "parameters_per_rank": sum(n for _, n, _ in trace.parameters),
            "layer_forward_s": first.forward_s if first else 0.0,
            "layer_backward_s": first.backward_s if first else 0.0,
            "layer_activation_bytes": first.saved_bytes if first else 0,
            "layer_ops": sum(first.ops.values()) if first else 0,
        }


def _repeat_rows(comm, factor, keep=()) -> None:
    """Scale the recorded collectives (calls, bytes, seconds) by ``factor``: what one
    micro-batch issued, issued by every micro-batch."""
    for row in comm.rows():
        if row.name in keep:
            continue
        row.calls = round(row.calls * factor)
        row.nbytes = round(row.nbytes * factor)
        row.wire_bytes_per_rank *= factor
        row.seconds *= factor


def _stages(blocks: list[str], pp: int) -> list[list[str]]:
    """Contiguous stages of layers (earlier stages take the remainder); the first holds
    the embedding, the last the head."""
    count, extra = divmod(len(blocks), pp)
    stages, start = [], 0
    for s in range(pp):
        size = count + (1 if s < extra else 0)
        stages.append(blocks[start : start + size])
        start += size
    stages[0] = ["embed", *stages[0]]
    stages[-1] = [*stages[-1], "head"]
    return stages
