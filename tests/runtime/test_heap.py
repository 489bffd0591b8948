"""Free heap memory goes back to the system after a long compile, and only then."""

from __future__ import annotations

import sys

import pytest

from torchneuron.runtime import heap


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_free_memory_is_released_on_glibc():
    assert heap.release_free_memory() is True


def test_only_a_compile_worth_it_trims(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: lambda pad: calls.append(pad))
    heap.after_compile(heap.WORTH_TRIMMING_S / 10)
    assert calls == []
    heap.after_compile(heap.WORTH_TRIMMING_S)
    assert calls == [0]


def test_without_malloc_trim_nothing_happens(monkeypatch):
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    assert heap.release_free_memory() is False
    heap.after_compile(10.0)  # no error
