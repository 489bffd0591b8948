"""Named pipelines: the ``-O`` pipeline, the one the NEFF writer needs, the schedule's.

DEFAULT_PIPELINE (``-O``) preserves the program's signature and results:
legalize torch-mlir's leftovers, fold constant subexpressions, turn dynamic
ops with now-constant shapes static, simplify algebra, then let MLIR's
canonicalizer and CSE tidy up and remove what became dead.

``stablehlo-aggressive-simplification`` is left out on purpose: it runs as a
``torch-mlir-opt`` subprocess (~70 ms, more than the rest together) and folds
little that our passes do not.

NEFF_PIPELINE adds externalize-constants, which changes the signature (large
constants become trailing ``neuron.weight`` arguments backed by
``PassContext.weights``).

SCHEDULE_PIPELINE runs after the pass pipeline on every compile
(``compiler/compilation.py``): its passes only annotate (``neuron.kernel``,
``neuron.engine``), so the program is unchanged, and the estimate reads what they
decide.
"""

DEFAULT_PIPELINE = (
    "legalize-to-stablehlo,"
    "fold-constants,"
    "stablehlo-canonicalize-dynamism,"
    "algebraic-simplify,"
    "canonicalize,"
    "cse,"
    "dce"
)

NEFF_PIPELINE = DEFAULT_PIPELINE + ",externalize-constants"

SCHEDULE_PIPELINE = "fuse-kernels,assign-engines"
