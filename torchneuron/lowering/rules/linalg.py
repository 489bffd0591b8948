"""linalg lowering rules."""

from __future__ import annotations

import torch

from . import lowering_rule  # noqa: F401

aten = torch.ops.aten
