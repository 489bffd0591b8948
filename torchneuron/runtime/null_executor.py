"""The "null" executor: load and execute NEFFs for timing and memory only, without numbers.

``load_neff(neff, executor="null")`` checks the NEFF, verifies its program exactly like
the XLA executor (``verifier.verified_program``) and checks its signature,
accounts HBM exactly like the XLA executor, and its ``execute`` returns zero-filled
outputs of the declared shapes and dtypes at once. Nothing is compiled and no weight
is copied, so estimating, profiling and memory checks of large programs stay cheap;
the profiler still records each execution with the NEFF's estimated device time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from torchneuron.runtime.executor import (
    EXECUTORS,
    PROGRAM_CACHE,
    PreparedProgram,
    Runner,
)
from torchneuron.runtime.program import ProgramSignature, TensorType
from torchneuron.runtime.verifier import verified_program
from torchneuron.target.dtypes import numpy_dtype

NULL_EXECUTOR = "null"


class NullExecutor:
    """Validates programs and returns zeros: the runtime's timing-only mode."""

    name = NULL_EXECUTOR

    def prepare(
        self, program: bytes, label: str, declared: ProgramSignature | None = None
    ) -> PreparedProgram:
        digest = hashlib.sha256(program).hexdigest()
        key = (self.name, digest)
        cached = PROGRAM_CACHE.get(key)
        if cached is not None:
            return cached
        signature = verified_program(program, label).signature
        prepared = PreparedProgram(digest, signature, None, 0.0)
        PROGRAM_CACHE.put(key, prepared)
        return prepared

    def upload_weight(self, array: np.ndarray) -> Any:
        # Nothing computes with weights here; keep no copy.
        return None

    def make_runner(
        self,
        prepared: PreparedProgram,
        argument_plan: Sequence[int | None],
        input_types: Sequence[TensorType],
        weight_buffers: Sequence[Any],
    ) -> Runner:
        results = [(t.shape, numpy_dtype(t.dtype)) for t in prepared.signature.results]

        def run(arrays: Sequence[np.ndarray], copy: bool = True) -> list:
            return [np.zeros(shape, dtype) for shape, dtype in results]

        return run


EXECUTORS.setdefault(NULL_EXECUTOR, NullExecutor())
