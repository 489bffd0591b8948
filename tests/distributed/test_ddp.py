"""DistributedDataParallel on ``neuron`` tensors, end to end under torchrun.

One launch of tests/distributed/ddp_worker.py runs every DDP check in it: 2 ranks as
two "nodes" on this host (two ``torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend
c10d`` joining one rendezvous), so each rank's core follows its local rank, not its
global one. The tests train the same tiny GPT-style stack in this process on the CPU on
the full batch and compare: losses, gradients and weights within float32 tolerance,
gradients identical on every rank. A second launch kills a rank while the other waits
in an ``all_reduce``: the survivor must fail with gloo's error, not hang.

Two ranks, not four: DDP's bucketed all-reduce takes the same path at any world size
(test_collectives.py checks every collective over 2 and 4 ranks), and each rank
process costs seconds of start-up. Under a single ``torchrun --nproc-per-node N``,
rank r binds core r (test_collectives.py:
test_ranks_bind_to_their_local_rank_core_and_pick_the_neuron_backend) and DDP trains
without a backend named (test_collectives.py:
test_the_ddp_example_trains_under_torchrun_without_naming_a_backend).
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
import torch

from tests.distributed import ddp_worker as worker
from tests.distributed.torchrun import environment, free_port, run_together, torchrun_command
from torchneuron import settings

WORKER = Path(worker.__file__)
LAUNCH_TIMEOUT_S = 240
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def _environment(**extra: str) -> dict[str, str]:
    """No op may fall back to the CPU in the ranks: every one runs on the rank's core."""
    return environment(**{settings.NO_FALLBACK: "1"}, **extra)


def _load_ranks(out_dir: Path, world: int, launches) -> list[dict]:
    missing = [r for r in range(world) if not (out_dir / f"rank{r}.pt").exists()]
    if missing:
        pytest.fail(
            f"ranks {missing} wrote no results:\n"
            + "\n".join(launch.output[-4000:] for launch in launches)
        )
    return [torch.load(out_dir / f"rank{r}.pt") for r in range(world)]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    """Two torchrun "nodes" on this host joining one c10d rendezvous, one rank each."""
    out_dir = tmp_path_factory.mktemp("ddp")
    endpoint = f"localhost:{free_port()}"
    launcher = (
        "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", endpoint, "--rdzv-id", "ddp",
    )  # fmt: skip
    command = torchrun_command(WORKER, "train", str(out_dir), launcher=launcher)
    launches = run_together([command, command], [_environment()] * 2, LAUNCH_TIMEOUT_S)
    return _load_ranks(out_dir, 2, launches)


# -- the single-process reference --------------------------------------------------


def _reference_training(batches, steps_per_batch: int = 1):
    """SGD on the full batches in one process on the CPU: losses, first gradients and
    final weights."""
    model = worker.make_model()
    opt = torch.optim.SGD(model.parameters(), lr=worker.LR)
    losses, first_grads = [], None
    for tokens, targets in batches:
        loss = model(tokens, targets)
        loss.backward()
        if first_grads is None:
            first_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return torch.stack(losses), first_grads, params


@pytest.fixture(scope="module")
def reference():
    return _reference_training(worker.make_batches(worker.STEPS))


def _assert_close(actual: dict, expected: dict, what: str) -> None:
    assert actual.keys() == expected.keys()
    for name in expected:
        label = f"{what} {name}"
        torch.testing.assert_close(
            actual[name], expected[name], **TOLERANCE, msg=lambda m, label=label: f"{label}: {m}"
        )


def _check(ranks: list[dict], name: str) -> list[dict]:
    results = [rank[name] for rank in ranks]
    errors = [r["error"] for r in results if "error" in r]
    assert not errors, f"{name} failed: {errors[0]}"
    return results


def _assert_identical_across_ranks(results: list[dict], key: str) -> None:
    for rank, result in enumerate(results[1:], start=1):
        for name, tensor in results[0][key].items():
            assert torch.equal(result[key][name], tensor), f"{key} {name}: rank {rank} != 0"


# -- the checks ----------------------------------------------------------------------


def test_each_rank_runs_the_neuron_backend_on_its_own_core(ranks):
    assert [r["world"] for r in ranks] == [2, 2]
    # the group was made without a backend name: neuron tensors found "neuron"
    assert {r["backend"] for r in ranks} == {"neuron:neuron"}
    # two nodes of 1 local rank each: global rank 1 is local rank 0 of node 1, core 0
    assert [(r["node"], r["device"]) for r in ranks] == [("0", 0), ("1", 0)]


