"""Compiler drivers: the stage table (``stages``), ``compile_graph``/``compile_artifact``
(``pipeline``), eager per-op compilation (``eager``) and the compile cache (``cache``).
The torch.compile backend and ``neuronc`` sit above, in ``torchneuron.backend`` and
``torchneuron.cli``."""

from .pipeline import (
    STAGES,
    CompiledGraph,
    CompileError,
    clear_memory_cache,
    compile_artifact,
    compile_graph,
)

__all__ = [
    "STAGES",
    "CompileError",
    "CompiledGraph",
    "clear_memory_cache",
    "compile_artifact",
    "compile_graph",
]
