"""One rank of the parallelism-API checks: FSDP2, DTensor plans, a 2-D mesh and DCP.

``python -m torch.distributed.run --nproc-per-node N parallel_worker.py OUT CKPT [CHECK...]``
runs the named checks (every check when none is named) for world size N on ``neuron``
tensors and writes ``OUT/rank<R>.json``:
check name -> {"value": ...} (what the rank saw, tensors as nested lists) or
{"error": "..."}. tests/distributed/test_parallel_apis.py computes the single-process
references and compares, so a wrong value shows as a difference, not as a flag set here.

At world size 4 the last check saves a sharded model + optimizer with
``torch.distributed.checkpoint`` to CKPT; at world size 2 it loads CKPT (a different
sharding). The models are built by ``build_*`` here, which the test imports too, so
both sides start from the same weights.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "neuron"

# The GPT-style stack of benchmarks/gpt_stack.py at a tiny size.
VOCAB, D, HEADS, LAYERS, SEQ = 64, 16, 4, 2, 8
GLOBAL_BATCH = 4  # rows, split over the data-parallel ranks
STEPS = 3
LR = 0.5


def build_gpt(seed: int = 0) -> nn.Module:
    from benchmarks.gpt_stack import GPT

    torch.manual_seed(seed)
    return GPT(VOCAB, D, HEADS, LAYERS, SEQ)


def gpt_batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (GLOBAL_BATCH, SEQ), generator=g)
    targets = torch.randint(0, VOCAB, (GLOBAL_BATCH, SEQ), generator=g)
    return tokens, targets


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(D, 4 * D)
        self.down = nn.Linear(4 * D, D)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class Attention(nn.Module):
    """Causal self-attention with separate q/k/v/out projections. The head count comes
    from the projection's width, so a column-sharded q/k/v runs its local heads."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
        self.out = nn.Linear(D, D)

    def forward(self, x):
        b, s, _ = x.shape
        head_dim = D // HEADS

        def heads(t):
            return t.view(b, s, -1, head_dim).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = (q @ k.transpose(-2, -1)) / head_dim**0.5
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
        return self.out(y)


class NormAttention(nn.Module):
    """LayerNorm then attention (residual-free: every value passes through the plan)."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.attn = Attention()

    def forward(self, x):
        return self.attn(self.norm(x))


class TinyBlock(nn.Module):
    """Attention and MLP with residuals: the 2-D mesh's model."""

    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.mlp = MLP()

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


