"""Estimated time of a collective on the real interconnect, with the algorithm a tuned
collectives library would pick.

Ranks sit on logical cores as ``Placement`` says: rank r is global logical core r, filling
one chip's logical cores, then the instance's chips, then the next instance. A pair of ranks
talks over one *level*, the slowest link between them:

- ``intra-chip``: two logical cores of one chip (a DMA between HBM regions);
- ``neuronlink``: two chips of one server (trn2: the 4x4 NeuronLink-v3 torus; trn3: the
  NeuronSwitch-v1 fabric of the whole UltraServer);
- ``neuronlink-ultraserver``: two servers of a Trn2 UltraServer (same-position chips ringed);
- ``efa``: two instances.

Each level has a step latency (alpha, ``COLLECTIVE_STEP_LATENCY_S``) and a send bandwidth
per *link unit* (a logical core inside a chip; a chip on NeuronLink and on EFA, a chip's
share of EFA being the instance's EFA bandwidth over its chips),
shared by the group's ranks on that unit that send at the same time. Figures come from
``torchneuron.target.hardware``.

Algorithms (p ranks, N bytes; a step costs alpha + chunk / bandwidth):

- ``ring``: all_reduce moves 2(p-1)/p*N per rank in 2(p-1) steps; all_gather and
  reduce_scatter (p-1)/p*N in p-1 steps; broadcast/reduce as scatter + ring all-gather,
  2(p-1)/p*N in ceil(log2 p) + p-1 steps. The ring is ordered by rank (= by position), so one
  edge leaves each chip and each instance and the slowest level sets the pace (a flat ring
  across instances is therefore bound by one chip's share of EFA):
  time = steps * alpha + bytes / bandwidth at the slowest level crossed.
- ``tree``: all_reduce by recursive doubling (ceil(log2 p) exchanges of N, all ranks at once);
  broadcast/reduce/gather/scatter by a binomial tree (ceil(log2 p) steps); barrier by
  dissemination. Fewer steps, more bytes: the choice for small, latency-bound messages.
- ``hierarchical``: where the group is uniform over more than one level (the same number of
  ranks on each of its chips, of chips on each server, ...), all_reduce reduce-scatters from
  the innermost level outwards and all-gathers back; level L with k_L members per unit and
  m_L ranks inside each member moves 2(k_L-1)/(k_L*m_L)*N per rank in 2(k_L-1) steps
  (all_gather/reduce_scatter: half). The bytes sum to the ring's, but the slow outer levels
  carry the smallest shards in the fewest steps; the levels run one after the other.
- ``pairwise`` (all_to_all): p-1 exchanges of N/p, each over the level of its peer.
- ``direct`` (send_recv): one transfer of N over the pair's level.

``estimate_collective`` prices every algorithm that applies and keeps the fastest, which is
what the real library's tuning tables approximate.

Conventions for ``nbytes``: all_reduce/broadcast/reduce: the tensor's bytes; all_gather: the
output's total bytes; reduce_scatter: the input's total bytes; all_to_all: the total bytes
each rank sends (its own share included); gather/scatter: the gathered (scattered) total;
send_recv: the message; barrier: 0. ``bus_bandwidth`` follows the nccl-tests convention:
nbytes / seconds times 2(p-1)/p (all_reduce), (p-1)/p (all_gather, reduce_scatter,
all_to_all, gather, scatter) or 1 (broadcast, reduce, send_recv).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from torchneuron.estimate.cost_model import EstimateError
from torchneuron.target import hardware, planning

KINDS = (
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "gather",
    "scatter",
    "send_recv",
    "barrier",
)

# Levels from the innermost (fastest) outwards.
LEVELS = ("intra-chip", "neuronlink", "neuronlink-ultraserver", "efa")

# nccl-tests' bus-bandwidth factor, as a function of the group size.
_BUS_FACTOR = {
    "all_reduce": lambda p: 2 * (p - 1) / p,
    "all_gather": lambda p: (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "all_to_all": lambda p: (p - 1) / p,
    "gather": lambda p: (p - 1) / p,
    "scatter": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
    "send_recv": lambda p: 1.0,
    "barrier": lambda p: 0.0,
}


@dataclass(frozen=True)
class Placement:
    """Where ranks sit: rank r is global logical core r, filling a chip's logical cores,
    then the instance's chips, then instances. ``lnc`` defaults to the chip's default,
    ``instance`` to the target's default instance (``planning.default_instance``)."""

    target: str = "trn2"
    lnc: int | None = None
    instance: str | None = None

    def __post_init__(self) -> None:
        spec = planning.chip(self.target)
        if self.lnc is None:
            object.__setattr__(self, "lnc", spec.default_lnc)
        spec.check_lnc(self.lnc)
        if self.instance is None:
            object.__setattr__(self, "instance", planning.default_instance(self.target))
        found = planning.instance(self.instance)
        if found.target != self.target:
            raise EstimateError(
                f"instance {self.instance!r} holds {found.target} chips, not {self.target}; "
                f"pass target={found.target!r} or another instance"
            )

    @property
    def chip_spec(self) -> hardware.ChipSpec:
        return planning.chip(self.target)

    @property
    def instance_spec(self) -> hardware.InstanceSpec:
        return planning.instance(self.instance)

    @property
    def cores_per_chip(self) -> int:
        return self.chip_spec.logical_cores_per_chip(self.lnc)

    @property
    def cores_per_instance(self) -> int:
        return self.cores_per_chip * self.instance_spec.chips

    def locate(self, rank: int) -> tuple[int, int, int]:
        """(instance, chip within the instance, logical core within the chip) of ``rank``."""
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise EstimateError(f"rank must be a non-negative int, got {rank!r}")
        inst, within = divmod(rank, self.cores_per_instance)
        chip_index, core = divmod(within, self.cores_per_chip)
        return inst, chip_index, core

    def level(self, a: int, b: int) -> str:
        """The level ranks ``a`` and ``b`` talk over (their slowest common link)."""
        (ia, ca, _), (ib, cb, _) = self.locate(a), self.locate(b)
        if ia != ib:
            return "efa"
        if ca == cb:
            return "intra-chip"
        spec = self.instance_spec
        if spec.inter_server_bytes_per_s_per_chip is None:
            return "neuronlink"
        same_server = ca // spec.chips_per_server == cb // spec.chips_per_server
        return "neuronlink" if same_server else "neuronlink-ultraserver"

    def link_unit(self, rank: int, level: str) -> tuple[int, ...]:
        """The entity whose link ``rank``'s traffic at ``level`` goes through: the logical
        core itself inside a chip, its chip on NeuronLink and EFA (each chip has its share of
        the instance's EFA devices)."""
        inst, chip_index, core = self.locate(rank)
        if level == "intra-chip":
            return inst, chip_index, core
        return inst, chip_index

    def send_bandwidth(self, level: str) -> float:
        """Bytes/s one link unit sends at ``level``."""
        spec = self.instance_spec
        if level == "intra-chip":
            return self.chip_spec.intra_chip_bytes_per_logical_core(self.lnc)
        if level == "neuronlink":
            return spec.neuronlink_send_bytes_per_s
        if level == "neuronlink-ultraserver":
            return spec.inter_server_send_bytes_per_s
        return spec.efa_send_bytes_per_s_per_chip

    @staticmethod
    def step_latency(level: str) -> float:
        if level == "neuronlink-ultraserver":
            level = "neuronlink"
        return hardware.COLLECTIVE_STEP_LATENCY_S[level]


