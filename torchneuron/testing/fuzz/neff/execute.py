"""Running one case in this process: read, describe, load, execute, unload; optionally
``neuronc inspect`` and ``neuronc run`` on the case written to a file.

Outcomes (a worker's death or silence is told apart by the parent: ``crash``, ``hang``):

- ``refused``: the reader or the runtime raised ``NeffError``, the one error a NEFF
  that is wrong may raise (``neuronc`` exited non-zero with one ``neuronc: error:`` line);
- ``ran``: it loaded and executed (a run-time check failing on the fuzzer's inputs is
  the program working, so ``NeuronCheckError`` from ``execute`` counts as ran);
- ``leak``: any other exception, in any stage, or a ``neuronc`` failure that is not one
  error line; the detail names the stage, the type, the first line and the innermost
  torchneuron frame;
- ``forbidden-executed``: a case whose program holds an op outside the allowlist
  reached execution.

Which exception types count as a refusal per stage is ``REFUSALS``: one table, so the
rule is visible and can be argued about in one place.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from torchneuron.neff import NeffError, describe, read_neff
from torchneuron.runtime.errors import NeuronCheckError, out_of_memory_error_type

# stage -> exception types that mean "the NEFF was refused as it should be"
# A NEFF too big for the core's free HBM is not a wrong file: the runtime refuses it with
# its out-of-memory error (a torch.OutOfMemoryError), as it would a valid large model.
_OUT_OF_MEMORY = out_of_memory_error_type()
REFUSALS: dict[str, tuple[type[BaseException], ...]] = {
    "read": (NeffError,),
    "describe": (NeffError,),
    "load": (NeffError, _OUT_OF_MEMORY),
    "execute": (NeffError, _OUT_OF_MEMORY),
}
# stage -> exception types that mean the program ran as built (not a failure at all)
RAN_ANYWAY: dict[str, tuple[type[BaseException], ...]] = {"execute": (NeuronCheckError,)}
# The most input bytes the fuzzer hands to one execution (a mutated signature can ask
# for terabytes; that is the runtime's to refuse, at load or at execute, not ours to
# allocate).
MAX_INPUT_BYTES = 256 << 20
CLI_STAGES = ("cli-inspect", "cli-run")

Stage = Callable[[str], None]


class InjectedFault(Exception):
    """Raised by the test-only ``test-leak`` mutator: not a NeffError."""


def _innermost_frame(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "torchneuron" in f.filename] or frames
    if not ours:
        return "?"
    frame = ours[-1]
    path = frame.filename
    if "torchneuron/" in path:
        path = "torchneuron/" + path.rsplit("torchneuron/", 1)[1]
    return f"{path}:{frame.lineno}"


def leak_detail(stage: str, error: BaseException) -> dict:
    message = (str(error).strip().splitlines() or [""])[0][:300]
    kind = type(error)
    return {
        "stage": stage,
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "message": message,
        "where": _innermost_frame(error),
    }


def _inputs(loaded, rng: np.random.Generator) -> list[np.ndarray] | None:
    specs = loaded.input_specs
    total = sum(getattr(spec, "nbytes", 0) for spec in specs)
    if total > MAX_INPUT_BYTES:
        return None
    arrays = []
    for spec in specs:
        dtype = spec.numpy_dtype
        if rng.random() < 0.5 or dtype.kind not in "biuf":
            arrays.append(np.zeros(spec.shape, dtype))
        elif dtype.kind == "b":
            arrays.append(rng.random(spec.shape) < 0.5)
        elif dtype.kind in "iu":
            arrays.append(rng.integers(0, 4, spec.shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(spec.shape).astype(dtype))
    return arrays


def run_api(data: bytes, stage: Stage, rng: np.random.Generator, forbidden: bool) -> dict:
    """read -> describe -> load -> execute -> unload; the outcome dict."""
    from torchneuron.runtime import load_neff

    leak: dict | None = None
    current = "read"
    stage(current)
    try:
        neff = read_neff(data)
    except REFUSALS["read"]:
        return {"outcome": "refused", "stage": "read"}
    except Exception as error:
        return {"outcome": "leak", **leak_detail(current, error)}
    current = "describe"
    stage(current)
    try:
        describe(neff)
    except REFUSALS["describe"]:
        pass  # describe may refuse what the reader let through; load decides the outcome
    except Exception as error:
        leak = leak_detail(current, error)
    current = "load"
    stage(current)
    try:
        loaded = load_neff(neff)
    except REFUSALS["load"]:
        return {"outcome": "leak", **leak} if leak else {"outcome": "refused", "stage": "load"}
    except Exception as error:
        return {"outcome": "leak", **(leak or leak_detail(current, error))}
    try:
        inputs = _inputs(loaded, rng)
        if forbidden:
            stage("execute")
            return {"outcome": "forbidden-executed", "stage": "execute"}
        if inputs is not None:
            current = "execute"
            stage(current)
            try:
                loaded.execute(inputs)
            except RAN_ANYWAY["execute"]:
                pass
            except REFUSALS["execute"]:
                if not leak:
                    return {"outcome": "refused", "stage": "execute"}
            except Exception as error:
                leak = leak or leak_detail(current, error)
    finally:
        current = "unload"
        stage(current)
        loaded.unload()
    return {"outcome": "leak", **leak} if leak else {"outcome": "ran", "stage": "execute"}


def _cli(argv: list[str]) -> tuple[int, str]:
    from torchneuron.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(argv)
    return status, stderr.getvalue()


def run_cli(data: bytes, stage: Stage, forbidden: bool) -> dict | None:
    """``neuronc inspect`` and ``neuronc run`` on the case; None when both behaved (ran or
    refused with one error line), else the failure's outcome dict."""
    with tempfile.TemporaryDirectory(prefix="neff-fuzz-") as folder:
        path = Path(folder) / "case.neff"
        path.write_bytes(data)
        for name in CLI_STAGES:
            stage(name)
            argv = ["inspect", str(path)] if name == "cli-inspect" else _run_argv(path, data)
            try:
                status, errors = _cli(argv)
            except SystemExit as exit_:
                status, errors = exit_.code, f"SystemExit({exit_.code})"
            except Exception as error:
                return {"outcome": "leak", **leak_detail(name, error)}
            lines = errors.strip().splitlines()
            if status == 0:
                if name == "cli-run" and forbidden:
                    return {"outcome": "forbidden-executed", "stage": name}
                continue
            if len(lines) != 1 or not lines[0].startswith("neuronc: error: ") or not lines[0][16:]:
                return {
                    "outcome": "leak",
                    "stage": name,
                    "type": "cli-message",
                    "message": f"exit {status}, stderr {errors.strip()[:200]!r}",
                    "where": "torchneuron/cli",
                }
    return None


