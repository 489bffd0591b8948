"""``neuronc plan``: per-step compute, communication, overlap and peak HBM of a parallel layout.

neuronc plan gpt --layers 32 --d-model 4096 --heads 32 --ffn 11008 --vocab 32000 \\
    --context 4096 --seq 2048 --batch 16 --dp 2 --fsdp 8 --tp 4 --instance trn2.48xlarge
neuronc plan --model hf:llama-3-8b/config.json --instance trn2 --fsdp 16 --tp 4 \\
    --batch 1024 --seq 4096
neuronc plan --model hf:llama-3-8b/config.json --nodes 4 --batch 1024 --seq 4096 --search

``gpt`` is the zoo's GPT-style language model, with any of its sizes overridden
(``parallel_plan.plan_training``, a formula of its shapes); ``--model`` is the user's own
model, traced on fake tensors and costed op by op (``model_plan.plan_model``).
docs/distributed-planning.md explains both.
"""

from __future__ import annotations

from .usage import UsageError

# Short names of the instance types (--instance trn2): the one a job rents.
INSTANCE_ALIASES = {
    "trn1": "trn1.32xlarge",
    "trn2": "trn2.48xlarge",
    "trn2u": "trn2u.48xlarge",
    "trn3": "trn3-gen1-server",
}

SIZE_FLAGS = {
    "layers": "--layers",
    "d_model": "--d-model",
    "heads": "--heads",
    "ffn": "--ffn",
    "vocab": "--vocab",
    "context": "--context",
}


def add_plan_arguments(command) -> None:
    """The ``neuronc plan`` arguments on ``command`` (an argparse subparser)."""
    from torchneuron.estimate.parallel_plan import OPTIMIZERS, PRECISIONS
    from torchneuron.target import planning

    command.add_argument(
        "model", nargs="?", help="a zoo model: gpt (the GPT-style language model); or --model"
    )
    command.add_argument(
        "--model",
        dest="model_source",
        metavar="SOURCE",
        help="the user's model: hf:path/to/config.json, package.module:factory or file.pt2 "
        "(traced on fake tensors; no weights are read)",
    )
    for name, flag in SIZE_FLAGS.items():
        command.add_argument(flag, dest=name, type=int, help=f"override the model's {name}")
    command.add_argument(
        "--batch",
        type=int,
        help="global batch: sequences per step over all data-parallel ranks "
        "(default: one per data-parallel rank)",
    )
    command.add_argument("--seq", type=int, help="sequence length (default: the model's context)")
    for flag, what in (
        ("--dp", "DDP replicas"),
        ("--fsdp", "FSDP shards"),
        ("--tp", "TP ranks"),
        ("--pp", "pipeline stages (--model)"),
        ("--cp", "context-parallel ranks (--model)"),
        ("--ep", "expert-parallel ranks inside the data-parallel ones (--model)"),
    ):
        command.add_argument(flag, type=int, default=1, help=f"{what} (default 1)")
    command.add_argument(
        "--microbatch",
        type=int,
        default=1,
        help="sequences per micro-batch (--model; default 1): each data-parallel rank "
        "accumulates its share of --batch, or feeds the pipeline, in micro-batches",
    )
    command.add_argument(
        "--schedule", choices=("1f1b", "interleaved"), default="1f1b", help="pipeline schedule"
    )
    command.add_argument(
        "--ac", action="store_true", help="activation checkpointing of every layer (--model)"
    )
    command.add_argument(
        "--search",
        action="store_true",
        help="rank the layouts that fit on --nodes instances by step time (--model)",
    )
    command.add_argument(
        "--world-size", type=int, help="check that dp x fsdp x tp equals this many ranks"
    )
    command.add_argument(
        "--sequence-parallel",
        action="store_true",
        help="TP with sequence parallelism (all-gather + reduce-scatter instead of all-reduce)",
    )
    command.add_argument(
        "--target",
        choices=planning.targets(),
        help="chip (default: the instance's, or trn2; trn1 is priced for --model only)",
    )
    command.add_argument(
        "--instance",
        choices=sorted([*planning.instances(), *INSTANCE_ALIASES]),
        help="instance type (trn2 = trn2.48xlarge, trn2u = trn2u.48xlarge, trn3 = "
        "trn3-gen1-server; trn1 = trn1.32xlarge, for --model only)",
    )
    command.add_argument(
        "--instances",
        "--nodes",
        dest="instances",
        type=int,
        help="instances in the job (default: as few as the ranks need)",
    )
    command.add_argument(
        "--lnc", type=int, choices=(1, 2), help="logical NeuronCore size (default: the chip's)"
    )
    command.add_argument(
        "--precision",
        choices=sorted({*PRECISIONS, "fp8", "mx"}),
        default="bf16",
        help="bf16 (fp32 master weights), fp32, or for --model fp8 / mx linear layers",
    )
    command.add_argument("--optimizer", choices=OPTIMIZERS, default="adam")
    command.add_argument("--json", action="store_true", help="print the figures as JSON")


