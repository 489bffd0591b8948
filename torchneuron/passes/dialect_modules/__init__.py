"""Empty Python dialect modules for dialects torch-mlir ships no Python module for.

Whenever the bindings wrap an operation (``value.owner``, iterating a block),
they import the Python module of the op's dialect from their search prefixes
(``torch_mlir.dialects.<namespace>``). torch-mlir has none for ``stablehlo``,
``chlo`` and ``vhlo``, and a failed import is retried on every lookup, which
made each ``value.owner`` cost ~60 us of filesystem searches. Registering
this package as a further search prefix makes the lookup succeed once and be
remembered; the modules define nothing, so ops stay generic ``OpView``s.
"""
