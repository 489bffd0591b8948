"""The one least-recently-used cache every in-process cache of the package uses.

Thread-safe: every read and write holds one lock, so a hit's reordering and an
eviction never interleave. Values are never built under the lock (a compile can take
seconds); two threads that miss the same key both build it and the second ``put``
wins, which is correct for caches of deterministic results.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``capacity`` entries; a hit makes an entry the newest, a put past capacity
    drops the oldest (``on_evict(key, value)`` is called for each, outside the lock)."""

    def __init__(self, capacity: int, on_evict: Callable[[K, V], None] | None = None):
        if capacity < 0:
            raise ValueError(f"LRU capacity must be >= 0, not {capacity}")
        self._capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._on_evict = on_evict
        self.hits = 0
        self.misses = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    def get(self, key: K, default: V | None = None) -> V | None:
        with self._lock:
            try:
                value = self._entries[key]
            except KeyError:
                self.misses += 1
                return default
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            evicted = self._trim()
        self._report(evicted)

    def pop(self, key: K, default: V | None = None) -> V | None:
        with self._lock:
            return self._entries.pop(key, default)

    def set_capacity(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"LRU capacity must be >= 0, not {capacity}")
        with self._lock:
            self._capacity = capacity
            evicted = self._trim()
        self._report(evicted)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def keys(self) -> list[K]:
        """Keys from oldest to newest (a snapshot)."""
        with self._lock:
            return list(self._entries)

    def items(self) -> list[tuple[K, V]]:
        """Entries from oldest to newest (a snapshot; reading it is not a hit)."""
        with self._lock:
            return list(self._entries.items())

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def info(self) -> dict[str, int]:
        with self._lock:
            return {
                "entries": len(self._entries),
                "capacity": self._capacity,
                "hits": self.hits,
                "misses": self.misses,
            }

    def _trim(self) -> list[tuple[K, V]]:
        evicted = []
        while len(self._entries) > self._capacity:
            evicted.append(self._entries.popitem(last=False))
        return evicted

    def _report(self, evicted: list[tuple[K, V]]) -> None:
        if self._on_evict is not None:
            for key, value in evicted:
                self._on_evict(key, value)
