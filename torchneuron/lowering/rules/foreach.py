"""``_foreach_*``: an op over lists of tensors as the same op on each tensor.

The optimizers' multi-tensor updates (``torch.optim.SGD``/``Adam`` with
``foreach=True``, the default for a ``neuron`` parameter) reach a compiled graph as
``_foreach_add.List``, ``_foreach_addcmul.Scalar``, ``_foreach_sqrt.default``, ...
(functionalized: the in-place forms become these and copies). Each is the per-tensor op
applied index by index: a ``Tensor[]`` or ``Scalar[]`` argument contributes its
``i``-th element, a single ``Tensor`` or ``Scalar`` is shared by every index, and the
other arguments pass as they are. XLA fuses the resulting elementwise ops as it would
the hand-written loop. Named exceptions: ``_foreach_norm`` is ``linalg_vector_norm``,
``_foreach_zero`` is ``zeros_like``, ``_foreach_copy`` is ``copy``; an overload whose
first argument is not the list (``_foreach_pow.ScalarAndTensor``) is the op with the
scalar first.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten

# the per-tensor op of a foreach name that is not the name without its prefix
_RENAMED = {"norm": "linalg_vector_norm", "zero": "zeros_like"}


def _per_tensor(base: str, overload: torch._ops.OpOverload):
    packet = getattr(aten, _RENAMED.get(base, base))
    arguments = overload._schema.arguments
    names = [argument.name for argument in arguments]
    lists = {
        a.name for a in arguments if str(a.type) in ("List[Tensor]", "List[number]", "List[Scalar]")
    }
    keywords = {a.name for a in arguments if a.kwarg_only}
    # addcmul/addcdiv's per-index values given as one 1-d tensor
    tensor_values = base in ("addcmul", "addcdiv") and overload._overloadname == "Tensor"

    def rule(*args, **kwargs):
        bound = dict(zip(names, args))
        bound.update(kwargs)
        length = len(bound[next(n for n in names if n in lists)])
        results = []
        for index in range(length):
            call, extra = [], {}
            for name in names:
                if name not in bound or (base == "copy" and name == "non_blocking"):
                    continue
                value = bound[name][index] if name in lists else bound[name]
                if name in keywords or (base in _RENAMED and name != "self"):
                    extra[name] = value
                else:
                    call.append(value)
            if tensor_values:
                self, first, second, scalars = call
                product = first * second if base == "addcmul" else first / second
                results.append(self + scalars[index].to(self.dtype) * product)
                continue
            if base in ("addcmul", "addcdiv") and len(call) == 4:
                extra["value"] = call.pop()  # keyword-only in the per-tensor op
            if base == "norm" and extra.get("ord") is None:
                extra["ord"] = 2
            results.append(packet(*call, **extra))
        return results

    return rule


def _register() -> None:
    seen = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::_foreach_"):
            continue
        base = schema.name.removeprefix("aten::_foreach_")
        if base.endswith("_") or schema.overload_name.endswith("out"):
            continue  # in-place and out= forms: functionalization leaves neither
        if base not in _RENAMED and not hasattr(torch.ops.aten, base):
            continue
        packet = getattr(aten, f"_foreach_{base}")
        overload = getattr(packet, schema.overload_name or "default")
        if overload in seen:
            continue
        seen.add(overload)
        lowering_rule(overload)(_per_tensor(base, overload))


_register()
