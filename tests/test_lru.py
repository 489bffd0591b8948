"""The one LRU: order, capacity, eviction callback, thread safety."""

from __future__ import annotations

import threading

import pytest

from torchneuron.lru import LRU


def test_least_recently_used_goes_first():
    cache = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now newer than b
    cache.put("c", 3)
    assert "b" not in cache and cache.keys() == ["a", "c"]
    assert cache.get("b", "missing") == "missing"
    assert cache.info() == {"entries": 2, "capacity": 2, "hits": 1, "misses": 1}


def test_eviction_callback_and_capacity_change():
    evicted = []
    cache = LRU(3, on_evict=lambda key, value: evicted.append((key, value)))
    for i in range(3):
        cache.put(i, str(i))
    cache.set_capacity(1)
    assert evicted == [(0, "0"), (1, "1")] and cache.keys() == [2]
    assert cache.items() == [(2, "2")] and cache.info()["hits"] == 0
    cache.put(2, "two")  # replacing a key evicts nothing
    assert len(cache) == 1 and cache.get(2) == "two" and len(evicted) == 2
    assert cache.pop(2) == "two" and len(cache) == 0
    with pytest.raises(ValueError):
        LRU(-1)


def test_concurrent_use_keeps_the_bound():
    cache = LRU(64)
    errors = []

    def work(offset):
        try:
            for i in range(2000):
                cache.put((offset, i % 100), i)
                cache.get((offset, (i * 7) % 100))
        except Exception as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(cache) == 64 and len(set(cache.keys())) == 64