@dataclass(frozen=True)
class LevelCost:
    """What one algorithm spends at one level: bytes each rank sends there, its steps there,
    and their seconds."""

    name: str
    bytes_per_rank: float
    steps: int
    seconds: float


@dataclass(frozen=True)
class CollectiveEstimate:
    kind: str
    nbytes: int
    group_size: int
    algorithm: str
    bytes_per_rank: float  # bytes each rank sends on the wire (the root's, for rooted trees)
    seconds: float
    levels: tuple[LevelCost, ...]  # per level crossed, innermost first
    bus_bandwidth: float  # bytes/s by the nccl-tests convention (algbw * factor)


def estimate_collective(
    kind: str, nbytes: int, ranks: Sequence[int], placement: Placement | None = None
) -> CollectiveEstimate:
    """Estimated time of collective ``kind`` over ``nbytes`` (see the module docstring for
    each kind's convention) among global ``ranks`` placed by ``placement`` (default: trn2,
    LNC=2, trn2.48xlarge)."""
    if kind not in KINDS:
        raise EstimateError(f"kind: unknown collective {kind!r}; known: {', '.join(KINDS)}")
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise EstimateError(f"nbytes must be a non-negative int, got {nbytes!r}")
    if kind == "barrier" and nbytes != 0:
        raise EstimateError(f"nbytes of a barrier must be 0, got {nbytes}")
    placement = placement or Placement()
    group = sorted(ranks)
    if not group:
        raise EstimateError("ranks: a collective needs at least one rank")
    for rank in group:
        placement.locate(rank)  # validates each rank
    if len(set(group)) != len(group):
        raise EstimateError(f"ranks must be distinct, got {list(ranks)}")
    if kind == "send_recv" and len(group) > 2:
        raise EstimateError(f"ranks of a send_recv are (source, destination), got {list(ranks)}")
    p = len(group)
    if p == 1:
        return CollectiveEstimate(kind, nbytes, 1, "none", 0.0, 0.0, (), 0.0)
    candidates = [
        candidate
        for candidate in _ALGORITHMS[kind](kind, nbytes, group, placement)
        if candidate is not None
    ]
    algorithm, levels = min(candidates, key=lambda c: _seconds(c[0], c[1]))
    seconds = _seconds(algorithm, levels)
    if algorithm in ("ring", "direct"):
        bytes_per_rank = max(level.bytes_per_rank for level in levels)
    else:
        bytes_per_rank = sum(level.bytes_per_rank for level in levels)
    bus = nbytes / seconds * _BUS_FACTOR[kind](p) if seconds > 0 else 0.0
    return CollectiveEstimate(kind, nbytes, p, algorithm, bytes_per_rank, seconds, levels, bus)


