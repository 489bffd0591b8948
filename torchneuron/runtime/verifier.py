"""The program verifier: a NEFF's program bytes are parsed only in a child process.

A NEFF's ``sg00/program.mlirbc`` comes from whoever wrote the file. The MLIR bytecode
reader is not hardened against malformed input (one changed byte can make it segfault,
abort or loop forever), and a well-formed program may call host code through
``stablehlo.custom_call``. So before anything executes:

1. ``verified_program(program, label)`` sends untrusted bytes to a long-lived child
   process (``verifier_child.py``: the standard library and torch-mlir's MLIR bindings,
   no torch, no XLA), started on first need, reused, and restarted after it dies. The
   child runs under an address-space and a CPU-time limit; the parent waits at most
   ``VerifierProcess.timeout_for(size)`` seconds for each answer and kills it after.
2. The child parses the program (portable artifact or MLIR text), runs the MLIR
   verifier, walks every operation (nested regions included) against the allowlist of
   ``verifier_allowlist.py``, checks that every value is a static tensor no larger than
   the largest core's HBM, reads @main's signature, and writes the module again with
   our own serializer. XLA only ever parses those canonical bytes, never a stranger's.
3. Any refusal (a reason from the child, its crash, a timeout, a malformed answer) is
   a ``ProgramRefusedError``: a ``NeffError`` (and, for callers of the loader, a
   ``NeuronRuntimeError``) with one line naming the NEFF and the reason.

Trust: bytes that our compiler serialized in this process (``trust_program``, called by
``compiler/program.py``) are read in-process, as before; a program verified once is
remembered by the sha256 of its bytes for the rest of the process. Nothing is trusted
because a file says so.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchneuron.lru import LRU
from torchneuron.runtime.errors import InvalidNeffError, NeuronRuntimeError
from torchneuron.runtime.program import ProgramSignature, TensorType, program_signature
from torchneuron.runtime.verifier_allowlist import (
    ALLOWED_CUSTOM_CALL_TARGETS,
    ALLOWED_DISCARDABLE_ATTRIBUTES,
    ALLOWED_OPS,
    EXCLUDED_OPS,
    MAX_LOOP_TRIPS,
)
from torchneuron.target.dtypes import NEFF_DTYPES, from_mlir
from torchneuron.target.hardware import CHIPS

CHILD_SCRIPT = Path(__file__).with_name("verifier_child.py")
_LENGTH = struct.Struct(">Q")

# Seconds an answer may take: a base, plus more per MiB of program (the child parses,
# prints nothing, and writes the program once: about 0.1 s per MiB measured).
TIMEOUT_BASE_S = 20.0
TIMEOUT_PER_MIB_S = 2.0
# Extra seconds for the request that starts the child (it imports the MLIR bindings).
START_TIMEOUT_S = 30.0
# The child's address space may grow by this much per request (parsed module, the
# written copy): a base plus a multiple of the program's size.
MEMORY_BASE_BYTES = 2 << 30
MEMORY_PER_PROGRAM_BYTE = 32
# The canonical program the child sends back may be at most this much larger.
ANSWER_BASE_BYTES = 1 << 20
ANSWER_PER_PROGRAM_BYTE = 16

TRUSTED_CAPACITY = 1 << 16
VERIFIED_CAPACITY = 512


class ProgramRefusedError(InvalidNeffError):
    """A NEFF's program could not be verified, or is not one the runtime runs."""


@dataclass(frozen=True)
class VerifiedProgram:
    """A program the runtime may compile: ``program`` is what XLA gets."""

    program: bytes
    signature: ProgramSignature
    checked_in_child: bool


def largest_value_bytes() -> int:
    """The HBM of the largest logical core we emulate: no single value may be larger."""
    return max(chip.hbm_bytes_per_logical_core(max(chip.supported_lnc)) for chip in CHIPS.values())


@functools.lru_cache(maxsize=1)
def executor_stablehlo_version() -> str:
    """The newest StableHLO version the executor's jaxlib reads. The child writes
    canonical programs at the lower of this and its torch-mlir's own version (what
    ``compiler/versions.stablehlo_target_version`` computes), so the parent needs no
    torch-mlir of its own."""
    from jaxlib.mlir._mlir_libs import _stablehlo as executor_side

    return executor_side.get_current_version()


def child_configuration() -> dict:
    return {
        "allowed_ops": sorted(ALLOWED_OPS),
        "excluded_ops": EXCLUDED_OPS,
        "allowed_custom_call_targets": sorted(ALLOWED_CUSTOM_CALL_TARGETS),
        "allowed_discardable_attributes": sorted(ALLOWED_DISCARDABLE_ATTRIBUTES),
        "max_value_bytes": largest_value_bytes(),
        "max_loop_trips": MAX_LOOP_TRIPS,
        "executor_version": executor_stablehlo_version(),
        "memory_base_bytes": MEMORY_BASE_BYTES,
        "memory_per_program_byte": MEMORY_PER_PROGRAM_BYTE,
        "cpu_seconds": TIMEOUT_BASE_S,
    }


