"""estimate layer: compile-time analyses of an optimized program on one logical core.

- ``cost_model``: per-kernel engine time, HBM traffic, MFU (``estimate``).
- ``scheduler``: the list schedule of kernels over engines (``Schedule``), stored in the NEFF.
- ``memory_plan``: liveness-based HBM plan of a program's buffers.

The runtime reads the schedule a NEFF carries; it never re-runs these analyses.
"""
