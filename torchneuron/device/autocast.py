"""``torch.autocast("neuron", dtype=...)``: per-op casting policy for the AutocastPrivateUse1 key.

PyTorch ships autocast kernels for CPU, CUDA and others, not for PrivateUse1;
without any kernel there, every op under ``autocast("neuron")`` would fail.
Every op falls through by default; the ops below get CUDA's policy
(``torch/csrc/autograd/autocast_mode.cpp`` lists): matrix products and
convolutions run in the autocast dtype, precision-sensitive reductions and
losses in float32.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

_AUTOCAST_KEY = torch._C.DispatchKey.AutocastPrivateUse1

LOWER_PRECISION_OPS = (
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d.input",
    "conv_transpose3d.input",
    "convolution",
    "_convolution",
    "conv_tbc",
    "prelu",
    "addmm",
    "addmv",
    "addr",
    "matmul",
    "einsum",
    "mm",
    "mv",
    "linear",
    "addbmm",
    "baddbmm",
    "bmm",
    "chain_matmul",
    "linalg_multi_dot",
    "scaled_dot_product_attention",
    "_scaled_dot_product_attention_math",
)
FLOAT32_OPS = (
    "acos",
    "asin",
    "cosh",
    "erfinv",
    "exp",
    "expm1",
    "log",
    "log10",
    "log2",
    "log1p",
    "reciprocal",
    "rsqrt",
    "sinh",
    "tan",
    "pow.Tensor_Scalar",
    "pow.Tensor_Tensor",
    "pow.Scalar",
    "softplus",
    "layer_norm",
    "native_layer_norm",
    "group_norm",
    "frobenius_norm.dim",
    "nuclear_norm",
    "cosine_similarity",
    "poisson_nll_loss",
    "cosine_embedding_loss",
    "nll_loss",
    "nll_loss2d",
    "hinge_embedding_loss",
    "kl_div",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "mse_loss",
    "margin_ranking_loss",
    "multilabel_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "multi_margin_loss",
    "binary_cross_entropy_with_logits",
    "dist",
    "pdist",
    "cdist",
    "renorm",
    "logsumexp",
    "cross_entropy_loss",
    "softmax.int",
    "log_softmax.int",
    "cumsum",
    "cumprod",
    "sum",
    "prod",
)

_install_lock = threading.Lock()
# The libraries holding the kernels; set only once every kernel is registered.
_library: list = []


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and value.device.type == "neuron" and value.dtype != dtype:
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _autocast_kernel(op: Any, policy: str) -> Callable:
    def kernel(*args, **kwargs):
        dtype = torch.get_autocast_dtype("neuron") if policy == "lower" else torch.float32
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(_AUTOCAST_KEY)):
            return op(*_cast(args, dtype), **{k: _cast(v, dtype) for k, v in kwargs.items()})

    return kernel


def _resolve(name: str) -> list:
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return []
    if overload:
        op = getattr(packet, overload, None)
        return [op] if op is not None else []
    return [getattr(packet, o) for o in packet.overloads() if "out" not in o]


def install() -> None:
    """Register the fallthrough and the casting kernels (once).

    A failure part way leaves nothing registered (the half-filled libraries are
    dropped, which removes their kernels) and the next call starts again.
    """
    with _install_lock:
        if _library:
            return
        everything = torch.library.Library("_", "IMPL")
        everything.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
        aten = torch.library.Library("aten", "IMPL")
        for names, policy in ((LOWER_PRECISION_OPS, "lower"), (FLOAT32_OPS, "float32")):
            for name in names:
                for op in _resolve(name):
                    aten.impl(op, _autocast_kernel(op, policy), "AutocastPrivateUse1")
        _library.extend([everything, aten])