class _ChildGone(Exception):
    """The child closed its pipe, died, or sent what is not an answer."""


class _TimedOut(Exception):
    pass


class VerifierProcess:
    """The child process that verifies programs, one request at a time.

    ``command`` replaces the child's command line (tests use it to stand in a child
    that hangs or crashes); ``starts`` counts the children started.
    """

    def __init__(self, command: Sequence[str] | None = None, timeout_s: float | None = None):
        self.command = list(command) if command is not None else None
        self.timeout_base_s = TIMEOUT_BASE_S if timeout_s is None else timeout_s
        self.start_timeout_s = START_TIMEOUT_S if timeout_s is None else timeout_s
        self.starts = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._owner_pid = 0
        self._stderr = None
        self._fresh = False
        self._exit_hook = False

    def timeout_for(self, size: int) -> float:
        return self.timeout_base_s + TIMEOUT_PER_MIB_S * size / (1 << 20)

    # -- the child's life ---------------------------------------------------------

    def _command(self) -> list[str]:
        if self.command is not None:
            return self.command
        # -P: the script's folder (runtime/, with modules named like the standard
        # library's) stays off sys.path.
        return [sys.executable, "-P", str(CHILD_SCRIPT)]

    def _running(self) -> subprocess.Popen:
        if self._owner_pid != os.getpid():
            # A forked copy of this object: the child belongs to the parent process.
            self._process, self._stderr = None, None
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            self._command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            close_fds=True,
            start_new_session=True,  # the terminal's Ctrl-C is for the parent
        )
        self._owner_pid = os.getpid()
        self.starts += 1
        self._fresh = True
        os.set_blocking(self._process.stdin.fileno(), False)
        os.set_blocking(self._process.stdout.fileno(), False)
        if not self._exit_hook:
            atexit.register(self.close)
            self._exit_hook = True
        configuration = json.dumps(child_configuration()).encode()
        self._pending_configuration = _LENGTH.pack(len(configuration)) + configuration
        return self._process

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and self._owner_pid == os.getpid():
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            if process.poll() is None:
                process.kill()
            process.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def start(self) -> None:
        """Start the child now if none runs: it loads its bindings while the caller works."""
        with self._lock:
            self._running()

    def close(self) -> None:
        """End the child (it is started again on the next request)."""
        with self._lock:
            self._stop()

    # -- one request ----------------------------------------------------------------

    def verify(self, program: bytes, label: str) -> tuple[dict, bytes]:
        """(signature, canonical bytes) from the child; ProgramRefusedError if refused."""
        with self._lock:
            process = self._running()
            timeout = self.timeout_for(len(program))
            deadline = time.monotonic() + timeout + (self.start_timeout_s if self._fresh else 0)
            stderr_mark = self._stderr.seek(0, os.SEEK_END)
            self.requests += 1
            header = json.dumps({"label": label}).encode()
            request = b"".join(
                [
                    self._pending_configuration if self._fresh else b"",
                    _LENGTH.pack(len(header)),
                    header,
                    _LENGTH.pack(len(program)),
                    bytes(program),
                ]
            )
            try:
                with selectors.DefaultSelector() as selector:
                    self._send(process, selector, request, deadline)
                    answer = self._answer(process, selector, len(program), deadline)
                self._fresh = False
            except _TimedOut:
                self._stop()
                reason = f"verifying the program took more than {round(timeout, 1):g} s"
            except _ChildGone as gone:
                reason = self._death_reason(process, stderr_mark, str(gone))
                self._stop()
            else:
                if answer[0].get("ok"):
                    return answer
                raise ProgramRefusedError(f"{label}: {answer[0]['reason']}")
        raise ProgramRefusedError(f"{label}: the program could not be verified: {reason}")

    def _send(self, process, selector, data: bytes, deadline: float) -> None:
        fd = process.stdin.fileno()
        selector.register(fd, selectors.EVENT_WRITE)
        view = memoryview(data)
        try:
            while view:
                if not selector.select(_remaining(deadline)):
                    raise _TimedOut
                try:
                    written = os.write(fd, view[: 1 << 20])
                except BlockingIOError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    raise _ChildGone("it closed its input") from None
                view = view[written:]
        finally:
            selector.unregister(fd)

    def _answer(self, process, selector, program_size: int, deadline: float) -> tuple[dict, bytes]:
        fd = process.stdout.fileno()
        selector.register(fd, selectors.EVENT_READ)
        try:
            buffer = bytearray()
            header = self._frame(fd, selector, buffer, ANSWER_BASE_BYTES, deadline)
            try:
                reply = json.loads(header)
            except ValueError:
                raise _ChildGone("its answer was not JSON") from None
            if not isinstance(reply, dict):
                raise _ChildGone("its answer was not an object")
            if not reply.get("ok"):
                if not isinstance(reply.get("reason"), str):
                    raise _ChildGone("its refusal gave no reason")
                return reply, b""
            limit = ANSWER_BASE_BYTES + ANSWER_PER_PROGRAM_BYTE * program_size
            canonical = self._frame(fd, selector, buffer, limit, deadline)
            return reply, bytes(canonical)
        finally:
            selector.unregister(fd)

    def _frame(self, fd, selector, buffer: bytearray, limit: int, deadline: float) -> bytes:
        self._fill(fd, selector, buffer, _LENGTH.size, deadline)
        (size,) = _LENGTH.unpack(buffer[: _LENGTH.size])
        if size > limit:
            raise _ChildGone(f"its answer was larger than {limit} bytes")
        self._fill(fd, selector, buffer, _LENGTH.size + size, deadline)
        frame = bytes(buffer[_LENGTH.size : _LENGTH.size + size])
        del buffer[: _LENGTH.size + size]
        return frame

    def _fill(self, fd, selector, buffer: bytearray, size: int, deadline: float) -> None:
        while len(buffer) < size:
            if not selector.select(_remaining(deadline)):
                raise _TimedOut
            try:
                chunk = os.read(fd, max(size - len(buffer), 1 << 16))
            except BlockingIOError:
                continue
            if not chunk:
                raise _ChildGone("it ended without answering")
            buffer += chunk

    def _death_reason(self, process, stderr_mark: int, what: str) -> str:
        try:
            returncode = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return f"the verifier stopped answering ({what})"
        last = self._last_stderr_line(stderr_mark)
        detail = f": {last}" if last else ""
        if returncode < 0:
            number = -returncode
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            if number == getattr(signal, "SIGXCPU", None):
                return f"verifying the program used more than its CPU time ({name}){detail}"
            return f"the program crashed the verifier ({name}{detail})"
        if returncode == 0:
            return f"the verifier ended without answering ({what})"
        return f"the verifier ended with exit status {returncode}{detail}"

    def _last_stderr_line(self, mark: int) -> str:
        if self._stderr is None:
            return ""
        end = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(mark, end - 4096))
        text = self._stderr.read().decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            return ""
        last = " ".join(lines[-1].split())
        return last if len(last) <= 200 else last[:197] + "..."


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


