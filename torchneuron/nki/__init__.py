"""An NKI-compatible kernel language run on an instruction-level NeuronCore emulator.

    from torchneuron import nki
    import torchneuron.nki.language as nl
    import torchneuron.nki.isa as nisa

    @nki.jit
    def kernel(x): ...

    y = nki.simulate(kernel)(x_np)          # NumPy in, NumPy out
    run = nki.estimate(kernel)(x_np)        # schedule only: run.seconds, run.schedule
    prof = nki.profile(kernel)(x_np)        # both, plus a Perfetto trace and a summary

Modules: ``language`` (nl) and ``isa`` (nisa) are the API kernels use; ``trace`` records
the instruction stream; ``emulator`` places tiles in SBUF/PSUM and runs the instructions
on NumPy; ``timing`` schedules them on the engines; ``profile`` writes the trace and the
summary; ``torch_ops`` calls kernels with torch tensors (eager, torch.compile, autograd:
docs/nki-pytorch.md); ``alias`` makes ``import nki`` resolve here (``install_alias()``).
docs/nki.md covers the programming model and what is covered.
"""

from __future__ import annotations

from torchneuron.nki import isa, language
from torchneuron.nki.alias import install_alias, uninstall_alias
from torchneuron.nki.errors import NKIError
from torchneuron.nki.kernel import Kernel, KernelRun, estimate, jit, simulate
from torchneuron.nki.profile import profile

__all__ = [
    "Kernel",
    "KernelRun",
    "NKIError",
    "estimate",
    "install_alias",
    "isa",
    "jit",
    "language",
    "profile",
    "simulate",
    "uninstall_alias",
]
