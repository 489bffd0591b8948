"""``install_alias()``: make the public NKI import paths resolve to ``torchneuron.nki``.

A kernel written for the real chip imports NKI as ``import nki`` / ``import nki.language as
nl`` / ``import nki.isa as nisa`` (NKI 0.x, Neuron 2.2x and later) or through the compiler
package, ``from neuronxcc import nki`` / ``import neuronxcc.nki.language as nl`` (older
docs). After ``torchneuron.nki.install_alias()`` those imports give this package's modules,
so such a kernel runs unchanged on the emulator. Opt-in only (nothing is aliased at import),
refused when one of those names already holds a different module (a real NKI is loaded),
and undone by ``uninstall_alias()``.
"""

from __future__ import annotations

import sys
import types

from torchneuron.nki import isa, language
from torchneuron.nki.errors import NKIError

_installed: dict[str, types.ModuleType] = {}


def _targets() -> dict[str, types.ModuleType]:
    # The package facade is imported already (this file is its submodule): looked up, not
    # imported, since the facade imports this file for install_alias.
    ours = sys.modules[__package__]
    compiler = types.ModuleType("neuronxcc", "torchneuron's stand-in for neuronxcc (nki only)")
    compiler.__path__ = []  # a package, so ``neuronxcc.nki`` imports
    compiler.nki = ours
    return {
        "nki": ours,
        "nki.language": language,
        "nki.isa": isa,
        "neuronxcc": compiler,
        "neuronxcc.nki": ours,
        "neuronxcc.nki.language": language,
        "neuronxcc.nki.isa": isa,
    }


def install_alias() -> None:
    """Make ``import nki``, ``nki.language``, ``nki.isa`` and the ``neuronxcc.nki`` forms
    resolve to ``torchneuron.nki``. Calling it again does nothing."""
    if _installed:
        return
    targets = _targets()
    taken = [n for n in targets if n in sys.modules and sys.modules[n] is not targets[n]]
    if taken:
        raise NKIError(
            f"nki.install_alias: {', '.join(taken)} already imported from "
            f"{getattr(sys.modules[taken[0]], '__file__', None) or 'elsewhere'}; the alias "
            "would hide that module (uninstall it or start a fresh interpreter)"
        )
    for name, module in targets.items():
        sys.modules[name] = module
        _installed[name] = module


def uninstall_alias() -> None:
    """Remove the aliases ``install_alias`` made (a later ``import nki`` finds what is
    installed, if anything)."""
    for name, module in list(_installed.items()):
        if sys.modules.get(name) is module:
            del sys.modules[name]
        del _installed[name]


def alias_installed() -> bool:
    return bool(_installed)
