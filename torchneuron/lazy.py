"""Names a package loads on first use: the one ``__getattr__`` its ``__init__`` installs.

    __getattr__ = lazy_names(__name__, {"load_neff": "loaded_neff", ...})

``from package import name`` and ``package.name`` import ``package.<module>`` the first
time and keep the value in the package, so a package whose heavy parts (XLA, torch-mlir)
only some callers need stays cheap to import.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` giving each of ``names`` (name -> module
    of the package that defines it) from its module, imported on first use.

    A name may not be that of the module it comes from: importing ``package.x`` binds the
    package's ``x`` to the module, which would then hide the lazily given ``x``."""
    clashing = sorted(name for name, module in names.items() if name == module)
    if clashing:
        raise ValueError(f"{package}: {clashing} would be hidden by modules of the same names")

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
