"""The one error type of the passes stage."""

from __future__ import annotations

from pathlib import Path

from torchneuron.errors import TorchNeuronError


class PassError(TorchNeuronError):
    """A pass pipeline could not be built or a pass failed.

    ``pass_name`` names the failing pass (None for pipeline/registry errors);
    ``repro_path`` is the file holding the failing pass's input IR and
    ``repro_command`` the one command that reproduces the failure, when a pass
    failed while running.
    """

    def __init__(
        self,
        message: str,
        *,
        pass_name: str | None = None,
        repro_path: Path | None = None,
        repro_command: str | None = None,
    ) -> None:
        super().__init__(message)
        self.pass_name = pass_name
        self.repro_path = repro_path
        self.repro_command = repro_command
