"""The ``--passes`` option: a pass pipeline, checked before any work is done."""

from __future__ import annotations

from torchneuron.errors import one_line

from .usage import UsageError


def check_pipeline(pipeline: str | None) -> None:
    """Refuse a ``--passes`` text before any work: empty, or naming an unknown pass or a
    malformed option (the message names the pass and lists the known ones)."""
    if pipeline is None:
        return
    from torchneuron.passes import PassError, list_passes, parse_pipeline

    if not pipeline.strip():
        raise UsageError(
            f"--passes {pipeline!r}: empty pipeline; name passes separated by commas "
            f"(known passes: {', '.join(list_passes())}), or leave --passes out for the "
            "-O pipeline"
        )
    try:
        parse_pipeline(pipeline)
    except PassError as error:
        raise UsageError(f"--passes {pipeline!r}: {one_line(error)}") from None
