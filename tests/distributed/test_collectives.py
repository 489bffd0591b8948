"""Every collective of the ``neuron`` process group, on real ranks launched by torchrun.

One launch per world size (2 and 4) runs all of ``collectives_worker.CHECKS`` on
``neuron`` tensors; each test here computes what rank r of p must hold and compares.
Further launches check how ranks bind to cores and what is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.distributed.torchrun import Finished, torchrun

WORKER = Path(__file__).with_name("collectives_worker.py")
LAUNCH_TIMEOUT_S = 420


@pytest.fixture(scope="module", params=[2, 4], ids=["world2", "world4"])
def results(request, tmp_path_factory):
    world = request.param
    out = tmp_path_factory.mktemp(f"collectives{world}")
    done = torchrun(WORKER, str(out), nproc=world, timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]
    per_rank = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
    return world, per_rank


def _value(result: dict, name: str):
    found = result[name]
    assert "error" not in found, found["error"]
    return found["value"]


EXPECTED = {
    "all_reduce_sum": lambda r, p: [
        sum(q + 1.0 for q in range(p)),
        sum(2.0 * q for q in range(p)),
        -sum(q + 1.0 for q in range(p)),
    ],
    "all_reduce_avg": lambda r, p: [
        sum(q + 1.0 for q in range(p)) / p,
        sum(2.0 * q for q in range(p)) / p,
        -sum(q + 1.0 for q in range(p)) / p,
    ],
    "all_reduce_min": lambda r, p: [1.0, 0.0, -float(p)],
    "all_reduce_max": lambda r, p: [float(p), 2.0 * (p - 1), -1.0],
    "all_reduce_product": lambda r, p: [
        float(_product(q + 1 for q in range(p))),
        0.0,
        float(_product(-(q + 1) for q in range(p))),
    ],
    "all_reduce_int": lambda r, p: [sum(range(p)), sum(10 + q for q in range(p))],
    "all_reduce_async_future": lambda r, p: {
        "value": [float(sum(range(p)))] * 4,
        "completed": True,
        "future": [float(sum(range(p)))] * 4,
        "future_shares_memory": True,
    },
    "all_reduce_after_queued_ops": lambda r, p: [20.0 * sum(q + 1 for q in range(p))] * 3,
    "all_reduce_coalesced": lambda r, p: [
        [sum(q + 1.0 for q in range(p))],
        [2.0 * p, sum(range(p))],
    ],
    "broadcast": lambda r, p: [7.0, 8.0, 9.0],
    "reduce": lambda r, p: [sum(q + 1.0 for q in range(p)), float(p)] if r == 0 else None,
    "reduce_avg": lambda r, p: [sum(q + 1.0 for q in range(p)) / p, 1.0] if r == 0 else None,
    "all_gather": lambda r, p: [[float(q), 10.0 * q] for q in range(p)],
    "all_gather_into_tensor": lambda r, p: [x for q in range(p) for x in (float(q), 10.0 * q)],
    "all_gather_coalesced": lambda r, p: [[[float(q), q + 0.5], [-float(q)]] for q in range(p)],
    "all_gather_into_tensor_coalesced": lambda r, p: [
        [x for q in range(p) for x in (float(q), q + 1.0)],
        [10.0 * q for q in range(p)],
    ],
    "reduce_scatter": lambda r, p: [float(sum(q + r for q in range(p))), float(p)],
    "reduce_scatter_tensor": lambda r, p: [
        float(sum(q + 2 * r + i for q in range(p))) for i in range(2)
    ],
    "reduce_scatter_tensor_avg": lambda r, p: [
        sum(q + 2 * r + i for q in range(p)) / p for i in range(2)
    ],
    "reduce_scatter_tensor_coalesced": lambda r, p: [
        [float(sum(q + r for q in range(p)))],
        [float(p), float(p)],
    ],
    "all_to_all": lambda r, p: [[100.0 * q + r] for q in range(p)],
    "all_to_all_single_uneven": lambda r, p: [
        100.0 * q + r for q in range(p) for _ in range(r + 1)
    ],
    "gather": lambda r, p: [[float(q), -float(q)] for q in range(p)] if r == 0 else None,
    "scatter": lambda r, p: [10.0 * r, 1.0],
    "send_recv": lambda r, p: [float((r - 1) % p), 1.0],
    "isend_irecv": lambda r, p: [float((r - 1) % p), 2.0],
    "batch_isend_irecv": lambda r, p: [float((r - 1) % p), 3.0, 4.0],
    "barrier": lambda r, p: True,
    "subgroup": lambda r, p: [float(sum(q for q in range(p) if q % 2 == r % 2))],
    "functional_all_reduce": lambda r, p: [sum(q + 1.0 for q in range(p)), float(p)],
    "functional_all_gather": lambda r, p: [float(q) for q in range(p) for _ in range(2)],
    "functional_reduce_scatter": lambda r, p: [sum(q + r for q in range(p)) / p],
}


def _product(values) -> int:
    result = 1
    for v in values:
        result *= v
    return result


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_collective_gives_what_each_rank_must_hold(results, name):
    world, per_rank = results
    for rank, result in enumerate(per_rank):
        assert _value(result, name) == EXPECTED[name](rank, world), f"rank {rank} of {world}"


def test_ranks_bind_to_their_local_rank_core_and_pick_the_neuron_backend(results):
    world, per_rank = results
    for rank, result in enumerate(per_rank):
        binding = _value(result, "binding")
        assert binding["current_device"] == rank
        assert binding["default_backend_for_neuron"] == "neuron"


def test_premul_sum_is_refused_with_an_error_naming_it(results):
    _, per_rank = results
    for result in per_rank:
        assert "PREMUL_SUM is not supported by the neuron process group" in result[
            "all_reduce_premul_sum"
        ].get("error", "")


def test_device_mesh_sub_meshes_reduce_over_their_own_ranks(results):
    world, per_rank = results
    for rank, result in enumerate(per_rank):
        found = _value(result, "device_mesh")
        tp_size = world // 2
        tp_ranks = [q for q in range(world) if q // tp_size == rank // tp_size]
        dp_ranks = [q for q in range(world) if q % tp_size == rank % tp_size]
        assert found["tp"] == [float(sum(tp_ranks))]
        assert found["dp"] == [float(sum(dp_ranks))]
        assert found["device_type"] == "neuron"


def test_profiler_records_each_collective_with_its_interconnect_estimate(results):
    from torchneuron.estimate.collectives import Placement, estimate_collective

    world, per_rank = results
    for rank, result in enumerate(per_rank):
        found = _value(result, "profiled")
        expected = []
        for kind, nbytes in (("all_reduce", 4 * 256 * 1024), ("all_gather", 4 * 8 * world)):
            estimate = estimate_collective(kind, nbytes, tuple(range(world)), Placement("trn2", 2))
            expected.append(
                [kind, nbytes, list(range(world)), rank, estimate.algorithm, estimate.seconds]
            )
        assert found["collectives"] == expected
        assert any(name.startswith(f"rank {rank}") for name in found["process_names"])
        assert found["table_mentions_all_reduce"]


BINDING_SCRIPT = """
import datetime, sys
import torch, torch.distributed as dist
try:
    dist.init_process_group("neuron", timeout=datetime.timedelta(seconds=30))
