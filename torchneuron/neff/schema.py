"""Schema validation of a NEFF's JSON members: the manifest, ``sg00/def.json``, the weight
index and the schedule (``docs/neff-format.md`` sections 3-5 state the same rules).

A schema is data: nested nodes (``json_schema.py``: ``Record``, ``Table``, ``Array``,
``Integer``, ...), each bounding what it accepts; here the enumerations are drawn from
the dtype, engine and chip tables. ``check_json_members`` applies
the member schemas and then the cross-checks that tie members together (the signature
agrees with def.json's variables, weight variables with the weight index, run-time checks
name 0-d bool outputs, the schedule's kernels depend on earlier kernels only). The reader
runs it on everything it reads and the writer on everything it writes, so the compiler can
never write a NEFF the reader refuses and no consumer ever sees data outside the schema.

``parse_json`` (``json_schema.py``, named here for the reader and the writer) is the
one JSON parser for NEFF members.

Every failure is one ``NeffError`` line naming the member and the JSON path of the bad
field, e.g. ``sg00/def.json: variables[2].shape[1] is 18446744073709551616, more than
154618822656``.

"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from torchneuron.neff.container import (
    DEFINITION_PATH,
    MANIFEST_PATH,
    SCHEDULE_FORMAT,
    SCHEDULE_PATH,
    SCHEDULE_VERSION,
    WEIGHT_INDEX_PATH,
)
from torchneuron.neff.errors import NeffError
from torchneuron.neff.json_schema import (
    ANY,
    MAX_NAME,
    MAX_RANK,
    Array,
    Choice,
    DynamicEntry,
    Integer,
    Invalid,
    Node,
    Number,
    Record,
    Table,
    Text,
    check_member,
    parse_json,
    render_path,
    show,
)
from torchneuron.neff.weights import WEIGHT_NAME_PATTERN, weight_file_path
from torchneuron.target.dtypes import NEFF_DTYPES
from torchneuron.target.engines import COMPUTE_ENGINES, ENGINES
from torchneuron.target.hardware import CHIPS

# No tensor can be larger than the largest HBM of any chip we know (hardware.py).
MAX_TENSOR_BYTES = max(chip.hbm_bytes_per_chip for chip in CHIPS.values())

MANIFEST_FORMAT = "torchneuron-neff"
VARIABLE_KINDS = ("input", "output", "weight")
# The error kinds a run-time check may raise (as PyTorch names them).
CHECK_ERROR_KINDS = ("IndexError", "RuntimeError")


# -- the member schemas ------------------------------------------------------------------

BYTES = Integer()
COUNT = Integer()
NAME = Text(MAX_NAME, name=True)
DTYPE = Choice(tuple(NEFF_DTYPES))
ENGINE = Choice(ENGINES)
TARGET = Choice(tuple(CHIPS))
LNC = Choice(tuple(sorted({lnc for chip in CHIPS.values() for lnc in chip.supported_lnc})))
SECONDS_US = Number()  # microseconds from the start of one execution, or a duration
DIMENSION = Integer(0, MAX_TENSOR_BYTES)
SHAPE = Array(DIMENSION, MAX_RANK)
SHA256_HEX = Text(64, re.compile(r"[0-9a-f]{64}"), meaning="64 lowercase hex digits")
WEIGHT_NAME = Text(  # a weight name becomes a file name
    128,
    WEIGHT_NAME_PATTERN,
    meaning="a safe file name (1-128 characters from [A-Za-z0-9_.-], not starting with '.')",
)


def _itemsize(dtype: str) -> int:
    return NEFF_DTYPES[dtype].itemsize


def _tensor_bytes(value: dict, path: tuple) -> int:
    """Bytes of a validated ``{"shape", "dtype"}`` object, at most ``MAX_TENSOR_BYTES``."""
    size = math.prod(value["shape"]) * _itemsize(value["dtype"])
    if size > MAX_TENSOR_BYTES:
        raise Invalid(
            (*path, "shape"),
            f"is {value['dtype']}{value['shape']}, {size} bytes: more than the largest HBM "
            f"({MAX_TENSOR_BYTES} bytes)",
        )
    return size


def _check_size(value: dict, path: tuple) -> None:
    size = _tensor_bytes(value, path)
    if "size_bytes" in value and value["size_bytes"] != size:
        raise Invalid(
            (*path, "size_bytes"),
            f"is {value['size_bytes']}, but {value['dtype']}{value['shape']} takes {size} bytes",
        )


TENSOR_SPEC = Record({"name": NAME, "shape": SHAPE, "dtype": DTYPE}, then=_check_size)


def _check_variable(value: dict, path: tuple) -> None:
    _check_size(value, path)
    if "file" in value and value["kind"] != "weight":
        raise Invalid((*path, "file"), f"is given for a {value['kind']}; only weights have one")


def _check_weight_entry(value: dict, path: tuple) -> None:
    _check_size(value, path)
    expected = weight_file_path(value["name"])
    if value["file"] != expected:
        raise Invalid((*path, "file"), f"is {show(value['file'])}, expected {expected!r}")


VARIABLE = Record(
    {"name": NAME, "kind": Choice(VARIABLE_KINDS), "shape": SHAPE, "dtype": DTYPE},
    {"size_bytes": BYTES, "file": Text(MAX_NAME)},
    then=_check_variable,
)

MEMORY_PLAN = Record(
    {"temporaries_bytes": BYTES},
    {
        "peak_hbm_bytes": BYTES,
        "program_bytes": BYTES,
        "weights_bytes": BYTES,
        "inputs_bytes": BYTES,
        "outputs_bytes": BYTES,
        "temporaries_live_peak_bytes": BYTES,
        "alignment": Integer(1, 1 << 30),
        "temporaries": Array(
            Record(
                {"name": NAME, "size_bytes": BYTES, "live_us": Array(SECONDS_US, 2, 2)},
                # dtype: the estimate's name of the element type, which may be one a NEFF
                # cannot declare (an MLIR spelling): a name, not a NEFF dtype.
                {"shape": SHAPE, "dtype": Text(MAX_NAME), "offset": BYTES},
            )
        ),
    },
)

DEFINITION = Record(
    {},
    {
        "variables": Array(VARIABLE),
        "dma_queues": Array(ANY),
        "memory_plan": MEMORY_PLAN,
    },
)

ESTIMATES = Record(
    {},
    {
        "latency_us": SECONDS_US,
        "engine_busy_percent": Table(ENGINE, Number()),
        "hbm_bytes": BYTES,
        "peak_hbm_bytes": BYTES,
        "weights_bytes": BYTES,
        "flops": COUNT,
        "mfu": Number(),
        "kernels": COUNT,
    },
)

CHECK = Record(
    {"output": COUNT, "error": Choice(CHECK_ERROR_KINDS), "message": Text()}, others=None
)

SIGNATURE = Record({"inputs": Array(TENSOR_SPEC), "outputs": Array(TENSOR_SPEC)})

MANIFEST = Record(
    {"signature": SIGNATURE},  # what a caller needs to run the program (neuronc run)
    {
        "format": Choice((MANIFEST_FORMAT,)),
        "name": Text(MAX_NAME),
        "target": TARGET,
        "lnc": LNC,
        "versions": Table(Text(MAX_NAME, name=True), Text(MAX_NAME)),
        "pipeline": Text(),
        "source_hash": SHA256_HEX,
        "weights": Array(
            Record({"name": NAME, "shape": SHAPE, "dtype": DTYPE}, {"source": Text(MAX_NAME)})
        ),
        "checks": Array(CHECK),
        "estimates": ESTIMATES,
        "dynamic": DynamicEntry(),
    },
)

WEIGHT_ENTRY = Record(
    {
        "name": WEIGHT_NAME,
        "dtype": DTYPE,
        "shape": SHAPE,
        "size_bytes": BYTES,
        "sha256": SHA256_HEX,
        "file": Text(MAX_NAME),
    },
    others=None,
    then=_check_weight_entry,
)

WEIGHT_INDEX = Record(
    {"weights": Array(WEIGHT_ENTRY)}, {"byte_order": Choice(("little",))}, others=None
)

KERNEL = Record(
    {"id": COUNT, "name": Text(MAX_NAME), "engine": ENGINE},
    {
        "bound": ENGINE,
        "ops": Array(Text(MAX_NAME)),
        "op_indices": Array(COUNT),
        "deps": Array(COUNT),
        "start_us": SECONDS_US,
        "end_us": SECONDS_US,
        "engine_us": Table(ENGINE, SECONDS_US),
        "engine_cycles": Table(ENGINE, COUNT),
        "dma_us": SECONDS_US,
        "dma_latency_us": SECONDS_US,
        "lanes_us": Table(ENGINE, Array(SECONDS_US, 2, 2)),
        "bytes_in": BYTES,
        "bytes_out": BYTES,
        "onchip_dma_bytes": BYTES,
        "sbuf_bytes": BYTES,
        "flops": COUNT,
        "notes": Array(Text()),
    },
)

SCHEDULE = Record(
    {
        "format": Choice((SCHEDULE_FORMAT,)),
        "version": Choice((SCHEDULE_VERSION,)),
        "target": TARGET,
        "lnc": LNC,
    },
    {
        "latency_us": SECONDS_US,
        "flops": COUNT,
        "peak_us": SECONDS_US,
        "clocks_hz": Table(Choice(COMPUTE_ENGINES), Number()),
        "model": Table(Text(MAX_NAME, name=True), Number(low=-math.inf)),
        "summary": ESTIMATES,
        "memory_plan": MEMORY_PLAN,
        "kernels": Array(KERNEL),
    },
)


# -- cross-checks --------------------------------------------------------------------------


def _fail(member: str, path: tuple, text: str) -> None:
    raise NeffError(f"{member}: {render_path(path)} {text}")


def _spec_text(spec: dict) -> str:
    return f"{spec['name']!r:.80}: {spec['dtype']}{spec['shape']}"


def _check_signature(manifest: dict, variables: list[dict], check_outputs: set[int]) -> None:
    """The signature's inputs are def.json's input variables and its outputs the output
    variables that are no run-time check, in order, with the same names, shapes, dtypes."""
    outputs = [v for v in variables if v["kind"] == "output"]
    declared = {
        "inputs": [v for v in variables if v["kind"] == "input"],
        "outputs": [v for i, v in enumerate(outputs) if i not in check_outputs],
    }
    for role, variables_of_role in declared.items():
        specs = manifest["signature"][role]
        if len(specs) != len(variables_of_role):
            _fail(
                MANIFEST_PATH,
                ("signature", role),
                f"lists {len(specs)} tensors, but {DEFINITION_PATH} declares "
                f"{len(variables_of_role)} {role[:-1]} variables"
                + (" (run-time checks left out)" if role == "outputs" and check_outputs else ""),
            )
        for position, (spec, variable) in enumerate(zip(specs, variables_of_role)):
            if any(spec[key] != variable[key] for key in ("name", "shape", "dtype")):
                _fail(
                    MANIFEST_PATH,
                    ("signature", role, position),
                    f"is {_spec_text(spec)}, but {DEFINITION_PATH} declares {_spec_text(variable)}",
                )


def _check_variables(variables: list[dict]) -> None:
    seen: set[str] = set()
    for position, variable in enumerate(variables):
        if variable["name"] in seen:
            _fail(
                DEFINITION_PATH,
                ("variables", position, "name"),
                f"is {variable['name']!r:.80}, a name an earlier variable has",
            )
        seen.add(variable["name"])


def _check_weight_variables(variables: list[dict], entries: dict[str, dict]) -> None:
    """A weight variable with a ``file`` names its own stored weight, of the same shape and
    dtype (the runtime binds weights by name)."""
    by_file = {entry["file"]: entry for entry in entries.values()}
    for position, variable in enumerate(variables):
        if variable["kind"] != "weight" or "file" not in variable:
            continue
        entry = by_file.get(variable["file"])
        label = f"{DEFINITION_PATH}: weight variable {variable['name']!r:.80}"
        if entry is None:
            raise NeffError(f"{label} names file {variable['file']!r:.80}, which holds no weight")
        if entry["name"] != variable["name"]:
            _fail(
                DEFINITION_PATH,
                ("variables", position, "file"),
                f"is {variable['file']!r}, the file of weight {entry['name']!r}, "
                f"expected {weight_file_path(entry['name'])!r}",
            )
        for key in ("shape", "dtype"):
            if variable[key] != entry[key]:
                raise NeffError(
                    f"{label} has {key} {variable[key]!r}, but its file holds {entry[key]!r}"
                )


def _check_manifest_weights(manifest: dict, variables: list[dict]) -> None:
    """The manifest's ``weights`` lists def.json's weight variables, in order."""
    if "weights" not in manifest:
        return
    declared = [v for v in variables if v["kind"] == "weight"]
    listed = manifest["weights"]
    if len(listed) != len(declared):
        _fail(
            MANIFEST_PATH,
            ("weights",),
            f"lists {len(listed)} weights, but {DEFINITION_PATH} declares {len(declared)}",
        )
    for position, (spec, variable) in enumerate(zip(listed, declared)):
        if any(spec[key] != variable[key] for key in ("name", "shape", "dtype")):
            _fail(
                MANIFEST_PATH,
                ("weights", position),
                f"is {_spec_text(spec)}, but {DEFINITION_PATH} declares {_spec_text(variable)}",
            )


def _check_target(member: str, value: dict, path: tuple) -> None:
    if "target" in value and "lnc" in value:
        chip = CHIPS[value["target"]]
        if value["lnc"] not in chip.supported_lnc:
            _fail(
                member,
                (*path, "lnc"),
                f"is {value['lnc']}, but {value['target']} supports LNC "
                f"{', '.join(map(str, chip.supported_lnc))}",
            )


def _check_schedule(schedule: dict) -> None:
    """Kernel ids are distinct and every dependency names an earlier kernel (ids are a
    topological order), so no consumer meets a cycle or a dangling id."""
    seen: set[int] = set()
    for position, kernel in enumerate(schedule.get("kernels", [])):
        for index, dep in enumerate(kernel.get("deps", [])):
            if dep not in seen or dep >= kernel["id"]:
                _fail(
                    SCHEDULE_PATH,
                    ("kernels", position, "deps", index),
                    f"is {dep}, not the id of an earlier kernel",
                )
        if kernel["id"] in seen:
            _fail(SCHEDULE_PATH, ("kernels", position, "id"), f"is {kernel['id']}, seen before")
        seen.add(kernel["id"])
    _check_target(SCHEDULE_PATH, schedule, ())


def _check_dynamic_manifest(manifest: dict, definition: dict) -> None:
    """A dynamic program has no static signature, no variables and no run-time checks:
    what a loader of static programs reads is empty, so it refuses the NEFF."""
    for role in ("inputs", "outputs"):
        if manifest["signature"][role]:
            _fail(
                MANIFEST_PATH,
                ("signature", role),
                "is not empty, but a dynamic program's signature is manifest.dynamic's",
            )
    if "variables" in definition:
        _fail(DEFINITION_PATH, ("variables",), "is given for a dynamic program, which has none")
    if "checks" in manifest:
        _fail(MANIFEST_PATH, ("checks",), "is given for a dynamic program, which has none")


def check_manifest_checks(manifest: dict, definition: dict) -> list[dict]:
    """The manifest's run-time checks (``[]`` when it has none), after checking that each
    is ``{"output", "error", "message"}`` naming a distinct 0-d bool output variable of
    def.json; ``NeffError`` otherwise.

    Also applied by the runtime to a ``Neff`` built in memory, so it checks types itself.
    """
    checks = manifest.get("checks", [])
    where = f"{MANIFEST_PATH} checks"
    if not isinstance(checks, list):
        raise NeffError(f"{where} must be a list, found {type(checks).__name__}")
    variables = definition.get("variables", [])
    outputs = (
        [v for v in variables if isinstance(v, dict) and v.get("kind") == "output"]
        if isinstance(variables, list)
        else []
    )
    seen: set[int] = set()
    for position, check in enumerate(checks):
        label = f"{where}[{position}]"
        if not isinstance(check, dict) or set(check) != {"output", "error", "message"}:
            raise NeffError(f"{label} must be an object with output, error and message")
        output = check["output"]
        if (
            not isinstance(output, int)
            or isinstance(output, bool)
            or not 0 <= output < len(outputs)
        ):
            raise NeffError(
                f"{label} names output {show(output)}; def.json has {len(outputs)} output variables"
            )
        if output in seen:
            raise NeffError(f"{label} names output {output} a second time")
        seen.add(output)
        if check["error"] not in CHECK_ERROR_KINDS:
            raise NeffError(
                f"{label} has error {show(check['error'])}, not one of "
                f"{', '.join(CHECK_ERROR_KINDS)}"
            )
        if not isinstance(check["message"], str):
            raise NeffError(f"{label} has a message that is not text")
        variable = outputs[output]
        if variable.get("dtype") != "bool" or variable.get("shape") not in ([], ()):
            raise NeffError(
                f"{label} names output {show(variable.get('name'))}, which is "
                f"{show(variable.get('dtype'))}{show(variable.get('shape'))}, not a 0-d bool"
            )
    return checks


# -- members ---------------------------------------------------------------------------------

# Extra files whose layout the format defines, each with its schema and cross-check.
KNOWN_EXTRA_FILES: dict[str, tuple[Node, Callable[[dict], None]]] = {
    SCHEDULE_PATH: (SCHEDULE, _check_schedule),
}


def check_json_members(
    manifest: Any, definition: Any, weight_index: Any, extra_files: Mapping[str, bytes]
) -> None:
    """Raise ``NeffError`` naming the member and field when a JSON member is malformed.

    ``manifest``, ``definition`` and ``weight_index`` are parsed values (``parse_json``);
    the extra files whose layout the format defines (``KNOWN_EXTRA_FILES``) are parsed
    here. Afterwards every consumer may index the fields the schema requires.
    """
    check_member(MANIFEST_PATH, MANIFEST, manifest)
    check_member(DEFINITION_PATH, DEFINITION, definition)
    check_member(WEIGHT_INDEX_PATH, WEIGHT_INDEX, weight_index)
    _check_target(MANIFEST_PATH, manifest, ())
    variables = definition.get("variables")
    _check_variables(variables or [])
    entries: dict[str, dict] = {}
    for position, entry in enumerate(weight_index["weights"]):
        if entry["name"] in entries:
            _fail(
                WEIGHT_INDEX_PATH,
                ("weights", position, "name"),
                f"is {entry['name']!r}, listed twice",
            )
        entries[entry["name"]] = entry
    _check_weight_variables(variables or [], entries)
    checks = check_manifest_checks(manifest, definition)
    if "dynamic" in manifest:
        _check_dynamic_manifest(manifest, definition)
    # def.json without variables declares no bindings (the runtime refuses to load such a
    # NEFF), so there is nothing for the signature to agree with.
    if variables is not None:
        _check_signature(manifest, variables, {check["output"] for check in checks})
        _check_manifest_weights(manifest, variables)
    for path, (node, cross_check) in KNOWN_EXTRA_FILES.items():
        if path in extra_files:
            value = parse_json(extra_files[path], path)
            check_member(path, node, value)
            cross_check(value)


def load_schedule(data: bytes, path: str = SCHEDULE_PATH) -> dict:
    """A schedule member parsed and checked (what ``describe`` and consumers read)."""
    value = parse_json(data, path)
    check_member(path, SCHEDULE, value)
    _check_schedule(value)
    return value