def build(cls, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return cls()


def dense_input(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# -- helpers ---------------------------------------------------------------------


def _values(value):
    from torch.distributed.tensor import DTensor

    if isinstance(value, DTensor):
        value = value.full_tensor()
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().float().tolist()
    if isinstance(value, (list, tuple)):
        return [_values(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _values(v) for k, v in value.items()}
    return value


def _full_grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad for name, p in model.named_parameters()}


def _on_neuron(model: nn.Module) -> dict[str, str]:
    """Each parameter's local tensor's device type (must be neuron everywhere)."""
    from torch.distributed.tensor import DTensor

    return {
        name: (p.to_local() if isinstance(p, DTensor) else p).device.type
        for name, p in model.named_parameters()
    }


# -- FSDP2 ---------------------------------------------------------------------


def check_fsdp2_gpt_bf16(rank, world):
    """fully_shard on each block and the root, bf16 params / fp32 reduction, reshard
    after forward; STEPS SGD steps on this rank's rows of the batch."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model = build_gpt().to(DEVICE)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=policy, reshard_after_forward=True)
    fully_shard(model, mp_policy=policy, reshard_after_forward=True)
    local_numel = {name: p.to_local().numel() for name, p in model.named_parameters()}
    full_shapes = {name: list(p.shape) for name, p in model.named_parameters()}

    # Inside block 0's MLP forward: its weight is the unsharded bf16 tensor.
    seen: dict[str, object] = {}

    def record(module, args, output):
        weight = module[0].weight
        seen["weight"] = weight
        seen["during_forward_nbytes"] = weight.untyped_storage().nbytes()
        seen["during_forward_dtype"] = str(weight.dtype)
        seen["during_forward_shape"] = list(weight.shape)

    hook = model.blocks[0].mlp.register_forward_hook(record)

    tokens, targets = gpt_batch()
    rows = GLOBAL_BATCH // world
    mine = slice(rank * rows, (rank + 1) * rows)
    tokens, targets = tokens[mine].to(DEVICE), targets[mine].to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    after_forward_nbytes = None
    for step in range(STEPS):
        loss = model(tokens, targets)
        if step == 0:
            hook.remove()
            # Resharded after forward: the unsharded storage is freed.
            after_forward_nbytes = seen.pop("weight").untyped_storage().nbytes()
        losses.append(loss)
        loss.backward()
        if step == 0:
            grad_dtypes = {str(p.grad.dtype) for p in model.parameters()}
            param_dtypes = {str(p.dtype) for p in model.parameters()}
        optimizer.step()
        optimizer.zero_grad()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    return {
        "losses": [float(loss.detach()) for loss in losses],
        "loss_dtype": str(losses[0].dtype),
        "local_numel": local_numel,
        "full_shapes": full_shapes,
        "grad_dtypes": sorted(grad_dtypes),
        "param_dtypes": sorted(param_dtypes),
        "devices": _on_neuron(model),
        "after_forward_nbytes": after_forward_nbytes,
        **seen,
        "params": {name: t for name, t in full.items() if name != "mask"},
    }


# -- DTensor tensor / sequence parallelism ------------------------------------------


def _mesh(world):
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh(DEVICE, (world,))


def check_tp_mlp(rank, world):
    """ColwiseParallel up, RowwiseParallel down: output and gradients."""
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    model = build(MLP).to(DEVICE)
    parallelize_module(model, _mesh(world), {"up": ColwiseParallel(), "down": RowwiseParallel()})
    x = dense_input(2, 2, SEQ, D).to(DEVICE).requires_grad_()
    out = model(x)
    (out * dense_input(3, 2, SEQ, D).to(DEVICE)).sum().backward()
    return {
        "out": out,
        "x_grad": x.grad,
        "grads": _full_grads(model),
        "local_shapes": {n: list(p.to_local().shape) for n, p in model.named_parameters()},
        "devices": _on_neuron(model),
    }


def _attention_plan(output_sharded_on_sequence: bool):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
    )

    if not output_sharded_on_sequence:
        return {
            "q": ColwiseParallel(),
            "k": ColwiseParallel(),
            "v": ColwiseParallel(),
            "out": RowwiseParallel(),
        }
    return {
        "norm": SequenceParallel(),
        "attn": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
        "attn.q": ColwiseParallel(),
        "attn.k": ColwiseParallel(),
        "attn.v": ColwiseParallel(),
        "attn.out": RowwiseParallel(output_layouts=Shard(1)),
    }


def check_tp_attention(rank, world):
    """Colwise q/k/v, Rowwise out: each rank runs HEADS/world heads."""
    from torch.distributed.tensor.parallel import parallelize_module

    model = build(Attention).to(DEVICE)
    parallelize_module(model, _mesh(world), _attention_plan(False))
    x = dense_input(4, 2, SEQ, D).to(DEVICE).requires_grad_()
    out = model(x)
    (out * dense_input(5, 2, SEQ, D).to(DEVICE)).sum().backward()
    return {"out": out, "x_grad": x.grad, "grads": _full_grads(model)}


def check_sequence_parallel_norm_attention(rank, world):
    """SequenceParallel LayerNorm on this rank's sequence chunk, gathered for the
    attention, its output reduce-scattered back onto the sequence."""
    from torch.distributed.tensor.parallel import parallelize_module

    model = build(NormAttention).to(DEVICE)
    parallelize_module(model, _mesh(world), _attention_plan(True))
    chunk = SEQ // world
    mine = slice(rank * chunk, (rank + 1) * chunk)
    x = dense_input(6, 2, SEQ, D)[:, mine].to(DEVICE).requires_grad_()
    out = model(x)  # this rank's chunk of the sequence
    out.backward(dense_input(7, 2, SEQ, D)[:, mine].to(DEVICE))
    return {
        "out_chunk": out,
        "x_grad_chunk": x.grad,
        "grads": _full_grads(model),
        "norm_weight_placements": [str(p) for p in model.norm.weight.placements],
    }


# -- 2-D mesh: FSDP over dp, TP over tp -------------------------------------------


def tiny_block_tp_plan() -> dict:
    """TinyBlock's tensor-parallel plan: Colwise q/k/v and MLP up, Rowwise out and down."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    colwise = ("attn.q", "attn.k", "attn.v", "mlp.up")
    return {name: ColwiseParallel() for name in colwise} | {
        "attn.out": RowwiseParallel(),
        "mlp.down": RowwiseParallel(),
    }


def check_fsdp_tp_2d(rank, world):
    """dp x tp = 2 x 2: TP plan on the tp sub-mesh, fully_shard over dp; one SGD step
    on the dp rank's half of the batch (the tp pair shares it)."""
    if world != 4:
        return None
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        parallelize_module,
    )

    mesh = init_device_mesh(DEVICE, (2, 2), mesh_dim_names=("dp", "tp"))
    model = build(TinyBlock).to(DEVICE)
    plan = tiny_block_tp_plan()
    parallelize_module(model, mesh["tp"], plan)
    fully_shard(model, mesh=mesh["dp"])
    dp = mesh["dp"].get_local_rank()
    x = dense_input(8, GLOBAL_BATCH, SEQ, D)[dp * 2 : dp * 2 + 2].to(DEVICE)
    target = dense_input(9, GLOBAL_BATCH, SEQ, D)[dp * 2 : dp * 2 + 2].to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loss = F.mse_loss(model(x), target)
    loss.backward()
    optimizer.step()
    return {
        "loss": loss,
        "placements": {n: [str(p) for p in t.placements] for n, t in model.named_parameters()},
        "local_numel": {n: t.to_local().numel() for n, t in model.named_parameters()},
        "params": {n: t for n, t in model.named_parameters()},
        "second_loss": F.mse_loss(model(x), target),
    }


# -- torch.distributed.checkpoint ----------------------------------------------


def _dcp_model(world):
    """TinyBlock fully sharded over all ranks, Adam (so the optimizer has state)."""
    from torch.distributed.fsdp import fully_shard

    model = build(TinyBlock, seed=10 + world).to(DEVICE)  # weights differ per world size
    fully_shard(model.attn)
    fully_shard(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    return model, optimizer


def _full_state(model, optimizer):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    model_state, optim_state = get_state_dict(
        model, optimizer, options=StateDictOptions(full_state_dict=True)
    )
    # As lists now: the optimizer's state dict shares its tensors ("step") with the
    # live optimizer, which a later step updates in place.
    return _values({"model": model_state, "optim": optim_state})


def check_dcp_save_4_load_2(rank, world, ckpt):
    """World 4 trains one Adam step and saves; world 2 loads into its own sharding."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model, optimizer = _dcp_model(world)
    x = dense_input(11, 2, SEQ, D).to(DEVICE)
    if world == 4:
        model(x).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        model_state, optim_state = get_state_dict(model, optimizer)
        dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=ckpt)
        return {
            "saved": _full_state(model, optimizer),
            "local_numel": {n: p.to_local().numel() for n, p in model.named_parameters()},
        }
    if world != 2:
        return None
    before = _full_state(model, optimizer)
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=ckpt)
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    loaded = _full_state(model, optimizer)
    # The loaded model and optimizer keep training: a step runs on the loaded state.
    model(x).square().mean().backward()
    optimizer.step()
    return {
        "before": before,
        "loaded": loaded,
        "local_numel": {n: p.to_local().numel() for n, p in model.named_parameters()},
        "devices": _on_neuron(model),
    }


def check_dcp_load_into_tensor_parallel(rank, world, ckpt):
    """World 2 loads the 4 FSDP shards into a tensor-parallel model: Colwise/Rowwise
    shards (dims 0 and 1) instead of FSDP's dim-0 quarters."""
    if world != 2:
        return None
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.tensor.parallel import (
        parallelize_module,
    )

    model = build(TinyBlock, seed=20).to(DEVICE)
    plan = tiny_block_tp_plan()
    parallelize_module(model, _mesh(world), plan)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model(dense_input(11, 2, SEQ, D).to(DEVICE)).square().mean().backward()
    optimizer.step()  # Adam state exists (and differs from the checkpoint's)
    optimizer.zero_grad()
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=ckpt)
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    return {
        "loaded": _full_state(model, optimizer),
        "placements": {n: [str(p) for p in t.placements] for n, t in model.named_parameters()},
    }


def _fsdp_mlp_grads(world, factor: float, force_sum: bool):
    from torch.distributed.fsdp import fully_shard

    model = build(MLP).to(DEVICE)
    fully_shard(model)
    model.set_gradient_divide_factor(factor)
    model.set_force_sum_reduction_for_comms(force_sum)
    rank = torch.distributed.get_rank()
    x = dense_input(12 + rank, 2, SEQ, D).to(DEVICE)
    model(x).square().sum().backward()
    return _full_grads(model)


def check_fsdp2_divide_factor_with_sum_reduction(rank, world):
    """A custom gradient divide factor, reduced with SUM and divided after."""
    return _fsdp_mlp_grads(world, 3.0, force_sum=True)


def check_fsdp2_divide_factor_premul_sum_refused(rank, world):
    """Without forcing SUM, FSDP2 asks for PREMUL_SUM, which gloo lacks: a clear error
    on every rank, before any rank enters the collective."""
    try:
        _fsdp_mlp_grads(world, 3.0, force_sum=False)
    except RuntimeError as error:
        return {"raised": str(error)}
    return {"raised": None}


CHECKS = {
    "fsdp2_gpt_bf16": check_fsdp2_gpt_bf16,
    "tp_mlp": check_tp_mlp,
    "tp_attention": check_tp_attention,
    "sequence_parallel_norm_attention": check_sequence_parallel_norm_attention,
    "fsdp_tp_2d": check_fsdp_tp_2d,
}


def main(out_dir: str, ckpt: str, only: list[str]) -> None:
    import torch.distributed as dist

    dist.init_process_group(timeout=datetime.timedelta(seconds=90))
    rank, world = dist.get_rank(), dist.get_world_size()
    from tests.distributed import pipeline_checks

    checks = {**CHECKS, **pipeline_checks.CHECKS}
    checks["dcp_save_4_load_2"] = lambda r, w: check_dcp_save_4_load_2(r, w, ckpt)
    checks["dcp_load_into_tensor_parallel"] = lambda r, w: check_dcp_load_into_tensor_parallel(
        r, w, ckpt
    )
    checks["fsdp2_divide_factor_with_sum_reduction"] = check_fsdp2_divide_factor_with_sum_reduction
    # Last: it leaves that model's backward half done.
    checks["fsdp2_divide_factor_premul_sum_refused"] = check_fsdp2_divide_factor_premul_sum_refused
    results = {}
    for name, check in checks.items():
        if only and name not in only:
            continue
        try:
            results[name] = {"value": _values(check(rank, world))}
        except Exception as error:  # recorded; the test shows it
            results[name] = {"error": f"{type(error).__name__}: {error}"[:3000]}
            traceback.print_exc()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