except Exception as error:
    print(f"REFUSED {type(error).__name__}: {error}", flush=True)
    sys.exit(3)
t = torch.ones(1, device="neuron")
dist.all_reduce(t)
print("RAN", torch.neuron.current_device(), t.item(), flush=True)
"""


def _binding_run(tmp_path, nproc: int, env: dict) -> Finished:
    script = tmp_path / "bind.py"
    script.write_text(BINDING_SCRIPT)
    return torchrun(script, nproc=nproc, env=env, timeout=240)


def test_two_ranks_on_one_core_are_refused_naming_both(tmp_path):
    done = _binding_run(tmp_path, 2, {"NEURON_RT_VISIBLE_CORES": "2"})
    assert done.returncode != 0
    assert "ranks 0 and 1 are both on logical NeuronCore 2" in done.stdout, done.stdout[-2000:]
    assert not any(line.startswith("RAN ") for line in done.stdout.splitlines())


def test_a_local_rank_without_a_core_is_refused(tmp_path):
    done = _binding_run(tmp_path, 3, {"NEURON_RT_VISIBLE_CORES": "0-1"})
    assert done.returncode != 0
    assert "LOCAL_RANK=2 has no logical NeuronCore: this process sees 2" in done.stdout, (
        done.stdout[-2000:]
    )


TIMEOUT_SCRIPT = """
import datetime, time
import torch, torch.distributed as dist
dist.init_process_group("neuron", timeout=datetime.timedelta(seconds=5))
if dist.get_rank() == 1:
    time.sleep(120)  # never joins the collective
start = time.monotonic()
try:
    dist.all_reduce(torch.ones(4, device="neuron"))
except Exception as error:
    print(f"FAILED after {time.monotonic() - start:.1f} s: {type(error).__name__}: {error}")
    raise SystemExit(4)
"""


def test_a_collective_a_peer_never_joins_fails_at_the_timeout(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(TIMEOUT_SCRIPT)
    done = torchrun(script, nproc=2, timeout=200)
    assert done.returncode != 0
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED after")]
    assert failed, done.stdout[-2000:] + done.stderr[-2000:]
    seconds = float(failed[0].split()[2])
    assert 4.0 <= seconds < 60.0
    assert "Timed out" in failed[0]


def test_one_visible_core_per_rank_binds_device_zero_to_it(tmp_path):
    script = tmp_path / "bind.py"
    script.write_text(BINDING_SCRIPT)
    # Each rank sees one core (its own NEURON_RT_VISIBLE_CORES): device 0 everywhere,
    # different cores, so the group forms.
    wrapper = tmp_path / "wrap.py"
    wrapper.write_text(
        "import os, runpy, sys\n"
        "os.environ['NEURON_RT_VISIBLE_CORES'] = str(3 - int(os.environ['LOCAL_RANK']))\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    done = torchrun(wrapper, nproc=2, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.count("RAN 0 2.0") == 2


EXIT_IN_FLIGHT_SCRIPT = """
import torch, torch.distributed as dist
dist.init_process_group("neuron")
tensors = [torch.full((128, 128), 1.0, device="neuron") for _ in range(32)]
works = [dist.all_reduce(t, async_op=True) for t in tensors]
del tensors  # gloo's threads may now drop the last references, to the host aliases too
print("LEAVING", flush=True)
"""


def test_exiting_with_collectives_in_flight_ends_cleanly(tmp_path):
    # A storage freed on a gloo thread calls into Python for the HBM accounting: at exit
    # that call must finish before the interpreter finalizes, or the thread is unwound
    # through the deleter and the process aborts ("terminate called without an active
    # exception").
    script = tmp_path / "leave.py"
    script.write_text(EXIT_IN_FLIGHT_SCRIPT)
    done = torchrun(script, nproc=2, timeout=200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.count("LEAVING") == 2
    assert "terminate called" not in done.stderr
