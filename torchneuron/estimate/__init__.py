"""estimate layer: compile-time analyses of a program on one logical core, and of the
collectives between cores.

- ``cost_model``: the program-level estimate (``estimate``): latency, HBM traffic, MFU.
- ``kernel_cost``: each kernel's engine time, HBM traffic and SBUF (ops charged to kernels).
- ``engine_cost``: engine and memory rates of a logical core, and the matmul tiling formula.
- ``scheduler``: the list schedule of kernels over engines (``Schedule``), stored in the NEFF.
- ``memory_plan``: liveness-based HBM plan of a program's buffers.
- ``collectives``: estimated time of each collective on the interconnect (ring, tree,
  hierarchical over the chip, NeuronLink and EFA).
- ``parallel_plan``: a DP/FSDP/TP training step per core (``neuronc plan``).

The runtime reads the schedule a NEFF carries; it never re-runs these analyses.
"""