# -- trust and the process-wide cache ------------------------------------------------

VERIFIER = VerifierProcess()
# sha256 -> @main's signature as our serializer knew it (None: parsed when needed)
_TRUSTED: LRU[str, ProgramSignature | None] = LRU(TRUSTED_CAPACITY)
_VERIFIED: LRU[str, VerifiedProgram] = LRU(VERIFIED_CAPACITY)


def trust_program(program: bytes, signature: ProgramSignature | None = None) -> None:
    """Mark bytes our own serializer wrote in this process: they are read in-process.
    ``signature``: @main's types, as the serializer read them from the module it wrote
    (then the runtime does not parse the bytes again to learn them)."""
    _TRUSTED.put(hashlib.sha256(program).hexdigest(), signature)


def clear_verified_programs() -> None:
    """Forget what was verified and trusted in this process (tests)."""
    _TRUSTED.clear()
    _VERIFIED.clear()


def verifier_info() -> dict[str, int]:
    """Children started, requests sent, and programs remembered in this process."""
    return {
        "starts": VERIFIER.starts,
        "requests": VERIFIER.requests,
        "verified": len(_VERIFIED),
        "trusted": len(_TRUSTED),
    }


def verified_program(program: bytes, label: str) -> VerifiedProgram:
    """The program XLA may compile, and its signature; ProgramRefusedError if refused."""
    digest = hashlib.sha256(program).hexdigest()
    known = _VERIFIED.get(digest)
    if known is not None:
        return known
    if digest in _TRUSTED:
        signature = _TRUSTED.get(digest)
        if signature is None:  # the serializer could not say: read it from the bytes
            try:
                signature = program_signature(program, label)
            except NeuronRuntimeError as error:
                raise ProgramRefusedError(str(error)) from None
        verified = VerifiedProgram(bytes(program), signature, checked_in_child=False)
    else:
        reply, canonical = VERIFIER.verify(bytes(program), label)
        signature = ProgramSignature(
            _tensor_types(reply.get("arguments"), f"{label}: @main argument"),
            _tensor_types(reply.get("results"), f"{label}: @main result"),
        )
        verified = VerifiedProgram(canonical, signature, checked_in_child=True)
    _VERIFIED.put(digest, verified)
    return verified


def _tensor_types(described, where: str) -> tuple[TensorType, ...]:
    if not isinstance(described, list):
        raise ProgramRefusedError(f"{where}s: the verifier's answer was malformed")
    types = []
    for position, entry in enumerate(described):
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not isinstance(entry[0], list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in entry[0])
            or not isinstance(entry[1], str)
        ):
            raise ProgramRefusedError(f"{where} {position}: the verifier's answer was malformed")
        shape, element = entry
        row = from_mlir(element)
        if row is None or not row.in_neff:
            raise ProgramRefusedError(
                f"{where} {position} has element type {element}, which the runtime does not "
                f"support (supported: {', '.join(sorted(r.mlir for r in NEFF_DTYPES.values()))})"
            )
        types.append(TensorType(tuple(shape), row.name))
    return tuple(types)