def plan_command(args) -> int:
    import json

    from torchneuron.estimate.parallel_plan import Layout
    from torchneuron.target import planning

    if (args.model is None) == (args.model_source is None):
        raise UsageError("plan: name a zoo model (gpt) or the user's model with --model, not both")
    instance = INSTANCE_ALIASES.get(args.instance, args.instance)
    target = args.target
    if instance is not None:
        instance_target = planning.instance(instance).target
        if target is not None and target != instance_target:
            raise UsageError(
                f"--instance {args.instance} holds {instance_target} chips, not --target {target}"
            )
        target = instance_target
    layout = Layout(
        dp=args.dp,
        fsdp=args.fsdp,
        tp=args.tp,
        target=target or "trn2",
        lnc=args.lnc,
        instance=instance,
        instances=args.instances,
        sequence_parallel=args.sequence_parallel,
        pp=args.pp,
        cp=args.cp,
        ep=args.ep,
    )
    if args.model_source is not None:
        from .plan_model import plan_model_command

        return plan_model_command(args, layout, render_plan)
    _zoo_only(args)
    from dataclasses import replace

    from torchneuron.estimate.parallel_plan import plan_training

    shape = replace(
        _zoo_shape(args.model),
        **{name: getattr(args, name) for name in SIZE_FLAGS if getattr(args, name) is not None},
    )
    plan = plan_training(
        shape,
        layout,
        batch=args.batch if args.batch is not None else max(1, args.dp * args.fsdp),
        seq=args.seq if args.seq is not None else shape.context,
        precision=args.precision,
        optimizer=args.optimizer,
        world_size=args.world_size,
    )
    summary = plan.summary()
    if args.json:
        print(json.dumps({"model_name": args.model, **summary}, indent=2, sort_keys=True))
        return 0
    print(render_plan(args.model, summary))
    return 0


def _zoo_only(args) -> None:
    """Flags that only a traced model (--model) understands."""
    from torchneuron.estimate.parallel_plan import PRECISIONS

    for flag in ("pp", "cp", "ep"):
        if getattr(args, flag) != 1:
            raise UsageError(f"--{flag} is planned for --model only (the zoo's gpt: dp, fsdp, tp)")
    if args.precision not in PRECISIONS:
        raise UsageError(f"--precision {args.precision} is planned for --model only")
    if args.search or args.ac or args.microbatch != 1:
        raise UsageError("--search, --ac and --microbatch are planned for --model only")


