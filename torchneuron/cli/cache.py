"""``neuronc cache info|clear|prune``: see and bound the disk cache.

The cache folder (``TORCHNEURON_CACHE_DIR``, default ``~/.cache/torchneuron``) holds
five kinds of entries: eager ops' NEFFs (``neff/``), compiled graphs (``graph/``: a
``torch.compile`` graph's or a dynamic program specialization's NEFF and facts), the
front halves of dynamic programs (``dynamic/``), the XLA executables compiled from
their programs (``xla/``: what a new process loads instead of compiling) and
AOTAutograd's results for ``torch.compile`` graphs (``aot/``: what a new process
loads instead of tracing the forward and backward again). ``info`` prints each kind's entries and bytes;
``clear`` deletes every entry; ``prune --max-size 2G`` deletes the least recently used
entries, all kinds together, until the folder holds at most that much.
"""

from __future__ import annotations

import json
import re

from .usage import UsageError

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"500M"``, ``"2G"``, ``"1.5GiB"``, ``"4096"`` (bytes) -> bytes."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise UsageError(
            f"--max-size {text!r} is not a size; use bytes or a number with K, M, G or T "
            "(e.g. 500M, 2G)"
        )
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def add_cache_arguments(command) -> None:
    """The ``neuronc cache`` actions on ``command`` (an argparse subparser)."""
    actions = command.add_subparsers(dest="cache_action", metavar="{info,clear,prune}")
    actions.required = True
    info = actions.add_parser("info", help="the cache folder, its entries and their size")
    info.add_argument("--json", action="store_true", help="print JSON for scripts")
    actions.add_parser(
        "clear",
        help="delete every entry (NEFFs, graphs, front halves, executables, AOTAutograd results)",
    )
    prune = actions.add_parser(
        "prune", help="delete the least recently used entries until the folder fits a size"
    )
    prune.add_argument(
        "--max-size", required=True, type=parse_size, help="e.g. 500M, 2G (bytes without a unit)"
    )


def _caches() -> list:
    from torchneuron.compiler.cache import NeffCache
    from torchneuron.compiler.graph_cache import AotResultCache, FrontHalfCache, GraphCache
    from torchneuron.runtime.disk_cache import default_cache_dir
    from torchneuron.runtime.executable_cache import ExecutableCache

    root = default_cache_dir()
    return [
        NeffCache(root),
        GraphCache(root),
        FrontHalfCache(root),
        ExecutableCache(root),
        AotResultCache(root),
    ]


def cache_command(args) -> int:
    from torchneuron.runtime.disk_cache import default_cache_dir, disk_cache_enabled
    from torchneuron.target.topology import format_bytes

    root = default_cache_dir()
    caches = _caches()
    if args.cache_action == "info":
        kinds = {}
        for cache in caches:
            count, size = cache.disk_usage()
            kinds[cache.entries.folder] = {"entries": count, "bytes": size}
        total = sum(kind["bytes"] for kind in kinds.values())
        if args.json:
            report = {"folder": str(root), "enabled": disk_cache_enabled(), "kinds": kinds}
            print(json.dumps({**report, "bytes": total}, indent=2))
            return 0
        state = "" if disk_cache_enabled() else " (off: TORCHNEURON_CACHE=0)"
        print(f"cache folder: {root}{state}")
        for cache in caches:
            kind = kinds[cache.entries.folder]
            print(
                f"  {cache.entries.folder + '/':9} {kind['entries']:6} "
                f"{cache.entries.kind.payload} entries  {format_bytes(kind['bytes'])}"
            )
        print(f"  {'total':9} {format_bytes(total)}")
        return 0
    if args.cache_action == "clear":
        removed = 0
        for cache in caches:
            count, size = cache.disk_usage()
            cache.clear()
            removed += size
        print(f"cleared {root}: {format_bytes(removed)} freed")
        return 0
    from torchneuron.runtime.disk_cache import prune_together

    removed, freed = prune_together(caches, args.max_size)
    print(
        f"pruned {root} to at most {format_bytes(args.max_size)}: "
        f"{removed} entries, {format_bytes(freed)} freed"
    )
    return 0
