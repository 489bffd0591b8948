"""Every JSON member of a NEFF is checked against its schema: a malformed field is one
``NeffError`` naming the member and the field's JSON path, from the reader, the writer and
``describe`` alike, and never any other exception.

The hostile NEFFs here are real files: the members of a valid NEFF with one JSON member
replaced, packed and signed (hash and uuid) the way ``write_neff`` does, so every check
after the header's runs on them.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from torch_mlir._mlir_libs import _stablehlo

from torchneuron.estimate.cost_model import estimate_text
from torchneuron.estimate.scheduler import Schedule
from torchneuron.neff import (
    Neff,
    NeffError,
    describe,
    json_schema,
    read_neff,
    schema,
    weight_file_path,
    write_neff,
)
from torchneuron.neff.container import SCHEDULE_PATH
from torchneuron.neff.json_schema import MAX_TEXT
from torchneuron.neff.weights import WEIGHT_NAME_PATTERN
from torchneuron.neff.writer import assemble_neff, build_members, pack_tarball

PROGRAM = """
func.func @main(%x: tensor<1x10xf32>, %w: tensor<10x1xf32>) -> tensor<1x1xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<1x10xf32>, tensor<10x1xf32>) -> tensor<1x1xf32>
  %1 = stablehlo.dot_general %0, %0, contracting_dims = [1] x [0]
      : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
  return %1 : tensor<1x1xf32>
}
"""
MANIFEST, DEFINITION, INDEX = "manifest.json", "sg00/def.json", "sg00/weights.json"


@pytest.fixture(scope="module")
def compiled() -> Neff:
    """A NEFF laid out as the compiler writes one: signature, weights, estimates,
    versions, a memory plan with a temporary, and a two-kernel schedule."""
    schedule = estimate_text(PROGRAM, "trn2", 2)
    x = {"name": "x", "shape": [1, 10], "dtype": "float32"}
    w = {"name": "w", "shape": [10, 1], "dtype": "float32"}
    out = {"name": "output0", "shape": [1, 1], "dtype": "float32"}
    return Neff(
        name="two_matmuls",
        manifest={
            "format": "torchneuron-neff",
            "name": "two_matmuls",
            "signature": {"inputs": [x], "outputs": [out]},
            "weights": [w | {"source": "layer.weight"}],
            "target": "trn2",
            "lnc": 2,
            "versions": {"torchneuron": "0.1.0", "stablehlo": "1.17.0"},
            "pipeline": "canonicalize,cse",
            "source_hash": "0f" * 32,
            "estimates": schedule.summary(),
        },
        definition={
            "variables": [
                x | {"kind": "input", "size_bytes": 40},
                w | {"kind": "weight", "size_bytes": 40, "file": weight_file_path("w")},
                out | {"kind": "output", "size_bytes": 4},
            ],
            "dma_queues": [],
            "memory_plan": schedule.memory.to_json(),
        },
        program=_stablehlo.serialize_portable_artifact_str(
            PROGRAM, _stablehlo.get_current_version()
        ),
        weights={"w": np.arange(10, dtype=np.float32).reshape(10, 1)},
        extra_files={SCHEDULE_PATH: schedule.to_bytes()},
    )


def signed(neff: Neff, members: dict[str, bytes]) -> bytes:
    """The NEFF ``write_neff`` would write for ``neff``, with some members' bytes replaced."""
    contents = build_members(neff)
    contents.update(members)
    return assemble_neff(
        pack_tarball(contents, neff.compression),
        name=neff.name,
        build_version=neff.build_version,
        num_tpb=neff.num_tpb,
        lnc_size=neff.lnc_size,
        feature_bits=neff.feature_bits,
    )


