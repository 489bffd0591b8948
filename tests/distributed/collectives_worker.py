"""One rank of the collectives checks: run under torchrun, write what each check saw.

``python -m torch.distributed.run --nproc-per-node N collectives_worker.py OUT`` runs
every check of ``CHECKS`` on every rank, each on ``neuron`` tensors, and writes
``OUT/rank<R>.json``: check name -> {"value": ...} (what the rank saw, as lists) or
{"error": "..."}. tests/distributed/test_collectives.py computes the expected values
and compares, so a wrong result shows as a difference, not as a flag set here.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

DEVICE = "neuron"


def _values(value):
    if isinstance(value, torch.Tensor):
        assert value.device.type == DEVICE, f"result on {value.device}, not on {DEVICE}"
        return value.cpu().tolist()
    if isinstance(value, (list, tuple)):
        return [_values(v) for v in value]
    if isinstance(value, dict):
        return {k: _values(v) for k, v in value.items()}
    return value


def _t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, device=DEVICE)


def check_binding(rank, world):
    return {
        "current_device": torch.neuron.current_device(),
        "backend": dist.get_backend(),
        "default_backend_for_neuron": dist.Backend.default_device_backend_map.get("neuron"),
    }


def _all_reduce(op):
    def check(rank, world):
        t = _t([rank + 1.0, 2.0 * rank, -(rank + 1.0)])
        dist.all_reduce(t, op=op)
        return t

    return check


def check_all_reduce_int(rank, world):
    t = _t([rank, 10 + rank], torch.int64)
    dist.all_reduce(t)
    return t


def check_all_reduce_premul_sum(rank, world):
    t = _t([rank + 1.0, 1.0])
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
    return t


def check_all_reduce_async_future(rank, world):
    t = _t([float(rank)] * 4)
    work = dist.all_reduce(t, async_op=True)
    future = work.get_future()
    work.wait()
    # The future holds gloo's view of the result: a host alias over t's memory.
    alias = future.value()[0]
    return {
        "value": t,
        "completed": work.is_completed(),
        "future": alias.tolist(),
        "future_shares_memory": alias.data_ptr() == t.untyped_storage().data_ptr(),
    }


def check_all_reduce_after_queued_ops(rank, world):
    # The collective must read what the device's queued ops wrote.
    t = torch.zeros(256, device=DEVICE)
    for _ in range(20):
        t = t + (rank + 1)
    dist.all_reduce(t)
    return t[:3]


def check_broadcast(rank, world):
    t = _t([float(rank)] * 3) if rank != 1 else _t([7.0, 8.0, 9.0])
    dist.broadcast(t, src=1)
    return t


def check_reduce(rank, world):
    t = _t([rank + 1.0, 1.0])
    dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
    return t if rank == 0 else None


def check_reduce_avg(rank, world):
    t = _t([rank + 1.0, 1.0])
    dist.reduce(t, dst=0, op=dist.ReduceOp.AVG)
    return t if rank == 0 else None


def check_all_gather(rank, world):
    out = [torch.empty(2, device=DEVICE) for _ in range(world)]
    dist.all_gather(out, _t([rank, rank * 10.0]))
    return out


def check_all_gather_into_tensor(rank, world):
    out = torch.empty(world * 2, device=DEVICE)
    dist.all_gather_into_tensor(out, _t([rank, rank * 10.0]))
    return out


def check_all_gather_coalesced(rank, world):
    # one list per rank, each holding that rank's tensors
    outs = [[torch.empty(2, device=DEVICE), torch.empty(1, device=DEVICE)] for _ in range(world)]
    dist.all_gather_coalesced(outs, [_t([rank, rank + 0.5]), _t([-rank])])
    return outs


def check_all_gather_into_tensor_coalesced(rank, world):
    outs = funcol.all_gather_into_tensor_coalesced(
        [_t([rank, rank + 1.0]), _t([10.0 * rank])], dist.group.WORLD
    )
    return [funcol.wait_tensor(out) for out in outs]


def check_reduce_scatter_tensor_coalesced(rank, world):
    outs = funcol.reduce_scatter_tensor_coalesced(
        [_t([float(rank + i) for i in range(world)]), _t([1.0] * (2 * world))],
        "sum",
        [0, 0],
        dist.group.WORLD,
    )
    return [funcol.wait_tensor(out) for out in outs]


def check_all_reduce_coalesced(rank, world):
    tensors = [_t([rank + 1.0]), _t([2.0, rank])]
    dist.all_reduce_coalesced(tensors)
    return tensors


def check_reduce_scatter(rank, world):
    out = torch.empty(2, device=DEVICE)
    inputs = [_t([rank + i, 1.0]) for i in range(world)]
    dist.reduce_scatter(out, inputs)
    return out


def check_reduce_scatter_tensor(rank, world):
    out = torch.full((2,), -1.0, device=DEVICE)
    dist.reduce_scatter_tensor(out, _t([float(rank + i) for i in range(2 * world)]))
    return out


def check_reduce_scatter_tensor_avg(rank, world):
    out = torch.empty(2, device=DEVICE)
    dist.reduce_scatter_tensor(
        out, _t([float(rank + i) for i in range(2 * world)]), op=dist.ReduceOp.AVG
    )
    return out


def check_all_to_all(rank, world):
    outs = [torch.empty(1, device=DEVICE) for _ in range(world)]
    dist.all_to_all(outs, [_t([100.0 * rank + i]) for i in range(world)])
    return outs


def check_all_to_all_single_uneven(rank, world):
    # rank r sends (i + 1) elements to rank i, all of value 100 r + i
    input_splits = [i + 1 for i in range(world)]
    output_splits = [rank + 1] * world
    data = [float(100 * rank + i) for i in range(world) for _ in range(i + 1)]
    out = torch.empty(sum(output_splits), device=DEVICE)
    dist.all_to_all_single(out, _t(data), output_splits, input_splits)
    return out


def check_gather(rank, world):
    out = [torch.empty(2, device=DEVICE) for _ in range(world)] if rank == 0 else None
    dist.gather(_t([rank, -rank]), out, dst=0)
    return out


def check_scatter(rank, world):
    out = torch.empty(2, device=DEVICE)
    inputs = [_t([10.0 * i, 1.0]) for i in range(world)] if rank == 0 else None
    dist.scatter(out, inputs, src=0)
    return out


def check_send_recv(rank, world):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    got = torch.empty(2, device=DEVICE)
    if rank % 2 == 0:
        dist.send(_t([rank, 1.0]), dst=nxt)
        dist.recv(got, src=prv)
    else:
        dist.recv(got, src=prv)
        dist.send(_t([rank, 1.0]), dst=nxt)
    return got


def check_isend_irecv(rank, world):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    got = torch.empty(2, device=DEVICE)
    works = [dist.isend(_t([rank, 2.0]), dst=nxt), dist.irecv(got, src=prv)]
    for work in works:
        work.wait()
    return got


def check_batch_isend_irecv(rank, world):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    got = torch.empty(3, device=DEVICE)
    ops = [dist.P2POp(dist.isend, _t([rank, 3.0, 4.0]), nxt), dist.P2POp(dist.irecv, got, prv)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return got


def check_barrier(rank, world):
    dist.barrier()
    # dist.monitored_barrier refuses any group whose backend is not named "gloo"; the
    # group's own method runs gloo's monitored barrier.
    dist.group.WORLD.monitored_barrier(datetime.timedelta(seconds=30), wait_all_ranks=True)
    return True


def check_subgroup(rank, world):
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    odds = dist.new_group([r for r in range(world) if r % 2 == 1])
    group = evens if rank % 2 == 0 else odds
    t = _t([float(rank)])
    dist.all_reduce(t, group=group)
    return t


def check_functional_all_reduce(rank, world):
    out = funcol.all_reduce(_t([rank + 1.0, 1.0]), "sum", dist.group.WORLD)
    return funcol.wait_tensor(out)


def check_functional_all_gather(rank, world):
    out = funcol.all_gather_tensor(_t([rank, rank]), 0, dist.group.WORLD)
    return funcol.wait_tensor(out)


def check_functional_reduce_scatter(rank, world):
    out = funcol.reduce_scatter_tensor(
        _t([float(rank + i) for i in range(world)]), "avg", 0, dist.group.WORLD
    )
    return funcol.wait_tensor(out)


def check_device_mesh(rank, world):
    from torch.distributed.device_mesh import init_device_mesh

    if world % 2:
        mesh = init_device_mesh(DEVICE, (world,))
        t = _t([float(rank)])
        dist.all_reduce(t, group=mesh.get_group())
        return {"sum": t}
    mesh = init_device_mesh(DEVICE, (2, world // 2), mesh_dim_names=("dp", "tp"))
    tp, dp = mesh["tp"].get_group(), mesh["dp"].get_group()
    a, b = _t([float(rank)]), _t([float(rank)])
    dist.all_reduce(a, group=tp)
    dist.all_reduce(b, group=dp)
    return {"tp": a, "dp": b, "device_type": mesh.device_type}


def check_profiled(rank, world):
    from torchneuron import profiler

    big = torch.ones(256 * 1024, device=DEVICE)
    with profiler.profile() as prof:
        dist.all_reduce(big)
        dist.all_gather_into_tensor(
            torch.empty(world * 8, device=DEVICE), torch.ones(8, device=DEVICE)
        )
    trace = prof.chrome_trace()
    names = sorted(
        {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    )
    return {
        "collectives": [
            [c.kind, c.nbytes, list(c.ranks), c.rank, c.estimate.algorithm, c.device_seconds]
            for c in prof.collectives
        ],
        "process_names": names,
        "table_mentions_all_reduce": "all_reduce" in prof.table(),
    }


CHECKS = {
    "binding": check_binding,
    "all_reduce_sum": _all_reduce(dist.ReduceOp.SUM),
    "all_reduce_avg": _all_reduce(dist.ReduceOp.AVG),
    "all_reduce_min": _all_reduce(dist.ReduceOp.MIN),
    "all_reduce_max": _all_reduce(dist.ReduceOp.MAX),
    "all_reduce_product": _all_reduce(dist.ReduceOp.PRODUCT),
    "all_reduce_int": check_all_reduce_int,
    "all_reduce_premul_sum": check_all_reduce_premul_sum,
    "all_reduce_async_future": check_all_reduce_async_future,
    "all_reduce_after_queued_ops": check_all_reduce_after_queued_ops,
    "broadcast": check_broadcast,
    "reduce": check_reduce,
    "reduce_avg": check_reduce_avg,
    "all_gather": check_all_gather,
    "all_gather_into_tensor": check_all_gather_into_tensor,
    "all_gather_coalesced": check_all_gather_coalesced,
    "all_gather_into_tensor_coalesced": check_all_gather_into_tensor_coalesced,
    "reduce_scatter_tensor_coalesced": check_reduce_scatter_tensor_coalesced,
    "all_reduce_coalesced": check_all_reduce_coalesced,
    "reduce_scatter": check_reduce_scatter,
    "reduce_scatter_tensor": check_reduce_scatter_tensor,
    "reduce_scatter_tensor_avg": check_reduce_scatter_tensor_avg,
    "all_to_all": check_all_to_all,
    "all_to_all_single_uneven": check_all_to_all_single_uneven,
    "gather": check_gather,
    "scatter": check_scatter,
    "send_recv": check_send_recv,
    "isend_irecv": check_isend_irecv,
    "batch_isend_irecv": check_batch_isend_irecv,
    "barrier": check_barrier,
    "subgroup": check_subgroup,
    "functional_all_reduce": check_functional_all_reduce,
    "functional_all_gather": check_functional_all_gather,
    "functional_reduce_scatter": check_functional_reduce_scatter,
    "device_mesh": check_device_mesh,
    "profiled": check_profiled,
}


def main(out_dir: str) -> None:
    dist.init_process_group(timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for name, check in CHECKS.items():
        try:
            results[name] = {"value": _values(check(rank, world))}
        except Exception as error:  # recorded; the test shows it
            results[name] = {"error": f"{type(error).__name__}: {error}"[:2000]}
            traceback.print_exc()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
