"""Mutators of what the tarball holds: JSON members, weights, the program.

Same contract as ``mutate_container``: ``fn(rng, draft, context) -> (bytes, note)``,
re-signed so the reader's deep checks (weight sha256, then tar, gzip and header)
pass unless the note says otherwise. JSON members are mutated structurally (a value at
a random path replaced, a key deleted or added, a value nested deeply) and as bytes.
Values JSON cannot carry through ``json.dumps`` (integers of thousands of digits, NaN,
nesting deeper than the recursion limit) are spliced in as raw text.

``forbidden_op`` rewrites the program as MLIR text with an op our compiler never
emits (a custom call into the XLA CPU runtime's LAPACK or Python callbacks, infeed,
outfeed) and serialises it as a portable artifact with torch-mlir, as a compiler
would; the case is marked ``forbidden`` so reaching execution is reported.
"""

from __future__ import annotations

import json
import random
import re

from .pack import PROGRAM, WEIGHT_INDEX, Draft, finish

JSON_MEMBERS = ("manifest.json", "sg00/def.json", WEIGHT_INDEX, "sg00/schedule.json")
RESIGN = 0.9


class Raw:
    """JSON text spliced in verbatim where a value goes."""

    def __init__(self, text: str) -> None:
        self.text = text


def _evil_value(rng: random.Random):
    depth = rng.choice([100, 1000, 20_000, 200_000])
    return rng.choice(
        [
            Raw("1" * rng.choice([4301, 5000, 100_000])),  # beyond int("...") digit limits
            Raw("-" + "9" * 5000),
            2**64, 2**63, 2**63 - 1, -(2**63) - 1, 2**53 + 1, -1, 0, 1, 2**31, 2**32,
            1e308, Raw("1e309"), Raw("-1e400"), -0.0, 0.5, 1.5, Raw("NaN"), Raw("Infinity"),
            Raw("-Infinity"), "1", "", "x" * rng.choice([256, 100_000, 2_000_000]), "\u0000",
            "../../etc/passwd", "bogus", "float32", "bfloat16", "int64", "bool", "trn3", "input",
            "weight", None, True, False, [], {}, [None], [-1], [Raw(str(2**64))], [0, 2**64],
            [2**32, 2**32], ["a"], [1.5], [[1]], [0] * rng.choice([1000, 200_000]),
            {"k": 1}, {str(n): n for n in range(rng.choice([10, 20_000]))},
            Raw("[" * depth + "]" * depth), Raw('{"a":' * depth + "1" + "}" * depth),
        ]
    )  # fmt: skip


def dumps(value) -> str:
    """JSON text of ``value``, ``Raw`` values spliced in as they are."""
    raws: list[str] = []

    def replace(node):
        if isinstance(node, Raw):
            raws.append(node.text)
            return f"__neff_fuzz_raw_{len(raws) - 1}__"
        if isinstance(node, dict):
            return {key: replace(item) for key, item in node.items()}
        if isinstance(node, list):
            return [replace(item) for item in node]
        return node

    text = json.dumps(replace(value), sort_keys=True, indent=2)
    for number, raw in enumerate(raws):
        text = text.replace(f'"__neff_fuzz_raw_{number}__"', raw, 1)
    return text + "\n"


def _paths(value, limit: int = 5000) -> list[tuple]:
    """Every path (tuple of keys and indices) into ``value``, the root included."""
    found: list[tuple] = []
    stack: list[tuple[tuple, object]] = [((), value)]
    while stack and len(found) < limit:
        path, node = stack.pop()
        found.append(path)
        if isinstance(node, dict):
            stack.extend((path + (key,), item) for key, item in node.items())
        elif isinstance(node, list):
            stack.extend((path + (index,), item) for index, item in enumerate(node))
    return found


def _at(value, path: tuple):
    for key in path:
        value = value[key]
    return value


def _json_target(rng: random.Random, draft: Draft) -> str:
    present = [path for path in JSON_MEMBERS if draft.member(path) is not None]
    return rng.choice(present)


def _finish(rng: random.Random, draft: Draft, note: str, *, weights: bool = False):
    resign = rng.random() < RESIGN
    data = finish(draft, weights=weights, outer=resign)
    return data, note + ("" if resign else " (header not re-signed)")


