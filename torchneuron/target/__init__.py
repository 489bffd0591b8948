"""target layer: what the emulated hardware is, with no dependency on any other stage.

- ``hardware``: the one cited table of chip figures (``CHIPS["trn2"]``, ``CHIPS["trn3"]``).
- ``engines``: the engine table (TensorE, VectorE, ScalarE, GpSimd, DMA) and op classes.
- ``dtypes``: the one dtype table (torch name, numpy/ml_dtypes type, MLIR type, carrier).
- ``topology()``: the visible cores, read once from ``NEURON_*`` environment variables.
"""