def encoded(value) -> bytes:
    """JSON as the writer lays it out (NaN and infinities allowed, to test the reader)."""
    return (json.dumps(value, sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode()


def member(neff: Neff, path: str):
    if path == SCHEDULE_PATH:
        return json.loads(neff.extra_files[SCHEDULE_PATH])
    return copy.deepcopy({MANIFEST: neff.manifest, DEFINITION: neff.definition}[path])


def with_field(neff: Neff, path: str, keys: tuple, value) -> bytes:
    """The NEFF with ``member[keys...] = value`` in member ``path``, signed."""
    data = member(neff, path) if path != INDEX else json.loads(build_members(neff)[INDEX])
    target = data
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return signed(neff, {path: encoded(data)})


def refused(data: bytes, message: str) -> str:
    """read_neff's NeffError, which must start with ``message`` (a member and a path)."""
    with pytest.raises(NeffError) as caught:
        read_neff(data)
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text
    return text


def test_the_compilers_layout_passes_and_round_trips(compiled):
    data = write_neff(compiled)
    back = read_neff(data)
    assert back == compiled
    assert write_neff(back) == data
    assert "schedule (sg00/schedule.json): 2 kernels" in describe(back)


# -- the cases found on main --------------------------------------------------------------


def test_reader_refuses_an_integer_of_4301_digits(compiled):
    text = encoded(compiled.manifest).replace(b'"lnc": 2', b'"lnc": ' + b"7" * 4301)
    data = signed(compiled, {MANIFEST: text})
    refused(data, "manifest.json: lnc is an integer of 4301 digits, not one of 1, 2")
    text = encoded(compiled.definition).replace(
        b'"size_bytes": 40', b'"size_bytes": ' + b"9" * 5000
    )
    refused(
        signed(compiled, {DEFINITION: text}),
        "sg00/def.json: variables[0].size_bytes is an integer of 5000 digits, more than",
    )


def test_reader_refuses_weight_shape_beyond_int64(compiled):
    index = json.loads(build_members(compiled)[INDEX])
    index["weights"][0].update(shape=[0, 2**64], size_bytes=0)
    refused(
        signed(compiled, {INDEX: encoded(index)}),
        f"sg00/weights.json: weights[0].shape[1] is 18446744073709551616, more than "
        f"{schema.MAX_TENSOR_BYTES}",
    )
    refused(
        with_field(compiled, DEFINITION, ("variables", 1, "shape"), [0, 2**64]),
        "sg00/def.json: variables[1].shape[1] is 18446744073709551616, more than",
    )


def test_reader_refuses_tensors_larger_than_any_hbm(compiled):
    shape = [2**20, 2**20, 2**20]  # each dimension fits, the product does not
    refused(
        with_field(compiled, MANIFEST, ("signature", "inputs", 0, "shape"), shape),
        "manifest.json: signature.inputs[0].shape is float32[1048576, 1048576, 1048576], "
        "4611686018427387904 bytes: more than the largest HBM",
    )


@pytest.mark.parametrize(
    "dimension, shown", [("1", "'1'"), (None, "null"), (1.0, "1.0"), (True, "true"), (-1, "-1")]
)
def test_reader_refuses_shape_with_a_non_size(compiled, dimension, shown):
    text = refused(
        with_field(compiled, DEFINITION, ("variables", 0, "shape"), [1, dimension]),
        f"sg00/def.json: variables[0].shape[1] is {shown}, ",
    )
    assert "expected an integer" in text or "less than 0" in text


def test_reader_refuses_a_manifest_without_signature(compiled):
    manifest = member(compiled, MANIFEST)
    del manifest["signature"]
    refused(
        signed(compiled, {MANIFEST: encoded(manifest)}),
        "manifest.json: the top level lacks the required key 'signature'",
    )
    neff = copy.copy(compiled)
    neff.manifest = manifest
    with pytest.raises(NeffError, match="^manifest.json: the top level lacks the required key"):
        write_neff(neff)


def test_reader_refuses_unknown_dtype(compiled):
    refused(
        with_field(compiled, MANIFEST, ("signature", "inputs", 0, "dtype"), "bogus"),
        "manifest.json: signature.inputs[0].dtype is 'bogus', not one of float64, float32",
    )


def test_reader_refuses_a_signature_that_disagrees_with_def_json(compiled):
    refused(
        with_field(compiled, MANIFEST, ("signature", "inputs", 0, "name"), "y"),
        "manifest.json: signature.inputs[0] is 'y': float32[1, 10], but sg00/def.json "
        "declares 'x': float32[1, 10]",
    )
    refused(
        with_field(compiled, MANIFEST, ("signature", "outputs"), []),
        "manifest.json: signature.outputs lists 0 tensors, but sg00/def.json declares 1",
    )


def test_reader_refuses_size_bytes_that_disagree_with_the_shape(compiled):
    refused(
        with_field(compiled, DEFINITION, ("variables", 2, "size_bytes"), 8),
        "sg00/def.json: variables[2].size_bytes is 8, but float32[1, 1] takes 4 bytes",
    )


def test_reader_refuses_duplicate_variable_names(compiled):
    refused(
        with_field(compiled, DEFINITION, ("variables", 2, "name"), "x"),
        "sg00/def.json: variables[2].name is 'x', a name an earlier variable has",
    )


@pytest.mark.parametrize(
    "keys, value, message",
    [
        (
            ("kernels", 0, "engine_cycles"),
            "x",
            "kernels[0].engine_cycles is 'x', expected an object",
        ),
        (("kernels", 0, "ops"), [1], "kernels[0].ops[0] is 1, expected a string"),
        (("kernels", 0, "engine"), "PE", "kernels[0].engine is 'PE', not one of TensorE"),
        (("kernels", 1, "deps"), [5], "kernels[1].deps[0] is 5, not the id of an earlier kernel"),
        (("kernels", 0, "deps"), [0], "kernels[0].deps[0] is 0, not the id of an earlier kernel"),
        (("kernels", 0, "lanes_us", "DMA"), [1.0], "kernels[0].lanes_us.DMA is a list of 1 items"),
        (("kernels", 0, "start_us"), -1.0, "kernels[0].start_us is -1.0, less than 0"),
        (("kernels",), {"0": {}}, "kernels is an object with 1 keys, expected a list"),
        (("version",), 2, "version is 2, not one of 1"),
        (("memory_plan", "temporaries", 0, "live_us"), None, "memory_plan.temporaries[0].live_us"),
    ],
)
def test_reader_refuses_a_malformed_schedule(compiled, keys, value, message):
    refused(with_field(compiled, SCHEDULE_PATH, keys, value), f"sg00/schedule.json: {message}")


@pytest.mark.parametrize(
    "path, keys, value, message",
    [
        (MANIFEST, ("estimates", "engine_busy_percent"), [1], "estimates.engine_busy_percent is"),
        (
            MANIFEST,
            ("estimates", "engine_busy_percent", "PE"),
            1.0,
            "estimates.engine_busy_percent.PE",
        ),
        (MANIFEST, ("estimates", "latency_us"), "fast", "estimates.latency_us is 'fast'"),
        (MANIFEST, ("estimates", "mfu"), None, "estimates.mfu is null, expected a number"),
        (DEFINITION, ("memory_plan", "temporaries_bytes"), "big", "memory_plan.temporaries_bytes"),
        (DEFINITION, ("memory_plan", "temporaries"), [None], "memory_plan.temporaries[0] is null"),
        (DEFINITION, ("memory_plan",), [], "memory_plan is a list of 0 items, expected an object"),
    ],
)
def test_describe_never_sees_malformed_estimates_or_memory_plans(
    compiled, path, keys, value, message
):
    # Read from a file: the reader refuses it.
    refused(with_field(compiled, path, keys, value), f"{path}: {message}")
    # Built in memory: describe checks through the writer's path, and so does write_neff.
    neff = copy.copy(compiled)
    data = member(compiled, path)
    target = data
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    setattr(neff, "manifest" if path == MANIFEST else "definition", data)
    for consumer in (describe, write_neff):
        with pytest.raises(NeffError, match=f"^{path}: "):
            consumer(neff)


def test_describe_of_an_unwritten_neff_refuses_a_malformed_schedule(compiled):
    neff = copy.copy(compiled)
    neff.extra_files = {SCHEDULE_PATH: b'{"format": "torchneuron-schedule", "kernels": 3}'}
    with pytest.raises(NeffError, match="^sg00/schedule.json: kernels is 3, expected a list"):
        describe(neff)


def test_deep_nesting_is_refused_with_or_without_a_path(compiled):
    manifest = encoded(compiled.manifest)
    deep = b'{"deep": ' + b"[" * 40 + b"]" * 40 + b", " + manifest[1:]
    refused(signed(compiled, {MANIFEST: deep}), "manifest.json: deep" + "[0]" * 32)
    deeper = b'{"deep": ' + b"[" * 200_000 + b"]" * 200_000 + b", " + manifest[1:]
    refused(signed(compiled, {MANIFEST: deeper}), "manifest.json is not valid JSON: nested")


@pytest.mark.parametrize(
    "key, literal, message",
    [
        ("mfu", b"NaN", "estimates.mfu is nan, not a finite number"),
        ("mfu", b"-Infinity", "estimates.mfu is -inf, not a finite number"),
        ("mfu", b"1e999", "estimates.mfu is inf, not a finite number"),
        ("pipeline", b'"\\ud800"', "pipeline is '\\ud800', not valid Unicode text"),
    ],
)
def test_numbers_and_text_outside_json_are_refused_with_their_path(compiled, key, literal, message):
    text = encoded(compiled.manifest)
    start = text.index(f'"{key}": '.encode()) + len(key) + 4
    end = text.index(b"\n", start)
    end -= text[end - 1 : end] == b","
    refused(
        signed(compiled, {MANIFEST: text[:start] + literal + text[end:]}),
        f"manifest.json: {message}",
    )


def test_control_characters_and_duplicate_keys_are_refused(compiled):
    refused(
        with_field(compiled, MANIFEST, ("pipeline",), "cse\x1b[2J"),
        "manifest.json: pipeline is 'cse\\x1b[2J', which holds control characters",
    )
    text = encoded(compiled.manifest).replace(b'"lnc": 2,', b'"lnc": 2, "lnc": 1,')
    refused(
        signed(compiled, {MANIFEST: text}),
        "manifest.json is not valid JSON: an object has key 'lnc' twice",
    )


def test_too_many_values_are_refused_before_they_are_built(compiled, monkeypatch):
    monkeypatch.setattr(json_schema, "MAX_JSON_VALUES", 1000)
    refused(
        with_field(compiled, MANIFEST, ("many",), list(range(2000))),
        "manifest.json holds more than 1000 JSON values",
    )
    refused(
        with_field(compiled, MANIFEST, ("many",), [[]] * 2000),
        "manifest.json holds more than 1000 JSON values",
    )


def test_unknown_keys_are_bounded_and_kept(compiled):
    neff = copy.copy(compiled)
    neff.manifest = {**compiled.manifest, "future": {"layout": [1, 2.5, "x", None]}}
    assert read_neff(write_neff(neff)).manifest["future"] == {"layout": [1, 2.5, "x", None]}
    refused(
        with_field(compiled, MANIFEST, ("future",), "x" * (MAX_TEXT + 1)),
        "manifest.json: future is 'xxxx",
    )


def test_unknown_keys_are_refused_where_the_container_owns_the_layout(compiled):
    refused(
        with_field(
            compiled,
            MANIFEST,
            ("checks",),
            [{"output": 0, "error": "IndexError", "message": "m", "x": 1}],
        ),
        "manifest.json: checks[0] has the unknown key 'x'",
    )
    refused(
        with_field(compiled, INDEX, ("compressed",), True),
        "sg00/weights.json: the top level has the unknown key 'compressed'",
    )


def test_reader_refuses_member_names_the_writer_refuses(compiled):
    for path in ("sg00/-x", "sg00/a b", "x" * 300):
        contents = build_members(compiled)
        contents[path] = b"data"
        data = assemble_neff(
            pack_tarball(contents, "gzip"),
            name="m",
            build_version="b",
            num_tpb=1,
            lnc_size=2,
            feature_bits=0,
        )
        with pytest.raises(NeffError, match="is not a safe relative path"):
            read_neff(data)


def test_weight_name_rule_is_the_weight_encoders():
    assert schema.WEIGHT_NAME.pattern is WEIGHT_NAME_PATTERN


def test_hostile_json_cannot_crash_the_reader_in_a_subprocess(compiled, tmp_path):
    # Deep nesting inside json's C scanner: run where a crash could not take the tests down.
    deep = b'{"signature": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}"
    path = tmp_path / "deep.neff"
    path.write_bytes(signed(compiled, {MANIFEST: deep}))
    script = (
        "import sys\nfrom torchneuron.neff import read_neff, NeffError\n"
        "try:\n    read_neff(sys.argv[1])\nexcept NeffError as e:\n    print('NeffError', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "manifest.json is not valid JSON: nested" in done.stdout


def test_schedule_from_json_raises_only_value_error(compiled):
    good = json.loads(compiled.extra_files[SCHEDULE_PATH])
    assert len(Schedule.from_json(good).kernels) == 2
    for keys, value in [
        (("kernels",), 3),
        (("kernels", 0), None),
        (("kernels", 0, "engine_us"), []),
        (("kernels", 0, "lanes_us", "DMA"), [1]),
        (("kernels", 0, "dma_us"), "x"),
        (("memory_plan", "temporaries", 0, "live_us"), 5),
        (("memory_plan",), []),
        (("lnc",), None),
    ]:
        data = copy.deepcopy(good)
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
        with pytest.raises(ValueError):
            Schedule.from_json(data)
    with pytest.raises(ValueError):
        Schedule.from_json(b"[" * 100_000)


# -- property: any JSON anywhere gives a NeffError or a NEFF that rewrites to itself ----------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["float32", "bfloat16", "input", "weight", "TensorE", "trn2", "x"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from _paths(item, (*prefix, position))


def _mutate(neff: Neff, path: str, data) -> bytes:
    """Replace, delete or add at a random place of member ``path``; signed NEFF bytes."""
    value = member(neff, path)
    places = list(_paths(value))
    place = places[data.draw(st.integers(0, len(places) - 1), label="place")]
    action = data.draw(st.sampled_from(["replace", "delete", "add"]), label="action")
    new = data.draw(json_values, label="value")
    if not place:
        value = new
    else:
        parent = value
        for key in place[:-1]:
            parent = parent[key]
        if action == "delete":
            del parent[place[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.text(max_size=8), label="key")] = new
        elif action == "add":
            parent.append(new)
        else:
            parent[place[-1]] = new
    return signed(neff, {path: encoded(value)})


@pytest.mark.parametrize("path", [MANIFEST, DEFINITION, SCHEDULE_PATH])
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_json_anywhere_is_a_neff_error_or_a_neff_that_rewrites_to_itself(compiled, path, data):
    neff_bytes = _mutate(compiled, path, data)
    try:
        neff = read_neff(neff_bytes)
    except NeffError as error:
        event("refused")
        # A cross-check names whichever member holds the field found wrong.
        assert str(error).startswith((MANIFEST, DEFINITION, SCHEDULE_PATH)), str(error)
        assert "\n" not in str(error)
        return
    event("accepted")
    describe(neff, max_kernels=None)
    assert write_neff(neff) == neff_bytes