def json_structure(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A JSON member edited as data: a value replaced, a key deleted or added."""
    path_name = _json_target(rng, draft)
    member = draft.member(path_name)
    value = json.loads(member.data)
    paths = _paths(value)
    choice = rng.randrange(4)
    path = rng.choice(paths)
    if choice == 0 or not path:  # replace the value at path
        if path:
            _at(value, path[:-1])[path[-1]] = _evil_value(rng)
        else:
            value = _evil_value(rng)
        note = f"{path_name} {list(path)[-4:]} replaced"
    elif choice == 1:  # delete
        parent = _at(value, path[:-1])
        del parent[path[-1]]
        note = f"{path_name} {list(path)[-4:]} deleted"
    elif choice == 2:  # add a key or an element next to path
        parent = _at(value, path[:-1])
        if isinstance(parent, dict):
            key = rng.choice(["bogus", "", "x" * 10_000, "checks", "memory_plan", "signature",
                              "estimates", "variables", "weights", "kernels", "format"])  # fmt: skip
            parent[key] = _evil_value(rng)
            note = f"{path_name} {list(path[:-1])[-4:]} gained {key[:20]!r}"
        else:
            parent.insert(rng.randrange(len(parent) + 1), _evil_value(rng))
            note = f"{path_name} {list(path[:-1])[-4:]} gained an element"
    else:  # a value made the same one, repeated, or wrapped in a list
        target = _at(value, path)
        _at(value, path[:-1])[path[-1]] = rng.choice([[target], [target] * 1000, {"v": target}])
        note = f"{path_name} {list(path)[-4:]} wrapped"
    member.data = dumps(value).encode()
    return _finish(rng, draft, note)


def json_bytes(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A JSON member edited as bytes: flips, cuts, a BOM, invalid UTF-8, a non-object."""
    path_name = _json_target(rng, draft)
    member = draft.member(path_name)
    data = bytearray(member.data)
    choice = rng.randrange(5)
    if choice == 0:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        note = "bytes flipped"
    elif choice == 1:
        del data[rng.randrange(len(data)) :]
        note = "cut short"
    elif choice == 2:
        data[0:0] = rng.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\x00", b" \t\n"])
        note = "prefix"
    elif choice == 3:
        position = rng.randrange(len(data))
        data[position:position] = rng.choice([b"\xc3\x28", b"\xed\xa0\x80", b'"\\ud800"', b","])
        note = "bytes inserted"
    else:
        data = bytearray(
            rng.choice([b"", b"[]", b"null", b"1", b'"x"', b"{}", b"{} {}", b'{"a":1,"a":2}'])
        )
        note = f"replaced by {bytes(data)!r}"
    member.data = bytes(data)
    return _finish(rng, draft, f"{path_name} {note}")


# -- weights ------------------------------------------------------------------------------


def _weight_index(draft: Draft) -> dict:
    return json.loads(draft.member(WEIGHT_INDEX).data)


def weight_bytes(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A weight file's bytes flipped, cut or extended; the index's sha256 usually redone."""
    files = [m for m in draft.members if m.path.startswith("sg00/weights/")]
    if not files:
        return json_bytes(rng, draft, context)
    member = rng.choice(files)
    data = bytearray(member.data)
    choice = rng.randrange(3)
    if choice == 0 and data:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= rng.randint(1, 255)
        note = "bytes flipped"
    elif choice == 1:
        del data[rng.randrange(len(data) + 1) :]
        note = f"cut to {len(data)} bytes"
    else:
        data += rng.randbytes(rng.choice([1, 4, 4096]))
        note = f"extended to {len(data)} bytes"
    member.data = bytes(data)
    resign = rng.random() < RESIGN
    out, outer_note = _finish(rng, draft, "", weights=resign)
    return out, f"{member.path} {note}" + ("" if resign else " (sha stale)") + outer_note


_DTYPES = ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
           "float64", "complex64", "float8_e4m3fn", "bogus", "float128", "object", "V8")  # fmt: skip


def weight_entry(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A weight index entry edited: dtype, shape, size, sha, name, file; sometimes the edit
    is made consistent (shape, dtype and size agree with the file) so it reaches the
    runtime's checks against def.json and the program."""
    index = _weight_index(draft)
    entries = index.get("weights") or []
    if not entries:
        return json_structure(rng, draft, context)
    entry = rng.choice(entries)
    key = rng.choice(["dtype", "shape", "size_bytes", "sha256", "name", "file", "consistent"])
    if key == "dtype":
        entry["dtype"] = rng.choice(_DTYPES)
    elif key == "shape":
        entry["shape"] = rng.choice(
            [[0, 2**64], [2**64], [-1], ["1"], [None], [1.0], [2**32, 2**32], [2**63, 2],
             [1] * 70, [Raw("1" * 5000)], "64", None, {}, [0, 1, 2**62], [True]]
        )  # fmt: skip
    elif key == "size_bytes":
        entry["size_bytes"] = rng.choice([0, -1, 2**64, entry.get("size_bytes", 0) + 1, "4", 1.0])
    elif key == "sha256":
        entry["sha256"] = rng.choice(["", "0" * 64, entry.get("sha256", "").upper(), 5, None])
    elif key == "name":
        entry["name"] = rng.choice(["../x", "other", "", "a" * 200, entry.get("name", "") + "x"])
    elif key == "file":
        entry["file"] = rng.choice(["manifest.json", "sg00/weights/other.bin", "../x.bin", ""])
    else:  # reinterpret the bytes: same size, other dtype and shape
        size = entry.get("size_bytes", 0)
        entry["dtype"], entry["shape"] = rng.choice(
            [("uint8", [size]), ("int32", [size // 4]), ("float16", [size // 2]),
             ("float32", [1, size // 4]), ("float64", [size // 8])]
        )  # fmt: skip
        entry["size_bytes"] = entry["shape"][-1] * {"uint8": 1, "int32": 4, "float16": 2,
                                                    "float32": 4, "float64": 8}[entry["dtype"]]  # fmt: skip
    draft.member(WEIGHT_INDEX).data = dumps(index).encode()
    return _finish(rng, draft, f"weight {entry.get('name')!r} {key} edited")


def def_signature(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """def.json's variables edited consistently with the weights (shape, dtype, kind,
    order), so the reader passes and the runtime must notice the program disagrees."""
    member = draft.member("sg00/def.json")
    definition = json.loads(member.data)
    variables = definition.get("variables") or []
    if not variables:
        return json_structure(rng, draft, context)
    variable = rng.choice(variables)
    choice = rng.randrange(5)
    if choice == 0 and variable.get("kind") != "weight":
        variable["shape"] = rng.choice(
            [[], [1], [2**20, 2**20], [0], list(variable["shape"]) + [1]]
        )
        variable.pop("size_bytes", None)
        note = f"{variable['name']} shape {variable['shape']}"
    elif choice == 1 and variable.get("kind") != "weight":
        variable["dtype"] = rng.choice(["int64", "bool", "bfloat16", "float64", "complex64"])
        variable.pop("size_bytes", None)
        note = f"{variable['name']} dtype {variable['dtype']}"
    elif choice == 2:
        variable["kind"] = rng.choice(["input", "output", "weight", "state", ""])
        note = f"{variable.get('name')} kind {variable['kind']}"
    elif choice == 3:
        rng.shuffle(variables)
        note = "variables reordered"
    else:
        variables.append(dict(variable, name=f"{variable.get('name')}_twin"))
        note = f"{variable.get('name')} twinned"
    member.data = dumps(definition).encode()
    return _finish(rng, draft, f"def.json {note}")


# -- the program ---------------------------------------------------------------------------


def program_bytes(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """The program's bytes flipped, inserted, deleted, cut, or spliced with another's."""
    member = draft.member(PROGRAM)
    if member is None:
        return json_bytes(rng, draft, context)
    data = bytearray(member.data)
    # Mostly flips: a program one byte off is what a bad disk or a bad copy makes, and
    # what gets furthest into the bytecode reader.
    choice = rng.choices(range(6), weights=(10, 2, 2, 1, 2, 1))[0]
    if choice == 0:
        positions = [rng.randrange(len(data)) for _ in range(rng.choice([1, 1, 1, 2, 4, 8]))]
        for position in positions:
            data[position] ^= 1 << rng.randrange(8) if rng.random() < 0.5 else rng.randint(1, 255)
        note = f"bytes {positions[:4]} flipped"
    elif choice == 1:
        position = rng.randrange(len(data) + 1)
        data[position:position] = rng.randbytes(rng.choice([1, 2, 4, 16]))
        note = f"bytes inserted at {position}"
    elif choice == 2:
        position = rng.randrange(len(data))
        del data[position : position + rng.choice([1, 2, 4, 16])]
        note = f"bytes deleted at {position}"
    elif choice == 3:
        cut = rng.randrange(len(data))
        del data[cut:]
        note = f"cut to {cut} bytes"
    elif choice == 4:
        other = rng.choice(context.programs)
        cut_a, cut_b = rng.randrange(len(data)), rng.randrange(len(other))
        data = data[:cut_a] + other[cut_b:]
        note = f"spliced at {cut_a}/{cut_b}"
    else:
        data = bytearray(rng.choice(context.programs))
        note = "another NEFF's program"
    member.data = bytes(data)
    return _finish(rng, draft, f"program {note}")


def program_text(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """The program stored as MLIR text (the runtime also reads text), sometimes edited."""
    text = context.entry.program_text
    if text is None or draft.member(PROGRAM) is None:
        return program_bytes(rng, draft, context)
    tokens = re.split(r"(\s+)", text)
    choice = rng.randrange(4)
    if choice == 1:
        del tokens[rng.randrange(len(tokens))]
        note = "a token deleted"
    elif choice == 2:
        position = rng.randrange(len(tokens))
        tokens[position] = rng.choice(
            ["%0", "tensor<99999999999x99999999999xf32>", "}", "{", "@main", "i1", "0x7FC00000",
             "stablehlo.while", "func.call @main", '"', "tensor<?xf32>"]
        )  # fmt: skip
        note = f"token {position} replaced"
    elif choice == 3:
        tokens.insert(0, '#loc = loc("' + "x" * 100_000 + '")\n')
        note = "a long location"
    else:
        note = "verbatim"
    draft.member(PROGRAM).data = "".join(tokens).encode()
    return _finish(rng, draft, f"program as text, {note}")


# Custom-call targets registered in the XLA CPU runtime (host code: LAPACK, Python
# callbacks), one nobody registers, and side-effecting I/O ops. None is ours.
FORBIDDEN_CALL_TARGETS = (
    "lapack_sgetrf_ffi",
    "lapack_dgetrf_ffi",
    "lapack_spotrf_ffi",
    "xla_python_cpu_callback",
    "xla_ffi_python_cpu_callback",
    "torchneuron_fuzz_unknown_target",
)
_RETURN = re.compile(r"^(\s*)return (%[\w#]+)(.*?) : ([^\n]*)$", re.MULTILINE)


def _first_type(types: str) -> str:
    depth, start = 0, 0
    for position, char in enumerate(types):
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == "," and depth == 0:
            return types[start:position].strip()
    return types.strip()


def forbidden_program_text(rng: random.Random, text: str) -> tuple[str, str]:
    """``text`` with an op outside the allowlist before @main's return (its result used
    in place of the first returned value, or only for its side effect)."""
    match = _RETURN.search(text)
    if match is None:
        raise ValueError("no return in the program text")
    indent, value, rest, types = match.groups()
    tensor = _first_type(types)
    form = rng.choice(["custom_call", "custom_call", "custom_call", "infeed", "outfeed"])
    used = rng.random() < 0.7
    if form == "custom_call":
        target = rng.choice(FORBIDDEN_CALL_TARGETS)
        api = rng.choice(["", ", api_version = 1 : i32", ", api_version = 4 : i32"])
        op = (
            f'{indent}%fz = "stablehlo.custom_call"({value}) {{call_target_name = "{target}", '
            f"has_side_effect = true{api}}} : ({tensor}) -> {tensor}\n"
        )
        replacement, what = "%fz", f"custom_call @{target}"
    elif form == "infeed":
        op = (
            f'{indent}%fzt = "stablehlo.after_all"() : () -> !stablehlo.token\n'
            f'{indent}%fz:2 = "stablehlo.infeed"(%fzt) {{infeed_config = ""}} : '
            f"(!stablehlo.token) -> ({tensor}, !stablehlo.token)\n"
        )
        replacement, what = "%fz#0", "infeed"
    else:
        op = (
            f'{indent}%fzt = "stablehlo.after_all"() : () -> !stablehlo.token\n'
            f'{indent}%fz = "stablehlo.outfeed"({value}, %fzt) {{outfeed_config = ""}} : '
            f"({tensor}, !stablehlo.token) -> !stablehlo.token\n"
        )
        replacement, what, used = value, "outfeed", True
    new_return = f"{indent}return {replacement if used else value}{rest} : {types}"
    return text[: match.start()] + op + new_return + text[match.end() :], what + (
        "" if used else " (result unused)"
    )


def forbidden_op(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """The program rewritten with an op outside the allowlist, serialised as a compiler
    would (a portable artifact), or stored as text; fully re-signed."""
    entry = context.entry if context.entry.program_text else context.text_entry
    if entry is None:
        raise LookupError("forbidden-op needs a corpus entry with program text")
    if entry is not context.entry:  # take the whole NEFF the text belongs to
        draft.members[:] = context.open(entry).members
    text, what = forbidden_program_text(rng, entry.program_text)
    if rng.random() < 0.75:
        from torch_mlir._mlir_libs import _stablehlo

        program = _stablehlo.serialize_portable_artifact_str(text, entry.stablehlo_version)
        how = "portable artifact"
    else:
        program, how = text.encode(), "MLIR text"
    draft.member(PROGRAM).data = program
    return finish(draft), f"{what} injected ({how})"
