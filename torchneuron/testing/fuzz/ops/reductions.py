"""Reductions and scans: NaN/inf/-0.0 semantics, empty slices, dims out of range, long half rows."""

from __future__ import annotations

from hypothesis import strategies as st

from ..cases import Case
from ..inputs import ALL_DTYPES, long_rows, shapes, tensors
from .common import add, dims

FAMILY = "reduction"


def _dim_text(dim, keepdim) -> str:
    text = "" if dim is None else f", dim={dim}"
    return text + (", keepdim=True" if keepdim else "")


def reduction(
    name: str,
    template: str,
    compare: str = "approx",
    dim_required: bool = False,
    keepdim: bool = True,
    dtypes=ALL_DTYPES,
    extra: dict | None = None,
) -> None:
    """``template`` uses ``{a}`` and ``{dim}`` (``, dim=..`` and ``, keepdim=..`` or empty)."""
    extra = extra or {}

    @st.composite
    def cases(draw):
        spec = draw(tensors(st.sampled_from(dtypes), shapes(max_dims=3)))
        dim = draw(dims(len(spec.shape), none=not dim_required))
        keep = draw(st.booleans()) if keepdim and dim is not None else False
        fields = {key: draw(strategy) for key, strategy in extra.items()}
        body = template.format(a="a", dim=_dim_text(dim, keep), **fields)
        return Case(f"lambda a: {body}", (spec,))

    add(name, FAMILY, lambda: cases(), compare)


reduction("sum", "torch.sum({a}{dim})")
reduction("nansum", "torch.nansum({a}{dim})")
reduction("prod", "torch.prod({a}{dim})", dim_required=True)
reduction("prod.all", "torch.prod({a})", keepdim=False)
reduction("mean", "torch.mean({a}{dim})")
reduction("nanmean", "torch.nanmean({a}{dim})")
reduction("amax", "torch.amax({a}{dim})", "exact")
reduction("amin", "torch.amin({a}{dim})", "exact")
reduction("max.dim", "tuple(torch.max({a}{dim}))", "exact", dim_required=True)
reduction("min.dim", "tuple(torch.min({a}{dim}))", "exact", dim_required=True)
reduction("max.all", "torch.max({a})", "exact", keepdim=False)
reduction("argmax", "torch.argmax({a}{dim})", "exact")
reduction("argmin", "torch.argmin({a}{dim})", "exact")
reduction("all", "torch.all({a}{dim})", "exact")
reduction("any", "torch.any({a}{dim})", "exact")
reduction("count_nonzero", "torch.count_nonzero({a}{dim})", "exact", keepdim=False)
_correction = {"correction": st.sampled_from([1, 0, 2])}
reduction("std", "torch.std({a}{dim}, correction={correction})", extra=_correction)
reduction("var", "torch.var({a}{dim}, correction={correction})", extra=_correction)
reduction("var_mean", "torch.var_mean({a}{dim}, correction={correction})", extra=_correction)
reduction("median.all", "torch.median({a})", "exact", keepdim=False)
reduction("nanmedian.all", "torch.nanmedian({a})", "exact", keepdim=False)
# Which index median/mode return among equal values is unspecified: values only.
reduction("median.dim", "torch.median({a}{dim}).values", "exact", dim_required=True)
reduction("mode", "torch.mode({a}{dim}).values", "exact", dim_required=True)
reduction("logsumexp", "torch.logsumexp({a}{dim})", dim_required=True)
reduction(
    "vector_norm",
    "torch.linalg.vector_norm({a}, ord={ord}{dim})",
    extra={"ord": st.sampled_from(["2", "1", "inf", "-inf", "0", "3"])},
)
reduction(
    "cumsum", "torch.cumsum({a}, dim={d})", keepdim=False, extra={"d": st.sampled_from([0, -1, 3])}
)
reduction(
    "cumprod",
    "torch.cumprod({a}, dim={d})",
    keepdim=False,
    extra={"d": st.sampled_from([0, -1, 3])},
)
reduction(
    "cummax",
    "tuple(torch.cummax({a}, dim={d}))",
    "exact",
    keepdim=False,
    extra={"d": st.sampled_from([0, -1])},
)
reduction(
    "softmax", "torch.softmax({a}, dim={d})", keepdim=False, extra={"d": st.sampled_from([0, -1])}
)

# Half and bfloat16 reductions over rows of thousands of elements: the accumulator
# must be wider than the element (PyTorch accumulates in float32).
LONG_ROWS = {
    "sum": "torch.sum(a, dim=-1)",
    "mean": "torch.mean(a, dim=-1)",
    "var": "torch.var(a, dim=-1)",
    "std": "torch.std(a, dim=-1)",
    "vector_norm": "torch.linalg.vector_norm(a, dim=-1)",
    "logsumexp": "torch.logsumexp(a, dim=-1)",
    "softmax": "torch.softmax(a, dim=-1)",
    "layer_norm": "torch.nn.functional.layer_norm(a, a.shape[-1:])",
    "instance_norm": "torch.nn.functional.instance_norm(a.unsqueeze(0))",
    "cumsum": "torch.cumsum(a, dim=-1)",
}
for _name, _body in LONG_ROWS.items():
    add(
        f"{_name}.long_rows",
        "reduction.long_rows",
        lambda body=_body: long_rows().map(lambda spec: Case(f"lambda a: {body}", (spec,))),
    )
