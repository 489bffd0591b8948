"""The program verifier's child process: parse, check and re-serialize untrusted programs.

Run by ``runtime/verifier.py`` as a script, by path (``python -P verifier_child.py``),
never imported: it uses only the standard library, torch-mlir's MLIR bindings (``ir``
and ``_stablehlo``) and ``torchneuron/loop_bound.py`` (loaded by its path; it imports
nothing), so it starts in about a third of a second and a crash in the MLIR bytecode
reader kills this process, not the user's.

Protocol over stdin/stdout, every frame an 8-byte big-endian length and its bytes:

- first, one JSON frame of configuration from the parent (the allowlist tables of
  ``verifier_allowlist.py``, the largest value in bytes, the executor's StableHLO
  version (programs are written at the lower of it and torch-mlir's), the
  per-request memory and CPU budgets);
- then, per request: a JSON frame ``{"label": ...}`` and a frame of program bytes; the
  answer is a JSON frame, ``{"ok": true, "arguments": [[shape, element type], ...],
  "results": [...]}`` followed by a frame of the canonical program bytes, or
  ``{"ok": false, "reason": "<one line>"}``.

EOF on stdin ends the process. Each request runs under a soft address-space limit
(what the process holds now plus a budget that grows with the program's size) and a
CPU-time limit (the CPU seconds used so far plus a budget): past them the kernel ends
the process (SIGXCPU) or an allocation fails, and the parent reports the program as
one it could not verify.
"""

from __future__ import annotations

import importlib.util
import json
import math
import resource
import struct
import sys
from pathlib import Path

_LENGTH = struct.Struct(">Q")


def _loop_bound():
    """``torchneuron/loop_bound.py``, loaded by its path: the proof of a loop's trip count
    the compiler and the cost model use too (it imports nothing)."""
    path = Path(__file__).resolve().parent.parent / "loop_bound.py"
    spec = importlib.util.spec_from_file_location("torchneuron_loop_bound", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOOP_BOUND = _loop_bound()
MLIR_BYTECODE_MAGIC = b"ML\xefR"
FUNC_ATTRIBUTES = frozenset(
    {"sym_name", "function_type", "sym_visibility", "arg_attrs", "res_attrs"}
)
MODULE_ATTRIBUTES = frozenset({"sym_name"})


class Refused(Exception):
    """The program is not one the runtime runs; the message is the one-line reason."""


def read_exact(stream, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(stream) -> bytes | None:
    header = read_exact(stream, _LENGTH.size)
    if header is None:
        return None
    return read_exact(stream, _LENGTH.unpack(header)[0])


def write_frame(stream, payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)))
    stream.write(payload)


