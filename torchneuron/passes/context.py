"""State shared by the passes of one pipeline run: the NEFF weights and pattern counters."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class PassContext:
    """What passes read and write besides the IR.

    ``weights`` maps a weight name to its data; externalize-constants adds the
    constants it lifts out of the program (the NEFF writer stores them).
    ``counters`` maps ``"<pass>.<pattern>"`` to how often that rewrite fired,
    accumulated over every run that used this context. A pass records a
    rewrite with ``ctx.count("pattern")``; the pass manager sets
    ``current_pass`` around each pass so the key carries the pass name.
    """

    weights: dict[str, np.ndarray] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    current_pass: str = ""

    def count(self, pattern: str, times: int = 1) -> None:
        """Record that ``pattern`` fired ``times`` more times in the current pass."""
        if times <= 0:
            return
        key = f"{self.current_pass}.{pattern}" if self.current_pass else pattern
        self.counters[key] = self.counters.get(key, 0) + times
