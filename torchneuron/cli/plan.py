"""``neuronc plan``: per-step compute, communication, overlap and peak HBM of a parallel layout.

neuronc plan gpt --layers 32 --d-model 4096 --heads 32 --ffn 11008 --vocab 32000 \\
    --context 4096 --seq 2048 --batch 16 --dp 2 --fsdp 8 --tp 4 --instance trn2.48xlarge

The model is the zoo's GPT-style language model, with any of its sizes overridden; the
estimate is ``torchneuron.estimate.parallel_plan.plan_training`` (docs/distributed-planning.md).
"""

from __future__ import annotations

from .usage import UsageError

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
    from torchneuron.target import hardware

    command.add_argument("model", help="a zoo model: gpt (the GPT-style language model)")
    for name, flag in SIZE_FLAGS.items():
        command.add_argument(flag, dest=name, type=int, help=f"override the model's {name}")
    command.add_argument(
        "--batch",
        type=int,
        help="global batch: sequences per step over all data-parallel ranks "
        "(default: one per data-parallel rank)",
    )
    command.add_argument("--seq", type=int, help="sequence length (default: the model's context)")
    for flag, what in (("--dp", "DDP replicas"), ("--fsdp", "FSDP shards"), ("--tp", "TP ranks")):
        command.add_argument(flag, type=int, default=1, help=f"{what} (default 1)")
    command.add_argument(
        "--world-size", type=int, help="check that dp x fsdp x tp equals this many ranks"
    )
    command.add_argument(
        "--sequence-parallel",
        action="store_true",
        help="TP with sequence parallelism (all-gather + reduce-scatter instead of all-reduce)",
    )
    command.add_argument(
        "--target", choices=sorted(hardware.CHIPS), help="chip (default: the instance's, or trn2)"
    )
    command.add_argument("--instance", choices=sorted(hardware.INSTANCES), help="instance type")
    command.add_argument(
        "--instances", type=int, help="instances in the job (default: as few as the ranks need)"
    )
    command.add_argument(
        "--lnc", type=int, choices=(1, 2), help="logical NeuronCore size (default: the chip's)"
    )
    command.add_argument("--precision", choices=PRECISIONS, default="bf16")
    command.add_argument("--optimizer", choices=OPTIMIZERS, default="adam")
    command.add_argument("--json", action="store_true", help="print the figures as JSON")


def plan_command(args) -> int:
    import json
    from dataclasses import replace

    from torchneuron.estimate.parallel_plan import Layout, plan_training
    from torchneuron.target import hardware

    shape = replace(
        _zoo_shape(args.model),
        **{name: getattr(args, name) for name in SIZE_FLAGS if getattr(args, name) is not None},
    )
    target = args.target
    if args.instance is not None:
        instance_target = hardware.instance(args.instance).target
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
        instance=args.instance,
        instances=args.instances,
        sequence_parallel=args.sequence_parallel,
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
    lines = [
        f"model     {name}: {m['parameters'] / 1e6:.2f} M parameters ({m['layers']} layers, "
        f"d_model {m['d_model']}, {m['heads']} heads, ffn {m['ffn']}, vocab {m['vocab']})",
        f"layout    dp {lay['dp']} x fsdp {lay['fsdp']} x tp {lay['tp']} = "
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
