"""Compiler drivers: the ordered stage table and ``compile_graph``, the
torch.compile backend, eager per-op compilation, the compile cache and the
``neuronc`` command line."""

from .pipeline import STAGES, CompiledGraph, CompileError, clear_memory_cache, compile_graph

__all__ = ["STAGES", "CompileError", "CompiledGraph", "clear_memory_cache", "compile_graph"]
