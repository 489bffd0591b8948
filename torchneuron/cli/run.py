"""``neuronc run`` and ``neuronc profile``: execute a NEFF on an emulated NeuronCore.

A NEFF is input from strangers: its signature is checked here before any of it is used
(names, dtypes, shapes), each ``--input`` file against that signature before its data is
read, ``--core`` against the visible cores, and the chip a NEFF asks for before the
emulator switches to it. Each problem is one ``NeffError`` or ``UsageError`` line.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchneuron.errors import one_line

from .files import atomic_write, check_output_file, describe_os_error, output_folder
from .usage import UsageError

if TYPE_CHECKING:  # numpy loads with the command that reads or writes arrays
    import numpy as np

# The first bytes of every .npy file (numpy.lib.format.MAGIC_PREFIX).
_NPY_MAGIC = b"\x93NUMPY"


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a NEFF's signature, checked."""

    name: str
    dtype_name: str
    dtype: np.dtype
    shape: tuple[int, ...] | None  # None: any (a dynamic program's signature checks it)


def signature_of(manifest: object, source: str) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The inputs and outputs the manifest declares; NeffError naming ``source`` and the
    entry if any is malformed (output names become file names: no folders, no '..')."""
    from torchneuron.neff import NeffError

    signature = manifest.get("signature") if isinstance(manifest, dict) else None
    if not isinstance(signature, dict):
        raise NeffError(f"{source}: the manifest has no signature")
    sides = []
    for side in ("inputs", "outputs"):
        entries = signature.get(side)
        if not isinstance(entries, list):
            raise NeffError(f"{source}: the manifest's signature has no list of {side}")
        specs = [
            _tensor_spec(entry, f"{source}: signature {side}[{i}]")
            for i, entry in enumerate(entries)
        ]
        names = [spec.name for spec in specs]
        if len(set(names)) != len(names):
            raise NeffError(f"{source}: the signature's {side} repeat a name: {', '.join(names)}")
        sides.append(specs)
    return sides[0], sides[1]


def _tensor_spec(entry: object, where: str) -> TensorSpec:
    from torchneuron.neff import NeffError
    from torchneuron.target.dtypes import NEFF_DTYPES

    if not isinstance(entry, dict):
        raise NeffError(f"{where} is not an object")
    name, dtype, shape = entry.get("name"), entry.get("dtype"), entry.get("shape")
    if not (
        isinstance(name, str)
        and 0 < len(name) <= 255
        and name.isprintable()
        and "/" not in name
        and "\\" not in name
        and name not in (".", "..")
    ):
        raise NeffError(f"{where}: name {name!r} is not a plain name")
    if not isinstance(dtype, str) or dtype not in NEFF_DTYPES:
        raise NeffError(f"{where} ({name}): unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(type(size) is int and size >= 0 for size in shape):
        raise NeffError(f"{where} ({name}): shape {shape!r} is not a list of sizes")
    return TensorSpec(name, dtype, NEFF_DTYPES[dtype].numpy, tuple(shape))


def use_chip_of(manifest: dict, source: str = "the NEFF") -> None:
    """Emulate the chip (and LNC) the NEFF was built for, unless the user's environment
    names a chip; the user's own settings keep precedence. The NEFF's values are checked
    first (NeffError naming ``source``), so a bad one is not blamed on an environment variable."""
    from torchneuron import settings
    from torchneuron.neff import NeffError
    from torchneuron.target import hardware
    from torchneuron.target.topology import build_topology, environment, set_topology

    user = environment()
    if "target" not in manifest or settings.TARGET in user:
        return
    target = manifest["target"]
    if not isinstance(target, str) or target.lower() not in hardware.CHIPS:
        raise NeffError(
            f"{source}: the manifest's target {target!r} is not a known chip "
            f"({', '.join(hardware.CHIPS)})"
        )
    values = {settings.TARGET: target}
    if "lnc" in manifest:
        lnc = manifest["lnc"]
        supported = hardware.CHIPS[target.lower()].supported_lnc
        if type(lnc) is not int or lnc not in supported:
            raise NeffError(
                f"{source}: the manifest's lnc {lnc!r} is not one of {list(supported)} for {target}"
            )
        values[settings.LNC] = str(lnc)
    set_topology(build_topology(values | user))


def check_core(core: int) -> None:
    """Refuse a ``--core`` that is not a visible logical NeuronCore."""
    from torchneuron.target.topology import topology

    count = topology().device_count
    if not 0 <= core < count:
        raise UsageError(
            f"--core {core}: no such NeuronCore; {count} are visible (--core 0 to {count - 1})"
        )


def read_input(name: str, file: str, spec: TensorSpec) -> np.ndarray:
    """The array in ``file`` (a .npy file), checked against ``spec`` before its data is read."""
    import numpy as np

    shown = f"--input {name}={file}"
    try:
        with open(file, "rb") as handle:
            magic = handle.read(len(_NPY_MAGIC))
    except OSError as error:
        raise UsageError(f"{shown}: cannot read ({describe_os_error(error)})") from None
    if magic != _NPY_MAGIC:
        what = (
            "the file is empty"
            if not magic
            else "an .npz archive"
            if magic.startswith(b"PK")
            else "not a .npy file"
        )
        raise UsageError(f"{shown}: {what}; give one array saved with numpy.save")
    try:
        # Mapped, so the header is checked (and a file too short for it refused) before
        # any data is read.
        mapped = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise UsageError(f"{shown}: cannot read the .npy file ({one_line(error)})") from None
    dtype = mapped.dtype
    # numpy writes ml_dtypes (bfloat16, float8) as raw bytes of the same width.
    if dtype.kind == "V" and dtype.fields is None and dtype.itemsize == spec.dtype.itemsize:
        dtype = spec.dtype
    if dtype != spec.dtype:
        raise UsageError(f"{shown}: dtype {mapped.dtype}, the program expects {spec.dtype_name}")
    if spec.shape is not None and mapped.shape != spec.shape:
        raise UsageError(
            f"{shown}: shape {list(mapped.shape)}, the program expects {list(spec.shape)}"
        )
    try:
        return np.array(mapped).view(spec.dtype)
    except OSError as error:
        raise UsageError(f"{shown}: cannot read ({describe_os_error(error)})") from None


def inputs_by_name(given: list[str], inputs: list[TensorSpec]) -> dict[str, str]:
    """``--input`` arguments -> {input name: file}, every input given exactly once."""
    expected = [spec.name for spec in inputs]
    positional = [item for item in given if "=" not in item]
    if positional and len(positional) != len(given):
        raise UsageError("give every --input as NAME=FILE.npy, or every one as FILE.npy in order")
    if positional:
        if len(positional) > len(expected):
            raise UsageError(
                f"{len(positional)} inputs given; the program takes "
                f"{len(expected)}: {', '.join(expected) or 'none'}"
            )
        files = dict(zip(expected, positional))
    else:
        files = {}
        for item in given:
            name, _, file = item.partition("=")
            if not name or not file:
                raise UsageError(f"--input {item!r}: expected NAME=FILE.npy")
            if name in files:
                raise UsageError(f"--input {name} given twice")
            files[name] = file
    unknown = sorted(set(files) - set(expected))
    if unknown:
        raise UsageError(
            f"--input {', '.join(unknown)}: no such input; the program takes: "
            f"{', '.join(expected) or 'no inputs'}"
        )
    missing = [n for n in expected if n not in files]
    if missing:
        raise UsageError(f"missing input(s): {', '.join(missing)} (pass --input NAME=FILE.npy)")
    return files


def run_command(args) -> int:
    from torchneuron.neff import read_neff
    from torchneuron.runtime import load_neff

    neff = read_neff(args.neff)
    if "dynamic" in neff.manifest:
        return _run_dynamic(args, neff)
    inputs, outputs = signature_of(neff.manifest, args.neff)
    files = inputs_by_name(args.input, inputs)
    arrays = [read_input(spec.name, files[spec.name], spec) for spec in inputs]
    check_core(args.core)
    out_dir = output_folder(args.output_dir, "--output-dir") if args.output_dir else None
    values = load_neff(neff, core=args.core).execute(arrays)
    _report(outputs, values, out_dir)
    return 0


def _run_dynamic(args, neff) -> int:
    """A dynamic NEFF: inputs of any shape its signature admits (each file's dtype and
    rank checked before its data is read, its sizes by binding the symbols), the program
    specialized to them, then run (``DynamicProgram.run``)."""
    from torchneuron.compiler.dynamic import DynamicProgram

    program = DynamicProgram.from_neff(neff, where=args.neff)
    use_chip_of(neff.manifest, args.neff)
    inputs = [
        TensorSpec(spec["name"], spec["dtype"], _numpy_dtype(spec["dtype"]), None)
        for spec in program.signature.inputs
    ]
    files = inputs_by_name(args.input, inputs)
    arrays = [read_input(spec.name, files[spec.name], spec) for spec in inputs]
    check_core(args.core)
    out_dir = output_folder(args.output_dir, "--output-dir") if args.output_dir else None
    program.signature.bind([a.shape for a in arrays])  # one line naming input, dim, rule
    values = program.run(arrays, core=args.core)
    compiled = program.specialize([a.shape for a in arrays])  # cached: its output specs
    outputs = [
        TensorSpec(o["name"], o["dtype"], _numpy_dtype(o["dtype"]), tuple(o["shape"]))
        for o in compiled.outputs
    ]
    _report(outputs, values, out_dir)
    return 0


def _numpy_dtype(name: str) -> np.dtype:
    from torchneuron.target.dtypes import NEFF_DTYPES

    return NEFF_DTYPES[name].numpy


def _report(outputs: list[TensorSpec], values, out_dir) -> None:
    import numpy as np

    for spec, value in zip(outputs, values):
        if out_dir:
            atomic_write(out_dir / f"{spec.name}.npy", _npy_bytes(value), "--output-dir")
        print(f"{spec.name}: {spec.dtype_name}{list(spec.shape)}")
        if not out_dir:
            shown = np.asarray(value, dtype=np.float64) if value.dtype.kind == "V" else value
            print(np.array2string(shown, threshold=20))


def _npy_bytes(value) -> bytes:
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


def profile_command(args) -> int:
    import numpy as np

    from torchneuron import profiler
    from torchneuron.neff import read_neff
    from torchneuron.runtime import load_neff

    if args.iterations < 1:
        raise UsageError(f"--iterations must be at least 1, got {args.iterations}")
    if args.output:
        check_output_file(args.output, "-o")
    neff = read_neff(args.neff)
    inputs, _ = signature_of(neff.manifest, args.neff)
    use_chip_of(neff.manifest, args.neff)
    check_core(args.core)
    loaded = load_neff(neff, core=args.core, executor="xla" if args.execute else "null")
    zeros = [np.zeros(spec.shape, spec.dtype) for spec in inputs]
    with profiler.profile() as prof:
        for _ in range(args.iterations):
            loaded.execute(zeros)
    if loaded.schedule is None:
        print(
            f"neuronc: warning: {args.neff} has no schedule; device times are unknown",
            file=sys.stderr,
        )
    print(prof.table(group_by=args.group_by))
    if args.output:
        atomic_write(Path(args.output), prof.chrome_trace_text(), "-o")
        print(f"wrote {args.output} (open it in https://ui.perfetto.dev)", file=sys.stderr)
    return 0
