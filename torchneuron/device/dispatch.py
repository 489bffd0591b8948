"""Kernels for every ATen op on the neuron device (everything the native layer does not own).

One boxed fallback for the PrivateUse1 key catches every op; the ~440 ops whose
default kernel would otherwise arrive as ``empty`` + ``.out`` get a direct
kernel too. Each call is described once by ``plan.flatten`` (its device, its
compiled-cache key, its tensors and Python scalars) and takes its op's route
(``plan.Route``, decided from the schema):

- **compiled** (the default, ``compiled``): the key is looked up in an in-memory
  LRU of compiled ops; a miss traces and compiles the op. Python scalars are
  program inputs, so new values do not recompile;
- **random** (``host.run_random``): ops that draw random numbers run the CPU
  kernel with the device generator's state;
- **host** (``host.run_on_host``): ops whose output shape depends on the data
  or that return Python values run their CPU kernel on host aliases of the device
  memory. So does a call with no lowering (the CPU fallback, see ``fallback``),
  with a warning the first time.

Compiled calls run asynchronously, queued on the device's execution thread
(``streams``, ``launch``); the host routes run after the queued ops.

The other modules: ``plan`` (the op plan and the walks over a call), ``compiled``,
``shapes`` (output shapes from a fake-tensor run), ``host``, ``arrays`` (numpy
views of device tensors), ``scalars`` (which Scalar arguments are program inputs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

from torchneuron.device import stream_api, streams
from torchneuron.device.compiled import compiled_cache_info, run_compiled
from torchneuron.device.host import run_on_host, run_random
from torchneuron.device.out_shapes import run_keeping_shape
from torchneuron.device.plan import DEVICE_TYPE, OpPlan, Route, flatten, plan_for, plans_by_op
from torchneuron.device.promotion import run_promoted
from torchneuron.device.streams import op_depth

__all__ = ["compiled_cache_info", "install", "run_op"]

aten = torch.ops.aten

COMPILED = Route.COMPILED
RANDOM = Route.RANDOM

# Check mode's comparison of each compiled op the user calls with the CPU's result
# (installed by ``torchneuron.check.set_eager_check``): ``op_check(op, args, kwargs,
# run)`` runs the op by ``run()`` and returns its result. None: no check.
op_check: Callable[[torch._ops.OpOverload, tuple, dict, Callable[[], Any]], Any] | None = None


def run_op(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """Run one ATen op call whose dispatch key is PrivateUse1."""
    depth = op_depth  # the host reads an op makes end no round (``streams.rounds``)
    depth.depth += 1
    try:
        return _run_op(op, args, kwargs)
    finally:
        depth.depth -= 1


def _run_op(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    plan = plans_by_op.get(op) or plan_for(op)
    values = plan.normalize(args, kwargs)
    if plan.dtype_rule is not None:
        promoted = run_promoted(op, plan.dtype_rule, values)
        if promoted is not None:
            return promoted
    if plan.kept_out is not None:
        kept = run_keeping_shape(op, plan.names, plan.kept_out, values)
        if kept is not None:
            return kept
    if plan.host_indices is not None:
        values = indices_on_device(plan, values)
    device, key, tensors, scalars = flatten(plan, values)
    route = plan.route
    if route is COMPILED:
        if op_check is not None and op_depth.depth == 1:  # not the ops a check runs
            return op_check(
                op, args, kwargs, lambda: run_compiled(plan, values, device, key, tensors, scalars)
            )
        return run_compiled(plan, values, device, key, tensors, scalars)
    if route is RANDOM:
        return run_random(plan, values, tensors, device)
    return run_on_host(plan, values, tensors, device)


def indices_on_device(plan: OpPlan, values: list) -> list:
    """``values`` with the CPU tensors of the index list moved to the indexed tensor's device."""
    position = plan.host_indices
    indices = values[position]
    source = values[0]
    if not isinstance(source, torch.Tensor) or source.device.type != DEVICE_TYPE:
        return values
    if not any(isinstance(index, torch.Tensor) and index.device.type == "cpu" for index in indices):
        return values
    moved = list(values)
    moved[position] = [
        index.to(source.device)
        if isinstance(index, torch.Tensor) and index.device.type == "cpu"
        else index
        for index in indices
    ]
    return moved


def _boxed_fallback(op, *args, **kwargs):
    return run_op(op, args, kwargs)


def _direct_kernel(op: torch._ops.OpOverload) -> Callable:
    def kernel(*args, **kwargs):
        return run_op(op, args, kwargs)

    kernel.__name__ = f"neuron_{op.__name__}"
    return kernel


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------

_install_lock = threading.Lock()
# The libraries holding the kernels (registrations last as long as they do); set
# only once every kernel is registered.
_libraries: list[torch.library.Library] = []
# For every op given a kernel of ours that runs an op through ``run_op``: the op it
# runs ("aten::add.Tensor" -> itself; convolution_overrideable -> aten::convolution).
_kernel_ops: dict[str, str] = {}


def kernel_ops() -> dict[str, str]:
    """``{op: the op its kernel runs through run_op}`` for the ops (``aten::add.Tensor``)
    given a PrivateUse1 kernel of this module's; empty before ``install``. Kernels that
    run nothing (``record_stream``'s bookkeeping) are not listed."""
    return dict(_kernel_ops) if _libraries else {}


