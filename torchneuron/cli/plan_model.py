"""``neuronc plan --model``: plan the user's own model, or search the layouts that fit.

A plan that does not fit is printed with what to change and exits with status 1, so a
script can tell; ``--search`` ranks every layout of the job's cores that fits by step
time and prints the best one in full.
"""

from __future__ import annotations

import json
from dataclasses import replace

from .usage import UsageError

PP_DEGREES = (1, 2, 4, 8, 16)
CP_DEGREES = (1, 2, 4, 8)
EP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
SEARCH_SHOWN = 10


def plan_model_command(args, layout, render) -> int:
    """``render`` is ``plan.render_plan`` (the text of a plan, shared with the zoo's gpt)."""
    from torchneuron.estimate.model_plan import describe_source, plan_model
    from torchneuron.estimate.model_source import parse_source

    for name in ("layers", "d_model", "heads", "ffn", "vocab", "context"):
        if getattr(args, name) is not None:
            raise UsageError(f"--{name.replace('_', '-')} resizes the zoo's gpt; not with --model")
    source = parse_source(args.model_source)
    description = describe_source(source)
    seq = args.seq
    if seq is None and source.kind == "pt2":
        seq = 1  # a program runs at the shapes it was exported with
    if seq is None:
        seq = (source.config or {}).get("max_position_embeddings")
        if not isinstance(seq, int):
            raise UsageError("--seq is needed: the model does not say its context length")
    options = dict(
        precision=args.precision,
        optimizer=args.optimizer,
        ac=args.ac,
        microbatch=args.microbatch,
        schedule=args.schedule,
        description=description,
    )
    if args.search:
        return _search(args, source, layout, seq, options, render)
    if args.world_size is not None and args.world_size != layout.world_size:
        raise UsageError(
            f"the degrees give {layout.world_size} ranks, but --world-size is {args.world_size}"
        )
    batch = args.batch if args.batch is not None else layout.dp * layout.fsdp * args.microbatch
    plan = plan_model(source, layout, batch=batch, seq=seq, **options)
    _print(args, description.name, plan, render)
    return 0 if plan.fits else 1


def _print(args, name: str, plan, render) -> None:
    summary = plan.summary()
    if args.json:
        print(json.dumps({"model_name": name, **summary}, indent=2, sort_keys=True))
        return
    print(render(name, summary))
    print(_details(summary))


def _details(s: dict) -> str:
    """What a traced plan adds: the trace, accumulation, the pipeline."""
    t = s["trace"]
    lines = [
        "",
        f"traced    {t['layers_traced']} of {t['layers']} layers on fake tensors "
        f"({t['layer_ops']} ops per layer, forward and backward), {t['tokens_per_microbatch']} "
        f"tokens per micro-batch, {t['parameters_per_rank'] / 1e6:.1f} M parameters per rank "
        "before FSDP",
        f"          one layer: forward {t['layer_forward_s'] * 1e3:.3f} ms, backward "
        f"{t['layer_backward_s'] * 1e3:.3f} ms, activations "
        f"{t['layer_activation_bytes'] / 2**20:.1f} MiB"
        + (" (checkpointed: its input only)" if s["activation_checkpointing"] else ""),
        f"          {s['microbatches']} micro-batch(es) per data-parallel rank per step",
    ]
    pipe = s.get("pipeline")
    if pipe:
        lines.append(
            f"pipeline  {pipe['stages']} stages ({pipe['schedule']}, layers "
            f"{pipe['layers_per_stage']}), bubble {100 * pipe['bubble_fraction']:.1f}%, "
            f"slowest stage {pipe['slowest_stage_microbatch_s'] * 1e3:.3f} ms per "
            f"micro-batch, gradient sync {pipe['gradient_sync_s'] * 1e3:.3f} ms"
        )
    return "\n".join(lines)


def _search(args, source, layout, seq, options, render) -> int:
    """Every layout of the job's ranks that the model allows, ranked by step time."""
    from torchneuron.estimate.collectives import Placement
    from torchneuron.estimate.model_plan import plan_model
    from torchneuron.estimate.plan_types import PlanError

    placement = Placement(target=layout.target, lnc=layout.lnc, instance=layout.instance)
    nodes = layout.instances or 1
    world = nodes * placement.cores_per_instance
    if args.batch is None:
        raise UsageError("--search needs --batch (the global batch in sequences)")
    description = options["description"]
    experts = description.experts
    traces: dict = {}
    results, refused = [], 0
    ac_choices = (True,) if args.ac else (False, True)
    for tp in _divisors(world, limit=placement.cores_per_instance):
        for pp in (d for d in PP_DEGREES if d <= description.layers):
            for cp in CP_DEGREES:
                if world % (tp * pp * cp):
                    continue
                data = world // (tp * pp * cp)
                for ep in (d for d in EP_DEGREES if d == 1 or (experts and experts % d == 0)):
                    if data % ep:
                        continue
                    for ac in ac_choices:
                        candidate = replace(
                            layout, dp=1, fsdp=data, tp=tp, pp=pp, cp=cp, ep=ep, instances=nodes
                        )
                        try:
                            plan = plan_model(
                                source,
                                candidate,
                                batch=args.batch,
                                seq=seq,
                                traces=traces,
                                **{**options, "ac": ac},
                            )
                        except PlanError:
                            refused += 1
                            continue
                        if plan.fits:
                            results.append(plan)
                            break  # checkpointing only when the plain layout does not fit
    results.sort(key=lambda p: p.step_s)
    if args.json:
        ranked = [{"model_name": description.name, **p.summary()} for p in results]
        print(json.dumps({"world_size": world, "refused": refused, "plans": ranked}, indent=2))
        return 0 if results else 1
    print(f"search    {world} ranks on {nodes} x {placement.instance}, batch {args.batch} x {seq}")
    if not results:
        print(
            f"no layout fits ({refused} refused by the model or the batch): raise --nodes, "
            "shorten --seq or lower --batch"
        )
        return 1
    print(f"  {'layout':<40}{'step':>12}{'tokens/s':>14}{'MFU':>8}{'peak HBM':>12}")
    for plan in results[:SEARCH_SHOWN]:
        lay = plan.layout
        name = f"fsdp {lay.fsdp} x tp {lay.tp} x pp {lay.pp} x cp {lay.cp}" + (
            f" (ep {lay.ep})" if lay.ep > 1 else ""
        )
        if plan.details.get("activation_checkpointing"):
            name += " +ac"
        summary = plan.summary()
        print(
            f"  {name:<40}{plan.step_s * 1e3:>10.1f}ms{summary['tokens_per_s']:>14.0f}"
            f"{100 * plan.mfu:>7.1f}%{plan.memory['peak'] / 2**30:>9.2f}GiB"
        )
    print(f"  ({len(results)} layouts fit, {refused} refused; the fastest in full:)\n")
    _print(args, description.name, results[0], render)
    return 0


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= limit and n % d == 0]