def _run_argv(path: Path, data: bytes) -> list[str]:
    """``neuronc run`` with zero inputs as the manifest's signature asks (best effort: a
    malformed signature is for neuronc to report)."""
    argv = ["run", str(path)]
    try:
        signature = read_neff(data).manifest["signature"]["inputs"]
        from torchneuron.target.dtypes import numpy_dtype

        for spec in signature:
            array = np.zeros(spec["shape"], numpy_dtype(spec["dtype"], "input"))
            if array.nbytes > MAX_INPUT_BYTES:
                return argv
            file = path.with_name(f"in-{spec['name']}.npy")
            np.save(file, array, allow_pickle=False)
            argv += ["--input", f"{spec['name']}={file}"]
    except Exception:  # noqa: BLE001 - a signature we cannot follow: run without inputs
        return ["run", str(path)]
    return argv


def run_case(
    data: bytes,
    *,
    forbidden: bool = False,
    cli: bool = False,
    hook: str | None = None,
    stage: Stage = lambda name: None,
    input_seed: int = 0,
) -> dict:
    """The outcome of one case, as a dict: ``outcome``, ``stage`` and for a leak ``type``,
    ``message``, ``where``; ``seconds``."""
    start = time.perf_counter()
    if hook == "abort":
        stage("read")
        os.abort()
    if hook == "hang":
        stage("read")
        while True:
            time.sleep(1)
    if hook == "leak":
        stage("read")
        try:
            raise InjectedFault("injected by the test-leak mutator")
        except InjectedFault as error:
            return {"outcome": "leak", **leak_detail("read", error), "seconds": 0.0}
    result = run_api(data, stage, np.random.default_rng(input_seed), forbidden)
    if cli and result["outcome"] in ("refused", "ran"):
        failure = run_cli(data, stage, forbidden)
        if failure is not None:
            result = failure
    result["seconds"] = time.perf_counter() - start
    return result
