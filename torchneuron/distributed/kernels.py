"""The ``neuron`` kernels of the c10d collective ops: gloo on host aliases.

PyTorch's ``ProcessGroup`` runs every collective through a dispatcher op
(``c10d::allreduce_``, ``c10d::allgather_``...); its PrivateUse1 kernel would hand
the neuron tensors to the group's backend, and gloo accepts only CPU tensors. The
kernels here replace those PrivateUse1 kernels: each swaps every neuron tensor for
its host alias (``_C.host_alias``, which first waits for the ops queued on that
device, so gloo reads what they wrote) and calls the same op again, which the
dispatcher now sends to the CPU kernel and so to gloo. Results land in the device
tensors' own memory; the op returns the caller's device tensors and gloo's ``Work``.

The returned ``Work`` is gloo's own, so waiting on it raises gloo's errors (a timeout,
a lost peer). Its future's value holds the host aliases (CPU tensors over the device
tensors' memory), not the device tensors: a Work wrapped around a derived future
would not raise those errors on ``wait()`` (PyTorch's ``_create_work_from_future``
does not), and a silent wrong result is worse than a CPU-typed view. gloo implements every
``ReduceOp`` but ``PREMUL_SUM`` (which PyTorch offers on NCCL only): that one is refused
with an error that says so.

Every call is reported to ``torchneuron.profiler`` with the bytes it moves, by the
conventions of ``torchneuron.estimate.collectives``.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from torchneuron.device import _C
from torchneuron.distributed import positions
from torchneuron.target.topology import DEVICE_TYPE

# Each overridden op and the collective kind the cost model names it by.
_OPS: dict[str, str] = {
    "allreduce_": "all_reduce",
    "allreduce_coalesced_": "all_reduce",
    "allgather_": "all_gather",
    "_allgather_base_": "all_gather",
    "allgather_coalesced_": "all_gather",
    "allgather_into_tensor_coalesced_": "all_gather",
    "reduce_scatter_": "reduce_scatter",
    "_reduce_scatter_base_": "reduce_scatter",
    "reduce_scatter_tensor_coalesced_": "reduce_scatter",
    "reduce_": "reduce",
    "broadcast_": "broadcast",
    "gather_": "gather",
    "scatter_": "scatter",
    "alltoall_": "all_to_all",
    "alltoall_base_": "all_to_all",
    "send": "send_recv",
    "recv_": "send_recv",
    "recv_any_source_": "send_recv",
    "barrier": "barrier",
}

# The argument whose bytes are the collective's size (estimate.collectives' convention:
# all_gather counts its output, reduce_scatter and all_to_all their input).
_SIZE_ARGUMENT = {
    "all_reduce": "tensors",
    "reduce": "tensors",
    "broadcast": "tensors",
    "send_recv": "tensors",
}
_SIZE_BY_OP = {
    "allgather_": "output_tensors",
    "_allgather_base_": "output_tensor",
    "allgather_coalesced_": "output_lists",
    "allgather_into_tensor_coalesced_": "outputs",
    "reduce_scatter_": "input_tensors",
    "_reduce_scatter_base_": "input_tensor",
    "reduce_scatter_tensor_coalesced_": "inputs",
    "gather_": "output_tensors",
    "scatter_": "input_tensors",
    "alltoall_": "input_tensors",
    "alltoall_base_": "input",
}

_lock = threading.Lock()
_library: torch.library.Library | None = None


def install() -> None:
    """Replace the c10d ops' PrivateUse1 kernels with ours (once per process)."""
    global _library
    with _lock:
        if _library is not None:
            return
        library = torch.library.Library("c10d", "IMPL")
        with warnings.catch_warnings():
            # Replacing a kernel PyTorch registered warns once per op; it is meant here.
            warnings.simplefilter("ignore")
            for name in _OPS:
                library.impl(name, _make_kernel(name), "PrivateUse1")
        _library = library


def _make_kernel(name: str) -> Callable[..., Any]:
    op = getattr(torch.ops.c10d, name).default
    arguments = op._schema.arguments
    names = [argument.name for argument in arguments]
    kind = _OPS[name]
    size_argument = _SIZE_BY_OP.get(name) or _SIZE_ARGUMENT.get(kind)

    def kernel(*args: Any) -> Any:
        values = list(args) + [argument.default_value for argument in arguments[len(args) :]]
        start = time.perf_counter()
        _serve_cpu(values[names.index("process_group")])
        aliases: dict[int, torch.Tensor] = {}
        host = [_to_host(value, aliases) for value in values]
        if "reduce_op" in names:
            _check_reduce_op(values[names.index("reduce_op")])
        result = _to_device(op(*host), aliases)
        _report(kind, names, values, size_argument, start)
        return result

    kernel.__name__ = f"neuron_{name.strip('_')}"
    return kernel


# Names of the groups whose gloo backend also serves CPU tensors.
_serving_cpu: set[str] = set()


def _serve_cpu(boxed_group: Any) -> None:
    """Make the group's gloo backend serve CPU tensors too, where it does not yet.

    A group made by ``init_process_group()`` without a backend maps only the
    accelerator (``neuron``) to a backend, and names gloo its default backend type;
    our kernels run the collective on CPU aliases, which the group must route to the
    same gloo backend. It is registered for CPU under the GLOO type, which it is, so
    the default-backend lookups (DDP's logger) find it too.
    """
    process_group = dist.ProcessGroup.unbox(boxed_group)
    name = process_group.group_name
    if name in _serving_cpu:
        return
    cpu = torch.device("cpu")
    try:
        process_group._get_backend(cpu)
    except RuntimeError:
        backend = process_group._get_backend(torch.device(DEVICE_TYPE))
        process_group._register_backend(cpu, dist.ProcessGroup.BackendType.GLOO, backend)
    _serving_cpu.add(name)


def _to_host(value: Any, aliases: dict[int, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        if value.device.type != DEVICE_TYPE:
            return value
        alias = _C.host_alias(value, False)
        aliases[id(alias)] = value
        return alias
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(item, aliases) for item in value)
    return value


def _to_device(value: Any, aliases: dict[int, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return aliases.get(id(value), value)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(item, aliases) for item in value)
    return value


def _check_reduce_op(value: Any) -> None:
    """Refuse PREMUL_SUM, which gloo lacks and whose factor the boxed op does not expose
    (PyTorch offers it on NCCL only). gloo has every other ReduceOp, AVG included."""
    if value.op() == int(dist.ReduceOp.RedOpType.PREMUL_SUM.value):
        raise RuntimeError(
            "ReduceOp.PREMUL_SUM is not supported by the neuron process group (PyTorch "
            "offers it with NCCL only): scale the tensor by the factor, then reduce with SUM"
        )


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _tensors(item)]
    return []


# -- profiling -----------------------------------------------------------------


def _report(kind: str, names, values, size_argument: str | None, start: float) -> None:
    from torchneuron import profiler

    if not profiler.is_recording():
        return
    nbytes = 0
    if size_argument is not None:
        nbytes = sum(
            t.numel() * t.element_size() for t in _tensors(values[names.index(size_argument)])
        )
    process_group = dist.ProcessGroup.unbox(values[names.index("process_group")])
    profiler.record_collective(
        kind,
        nbytes,
        positions.group_positions(process_group),
        process_group.rank(),
        start,
        time.perf_counter() - start,
        group_name=process_group.group_name,
    )
