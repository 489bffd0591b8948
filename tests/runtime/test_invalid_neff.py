"""A NEFF whose parts disagree, or that was built for another chip, is refused at load
with the one NEFF error type (which loader callers may also catch as a runtime error)."""

import pytest

from torchneuron.neff import Neff, NeffError, read_neff, write_neff
from torchneuron.runtime import load_neff
from torchneuron.runtime.errors import NeuronRuntimeError

from .conftest import binary_neff


def _rewritten(neff: Neff, **changes) -> bytes:
    fields = {
        "name": neff.name,
        "manifest": dict(neff.manifest),
        "definition": dict(neff.definition),
        "program": neff.program,
        "weights": dict(neff.weights),
        "num_tpb": neff.num_tpb,
        "lnc_size": neff.lnc_size,
    }
    fields.update(changes)
    return write_neff(Neff(**fields))


def test_program_of_another_neff_is_refused_with_the_neff_error():
    add = binary_neff("add", "float32", (2, 3))
    other = binary_neff("add", "float32", (5,), name="five")
    data = _rewritten(add, program=other.program)
    with pytest.raises(NeffError, match=r"@main argument 0 is float32\[5\].*def.json declares"):
        load_neff(data)
    with pytest.raises(NeuronRuntimeError):
        load_neff(read_neff(data))


def test_neff_for_another_chip_is_refused_with_the_neff_error():
    add = binary_neff("add", "float32")
    manifest = dict(add.manifest, target="trn3")
    with pytest.raises(NeffError, match="compiled for trn3"):
        load_neff(_rewritten(add, manifest=manifest))
