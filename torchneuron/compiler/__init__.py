"""Compiler drivers: the stage table (``stages``), ``compile_graph``/``compile_artifact``
(``pipeline``), eager per-op compilation (``eager``) and the compile cache (``cache``).
The torch.compile backend and ``neuronc`` sit above, in ``torchneuron.backend`` and
``torchneuron.cli``."""

from torchneuron.lazy import lazy_names

# The pipeline imports torch-mlir and every lowering rule (about a second); a process
# whose programs all come from the disk cache never needs it, so it loads on first use.
_LAZY = {
    name: "pipeline"
    for name in (
        "STAGES",
        "CompiledGraph",
        "CompileError",
        "clear_memory_cache",
        "compile_artifact",
        "compile_graph",
    )
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "STAGES",
    "CompileError",
    "CompiledGraph",
    "clear_memory_cache",
    "compile_artifact",
    "compile_graph",
]