def install() -> None:
    """Register the fallback and the direct kernels for the PrivateUse1 key (once).

    A failure part way leaves nothing registered (the half-filled libraries are
    dropped, which removes their kernels) and the next call starts again.
    """
    with _install_lock:
        if _libraries:
            return
        global_library = torch.library.Library("_", "IMPL")
        global_library.fallback(_boxed_fallback, "PrivateUse1")
        aten_library = torch.library.Library("aten", "IMPL")
        runs: dict[str, str] = {}

        def register(op, kernel, target=None) -> None:
            """``target``: the op the kernel runs (default ``op``), or False for none."""
            aten_library.impl(op, kernel, "PrivateUse1")
            if target is not False:
                runs[op.name()] = (target or op).name()  # "aten::add.Tensor", "aten::abs"

        for name in _direct_kernel_ops():
            base, _, overload = name.partition(".")
            packet = getattr(aten, base[len("aten::") :], None)
            if packet is None:
                continue
            op = getattr(packet, overload or "default", None)
            if op is None:
                continue
            register(op, _direct_kernel(op))
        # native_batch_norm updates the running statistics without saying so in its schema;
        # _native_batch_norm_legit is the same op with the mutation declared.
        register(aten.native_batch_norm.default, _native_batch_norm_kernel)
        register(aten.record_stream.default, _record_stream_kernel, target=False)
        # Their defaults raise for every backend but CPU/CUDA: compute them like any op.
        for op, target in (
            (aten.convolution_overrideable.default, aten.convolution.default),
            (aten.convolution_backward_overrideable.default, aten.convolution_backward.default),
        ):
            register(op, _convolution_kernel(op), target)
        _kernel_ops.update(runs)
        _libraries.extend([global_library, aten_library])


# Ops compiled whole rather than through their default (CompositeExplicitAutograd)
# kernel: cummax/cummin's calls a helper that mutates its arguments and cannot be
# traced; the norms' and logsumexp's run step by step, rounding every intermediate
# to bfloat16, where the whole op's lowering computes in float32 and rounds once
# (as PyTorch's CPU and CUDA kernels do).
_WHOLE_OPS = (
    "aten::cummax",
    "aten::cummin",
    "aten::native_group_norm",
    "aten::native_layer_norm",
    "aten::_native_batch_norm_legit_no_training",
    "aten::logsumexp",
)


def _direct_kernel_ops() -> list[str]:
    """Functional ops whose default kernel would otherwise call ``empty`` + their ``.out``."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    names = list(_WHOLE_OPS)
    for name in torch._C._dispatch_get_all_op_names():
        if (
            name.startswith("aten::")
            and has(name, "CompositeExplicitAutogradNonFunctional")
            and not has(name, "PrivateUse1")
        ):
            names.append(name)
    return names


def _native_batch_norm_kernel(
    input, weight, bias, running_mean, running_var, training, momentum, eps
):
    if running_mean is None or running_var is None:
        return run_op(
            aten._native_batch_norm_legit.no_stats,
            (input, weight, bias, training, momentum, eps),
            {},
        )
    return run_op(
        aten._native_batch_norm_legit.default,
        (input, weight, bias, running_mean, running_var, training, momentum, eps),
        {},
    )


def _record_stream_kernel(tensor: torch.Tensor, stream: torch.Stream) -> None:
    """``Tensor.record_stream``: keep ``tensor`` until the work queued on ``stream`` has run."""
    queued_on = stream_api.as_stream(stream)
    streams.keep_until_run(queued_on.index, queued_on, tensor)


def _convolution_kernel(op: torch._ops.OpOverload) -> Callable:
    target = {
        "convolution_overrideable": aten.convolution.default,
        "convolution_backward_overrideable": aten.convolution_backward.default,
    }[op._schema.name.split("::")[1]]

    def kernel(*args, **kwargs):
        if target is aten.convolution_backward.default:
            # convolution_backward takes bias_sizes after the weight: one value per output
            # channel (the gradient's channel dim) when the bias gradient is wanted.
            grad_output, input, weight, *parameters = args
            output_mask = parameters[-1]
            bias_sizes = [grad_output.shape[1]] if output_mask[2] else None
            return run_op(target, (grad_output, input, weight, bias_sizes, *parameters), {})
        return run_op(target, args, kwargs)

    return kernel


def _run_without_dynamo(*functions: Callable) -> None:
    """Tell Dynamo never to trace the kernels' frames, nor any frame they call.

    A kernel runs when an op on neuron tensors executes eagerly, which under
    torch.compile includes the ops of a graph break; Dynamo would otherwise try to
    compile the kernel's own Python (and fail on its numpy buffers). The strategy is
    set on the code objects, so it costs nothing per call and needs no Dynamo import.
    """
    from torch._C._dynamo.eval_frame import (
        _FrameAction,
        _FrameExecStrategy,
        set_code_exec_strategy,
    )

    skip = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)
    for function in functions:
        set_code_exec_strategy(function.__code__, skip)


_run_without_dynamo(
    run_op,
    _boxed_fallback,
    _direct_kernel(aten.add.Tensor),  # every direct kernel shares this code object
    _native_batch_norm_kernel,
    _convolution_kernel(aten.convolution_overrideable.default),
)
