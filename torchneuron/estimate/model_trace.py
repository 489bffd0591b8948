"""One training step of the user's model, run on fake tensors and costed op by op.

``trace_step`` builds the model under a ``FakeTensorMode`` (no weights, no memory), runs
its forward, loss and backward at one rank's shapes, and records every ATen op that
runs, with its real shapes and dtypes. Each op is costed by the cost model's own
formulas (``engine_cost``): matmuls, attention and convolutions on TensorE
(``matmul_cost``: tiling, passes per dtype, instruction overhead), everything else as
the HBM traffic of its operands and results or its engine's streaming time, whichever is
longer. Views cost nothing. Attention runs as a flash kernel (the s x s scores never
reach HBM; a causal mask skips half the tiles; a causal LM's mask is taken as causal,
so a sliding window is priced as the whole causal triangle).

Ops are attributed to the model's pieces: "embed" (everything before the first layer
of its layer list), "block<i>" (layer i) and "head" (after the last layer: final norm,
LM head, loss), in the forward and in the backward (module hooks mark the boundaries).
Tensors autograd saves for the backward are summed per piece (parameters and views of
them excluded, each storage once): the activations a step holds at its peak.

Identical layers are traced once: a configuration's model is cut to the layers needed
to see each distinct layer once, and the other layers reuse their twin's figures.

A mixture-of-experts block (``gate`` router, ``experts`` list, ``top_k``) routes by data,
which fake tensors cannot follow. It is traced with balanced routing (every expert gets
``tokens x top_k / experts`` rows), the expectation a load-balancing loss aims for.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter, deque
from dataclasses import dataclass, field

from torchneuron.estimate.engine_cost import hbm_bytes_per_second, matmul_cost, streaming_seconds
from torchneuron.estimate.plan_types import PlanError
from torchneuron.target.engines import SCALAR_ENGINE, VECTOR_ENGINE

FREE_OPS = {
    "_unsafe_view",
    "_reshape_alias",
    "detach",
    "lift_fresh",
    "alias",
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "_local_scalar_dense",
}
# Element-wise ops fuse with the ones just before them (their inputs stay in SBUF): the
# compiler fuses chains such as RMSNorm's upcast, square, mean, rsqrt and scales. An
# assumption: chains longer than this window are split.
FUSION_WINDOW = 4
ATTENTION_OPS = {
    "_scaled_dot_product_flash_attention_for_cpu": False,
    "_scaled_dot_product_flash_attention": False,
    "_scaled_dot_product_efficient_attention": False,
    "_scaled_dot_product_flash_attention_for_cpu_backward": True,
    "_scaled_dot_product_flash_attention_backward": True,
    "_scaled_dot_product_efficient_attention_backward": True,
}


@dataclass
class PieceCost:
    """What one piece of the model costs one rank per step."""

    forward_s: float = 0.0
    backward_s: float = 0.0
    flops: int = 0  # matmul FLOPs, forward and backward
    saved_bytes: int = 0  # activations autograd holds for the backward
    input_bytes: int = 0  # the piece's input activation (what checkpointing keeps)
    ops: Counter = field(default_factory=Counter)


@dataclass
class StepTrace:
    """Per-piece costs of one rank's step: "embed", "block<i>" (every real layer), "head"."""

    pieces: dict[str, PieceCost]
    layers: int  # layers of the real model
    traced_layers: int
    parameters: list[tuple[str, int, str]]  # (name, elements one rank holds, piece)
    hidden: int  # width of the activations between layers
    tokens: int  # tokens per rank per micro-batch
    kv_width: int = 0  # keys' heads x head size per token on one rank (0: no attention)


