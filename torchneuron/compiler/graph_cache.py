"""Compiled graphs on disk: a warm process skips torch-mlir, the passes and the cost model.

Two kinds: compiled graphs (``GraphCache``, below) and the front halves of dynamic
programs (``FrontHalfCache``: a graph with symbolic sizes lowered once, stored as the
dynamic NEFF ``DynamicProgram.to_neff`` writes; ``compiler/dynamic.py`` keys and loads
them, through ``DynamicProgram.from_neff``'s checks of a stranger's NEFF).

``compile_graph`` keeps each graph it compiles to a NEFF in memory (``pipeline``'s
``_MEMORY_CACHE``) and here, so the next process that traces the same graph (same code,
shapes, dtypes, weights, request, compiler) loads the NEFF instead of compiling it;
the runtime then finds the program's XLA executable in its own cache
(``runtime/executable_cache.py``)::

    <root>/graph/<key[:2]>/<key>.graph

**Entry.** ``DiskCache``'s envelope (key, sha256, size) around one JSON line, the
graph-level facts a NEFF does not hold (how many outputs the FX graph has, which are
None or constants, whether the program takes a random key), then the NEFF. The rest of
a ``CompiledGraph`` (inputs, weights, outputs, run-time checks) is read from the NEFF's
manifest. ``check_payload`` refuses a line that is not exactly those facts with sane
values, or a NEFF the reader refuses; the runtime verifies the NEFF's program when it
loads, as for any NEFF. A refused entry is a miss: compiled again, replaced, one
``RuntimeWarning``. ``stage_seconds`` of a hit is empty and ``cache_hit`` is True.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Any

from torchneuron.compiler.cache import compiler_fingerprint
from torchneuron.runtime.cache_entry import BadEntry, EntryKind, split_head, with_head
from torchneuron.runtime.disk_cache import DiskCache, Entries, default_cache

from .compilation import CompiledGraph

GRAPH_FORMAT = 1
GRAPH_ENTRY = EntryKind(b"torchneuron-graph-entry", GRAPH_FORMAT, "compiled graph")
_FACTS = ("output_count", "none_outputs", "constant_outputs", "takes_random_key")


def encode_payload(compiled: CompiledGraph) -> bytes:
    facts = {
        "output_count": compiled.output_count,
        "none_outputs": list(compiled.none_outputs),
        "constant_outputs": [[k, v] for k, v in sorted(compiled.constant_outputs.items())],
        "takes_random_key": compiled.takes_random_key,
    }
    return with_head(facts, compiled.neff)


def decode_payload(payload: bytes, name: str, target: str) -> CompiledGraph:
    """The ``CompiledGraph`` of a payload; ``BadEntry`` (or the NEFF reader's error) when
    it is not one this module wrote."""
    from torchneuron.neff import read_neff

    facts, neff_bytes = split_head(payload, set(_FACTS), "graph")
    count = facts["output_count"]
    if not _whole(count) or count > 1 << 20:
        raise BadEntry("its output count is not a count")
    nones = facts["none_outputs"]
    if not isinstance(nones, list) or not all(_whole(i) and i < count for i in nones):
        raise BadEntry("its None outputs are not output positions")
    constants = facts["constant_outputs"]
    if not isinstance(constants, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and _whole(pair[0])
        and pair[0] < count
        and isinstance(pair[1], (int, float, bool))
        for pair in constants
    ):
        raise BadEntry("its constant outputs are not (position, number) pairs")
    if not isinstance(facts["takes_random_key"], bool):
        raise BadEntry("its random-key flag is not a boolean")
    neff = read_neff(neff_bytes)
    signature = neff.manifest["signature"]
    outputs = [_spec(o) for o in signature["outputs"]]
    if len(outputs) + len(nones) + len(constants) > count:
        raise BadEntry("its NEFF has more outputs than the graph")
    return CompiledGraph(
        name=name,
        target=target,
        neff=neff_bytes,
        inputs=[_spec(i) for i in signature["inputs"]],
        weights=[_spec(w) for w in neff.manifest.get("weights", [])],
        outputs=outputs,
        output_count=count,
        none_outputs=tuple(nones),
        constant_outputs={position: value for position, value in constants},
        checks=list(neff.manifest.get("checks", [])),
        takes_random_key=facts["takes_random_key"],
        cache_hit=True,
    )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _spec(entry: dict) -> dict:
    return {"name": entry["name"], "shape": list(entry["shape"]), "dtype": entry["dtype"]}


def _check(payload: bytes) -> CompiledGraph:
    return decode_payload(payload, "graph", "trn2")


class GraphCache(DiskCache):
    """Compiled graphs (NEFF and graph facts) by ``graph_key``."""

    entries = Entries(folder="graph", suffix=".graph", kind=GRAPH_ENTRY, check=_check)

    def __init__(self, directory) -> None:
        # pipeline's _MEMORY_CACHE holds the CompiledGraph objects in memory already
        super().__init__(directory, memory_entries=0)


def graph_key(request_digest: str) -> str:
    """The disk key of a graph whose ``pipeline._cache_key`` is ``request_digest``: the
    compiler's fingerprint (its sources, its dependencies) mixed in."""
    return hashlib.sha256(f"{compiler_fingerprint()}\0{request_digest}".encode()).hexdigest()


def load(request_digest: str, name: str, target: str) -> CompiledGraph | None:
    """The graph compiled earlier (by any process) for this request, or None."""
    found = default_cache(GraphCache).get_checked(graph_key(request_digest))
    if found is None:
        return None
    payload, checked = found
    if checked is None:  # an entry from memory: not decoded by the check
        return decode_payload(payload, name, target)
    # the check decoded the entry (every NEFF check included): reading the NEFF again
    # cost ~10 ms of Python a graph, while a background load shares the GIL with the
    # caller's calls
    return dataclasses.replace(checked, name=name, target=target)


def store(request_digest: str, compiled: CompiledGraph) -> None:
    """Keep ``compiled`` (compiled to a NEFF) for the next process."""
    constants = compiled.constant_outputs.values()
    if compiled.neff is None or not all(
        type(v) in (int, bool) or (type(v) is float and math.isfinite(v)) for v in constants
    ):
        return  # nothing to keep, or a constant that JSON cannot carry exactly
    default_cache(GraphCache).put(graph_key(request_digest), encode_payload(compiled))


FRONT_HALF_FORMAT = 1
FRONT_HALF_ENTRY = EntryKind(b"torchneuron-front-half-entry", FRONT_HALF_FORMAT, "front half")


def encode_front_half(size_positions: list[int], neff: bytes) -> bytes:
    """One JSON line (the graph's placeholders that are sizes), then the dynamic NEFF."""
    return with_head({"size_positions": list(size_positions)}, neff)


def decode_front_half(payload: bytes) -> tuple[list[int], bytes]:
    """(size positions, dynamic NEFF bytes); ``BadEntry`` if the line is not them."""
    facts, neff = split_head(payload, {"size_positions"}, "front-half")
    positions = facts["size_positions"]
    if (
        not isinstance(positions, list)
        or not all(_whole(p) and p < 1 << 16 for p in positions)
        or len(set(positions)) != len(positions)
    ):
        raise BadEntry("its size positions are not distinct placeholder positions")
    return positions, neff


def _check_front_half(payload: bytes) -> None:
    from torchneuron.neff import read_neff

    _, neff = decode_front_half(payload)
    read_neff(neff)


class FrontHalfCache(DiskCache):
    """Dynamic programs' front halves (size positions and dynamic NEFF) by key."""

    entries = Entries(
        folder="dynamic", suffix=".dynamic", kind=FRONT_HALF_ENTRY, check=_check_front_half
    )

    def __init__(self, directory) -> None:
        super().__init__(directory, memory_entries=0)


AOT_FORMAT = 1
AOT_ENTRY = EntryKind(b"torchneuron-aot-entry", AOT_FORMAT, "AOTAutograd result")
# An entry is two ATen graphs with their fake tensors and PyTorch's metadata: ~0.8 MB for
# the zoo's GPT training graph; a larger file than this is refused unread.
MAX_AOT_BYTES = 256 << 20


def _check_pickle(payload: bytes) -> None:
    # The envelope (key, sha256) and the file's owner are what can be checked before
    # unpickling; PyTorch unpickles it, and a failure there is its miss.
    if not payload.startswith(b"\x80"):
        raise BadEntry("its payload is not a pickle")


AOT_ENTRIES = Entries(
    folder="aot",
    suffix=".pkl",
    kind=AOT_ENTRY,
    check=_check_pickle,
    max_bytes=MAX_AOT_BYTES,
    private=True,  # a pickle is code: only files this user owns and nobody else may write
)


class AotResultCache(DiskCache):
    """AOTAutograd's results for the backend's Dynamo graphs (``torchneuron/aot_cache.py``),
    by the backend's key of the graph."""

    entries = AOT_ENTRIES

    def __init__(self, directory) -> None:
        # A result is looked up once per Dynamo graph a process compiles; the backend keeps
        # what it made in memory already (``_COMPILED_FRAMES``): a second in-memory copy of
        # the pickle (~0.8 MB for the zoo's GPT) would only cost memory.
        super().__init__(directory, memory_entries=0)
