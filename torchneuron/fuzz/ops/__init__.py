"""The registry of op families: importing this package registers every hand-written family.

``opinfo`` (ops enumerated from PyTorch's OpInfo database) registers on demand, see
``cases.select``.
"""

from __future__ import annotations

from . import elementwise, indexing, mutation, reductions, selftest, shapes, sorting

__all__ = ["elementwise", "indexing", "mutation", "reductions", "selftest", "shapes", "sorting"]