def trace_step(
    source,
    chip,
    lnc: int,
    *,
    batch: int,
    seq: int,
    precision: str,
    tp: int = 1,
    ep: int = 1,
    cp: int = 1,
    matmul_dtype: str | None = None,
    sequence_parallel: bool = False,
) -> StepTrace:
    """Trace and cost one forward + backward of ``batch`` sequences of ``seq // cp`` tokens
    on one rank (its TP shard of the weights, its ``1/ep`` of the experts)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[precision]
    with torch.device("meta"), _default_dtype(dtype), _quiet():
        whole = source.build(tp=tp) if source.kind != "pt2" else None
    layer_list_name, signatures = _layer_signatures(whole) if whole is not None else ("", [])
    needed = _layers_to_trace(signatures)
    costing = _OpCosts(chip, lnc, cp, matmul_dtype)
    # A causal LM of transformers passes its causal mask as a tensor on fake tensors; the
    # mask is causal, and a flash kernel skips its masked tiles.
    costing.masks_are_causal = source.kind == "hf" and source.architecture.endswith("ForCausalLM")
    hidden = (source.config or {}).get("hidden_size")
    if sequence_parallel and tp > 1 and isinstance(hidden, int):
        costing.sequence_shards = tp
        costing.stream_elements = batch * (seq // cp) * hidden
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    example = None
    if source.kind == "pt2" and (tp > 1 or ep > 1 or cp > 1):
        raise PlanError(
            f"{source.path}: --tp and --ep (and --cp) are not planned for a .pt2 program: it "
            "runs at the shapes it was exported with"
        )
    if source.kind == "pt2":  # its weights are in the file: loaded as they are, then faked
        with _quiet():
            program = torch.export.load(str(source.path))
        model, example = program.module(), program.example_inputs
    with mode, _default_dtype(dtype), _quiet():
        cut = needed if source.kind == "hf" and needed < len(signatures) else None
        if source.kind != "pt2":
            model = source.build(tp=tp, layers=cut)
        layers = _module(model, layer_list_name) if layer_list_name else []
        recorder = _Recorder(costing, model, layers)
        with _balanced_experts(model, ep), recorder:
            loss = _forward_loss(source, model, batch, seq // cp, mode, example)
            recorder.backward_begins()
            loss.backward()
    pieces = recorder.pieces
    traced = len(layers)
    full: dict[str, PieceCost] = {"embed": pieces["embed"]}
    for i, signature in enumerate(signatures):
        twin = i if i < traced else signatures.index(signature)
        full[f"block{i}"] = pieces[f"block{twin}"]
    full["head"] = pieces["head"]
    parameters = _rank_parameters(whole if whole is not None else model, layer_list_name, ep)
    hidden = recorder.hidden or 0
    tokens = batch * (seq // cp)
    return StepTrace(full, len(signatures), traced, parameters, hidden, tokens, costing.kv_width)


# -- building and running the model ------------------------------------------------------


@contextlib.contextmanager
def _default_dtype(dtype):
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


@contextlib.contextmanager
def _quiet():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _module(model, dotted: str):
    for part in dotted.split("."):
        model = getattr(model, part)
    return model


def _layer_signatures(model) -> tuple[str, list[tuple]]:
    """The model's layer list (the ``ModuleList`` holding most parameters) and a structural
    signature per layer (equal signatures cost the same)."""
    import torch

    best, best_size = "", 0
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 1:
            size = sum(p.numel() for p in module.parameters())
            if size > best_size and not name.endswith("experts"):
                best, best_size = name, size
    if not best:
        return "", []
    signatures = []
    for layer in _module(model, best):
        params = tuple((n, tuple(p.shape), p.dtype) for n, p in layer.named_parameters())
        kinds = tuple(type(m).__name__ for m in layer.modules())
        signatures.append((kinds, params))
    return best, signatures


def _layers_to_trace(signatures: list) -> int:
    """Layers from the start that include every distinct signature once."""
    firsts = {}
    for i, signature in enumerate(signatures):
        firsts.setdefault(signature, i)
    return max(firsts.values(), default=-1) + 1


def _forward_loss(source, model, batch: int, seq: int, mode, example):
    """The step's loss: a causal LM's own (labels = inputs), or cross-entropy on the
    logits a factory's model returns for token ids; a .pt2 program on its example inputs,
    the mean of its first output."""
    import torch

    if source.kind == "pt2":
        if example is None:
            raise PlanError(f"{source.path}: the program has no example inputs to plan with")
        args = [mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in example[0]]
        out = model(*args)
        first = out[0] if isinstance(out, (tuple, list)) else out
        return first.float().mean()
    ids = torch.zeros(batch, seq, dtype=torch.long)
    if source.kind == "hf":
        out = model(input_ids=ids, labels=ids, use_cache=False)
        return out.loss
    out = model(ids)
    logits = getattr(out, "logits", out)
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[:2] != ids.shape:
        raise PlanError(
            f"--model {source.text}: a factory's model takes token ids (batch, seq) and "
            f"returns logits (batch, seq, vocab); it returned {type(out).__name__} "
            f"{tuple(getattr(logits, 'shape', ()))}"
        )
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), ids.flatten())


def _rank_parameters(model, layer_list_name: str, ep: int) -> list[tuple[str, int, str]]:
    """(name, elements one rank holds, piece): expert weights divided over ``ep`` ranks;
    parameters before the layer list are "embed", after it "head"."""
    rows, seen_layers = [], False
    prefix = layer_list_name + "." if layer_list_name else None
    for name, p in model.named_parameters():
        if prefix and name.startswith(prefix):
            piece = "block" + name[len(prefix) :].split(".", 1)[0]
            seen_layers = True
        else:
            piece = "head" if seen_layers or not prefix else "embed"
        numel = p.numel()
        if ep > 1 and ".experts." in name:
            numel //= ep
        rows.append((name, numel, piece))
    return rows


@contextlib.contextmanager
def _balanced_experts(model, ep: int):
    """Route every MoE block of ``model`` evenly while the step is traced."""
    import torch

    patched = []
    for module in model.modules():
        experts = getattr(module, "experts", None)
        gate = getattr(module, "gate", None)
        top_k = getattr(module, "top_k", None)
        if isinstance(experts, torch.nn.ModuleList) and isinstance(gate, torch.nn.Linear):
            if not isinstance(top_k, int) or len(experts) % ep:
                raise PlanError(
                    f"{type(module).__name__}: --ep {ep} must divide its {len(experts)} "
                    "experts, and the block must name its top_k"
                )
            patched.append(module)
            module.forward = _balanced_forward.__get__(module)
            module._plan_ep = ep
    try:
        yield
    finally:
        for module in patched:
            del module.forward
            del module._plan_ep


def _balanced_forward(self, hidden_states):
    import torch

    shape = hidden_states.shape
    x = hidden_states.reshape(-1, shape[-1])
    tokens, experts, ep = x.shape[0], len(self.experts), self._plan_ep
    logits = self.gate(x)
    weights, chosen = torch.topk(torch.softmax(logits.float(), dim=-1), self.top_k, dim=-1)
    weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
    rows = math.ceil(tokens * self.top_k * ep / experts)
    local = experts // ep
    index = torch.zeros(rows * local, dtype=torch.long, device=x.device)
    dispatched = x.index_select(0, index)
    outputs = [self.experts[e](dispatched[e * rows : (e + 1) * rows]) for e in range(local)]
    combined = torch.cat(outputs) * weights.reshape(-1, 1)[: rows * local]
    out = torch.zeros_like(x).index_add(0, index, combined)
    shared = getattr(self, "shared_expert", None)
    if shared is not None:
        shared_out = shared(x)
        shared_gate = getattr(self, "shared_expert_gate", None)
        if shared_gate is not None:
            shared_out = torch.sigmoid(shared_gate(x)) * shared_out
        out = out + shared_out
    out = out.reshape(shape)
    return (out, logits) if type(self).__name__.startswith(("Mixtral", "Qwen2Moe")) else out


# -- recording and costing ops -------------------------------------------------------------


class _Recorder:
    """A dispatch mode that costs every op into the piece running it."""

    def __init__(self, costing, model, layers):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        self.costing = costing
        self.pieces: dict[str, PieceCost] = {"embed": PieceCost(), "head": PieceCost()}
        for i in range(len(layers)):
            self.pieces[f"block{i}"] = PieceCost()
        self.current = "embed"
        self.backward = False
        self.hidden = None
        self.params = {p.untyped_storage()._cdata for p in model.parameters()}
        self.saved: set[int] = set()
        self.handles = []
        last = len(layers) - 1
        recorder = self

        def enter(i):
            def hook(module, args, kwargs):
                recorder.current = f"block{i}"
                first = args[0] if args else next(iter(kwargs.values()), None)
                if isinstance(first, torch.Tensor):
                    recorder.pieces[f"block{i}"].input_bytes = recorder._sharded(
                        first, _nbytes(first)
                    )
                    recorder.hidden = first.shape[-1]

            return hook

        def leave(i):
            return lambda module, args, kwargs, out: setattr(
                recorder, "current", "head" if i == last else f"block{i}"
            )

        def back_enter(i):
            return lambda module, grad: setattr(recorder, "current", f"block{i}")

        def back_leave(i):
            return lambda module, gi, go: setattr(
                recorder, "current", "embed" if i == 0 else f"block{i}"
            )

        for i, layer in enumerate(layers):
            self.handles += [
                layer.register_forward_pre_hook(enter(i), with_kwargs=True),
                layer.register_forward_hook(leave(i), with_kwargs=True),
                layer.register_full_backward_pre_hook(back_enter(i)),
                layer.register_full_backward_hook(back_leave(i)),
            ]

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                recorder.record(func, args, kwargs or {}, out)
                return out

        self.mode = Mode()
        self.saved_hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)

    def __enter__(self):
        self.saved_hooks.__enter__()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        self.saved_hooks.__exit__(*exc)
        for handle in self.handles:
            handle.remove()

    def _sharded(self, tensor, nbytes: int) -> int:
        """Bytes one rank holds: a residual-stream tensor is split over the TP ranks under
        sequence parallelism."""
        costing = self.costing
        if costing.sequence_shards > 1 and tensor.numel() == costing.stream_elements:
            return nbytes // costing.sequence_shards
        return nbytes

    def backward_begins(self) -> None:
        self.backward = True

    def pack(self, tensor):
        storage = tensor.untyped_storage()
        key = storage._cdata
        if not self.backward and key not in self.params and key not in self.saved:
            self.saved.add(key)
            self.pieces[self.current].saved_bytes += self._sharded(tensor, storage.nbytes())
        return tensor

    def record(self, func, args, kwargs, out) -> None:
        name = getattr(func, "_opname", None)
        if name is None or func.namespace != "aten":
            return
        seconds, flops = self.costing.cost(func, name, args, kwargs, out)
        piece = self.pieces[self.current]
        if self.backward:
            piece.backward_s += seconds
        else:
            piece.forward_s += seconds
        piece.flops += flops
        piece.ops[name] += 1


def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _nbytes(tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _dtype_name(tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


class _OpCosts:
    """Seconds and matmul FLOPs of one op on one logical core."""

    def __init__(self, chip, lnc: int, cp: int, linear_dtype: str | None = None):
        self.chip, self.lnc, self.cp = chip, lnc, cp
        self.linear_dtype = linear_dtype  # fp8 / MX linear layers
        self.hbm = hbm_bytes_per_second(chip, lnc)
        self.kv_width = 0
        self.masks_are_causal = False
        self.onchip: deque = deque(maxlen=FUSION_WINDOW)
        # Sequence parallelism: element-wise work on the residual stream (``tokens x
        # hidden`` elements) is split over the TP ranks.
        self.sequence_shards = 1
        self.stream_elements = -1

    def matmul(self, batch, m, k, n, a, b, dtype=None) -> tuple[float, int]:
        itemsizes = (a.element_size(), b.element_size(), 4)
        dtype = dtype or _dtype_name(a)
        cost = matmul_cost(self.chip, self.lnc, batch, m, k, n, dtype, itemsizes)
        return cost.seconds, cost.flops

    def cost(self, func, name, args, kwargs, out) -> tuple[float, int]:
        if name in FREE_OPS or _is_view(func):
            return 0.0, 0
        if name in ("mm", "addmm", "bmm", "baddbmm"):
            a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
            batch = a.shape[0] if a.dim() == 3 else 1
            m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
            seconds, flops = self.matmul(batch, m, k, n, a, b, self.linear_dtype)
            return max(seconds, self.traffic(args, out)), flops
        if name in ATTENTION_OPS:
            return self.attention(func, name, args, kwargs)
        if name in ("convolution", "convolution_backward"):
            return self.convolution(name, args, out)
        seconds = self.traffic(args, out, fused=True)
        # The tensors themselves are kept (not their storages' addresses, which a freed
        # tensor's successor may reuse).
        self.onchip.extend(_tensors(out))
        elements = sum(t.numel() for t in _tensors(out))
        if elements:
            engine = (
                SCALAR_ENGINE
                if name in ("exp", "silu", "gelu", "tanh", "sigmoid")
                else VECTOR_ENGINE
            )
            dtype = _dtype_name(next(_tensors(out)))
            seconds = max(seconds, streaming_seconds(self.chip, self.lnc, engine, elements, dtype))
            if self.sequence_shards > 1 and elements == self.stream_elements:
                seconds /= self.sequence_shards  # the residual stream, split over TP ranks
        return seconds, 0

    def traffic(self, args, out, fused: bool = False) -> float:
        """HBM bytes read and written; ``fused``: inputs an element-wise op made within the
        last ``FUSION_WINDOW`` ops are still on chip (the compiler fuses such chains)."""
        made = {t.untyped_storage()._cdata for t in self.onchip} if fused else set()
        reads = [t for t in _tensors(args) if t.untyped_storage()._cdata not in made]
        moved = sum(_nbytes(t) for t in reads) + sum(_nbytes(t) for t in _tensors(out))
        return moved / self.hbm

    def attention(self, func, name, args, kwargs) -> tuple[float, int]:
        """A flash-attention kernel: QK^T and PV (the backward: recomputed QK^T, dV, dP,
        dQ, dK), the scores' exponentials on ScalarE, reading q, k, v once; under context
        parallelism every local query sees all ``cp`` shards of the keys."""
        backward = ATTENTION_OPS[name]
        named = _named(func, args, kwargs)
        q, k, v = named["query"], named["key"], named["value"]
        causal = bool(named.get("is_causal", False))
        if named.get("attn_mask") is not None and self.masks_are_causal:
            causal = True
        b, h, sq, d = q.shape
        self.kv_width = k.shape[1] * k.shape[3]
        sk = k.shape[-2] * self.cp
        fraction = 0.5 if causal else 1.0
        products = 5 if backward else 2
        seconds, flops = self.matmul(b * h, sq, d, sk, q, k)
        seconds *= products * fraction
        flops = int(flops * products * fraction)
        scores = int(b * h * sq * sk * fraction)
        seconds += streaming_seconds(self.chip, self.lnc, SCALAR_ENGINE, scores, "float32")
        moved = (_nbytes(q) + _nbytes(k) + _nbytes(v)) * (3 if backward else 2)
        return seconds + moved / self.hbm, flops

    def convolution(self, name, args, out) -> tuple[float, int]:
        """A convolution as the matmul of its im2col form (forward), or its two
        gradients' matmuls (backward)."""
        if name == "convolution":
            x, w, output = args[0], args[1], out
            groups = args[8]
        else:
            x, w, output = args[1], args[2], args[0]
            groups = args[9]
        rows = output.shape[0] * math.prod(output.shape[2:])
        k = math.prod(w.shape[1:])
        n = w.shape[0]
        seconds, flops = self.matmul(groups, rows, k, n // groups, x, w)
        if name == "convolution_backward":
            seconds, flops = 2 * seconds, 2 * flops
        return seconds + self.traffic(args, out), flops


def _named(func, args, kwargs) -> dict:
    """The op's arguments by their schema names."""
    named = dict(kwargs)
    for argument, value in zip(func._schema.arguments, args):
        named[argument.name] = value
    return named


def _is_view(func) -> bool:
    schema = func._schema
    return bool(schema.returns) and all(
        r.alias_info is not None and not r.alias_info.is_write for r in schema.returns
    )