def one_line(text: str, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class ProgramChecker:
    """Checks one parsed module against the configuration's allowlist and bounds."""

    def __init__(self, config: dict, ir) -> None:
        self.ir = ir
        self.allowed_ops = frozenset(config["allowed_ops"])
        self.excluded_ops = dict(config["excluded_ops"])
        self.allowed_targets = frozenset(config["allowed_custom_call_targets"])
        self.allowed_attributes = frozenset(config["allowed_discardable_attributes"])
        self.max_value_bytes = int(config["max_value_bytes"])
        self.max_loop_trips = int(config["max_loop_trips"])
        self._checked_types: set = set()
        self.modules = 0
        self.refusal: str | None = None

    def refused_ops(self, module) -> str | None:
        """The refusal for the ops outside the allowlist, all named, or None."""
        found: dict[str, str] = {}

        def visit(op):
            operation = op.operation
            name = operation.name
            if name in self.allowed_ops:
                return self.ir.WalkResult.ADVANCE
            if name == "stablehlo.custom_call":
                attribute = operation.attributes["call_target_name"]
                target = self.ir.StringAttr(attribute).value
                if target in self.allowed_targets:
                    return self.ir.WalkResult.ADVANCE
                name = f"stablehlo.custom_call @{target[:100]}"
            found.setdefault(name, operation.name)
            return self.ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        if not found:
            return None
        # Name every refused op; give the reason of the most telling one (the order of
        # EXCLUDED_OPS: host calls and transfers first), or say it is not ours.
        rank = {name: position for position, name in enumerate(self.excluded_ops)}
        names = sorted(found, key=lambda shown: (rank.get(found[shown], len(rank)), shown))
        first = found[names[0]]
        reason = self.excluded_ops.get(first, "it is not an op our compiler emits")
        listed = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        if len(names) == 1:
            return f"the program uses {listed}, which the runtime refuses: {reason}"
        return f"the program uses {listed}, which the runtime refuses ({names[0]}: {reason})"

    def visit(self, op):
        try:
            self.check_operation(op.operation)
        except Refused as refusal:
            self.refusal = str(refusal)
            return self.ir.WalkResult.INTERRUPT
        return self.ir.WalkResult.ADVANCE

    def check_operation(self, operation) -> None:
        """Everything but the op's name (``refused_ops`` checked that)."""
        name = operation.name
        if name == "builtin.module":
            self.modules += 1
            if self.modules > 1 or operation.parent is not None:
                raise Refused("the program nests a builtin.module inside another")
        for attribute in operation.attributes:
            attribute_name = attribute if isinstance(attribute, str) else attribute.name
            self.check_attribute(operation, name, attribute_name)
        if name == "func.func" and len(operation.regions[0].blocks) == 0:
            raise Refused("the program declares an external function (a func.func without a body)")
        if name == "stablehlo.while":
            self.check_loop(operation)
        for result in operation.results:
            self.check_type(result.type, f"a result of {name}")
        for region in operation.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    self.check_type(argument.type, f"a block argument in {name}")

    def check_loop(self, operation) -> None:
        """A ``stablehlo.while`` runs only if its trip count is proved, and the iterations
        of its body, times those of the loops around it, are at most ``max_loop_trips``."""
        try:
            total = LOOP_BOUND.loop_iterations(operation, self.ir)
        except LOOP_BOUND.UncountedLoop as refusal:
            raise Refused(str(refusal)) from None
        if total > self.max_loop_trips:
            raise Refused(
                f"a stablehlo.while runs its body {total} times (with the loops around it), "
                f"more than the {self.max_loop_trips} the runtime allows"
            )

    def check_attribute(self, operation, op_name: str, attribute_name: str) -> None:
        if "." in attribute_name:
            if attribute_name not in self.allowed_attributes:
                raise Refused(
                    f"{op_name} carries the attribute {attribute_name}, which the runtime refuses "
                    "(XLA may read such attributes as instructions; our compiler writes none)"
                )
        elif op_name == "func.func":
            if attribute_name not in FUNC_ATTRIBUTES:
                raise Refused(f"func.func carries the attribute {attribute_name}, which it may not")
            if attribute_name in ("arg_attrs", "res_attrs"):
                for entry in self.ir.ArrayAttr(operation.attributes[attribute_name]):
                    if len(self.ir.DictAttr(entry)) != 0:
                        raise Refused(
                            f"func.func carries {attribute_name} {one_line(str(entry), 120)}, "
                            "which the runtime refuses (our compiler writes none)"
                        )
        elif op_name == "builtin.module" and attribute_name not in MODULE_ATTRIBUTES:
            raise Refused(
                f"builtin.module carries the attribute {attribute_name}, which it may not"
            )

    def check_type(self, mlir_type, where: str) -> None:
        if mlir_type in self._checked_types:
            return
        ir = self.ir
        try:
            ranked = ir.RankedTensorType(mlir_type)
        except ValueError:
            raise Refused(f"{where} has type {mlir_type}, not a ranked tensor") from None
        if not ranked.has_static_shape:
            raise Refused(f"{where} has type {mlir_type}, with a dynamic dimension")
        if ranked.encoding is not None:
            raise Refused(f"{where} has type {mlir_type}, with an encoding")
        element = ranked.element_type
        if isinstance(element, ir.ComplexType):
            inner = element.element_type
            bits = 2 * inner.width if isinstance(inner, ir.FloatType) else 0
        elif isinstance(element, (ir.IntegerType, ir.FloatType)):
            bits = element.width
        else:
            bits = 0
        if bits <= 0:
            raise Refused(f"{where} has type {mlir_type}, whose element type the runtime lacks")
        size = math.prod(ranked.shape) * max(8, bits) // 8
        if size > self.max_value_bytes:
            raise Refused(
                f"{where} has type {mlir_type}: {size} bytes, more than the "
                f"{self.max_value_bytes} bytes of HBM of the largest core"
            )
        self._checked_types.add(mlir_type)

    def signature(self, module) -> dict:
        ir = self.ir
        mains = [
            op.operation
            for op in module.body.operations
            if op.operation.name == "func.func"
            and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main"
        ]
        if len(mains) != 1:
            raise Refused("the program has no func.func @main")
        function_type = ir.FunctionType(ir.TypeAttr(mains[0].attributes["function_type"]).value)

        def described(types) -> list:
            return [
                [list(ir.RankedTensorType(t).shape), str(ir.RankedTensorType(t).element_type)]
                for t in types
            ]

        return {
            "arguments": described(function_type.inputs),
            "results": described(function_type.results),
        }


def verify(program: bytes, config: dict, ir, stablehlo) -> tuple[dict, bytes]:
    # config["version"]: the lower of the executor's version and ours, set by main().
    """(signature, canonical bytes) of a program the runtime may run; Refused if not."""
    # dialects load when the program names them (torchneuron/mlir_context.py: this file
    # imports nothing of ours); loading all of them cost ~24 ms a request
    with ir.Context(load_on_create_dialects=[]) as context:
        context.enable_multithreading(False)
        stablehlo.register_dialect(context)
        try:
            if program[:4] == MLIR_BYTECODE_MAGIC:
                module = stablehlo.deserialize_portable_artifact(context, program)
            else:
                module = ir.Module.parse(program.decode("utf-8"))
        except Exception as error:  # the bindings raise several types for malformed input
            raise Refused(
                "the program is neither a readable StableHLO portable artifact nor MLIR text: "
                + one_line(str(error) or type(error).__name__)
            ) from None
        try:
            module.operation.verify()
        except Exception as error:
            raise Refused("the program is not valid MLIR: " + one_line(str(error))) from None
        checker = ProgramChecker(config, ir)
        refusal = checker.refused_ops(module)
        if refusal is not None:
            raise Refused(refusal)
        module.operation.walk(checker.visit)
        if checker.refusal is not None:
            raise Refused(checker.refusal)
        signature = checker.signature(module)
        try:
            canonical = stablehlo.serialize_portable_artifact(module, config["version"])
        except Exception as error:
            raise Refused(
                f"the program cannot be written as a StableHLO {config['version']} portable "
                "artifact: " + one_line(str(error))
            ) from None
    return signature, bytes(canonical)


def _address_space_in_use() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _limit(kind: int, soft: int) -> None:
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(kind, (soft, hard))
    except (ValueError, OSError):
        pass  # a platform without this limit: the parent's timeout still applies


def limit_request(config: dict, program_size: int) -> None:
    """Bound this request's memory and CPU time (soft limits, raised again next time)."""
    budget = int(config["memory_base_bytes"]) + int(config["memory_per_program_byte"]) * (
        program_size
    )
    in_use = _address_space_in_use()
    if in_use:
        _limit(resource.RLIMIT_AS, in_use + budget)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    _limit(resource.RLIMIT_CPU, math.ceil(used + float(config["cpu_seconds"])))


def main() -> int:
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    # stdout carries frames only: anything printed by accident goes to stderr instead.
    sys.stdout = sys.stderr
    configuration = read_frame(requests)
    if configuration is None:
        return 0
    config = json.loads(configuration)
    from torch_mlir import ir
    from torch_mlir._mlir_libs import _stablehlo

    config["version"] = _stablehlo.get_smaller_version(
        _stablehlo.get_current_version(), config["executor_version"]
    )
    while True:
        header = read_frame(requests)
        program = read_frame(requests) if header is not None else None
        if program is None:
            return 0
        limit_request(config, len(program))
        try:
            signature, canonical = verify(program, config, ir, _stablehlo)
        except Refused as refusal:
            write_frame(answers, json.dumps({"ok": False, "reason": str(refusal)}).encode())
        except MemoryError:
            reason = "the program made the verifier run out of memory"
            write_frame(answers, json.dumps({"ok": False, "reason": reason}).encode())
        except Exception as error:  # a program the checks above did not foresee
            reason = f"the verifier could not check the program: {type(error).__name__}: "
            reason += one_line(str(error), 200)
            write_frame(answers, json.dumps({"ok": False, "reason": reason}).encode())
        else:
            write_frame(answers, json.dumps({"ok": True, **signature}).encode())
            write_frame(answers, canonical)
        answers.flush()


if __name__ == "__main__":
    sys.exit(main())