def _seconds(algorithm: str, levels: tuple[LevelCost, ...]) -> float:
    # A ring's steps all run at the slowest edge's pace: each level lists the whole ring at
    # its pace, and the slowest wins. The other algorithms visit their levels in turn.
    if algorithm in ("ring", "direct"):
        return max(level.seconds for level in levels)
    return sum(level.seconds for level in levels)


def _ring_levels(group: list[int], placement: Placement) -> list[str]:
    """Levels the ring's edges cross (ordered by rank, closing back to the first)."""
    crossed = {placement.level(a, b) for a, b in zip(group, group[1:] + group[:1])}
    return [level for level in LEVELS if level in crossed]


def _ring(steps: int, bytes_per_rank: float, group: list[int], placement: Placement):
    # One ring edge leaves each link unit, so each edge gets its unit's whole bandwidth.
    levels = tuple(
        LevelCost(
            level,
            bytes_per_rank,
            steps,
            steps * placement.step_latency(level)
            + bytes_per_rank / placement.send_bandwidth(level),
        )
        for level in _ring_levels(group, placement)
    )
    return "ring", levels


def _sharing(group: list[int], placement: Placement, level: str) -> int:
    """Most ranks of the group on one link unit at ``level`` (they send at once)."""
    counts: dict[tuple[int, ...], int] = {}
    for rank in group:
        unit = placement.link_unit(rank, level)
        counts[unit] = counts.get(unit, 0) + 1
    return max(counts.values())


def _tree(
    group: list[int], placement: Placement, chunk: float, all_ranks_send: bool
) -> tuple[str, tuple[LevelCost, ...]]:
    """ceil(log2 p) steps; step s pairs group positions i and i xor 2^s and sends ``chunk``.

    Recursive doubling (``all_ranks_send``) has every rank exchanging at each step, so ranks
    on one link unit share it; a binomial tree has few senders per unit per step."""
    p = len(group)
    per_level: dict[str, list[float]] = {}
    for s in range(math.ceil(math.log2(p))):
        distance = 1 << s
        pairs = [(group[i], group[i ^ distance]) for i in range(p) if (i ^ distance) < p]
        level = max((placement.level(a, b) for a, b in pairs), key=LEVELS.index)
        share = _sharing(group, placement, level) if all_ranks_send else 1
        bandwidth = placement.send_bandwidth(level) / share
        seconds = placement.step_latency(level) + chunk / bandwidth
        entry = per_level.setdefault(level, [0.0, 0, 0.0])
        entry[0] += chunk
        entry[1] += 1
        entry[2] += seconds
    levels = tuple(LevelCost(level, *per_level[level]) for level in LEVELS if level in per_level)
    return "tree", levels


def _hierarchy(group: list[int], placement: Placement) -> list[tuple[str, int, int]] | None:
    """(level, k members per unit, m ranks per member) from the innermost level outwards,
    for levels with k > 1; None unless the group is uniform and spans two levels or more."""
    spec = placement.instance_spec
    one_server = spec.inter_server_bytes_per_s_per_chip is None

    def key(rank: int, depth: int) -> tuple[int, ...]:
        inst, chip_index, core = placement.locate(rank)
        server = 0 if one_server else chip_index // spec.chips_per_server
        return ((inst, chip_index, core), (inst, chip_index), (inst, server), (inst,), ())[depth]

    factors = []
    inner = 1
    for depth, level in enumerate(LEVELS):
        members: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
        for rank in group:
            members.setdefault(key(rank, depth + 1), set()).add(key(rank, depth))
        sizes = {len(found) for found in members.values()}
        if len(sizes) != 1:
            return None
        k = sizes.pop()
        if k > 1:
            factors.append((level, k, inner))
        inner *= k
    return factors if len(factors) >= 2 else None