def test_ddp_losses_equal_single_process_training_on_the_full_batch(ranks, reference):
    losses, _, _ = reference
    results = _check(ranks, "bucketed")
    mean_over_ranks = torch.stack([r["losses"] for r in results]).mean(0)
    torch.testing.assert_close(mean_over_ranks, losses, **TOLERANCE)
    # each rank saw only its shard: its own loss differs from the global one
    assert not torch.allclose(results[0]["losses"], losses, **TOLERANCE)


def test_ddp_gradients_are_the_full_batch_gradients_and_identical_on_every_rank(ranks, reference):
    _, grads, _ = reference
    results = _check(ranks, "bucketed")
    _assert_close(results[0]["grads"], grads, "gradient")
    _assert_identical_across_ranks(results, "grads")


def test_ddp_weights_after_training_equal_single_process_training(ranks, reference):
    _, _, params = reference
    results = _check(ranks, "bucketed")
    _assert_close(results[0]["params"], params, "weight")
    _assert_identical_across_ranks(results, "params")


def test_ddp_reduces_the_gradients_in_several_buckets(ranks):
    results = _check(ranks, "bucketed")
    assert all(r["buckets"] > 2 for r in results), [r["buckets"] for r in results]


def test_gradient_as_bucket_view_trains_the_same_and_its_gradients_view_the_buckets(
    ranks, reference
):
    losses, grads, params = reference
    results = _check(ranks, "gradient_as_bucket_view")
    torch.testing.assert_close(
        torch.stack([r["losses"] for r in results]).mean(0), losses, **TOLERANCE
    )
    _assert_close(results[0]["grads"], grads, "gradient")
    _assert_close(results[0]["params"], params, "weight")
    _assert_identical_across_ranks(results, "grads")
    for r in results:  # one storage per bucket, not one per parameter
        assert r["grad_storages"] == r["buckets"] < r["parameters"]


def test_no_sync_accumulation_equals_one_step_on_the_larger_batch(ranks):
    results = _check(ranks, "no_sync")
    world = len(results)
    first, second = worker.make_batches(2)
    # Under no_sync each rank keeps its own micro-batch gradient (half of it: the
    # losses are divided by the 2 micro-batches), not yet reduced.
    for rank, result in enumerate(results):
        model = worker.make_model()
        tokens, targets = (t.cpu() for t in worker.shard(first, rank, world))
        (model(tokens, targets) / 2).backward()
        local = {n: p.grad for n, p in model.named_parameters()}
        _assert_close(result["unsynced_grads"], local, f"rank {rank} unsynced gradient")
    # After the synchronised backward: one step on both batches together.
    both = (torch.cat([first[0], second[0]]), torch.cat([first[1], second[1]]))
    _, grads, params = _reference_training([both])
    _assert_close(results[0]["grads"], grads, "accumulated gradient")
    _assert_close(results[0]["params"], params, "weight")
    _assert_identical_across_ranks(results, "grads")


# -- a rank killed mid-collective ---------------------------------------------------


def test_a_rank_killed_mid_all_reduce_makes_the_other_fail_within_the_timeout(tmp_path):
    """Ranks started as torchrun starts them (its environment), so the test sees each
    process's own exit: the last rank is killed by SIGKILL while rank 0 waits in an
    all_reduce; rank 0 must raise gloo's error well within the group's timeout."""
    port, world = str(free_port()), 2
    command = [sys.executable, str(WORKER), "kill", str(tmp_path)]
    envs = [
        _environment(
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
            RANK=str(r),
            LOCAL_RANK=str(r),
            WORLD_SIZE=str(world),
            LOCAL_WORLD_SIZE=str(world),
        )  # fmt: skip
        for r in range(world)
    ]
    survivor, killed = run_together([command] * world, envs, LAUNCH_TIMEOUT_S)
    assert killed.returncode == -signal.SIGKILL
    assert survivor.returncode != 0, survivor.output[-3000:]
    report_file = tmp_path / "survivor0.json"
    assert report_file.exists(), survivor.output[-3000:]
    report = json.loads(report_file.read_text())
    assert "Connection closed by peer" in report["error"] or "imed out" in report["error"]
    assert report["seconds"] < worker.KILL_TIMEOUT_S + 10
    assert report["error"].splitlines()[0] in survivor.output  # the process says why
    assert survivor.seconds < LAUNCH_TIMEOUT_S / 2
