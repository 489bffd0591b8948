"""``torchneuron.neff`` gives its public names lazily: each must be what it names, however
its submodules were imported before."""

import subprocess
import sys

import pytest

from torchneuron.lazy import lazy_names


def test_every_public_name_is_its_object_after_every_submodule_was_imported():
    code = (
        "import importlib, inspect, pkgutil\n"
        "import torchneuron.neff as neff\n"
        "for module in pkgutil.iter_modules(neff.__path__):\n"
        "    importlib.import_module(f'torchneuron.neff.{module.name}')\n"
        "names = {name: getattr(neff, name) for name in neff.__all__}\n"
        "print(sorted(name for name, value in names.items() if inspect.ismodule(value)))\n"
        "print(callable(neff.describe), callable(neff.read_neff), neff.HEADER_SIZE)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "True True 1024"]


def test_a_name_given_from_a_module_of_its_own_name_is_refused():
    # (``describe`` from ``neff/describe.py`` was one, until that module was renamed)
    with pytest.raises(ValueError, match=r"\['describe'\] would be hidden"):
        lazy_names("torchneuron.neff", {"describe": "describe", "read_neff": "reader"})
