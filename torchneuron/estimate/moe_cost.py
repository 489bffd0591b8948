"""Estimated time of one mixture-of-experts layer on the chip: grouped GEMMs and dispatch.

What the compiled program's cost model cannot see: the emulator runs an MoE layer
padded (every expert on its bound, or every group's product for every row; see
docs/models-now.md), so the program's products are not the chip's. This model prices
the layer as the chip would run it, from its shape:

- **router**: ``tokens x d_model`` by ``d_model x experts`` on TensorE;
- **experts**: each local expert's two products (``rows x d_model`` by ``d_model x
  hidden``, then ``hidden x d_model``) on TensorE over its *real* rows, a grouped GEMM
  that skips empty capacity: ``tokens x top_k / experts`` rows per expert on average,
  times ``imbalance`` for the busiest expert (its rank finishes last); the local experts
  share the rank's logical core one after another;
- **dispatch and combine** under expert parallelism over ``expert_parallel`` ranks: each
  rank sends its routed token slots (``tokens x top_k x d_model`` elements) to the
  ranks holding their experts and receives the results back, two ``all_to_all`` of
  that many bytes per rank, priced by the collectives model (``collectives.py``) on the
  ranks' placement.

``tokens`` are one rank's tokens. The forward is the sum of the parts (the all-to-alls
wait for the router and the experts wait for the dispatch); the backward is taken as
twice the forward's products plus the same two all-to-alls, the usual rule for
matmul-bound layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchneuron.estimate.collectives import (
    CollectiveEstimate,
    Placement,
    estimate_collective,
)
from torchneuron.estimate.cost_model import EstimateError
from torchneuron.estimate.engine_cost import matmul_cost
from torchneuron.target import hardware

# dtype names of the TensorE rate table (target/hardware.py) -> bytes an element of the
# activations takes on the wire (MX formats: elements plus one E8M0 scale per 32)
_WIRE_BYTES = {
    "bfloat16": 2,
    "float16": 2,
    "tfloat32": 4,
    "float32": 4,
    "float8": 1,
    "mxfp8": 1 + 1 / 32,
    "mxfp4": 0.5 + 1 / 32,
}


@dataclass(frozen=True)
class MoELayerEstimate:
    rows_per_expert: int  # the busiest expert's real rows
    router_seconds: float
    experts_seconds: float  # the local experts' grouped GEMMs, forward
    dispatch: CollectiveEstimate
    combine: CollectiveEstimate
    forward_seconds: float
    backward_seconds: float
    flops: int  # the forward's, real rows only


def estimate_moe_layer(
    tokens: int,
    d_model: int,
    hidden: int,
    experts: int,
    top_k: int,
    *,
    expert_parallel: int = 1,
    dtype: str = "bfloat16",
    imbalance: float = 1.0,
    placement: Placement | None = None,
) -> MoELayerEstimate:
    """One MoE layer's forward and backward on each of ``expert_parallel`` ranks placed
    by ``placement`` (rank r on logical core r; default trn2, LNC=2)."""
    for name, value in (
        ("tokens", tokens),
        ("d_model", d_model),
        ("hidden", hidden),
        ("experts", experts),
        ("top_k", top_k),
        ("expert_parallel", expert_parallel),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise EstimateError(f"{name} must be a positive int, got {value!r}")
    if top_k > experts:
        raise EstimateError(f"top_k ({top_k}) cannot exceed experts ({experts})")
    if experts % expert_parallel:
        raise EstimateError(
            f"experts ({experts}) must divide evenly over expert_parallel ({expert_parallel})"
        )
    if not imbalance >= 1.0:
        raise EstimateError(
            f"imbalance is the busiest expert's load over the mean, >= 1, got {imbalance}"
        )
    placement = placement or Placement()
    chip = hardware.chip(placement.target)
    if dtype not in chip.tensor_engine.tflops_per_core or dtype not in _WIRE_BYTES:
        known = ", ".join(sorted(chip.tensor_engine.tflops_per_core))
        raise EstimateError(f"dtype {dtype!r} has no TensorE rate on {chip.name}; known: {known}")
    lnc = placement.lnc
    local = experts // expert_parallel
    # the rank's routed slots, spread over all experts; the busiest expert sets the pace
    rows = math.ceil(tokens * top_k / experts * imbalance)
    router = matmul_cost(chip, lnc, 1, tokens, d_model, experts, dtype).seconds
    up = matmul_cost(chip, lnc, local, rows, d_model, hidden, dtype)
    down = matmul_cost(chip, lnc, local, rows, hidden, d_model, dtype)
    experts_seconds = up.seconds + down.seconds
    element = _WIRE_BYTES[dtype]
    nbytes = int(math.ceil(tokens * top_k * d_model * element))
    ranks = list(range(expert_parallel))
    dispatch = estimate_collective("all_to_all", nbytes, ranks, placement)
    combine = estimate_collective("all_to_all", nbytes, ranks, placement)
    forward = router + dispatch.seconds + experts_seconds + combine.seconds
    backward = 2 * (router + experts_seconds) + dispatch.seconds + combine.seconds
    flops = 2 * tokens * d_model * experts + 2 * 2 * local * rows * d_model * hidden
    return MoELayerEstimate(
        rows, router, experts_seconds, dispatch, combine, forward, backward, flops
    )
