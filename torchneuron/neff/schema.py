"""Schema validation of a NEFF's JSON members (manifest, def.json, weight index, schedule).

Placeholder while the schema is written: accepts everything the reader already checks.
"""

from __future__ import annotations

from typing import Any


def check_json_members(
    manifest: Any, definition: Any, weight_index: Any, extra_files: dict[str, bytes]
) -> None:
    """Raise ``NeffError`` naming the member and field when a JSON member is malformed."""