def _zoo_shape(name: str):
    from torchneuron.estimate.parallel_plan import TransformerShape
    from torchneuron.zoo import ZOO, GPTBlockLM

    entry = ZOO.get(name)
    model = entry.build() if entry is not None else None
    if not isinstance(model, GPTBlockLM):
        language_models = [n for n, e in ZOO.items() if isinstance(e.build(), GPTBlockLM)]
        raise UsageError(
            f"model {name!r}: plan estimates GPT-style language models, the zoo's "
            f"{', '.join(language_models)} (resize with --layers, --d-model, --heads, --ffn, "
            "--vocab, --context)"
        )
    return TransformerShape(
        vocab=model.tok.num_embeddings,
        d_model=model.tok.embedding_dim,
        heads=model.heads,
        layers=len(model.blocks),
        ffn=model.blocks[0].fc.out_features,
        context=model.pos.num_embeddings,
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def render_plan(name: str, s: dict) -> str:
    """The plan as text: the model and layout, time per step, collectives, HBM."""
    from torchneuron.target.topology import format_bytes

    m, lay, tr, c, mem = s["model"], s["layout"], s["training"], s["compute"], s["memory"]
    if "heads" in m:
        sizes = f"d_model {m['d_model']}, {m['heads']} heads, ffn {m['ffn']}, vocab {m['vocab']}"
    else:
        sizes = f"d_model {m['d_model']}" + (
            f", {m['experts']} experts, top {m['top_k']}" if m.get("experts") else ""
        )
    degrees = f"dp {lay['dp']} x fsdp {lay['fsdp']} x tp {lay['tp']}"
    for flag in ("pp", "cp"):
        if lay.get(flag, 1) > 1:
            degrees += f" x {flag} {lay[flag]}"
    if lay.get("ep", 1) > 1:
        degrees += f" (ep {lay['ep']})"
    lines = [
        f"model     {name}: {m['parameters'] / 1e6:.2f} M parameters ({m['layers']} layers, "
        f"{sizes})",
        f"layout    {degrees} = "
        f"{lay['world_size']} ranks on {lay['instances']} x {lay['instance']} "
        f"({lay['cores_per_instance']} logical cores each, {lay['target']}, LNC={lay['lnc']})"
        + (", sequence parallel" if lay["sequence_parallel"] else ""),
        f"batch     {tr['global_batch']} x {tr['seq']} tokens per step, "
        f"{tr['batch_per_rank']} sequence(s) per data-parallel rank; {tr['precision']}, "
        f"{tr['optimizer']}",
        "",
        "per step, per core",
        f"  compute: forward {_ms(c['forward_s'])}, backward {_ms(c['backward_s'])}, "
        f"optimizer {_ms(c['optimizer_s'])} = {_ms(c['total_s'])}",
    ]
    rows = s["communication"]
    if rows:
        headers = ("collective", "group", "calls", "bytes/step", "wire/rank", "time", "algorithm")
        table = [
            (
                r["name"],
                f"{r['group']} of {r['group_size']}",
                str(r["calls"]),
                format_bytes(r["nbytes"]),
                format_bytes(int(r["wire_bytes_per_rank"])),
                _ms(r["seconds"]),
                ",".join(r["algorithms"]) + " over " + ",".join(r["levels"]),
            )
            for r in rows
        ]
        widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers)]
        for row in (headers, *table):
            lines.append("  " + "  ".join(f"{v:<{w}}" for v, w in zip(row, widths)).rstrip())
    else:
        lines.append("  no communication (one rank)")
    lines += [
        f"  communication {_ms(s['communication_s'])}: overlapped "
        f"{_ms(s['overlapped_communication_s'])}, exposed {_ms(s['exposed_communication_s'])}",
        f"  step time {_ms(s['step_s'])} (compute + exposed communication); "
        f"{s['tokens_per_s']:.0f} tokens/s over the job; MFU {100 * s['mfu']:.1f}%",
        "",
        "peak HBM per core",
    ]
    for key, label in (
        ("parameters_bytes", "fp32 parameters (sharded)"),
        ("gradients_bytes", "fp32 gradients (sharded)"),
        ("optimizer_state_bytes", "optimizer state (sharded)"),
        ("working_parameters_bytes", "gathered / cast parameters"),
        ("activations_bytes", "activations saved for backward"),
    ):
        lines.append(f"  {label:<32}{format_bytes(mem[key]):>12}")
    verdict = "fits" if mem["fits"] else "DOES NOT FIT"
    lines.append(
        f"  {'peak':<32}{format_bytes(mem['peak_bytes']):>12} of "
        f"{format_bytes(mem['hbm_capacity_bytes'])}: {verdict}"
    )
    lines += [f"warning: {w}" for w in s["warnings"]]
    lines += ["", "overlap rules:", *(f"  - {rule}" for rule in s["overlap_rules"])]
    lines.append("(estimates from the cost model and the interconnect table, not measurements)")
    return "\n".join(lines)
