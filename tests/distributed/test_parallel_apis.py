"""FSDP2, DTensor tensor/sequence parallelism, a 2-D mesh and DCP on ``neuron`` ranks.

One ``torchrun`` launch per world size runs its checks of parallel_worker.py
(``CHECKS_AT``; world 4 first: it saves the checkpoint that world 2 loads); each rank
writes its results to a JSON file; TORCHNEURON_NO_FALLBACK=1 holds in the ranks. The
tests compute the single-process references here, on the NeuronCore, from the same
weights and inputs, and compare.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.distributed import parallel_worker as worker
from tests.distributed import pipeline_checks as pipes
from tests.distributed.torchrun import torchrun
from torchneuron import settings

WORLD_SIZES = (4, 2)  # 4 saves the checkpoint that 2 loads
# Each check runs at one world size. Four ranks where four are the point: FSDP2's
# gradient reduction over four ranks, compared bit for bit with a sum in rank order
# (over two ranks the order of a sum cannot show), the 2 x 2 mesh, and the checkpoint
# saved in quarters that world 2 loads in halves. Two ranks for the rest: tensor and
# sequence parallelism and the divide factor take the same code paths at any world
# size that divides the shapes, and each rank process costs seconds of start-up.
CHECKS_AT = {
    4: (
        "fsdp2_gpt_bf16",
        "fsdp_tp_2d",
        "pipeline_1f1b",
        "pipeline_interleaved",
        "context_parallel",
        "dcp_save_4_load_2",
    ),
    2: (
        "tp_mlp",
        "tp_attention",
        "sequence_parallel_norm_attention",
        "dcp_save_4_load_2",
        "dcp_load_into_tensor_parallel",
        "fsdp2_divide_factor_with_sum_reduction",
        "fsdp2_divide_factor_premul_sum_refused",
    ),
}
FSDP_WORLD, TP_WORLD = 4, 2
LAUNCH_TIMEOUT_S = 300
DEVICE = worker.DEVICE


def _launch(world: int, out_dir: Path, ckpt: Path) -> list[dict]:
    out_dir.mkdir()
    checks = CHECKS_AT[world]
    # No op may run on the CPU in the ranks: every one ran on the rank's NeuronCore.
    done = torchrun(
        Path(worker.__file__),
        str(out_dir),
        str(ckpt),
        *checks,
        nproc=world,
        env={settings.NO_FALLBACK: "1"},
        timeout=LAUNCH_TIMEOUT_S,
    )
    if done.returncode != 0:
        pytest.fail(f"world {world}: exit {done.returncode}\n{done.output[-6000:]}")
    return [json.loads((out_dir / f"rank{r}.json").read_text()) for r in range(world)]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    base = tmp_path_factory.mktemp("parallel")
    ckpt = base / "checkpoint"
    return {world: _launch(world, base / f"world{world}", ckpt) for world in WORLD_SIZES}


def _value(results, world, check, rank=0):
    entry = results[world][rank][check]
    assert "error" not in entry, f"rank {rank} of {world}: {entry['error']}"
    return entry["value"]


def _close(actual, expected: torch.Tensor, rtol=1e-5, atol=1e-6, what=""):
    torch.testing.assert_close(
        torch.tensor(actual, dtype=torch.float32),
        expected.detach().float().cpu(),
        rtol=rtol,
        atol=atol,
        msg=lambda m: f"{what}: {m}",
    )


# -- FSDP2 ---------------------------------------------------------------------


def _fsdp_reference(world: int):
    """Single-process training with FSDP2's arithmetic: fp32 master weights, a bf16 copy
    for forward and backward (buffers such as the mask cast as the blocks' inputs are),
    each rank's rows as a micro-batch, gradients cast to fp32, averaged over the ranks,
    SGD on the masters. Returns the per-rank losses per step and the final masters."""
    model = worker.build_gpt().to(DEVICE)
    model.mask = model.mask.to(torch.bfloat16)
    masters = {n: p.detach().clone() for n, p in model.named_parameters()}
    tokens, targets = worker.gpt_batch()
    rows = worker.GLOBAL_BATCH // world
    losses = []
    for _ in range(worker.STEPS):
        for name, p in model.named_parameters():
            p.data = masters[name].to(torch.bfloat16)
        grads = {n: torch.zeros_like(m) for n, m in masters.items()}
        step_losses = []
        for rank in range(world):
            mine = slice(rank * rows, (rank + 1) * rows)
            loss = model(tokens[mine].to(DEVICE), targets[mine].to(DEVICE))
            loss.backward()
            step_losses.append(float(loss.detach()))
            for name, p in model.named_parameters():
                grads[name] += p.grad.float()
                p.grad = None
        for name in masters:
            masters[name] -= worker.LR * (grads[name] / world)
        losses.append(step_losses)
    return losses, masters


@pytest.fixture(scope="module")
def fsdp_reference():
    return _fsdp_reference(FSDP_WORLD)


def test_fsdp2_bf16_training_losses_equal_single_process(results, fsdp_reference):
    world = FSDP_WORLD
    losses, _ = fsdp_reference
    for rank in range(world):
        value = _value(results, world, "fsdp2_gpt_bf16", rank)
        assert value["loss_dtype"] == "torch.bfloat16"
        seen = value["losses"]
        # Bit for bit: the same bf16 arithmetic, and the fp32 gradient average adds the
        # ranks' gradients in the order the reference does.
        assert seen == [step[rank] for step in losses], f"rank {rank}"
        assert seen[-1] < seen[0]  # it trains


def test_fsdp2_bf16_training_parameters_equal_single_process(results, fsdp_reference):
    world = FSDP_WORLD
    _, masters = fsdp_reference
    for rank in range(world):
        params = _value(results, world, "fsdp2_gpt_bf16", rank)["params"]
        assert set(params) == set(masters)
        for name, expected in masters.items():
            _close(params[name], expected, rtol=0, atol=0, what=f"rank {rank} {name}")


def test_fsdp2_shards_each_parameter_over_the_ranks(results):
    world = FSDP_WORLD
    for rank in range(world):
        value = _value(results, world, "fsdp2_gpt_bf16", rank)
        assert set(value["devices"].values()) == {"neuron"}
        for name, shape in value["full_shapes"].items():
            # dim 0 split as torch.chunk does: ceil(rows / world) rows per rank
            rows = shape[0]
            chunk = -(-rows // world)
            mine = max(0, min(chunk, rows - rank * chunk))
            assert value["local_numel"][name] == mine * math.prod(shape[1:]), name
        # fp32 master shards, bf16 only for compute, gradients reduced in fp32
        assert value["param_dtypes"] == ["torch.float32"]
        assert value["grad_dtypes"] == ["torch.float32"]


def test_fsdp2_frees_unsharded_parameters_after_forward(results):
    world = FSDP_WORLD
    for rank in range(world):
        value = _value(results, world, "fsdp2_gpt_bf16", rank)
        shape = [4 * worker.D, worker.D]
        assert value["during_forward_shape"] == shape  # unsharded inside the forward
        assert value["during_forward_dtype"] == "torch.bfloat16"
        assert value["during_forward_nbytes"] >= shape[0] * shape[1] * 2
        assert value["after_forward_nbytes"] == 0  # resharded: storage freed


# -- DTensor tensor / sequence parallelism ------------------------------------------


def _mlp_reference():
    model = worker.build(worker.MLP).to(DEVICE)
    x = worker.dense_input(2, 2, worker.SEQ, worker.D).to(DEVICE).requires_grad_()
    out = model(x)
    (out * worker.dense_input(3, 2, worker.SEQ, worker.D).to(DEVICE)).sum().backward()
    return model, x, out


def test_colwise_rowwise_mlp_equals_unsharded_forward_and_backward(results):
    world = TP_WORLD
    model, x, out = _mlp_reference()
    for rank in range(world):
        value = _value(results, world, "tp_mlp", rank)
        _close(value["out"], out, what="out")
        _close(value["x_grad"], x.grad, what="input grad")
        for name, p in model.named_parameters():
            _close(value["grads"][name], p.grad, what=f"{name} grad")
        assert value["local_shapes"]["up.weight"] == [4 * worker.D // world, worker.D]
        assert value["local_shapes"]["down.weight"] == [worker.D, 4 * worker.D // world]
        assert set(value["devices"].values()) == {"neuron"}


def test_colwise_qkv_rowwise_out_attention_equals_unsharded(results):
    world = TP_WORLD
    model = worker.build(worker.Attention).to(DEVICE)
    x = worker.dense_input(4, 2, worker.SEQ, worker.D).to(DEVICE).requires_grad_()
    out = model(x)
    (out * worker.dense_input(5, 2, worker.SEQ, worker.D).to(DEVICE)).sum().backward()
    for rank in range(world):
        value = _value(results, world, "tp_attention", rank)
        _close(value["out"], out, what="out")
        _close(value["x_grad"], x.grad, what="input grad")
        for name, p in model.named_parameters():
            _close(value["grads"][name], p.grad, what=f"{name} grad")


def test_sequence_parallel_norm_and_attention_equal_unsharded(results):
    world = TP_WORLD
    model = worker.build(worker.NormAttention).to(DEVICE)
    x = worker.dense_input(6, 2, worker.SEQ, worker.D).to(DEVICE).requires_grad_()
    out = model(x)
    out.backward(worker.dense_input(7, 2, worker.SEQ, worker.D).to(DEVICE))
    chunk = worker.SEQ // world
    for rank in range(world):
        value = _value(results, world, "sequence_parallel_norm_attention", rank)
        mine = slice(rank * chunk, (rank + 1) * chunk)
        _close(value["out_chunk"], out[:, mine], what="output chunk")
        _close(value["x_grad_chunk"], x.grad[:, mine], what="input grad chunk")
        for name, p in model.named_parameters():
            _close(value["grads"][name], p.grad, what=f"{name} grad")
        assert value["norm_weight_placements"] == ["R"]  # replicated; its gradient reduced


# -- 2-D mesh ----------------------------------------------------------------------


def test_fsdp_over_dp_and_tp_over_tp_step_equals_single_process(results):
    model = worker.build(worker.TinyBlock).to(DEVICE)
    x = worker.dense_input(8, worker.GLOBAL_BATCH, worker.SEQ, worker.D).to(DEVICE)
    target = worker.dense_input(9, worker.GLOBAL_BATCH, worker.SEQ, worker.D).to(DEVICE)
    half_losses = [
        F.mse_loss(model(x[h * 2 : h * 2 + 2]), target[h * 2 : h * 2 + 2]) for h in (0, 1)
    ]
    F.mse_loss(model(x), target).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= worker.LR * p.grad
        second = [
            F.mse_loss(model(x[h * 2 : h * 2 + 2]), target[h * 2 : h * 2 + 2]) for h in (0, 1)
        ]
    for rank in range(4):
        value = _value(results, 4, "fsdp_tp_2d", rank)
        dp = rank // 2
        _close(value["loss"], half_losses[dp], what=f"rank {rank} loss")
        _close(value["second_loss"], second[dp], what=f"rank {rank} loss after the step")
        for name, p in model.named_parameters():
            _close(value["params"][name], p, what=f"rank {rank} {name}")
        # sharded over dp (dim 0, strided within the tp shard for Colwise) and over tp
        assert value["placements"]["mlp.up.weight"] == ["_S(0, 2)", "S(0)"]
        assert value["placements"]["mlp.down.weight"] == ["S(0)", "S(1)"]
        assert value["local_numel"]["mlp.up.weight"] == 4 * worker.D * worker.D // 4


# -- torch.distributed.checkpoint ----------------------------------------------


def _assert_equal_state(actual, expected, path="state"):
    if isinstance(expected, dict):
        assert set(actual) == set(expected), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            _assert_equal_state(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list) and expected and isinstance(expected[0], dict):
        assert len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_equal_state(a, e, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {str(actual)[:200]} != {str(expected)[:200]}"


def test_dcp_saved_from_4_ranks_loads_into_2_ranks_with_equal_state(results):
    saved = _value(results, 4, "dcp_save_4_load_2")["saved"]
    for rank in range(1, 4):  # every saver saw the same full state
        _assert_equal_state(_value(results, 4, "dcp_save_4_load_2", rank)["saved"], saved)
    assert saved["optim"]["state"], "the saved optimizer has state (Adam moments)"
    for rank in range(2):
        value = _value(results, 2, "dcp_save_4_load_2", rank)
        _assert_equal_state(value["loaded"], saved)
        # the loading model started elsewhere, so the load changed it
        assert value["before"]["model"] != saved["model"]
        assert value["before"]["optim"]["state"] != saved["optim"]["state"]
        assert set(value["devices"].values()) == {"neuron"}


def test_dcp_loads_fsdp_shards_into_a_tensor_parallel_model(results):
    saved = _value(results, 4, "dcp_save_4_load_2")["saved"]
    for rank in range(2):
        value = _value(results, 2, "dcp_load_into_tensor_parallel", rank)
        _assert_equal_state(value["loaded"], saved)
        assert value["placements"]["mlp.up.weight"] == ["S(0)"]
        assert value["placements"]["mlp.down.weight"] == ["S(1)"]


def test_dcp_load_is_a_resharding_from_quarters_to_halves(results):
    saved = _value(results, 4, "dcp_save_4_load_2")
    loaded = _value(results, 2, "dcp_save_4_load_2")
    weight = "mlp.up.weight"
    full = 4 * worker.D * worker.D
    assert saved["local_numel"][weight] == full // 4
    assert loaded["local_numel"][weight] == full // 2


# -- gradient divide factor ------------------------------------------------------


def test_fsdp2_custom_divide_factor_with_sum_reduction(results):
    world = TP_WORLD
    model = worker.build(worker.MLP).to(DEVICE)
    for rank in range(world):
        x = worker.dense_input(12 + rank, 2, worker.SEQ, worker.D).to(DEVICE)
        model(x).square().sum().backward()
    for rank in range(world):
        grads = _value(results, world, "fsdp2_divide_factor_with_sum_reduction", rank)
        for name, p in model.named_parameters():
            _close(grads[name], p.grad / 3.0, what=f"rank {rank} {name} grad")


def test_fsdp2_divide_factor_needing_premul_sum_fails_with_a_clear_error(results):
    world = TP_WORLD
    for rank in range(world):
        raised = _value(results, world, "fsdp2_divide_factor_premul_sum_refused", rank)["raised"]
        assert raised is not None and "PREMUL_SUM" in raised and "SUM" in raised


# -- pipeline and context parallelism ----------------------------------------------


@pytest.fixture(scope="module")
def pipeline_reference():
    """PipeLM trained in one process on the whole batch (the mean of the micro-batches'
    mean losses is the batch's mean loss, and so are the gradients)."""
    model = worker.build(pipes.PipeLM).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=worker.LR)
    tokens, targets = (t.to(DEVICE) for t in pipes.pipe_batch())
    losses = []
    for _ in range(worker.STEPS):
        optimizer.zero_grad()
        loss = pipes.pipe_loss(model(tokens), targets)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses, dict(model.named_parameters())


@pytest.mark.parametrize("check", ["pipeline_1f1b", "pipeline_interleaved"])
def test_pipeline_training_equals_single_process(results, pipeline_reference, check):
    world = FSDP_WORLD
    losses, params = pipeline_reference
    last = _value(results, world, check, world - 1)  # the last stage sees the losses
    assert last["losses"] == pytest.approx(losses, rel=1e-5)
    assert losses[-1] < losses[0]
    seen = set()
    for rank in range(world):
        value = _value(results, world, check, rank)
        assert set(value["devices"].values()) == {"neuron"}
        for name, actual in value["params"].items():
            _close(actual, params[name], rtol=1e-4, atol=1e-5, what=f"{check} rank {rank} {name}")
        seen |= set(value["params"])
    assert seen == set(params)  # the stages hold every parameter once


def test_context_parallel_training_equals_single_process(results):
    world = FSDP_WORLD
    model = worker.build(pipes.ContextLM).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=worker.LR)
    tokens, targets = (t.to(DEVICE) for t in pipes.cp_batch())
    positions = torch.arange(pipes.CP_SEQ, device=DEVICE)
    losses = []
    for _ in range(worker.STEPS):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens, positions).reshape(-1, worker.VOCAB), targets.view(-1))
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    for rank in range(world):
        value = _value(results, world, "context_parallel", rank)
        assert value["losses"] == pytest.approx(losses, rel=1e-5), f"rank {rank}"
        for name, p in model.named_parameters():
            _close(value["params"][name], p, rtol=1e-4, atol=1e-5, what=f"rank {rank} {name}")
    assert losses[-1] < losses[0]
