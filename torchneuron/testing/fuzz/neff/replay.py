"""Running one saved case in this process, stage by stage, with full tracebacks.

``python -m torchneuron.fuzz.neff --replay case.neff`` prints each stage as it starts,
so a crash or hang shows where it happened; a ``NeffError`` is printed as the refusal
it is; any other exception propagates with its traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from torchneuron.neff import NeffError, describe, read_neff

from .execute import run_cli


def _stage(name: str) -> None:
    print(f"[{name}]", file=sys.stderr, flush=True)


def replay(path: Path, *, forbidden: bool = False, cli: bool = False) -> int:
    """0 when the case is refused or runs cleanly, 1 when it reaches a forbidden op's
    execution or ``neuronc`` misbehaves; other failures raise."""
    from torchneuron.runtime import load_neff

    data = Path(path).read_bytes()
    try:
        _stage("read")
        neff = read_neff(data)
        _stage("describe")
        describe(neff)
        _stage("load")
        loaded = load_neff(neff)
    except NeffError as error:
        print(f"refused: {error}")
        return 0
    if forbidden:
        print("forbidden-executed: a program with an op outside the allowlist loaded")
        loaded.unload()
        return 1
    _stage("execute")
    try:
        loaded.execute([np.zeros(s.shape, s.numpy_dtype) for s in loaded.input_specs])
    except NeffError as error:
        print(f"refused at execution: {error}")
    finally:
        loaded.unload()
    if cli:
        failure = run_cli(data, _stage, forbidden)
        if failure is not None:
            print(f"neuronc: {failure}")
            return 1
    print("ran")
    return 0
