"""Named event counters of this process, which tests and benchmarks read.

A module that counts what it does (``compiler.dynamic``: programs compiled once,
specializations; ``compiler.buckets``: padded calls, refusals) keeps one ``Counters``
as its ``STATS`` and offers ``reset_stats``/``stats`` from it, so "compiled once" is
something a test can assert.
"""

from __future__ import annotations


class Counters(dict):
    """A dict of named counters, every one present from the start at zero.

    ``counters["name"] += 1`` counts; ``reset()`` sets every counter back to zero;
    ``snapshot()`` is a plain copy to compare later.
    """

    def __init__(self, *names: str):
        super().__init__()
        self.names = names
        self.reset()

    def reset(self) -> None:
        """Set every counter to zero."""
        for name in self.names:
            self[name] = 0

    def snapshot(self) -> dict[str, int]:
        """A copy of the counters as a plain dict."""
        return dict(self)
