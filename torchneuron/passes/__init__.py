"""Passes stage: the pass manager, our StableHLO passes and wrapped upstream passes.

Entry points::

    ctx = PassContext(weights={})
    pm = PassManager.from_pipeline(DEFAULT_PIPELINE, verify=True)
    report = pm.run(module, ctx)      # module rewritten in place

``python -m torchneuron.passes --pipeline <pipeline> file.mlir`` runs a
pipeline from the command line (and reproduces failures).
"""

from torchneuron.passes.context import PassContext
from torchneuron.passes.errors import PassError
from torchneuron.passes.ir_utils import make_context, parse_module
from torchneuron.passes.pass_manager import PassManager, PassReport, PassStep
from torchneuron.passes.registry import (
    Pass,
    get_pass,
    list_passes,
    parse_pipeline,
    register_pass,
    unregister_pass,
)

# Importing a pass module registers its pass.
from torchneuron.passes import upstream  # noqa: F401  isort: skip
from torchneuron.passes import legalize_to_stablehlo  # noqa: F401  isort: skip
from torchneuron.passes import fold_constants  # noqa: F401  isort: skip
from torchneuron.passes import algebraic_simplify  # noqa: F401  isort: skip
from torchneuron.passes import dce  # noqa: F401  isort: skip
from torchneuron.passes import externalize_constants  # noqa: F401  isort: skip
from torchneuron.passes import fuse_kernels  # noqa: F401  isort: skip
from torchneuron.passes import assign_engines  # noqa: F401  isort: skip

from torchneuron.passes.pipelines import DEFAULT_PIPELINE, NEFF_PIPELINE

__all__ = [
    "DEFAULT_PIPELINE",
    "NEFF_PIPELINE",
    "Pass",
    "PassContext",
    "PassError",
    "PassManager",
    "PassReport",
    "PassStep",
    "get_pass",
    "list_passes",
    "make_context",
    "parse_module",
    "parse_pipeline",
    "register_pass",
    "unregister_pass",
]
