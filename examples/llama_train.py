"""Train a Llama-architecture model the way large runs do: FSDP2 x tensor parallelism,
torch.compile, bf16 autocast, activation checkpointing, distributed checkpoints.

    torchrun --nproc-per-node 4 examples/llama_train.py                  # 2 FSDP x 2 TP, 20 steps
    torchrun --nproc-per-node 4 examples/llama_train.py --steps 10 --checkpoint-dir ckpt
    torchrun --nproc-per-node 4 examples/llama_train.py --steps 20 --checkpoint-dir ckpt --resume
    # (ckpt/step5, ckpt/step10 saved; the second run goes on from step 10)
    torchrun --nproc-per-node 4 examples/llama_train.py --device cpu     # the same on CPU / gloo

The model is built from a Hugging Face Llama configuration (``--config``, e.g.
examples/configs/llama-3-8b.json; by default a small one that trains here: 4 layers,
hidden 512). Every rank prints nothing but rank 0's lines: per step the loss, the time
the step took on the emulator, and the planner's estimate of the same step on trn2
(``neuronc plan --model``) for ``--plan-config`` (default: Llama 3 8B) at
``--plan-batch`` x ``--plan-seq`` with this run's layout, so the small run here says what
the full-size one would cost. ``--device cpu`` compiles with Dynamo's ``eager`` backend
(the same graphs, no C++ compiler). Checkpoints go to ``--checkpoint-dir``/step<N>;
``--resume`` starts from the latest.

Nothing here is specific to torchneuron but ``--device neuron``: the mesh, FSDP2, the
tensor-parallel plan, autocast, checkpointing and DCP are PyTorch's.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

SMALL = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 512,
    "intermediate_size": 1376,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "vocab_size": 4096,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
}


# -- the model: RMSNorm, rotary positions, grouped-query attention, SwiGLU --------------


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x32 * self.weight.float()).to(x.dtype)


def rotary(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    """Heads are counted from the projections' widths, so a tensor-parallel rank (whose
    q/k/v hold a shard of the heads) runs its own heads."""

    def __init__(self, c: dict):
        super().__init__()
        d, heads, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.head_dim = d // heads
        self.q = nn.Linear(d, heads * self.head_dim, bias=False)
        self.k = nn.Linear(d, kv * self.head_dim, bias=False)
        self.v = nn.Linear(d, kv * self.head_dim, bias=False)
        self.o = nn.Linear(heads * self.head_dim, d, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape

        def heads(t):
            return t.view(b, s, -1, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        repeat = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(out.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        d, f = c["hidden_size"], c["intermediate_size"]
        self.gate = nn.Linear(d, f, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Layer(nn.Module):
    def __init__(self, c: dict, checkpointed: bool):
        super().__init__()
        self.attention_norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.attention = Attention(c)
        self.mlp_norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)
        self.checkpointed = checkpointed

    def block(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))

    def forward(self, x, cos, sin):
        if self.checkpointed and self.training:
            from torch.utils.checkpoint import checkpoint

            return checkpoint(self.block, x, cos, sin, use_reentrant=False)
        return self.block(x, cos, sin)


class Llama(nn.Module):
    def __init__(self, c: dict, checkpointed: bool = False):
        super().__init__()
        self.config = c
        self.embed = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([Layer(c, checkpointed) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def rope(self, length: int, device):
        head_dim = self.config["hidden_size"] // self.config["num_attention_heads"]
        theta = self.config.get("rope_theta", 10000.0)
        inverse = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
        angles = torch.outer(torch.arange(length, device=device).float(), inverse)
        angles = torch.cat([angles, angles], dim=-1)
        return angles.cos(), angles.sin()

    def forward(self, tokens):
        x = self.embed(tokens)
        cos, sin = self.rope(tokens.shape[1], tokens.device)
        for layer in self.layers:
            x = layer(x, cos.to(x.dtype), sin.to(x.dtype))
        return self.head(self.norm(x))


def build(config: dict, checkpointed: bool = False, seed: int = 0) -> Llama:
    torch.manual_seed(seed)
    model = Llama(config, checkpointed)
    for name, p in model.named_parameters():  # small init: stable losses at any width
        if p.dim() > 1:
            nn.init.normal_(p, std=0.02 if "head" not in name else 0.02 / math.sqrt(2))
    return model


def batches(config: dict, batch: int, seq: int, steps: int):
    """The global batch of every step: one seeded batch, seen again each step (every
    rank and every run sees the same), so the loss falls as the model learns it."""
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, config["vocab_size"], (batch, seq + 1), generator=g)
    return [tokens] * steps


# -- parallelism ------------------------------------------------------------------------


def parallelize(model: Llama, mesh, compiled: bool, device: str) -> None:
    """Tensor parallelism inside each layer (Megatron's plan), FSDP2 over the data-parallel
    dimension, each layer compiled on its own (the compiled region holds no collective of
    FSDP, whose hooks run around it)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    plan = {
        "attention.q": ColwiseParallel(),
        "attention.k": ColwiseParallel(),
        "attention.v": ColwiseParallel(),
        "attention.o": RowwiseParallel(),
        "mlp.gate": ColwiseParallel(),
        "mlp.up": ColwiseParallel(),
        "mlp.down": RowwiseParallel(),
    }
    policy = MixedPrecisionPolicy(param_dtype=torch.float32, reduce_dtype=torch.float32)
    for layer in model.layers:
        if mesh["tp"].size() > 1:
            parallelize_module(layer, mesh["tp"], plan)
        if compiled:
            layer.compile(backend="neuron" if device == "neuron" else "eager")
        fully_shard(layer, mesh=mesh["dp"], mp_policy=policy)
    fully_shard(model, mesh=mesh["dp"], mp_policy=policy)


def plan_line(args, dp: int, tp: int) -> str:
    """The planner's trn2 step of ``--plan-config`` with this run's layout."""
    from torchneuron.estimate.model_plan import plan_model
    from torchneuron.estimate.model_source import ModelSource
    from torchneuron.estimate.plan_types import Layout, PlanError

    path = Path(args.plan_config)
    plan_config = json.loads(path.read_text())
    source = ModelSource("hf", f"hf:{path}", path=path, config=plan_config)
    layout = Layout(fsdp=dp, tp=tp, target="trn2", instance="trn2.48xlarge")
    try:
        plan = plan_model(source, layout, batch=args.plan_batch, seq=args.plan_seq, ac=args.ac)
    except PlanError as error:
        return f"plan: {error}"
    fit = "fits" if plan.fits else "does not fit"
    return (
        f"plan: {path.stem} on trn2, fsdp {dp} x tp {tp}, batch {args.plan_batch} x "
        f"{args.plan_seq}: {plan.step_s * 1e3:.1f} ms per step, MFU {100 * plan.mfu:.1f}%, "
        f"peak {plan.memory['peak'] / 2**30:.2f} GiB per core ({fit})"
    )


# -- training ---------------------------------------------------------------------------


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="a Hugging Face Llama config.json (default: small)")
    parser.add_argument("--device", choices=("neuron", "cpu"), default="neuron")
    parser.add_argument("--tp", type=int, default=2, help="tensor-parallel ranks (default 2)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8, help="global batch (sequences)")
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    parser.add_argument("--no-ac", dest="ac", action="store_false", help="no checkpointing")
    parser.add_argument("--checkpoint-dir", help="save model and optimizer here (DCP)")
    parser.add_argument("--save-every", type=int, default=5)
    parser.add_argument("--resume", action="store_true", help="start from --checkpoint-dir")
    parser.add_argument(
        "--plan-config",
        default=str(Path(__file__).with_name("configs") / "llama-3-8b.json"),
        help="config.json the planner estimates on trn2 (default: Llama 3 8B)",
    )
    parser.add_argument("--plan-batch", type=int, default=64)
    parser.add_argument("--plan-seq", type=int, default=4096)
    parser.add_argument("--losses", help="write rank 0's losses here (JSON)")
    args = parser.parse_args(argv)

    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.device_mesh import init_device_mesh

    dist.init_process_group("neuron" if args.device == "neuron" else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if world % args.tp:
        raise SystemExit(f"--tp {args.tp} does not divide the {world} ranks")
    dp = world // args.tp
    mesh = init_device_mesh(args.device, (dp, args.tp), mesh_dim_names=("dp", "tp"))
    config = dict(SMALL) if not args.config else json.loads(Path(args.config).read_text())
    model = build(config, checkpointed=args.ac).to(args.device)
    parallelize(model, mesh, args.compile, args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    start = 0
    if args.resume:
        saved = sorted(Path(args.checkpoint_dir).glob("step*"), key=lambda p: int(p.name[4:]))
        if not saved:
            raise SystemExit(f"--resume: no checkpoint (step<N>) in {args.checkpoint_dir}")
        model_state, optimizer_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optimizer": optimizer_state, "step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=str(saved[-1]))
        set_state_dict(model, optimizer, model_state_dict=state["model"],
                       optim_state_dict=state["optimizer"])  # fmt: skip
        start = int(state["step"])

    rows = args.batch // dp
    dp_rank = mesh["dp"].get_local_rank()
    data = batches(config, args.batch, args.seq, args.steps)
    if rank == 0 and args.plan_config:  # --plan-config "": no estimate
        print(plan_line(args, dp, args.tp), flush=True)
    losses = {}
    for step in range(start, args.steps):
        began = time.perf_counter()
        tokens = data[step][dp_rank * rows : (dp_rank + 1) * rows].to(args.device)
        with torch.autocast(args.device, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        value = mean.item()
        losses[step] = value
        if rank == 0:
            print(
                f"step {step}: loss {value:.6f}, {time.perf_counter() - began:.2f} s on the "
                f"{args.device}",
                flush=True,
            )
        done = step + 1
        if args.checkpoint_dir and (done % args.save_every == 0 or done == args.steps):
            model_state, optimizer_state = get_state_dict(model, optimizer)
            state = {"model": model_state, "optimizer": optimizer_state, "step": torch.tensor(done)}
            dcp.save(state, checkpoint_id=f"{args.checkpoint_dir}/step{done}")
    if rank == 0 and args.losses:
        Path(args.losses).write_text(json.dumps(losses))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