def _hierarchical(
    group: list[int], placement: Placement, nbytes: int, passes: int
) -> tuple[str, tuple[LevelCost, ...]] | None:
    """``passes`` = 2 for all_reduce (reduce-scatter up, all-gather down), 1 for
    all_gather / reduce_scatter."""
    factors = _hierarchy(group, placement)
    if factors is None:
        return None
    levels = []
    for level, k, m in factors:
        steps = passes * (k - 1)
        bytes_per_rank = passes * (k - 1) * nbytes / (k * m)
        bandwidth = placement.send_bandwidth(level) / _sharing(group, placement, level)
        seconds = steps * placement.step_latency(level) + bytes_per_rank / bandwidth
        levels.append(LevelCost(level, bytes_per_rank, steps, seconds))
    return "hierarchical", tuple(levels)


def _all_reduce(kind, nbytes, group, placement):
    p = len(group)
    yield _ring(2 * (p - 1), 2 * (p - 1) * nbytes / p, group, placement)
    yield _tree(group, placement, float(nbytes), all_ranks_send=True)
    yield _hierarchical(group, placement, nbytes, passes=2)


def _all_gather(kind, nbytes, group, placement):
    p = len(group)
    yield _ring(p - 1, (p - 1) * nbytes / p, group, placement)
    yield _hierarchical(group, placement, nbytes, passes=1)


def _rooted(kind, nbytes, group, placement):
    # broadcast / reduce: a binomial tree of the whole tensor, or (large messages) scatter
    # then ring all-gather (reduce: reduce-scatter then gather), 2(p-1)/p*N from the root.
    p = len(group)
    yield _tree(group, placement, float(nbytes), all_ranks_send=False)
    steps = math.ceil(math.log2(p)) + p - 1
    yield _ring(steps, 2 * (p - 1) * nbytes / p, group, placement)


def _gather(kind, nbytes, group, placement):
    # Binomial tree: the root's link carries the other ranks' (p-1)/p*N in ceil(log2 p)
    # steps, the slowest level setting the bandwidth.
    p = len(group)
    steps = math.ceil(math.log2(p))
    bytes_per_rank = (p - 1) * nbytes / p
    levels = []
    for level in _ring_levels(group, placement):
        seconds = steps * placement.step_latency(level)
        seconds += bytes_per_rank / placement.send_bandwidth(level)
        levels.append(LevelCost(level, bytes_per_rank, steps, seconds))
    yield "tree", (max(levels, key=lambda c: c.seconds),)


def _all_to_all(kind, nbytes, group, placement):
    # Pairwise exchange: each rank sends N/p to each peer in turn; ranks on one link unit
    # send at once. The slowest rank sets the time.
    p = len(group)
    share = {level: _sharing(group, placement, level) for level in LEVELS}
    worst: tuple[LevelCost, ...] = ()
    for rank in group:
        peers: dict[str, int] = {}
        for other in group:
            if other != rank:
                level = placement.level(rank, other)
                peers[level] = peers.get(level, 0) + 1
        levels = []
        for level in LEVELS:
            if level in peers:
                sent = peers[level] * nbytes / p
                bandwidth = placement.send_bandwidth(level) / share[level]
                seconds = peers[level] * placement.step_latency(level) + sent / bandwidth
                levels.append(LevelCost(level, sent, peers[level], seconds))
        if sum(c.seconds for c in levels) > sum(c.seconds for c in worst):
            worst = tuple(levels)
    yield "pairwise", worst


def _send_recv(kind, nbytes, group, placement):
    level = placement.level(group[0], group[1])
    seconds = placement.step_latency(level) + nbytes / placement.send_bandwidth(level)
    yield "direct", (LevelCost(level, float(nbytes), 1, seconds),)


def _barrier(kind, nbytes, group, placement):
    yield _tree(group, placement, 0.0, all_ranks_send=True)


_ALGORITHMS = {
    "all_reduce": _all_reduce,
    "broadcast": _rooted,
    "reduce": _rooted,
    "all_gather": _all_gather,
    "reduce_scatter": _all_gather,
    "all_to_all": _all_to_all,
    "gather": _gather,
    "scatter": _gather,
    "send_recv": _send_recv,
    "barrier": _barrier,
}
