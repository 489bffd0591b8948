"""The program verifier: untrusted programs are parsed in a child process, checked
against the allowlist and re-serialized; refusals are NeffError with one line."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from torchneuron.neff import Neff, NeffError, read_neff, write_neff
from torchneuron.runtime import clear_executable_cache, load_neff, verifier
from torchneuron.runtime.verifier import VerifierProcess

from .conftest import binary_neff, portable_artifact, signature, tensor_type, variable

F32_2x2 = tensor_type([2, 2], "float32")
LAPACK_PROGRAM = f"""
func.func @main(%x: {F32_2x2}) -> {F32_2x2} {{
  %0 = stablehlo.custom_call @lapack_sgetrf_ffi(%x) : ({F32_2x2}) -> {F32_2x2}
  return %0 : {F32_2x2}
}}
"""
INFEED_PROGRAM = f"""
func.func @main(%x: {F32_2x2}) -> {F32_2x2} {{
  %t = stablehlo.create_token : !stablehlo.token
  %0:2 = "stablehlo.infeed"(%t) {{infeed_config = ""}} : (!stablehlo.token) -> ({F32_2x2}, !stablehlo.token)
  return %0#0 : {F32_2x2}
}}
"""
OUTFEED_PROGRAM = f"""
func.func @main(%x: {F32_2x2}) -> {F32_2x2} {{
  %t = stablehlo.create_token : !stablehlo.token
  %0 = "stablehlo.outfeed"(%x, %t) {{outfeed_config = ""}} : ({F32_2x2}, !stablehlo.token) -> !stablehlo.token
  return %x : {F32_2x2}
}}
"""
ALIASING_PROGRAM = f"""
func.func @main(%x: {F32_2x2} {{tf.aliasing_output = 0 : i32}}) -> {F32_2x2} {{
  %0 = stablehlo.add %x, %x : {F32_2x2}
  return %0 : {F32_2x2}
}}
"""
HUGE_CONSTANT_PROGRAM = f"""
func.func @main(%x: {F32_2x2}) -> {F32_2x2} {{
  %0 = stablehlo.constant dense<0.0> : tensor<100000000000xf32>
  return %x : {F32_2x2}
}}
"""


@pytest.fixture(autouse=True)
def fresh_verification(monkeypatch, tmp_path):
    """Every test starts with nothing verified, trusted or compiled in this process, nor
    in the disk cache (an executable found there is not verified again)."""
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    verifier.clear_verified_programs()
    clear_executable_cache()
    yield
    verifier.clear_verified_programs()


@pytest.fixture
def own_verifier(monkeypatch):
    """A verifier process of this test's own, so its starts and requests can be counted."""
    process = VerifierProcess()
    monkeypatch.setattr(verifier, "VERIFIER", process)
    yield process
    process.close()


def neff_file(tmp_path, name: str, program: bytes) -> str:
    """A real .neff file: a 2x2 float32 input x, one output, and ``program``."""
    variables = [
        variable("x", "input", [2, 2], "float32"),
        variable("out", "output", [2, 2], "float32"),
    ]
    neff = Neff(
        name=name,
        manifest={"target": "trn2", "lnc": 2, "name": name, "signature": signature(variables)},
        definition={"variables": variables},
        program=program,
        weights={},
        lnc_size=2,
    )
    path = tmp_path / f"{name}.neff"
    path.write_bytes(write_neff(neff))
    return str(path)


def test_valid_program_is_verified_in_the_child_and_runs_the_same(own_verifier):
    neff = binary_neff("add", "float32")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    (out,) = load_neff(neff).execute([x, y])
    np.testing.assert_array_equal(out, x + y)
    assert own_verifier.starts == 1 and own_verifier.requests == 1
    verified = verifier.verified_program(neff.program, "again")
    assert verified.checked_in_child
    assert own_verifier.requests == 1  # remembered by its sha256


def test_custom_call_to_lapack_is_refused_naming_op_and_target(tmp_path, own_verifier):
    path = neff_file(tmp_path, "lapack", portable_artifact(LAPACK_PROGRAM))
    with pytest.raises(NeffError, match="stablehlo.custom_call @lapack_sgetrf_ffi") as refused:
        load_neff(path)
    assert "\n" not in str(refused.value)
    assert str(refused.value).startswith("NEFF 'lapack': the program uses")


@pytest.mark.parametrize(
    ("program", "op"),
    [(INFEED_PROGRAM, "stablehlo.infeed"), (OUTFEED_PROGRAM, "stablehlo.outfeed")],
)
def test_host_transfers_are_refused(tmp_path, own_verifier, program, op):
    path = neff_file(tmp_path, "feed", portable_artifact(program))
    with pytest.raises(NeffError, match=rf"uses {op}, .*\({op}: it moves data .* the host"):
        load_neff(path)


def test_null_executor_refuses_through_the_same_verifier(tmp_path, own_verifier):
    path = neff_file(tmp_path, "lapack", portable_artifact(LAPACK_PROGRAM))
    with pytest.raises(NeffError, match="stablehlo.custom_call @lapack_sgetrf_ffi"):
        load_neff(path, executor="null")
    assert own_verifier.requests == 1


def test_mlir_text_program_with_a_custom_call_is_refused(tmp_path, own_verifier):
    path = neff_file(tmp_path, "text", LAPACK_PROGRAM.encode())
    with pytest.raises(NeffError, match="stablehlo.custom_call @lapack_sgetrf_ffi"):
        load_neff(path)


def test_buffer_donation_and_oversized_values_are_refused(own_verifier):
    with pytest.raises(NeffError, match="func.func carries arg_attrs .*tf.aliasing_output"):
        verifier.verified_program(portable_artifact(ALIASING_PROGRAM), "NEFF 'alias'")
    with pytest.raises(NeffError, match=r"tensor<100000000000xf32>: 400000000000 bytes, more"):
        verifier.verified_program(portable_artifact(HUGE_CONSTANT_PROGRAM), "NEFF 'huge'")


def test_program_our_compiler_serialized_starts_no_child(tmp_path, own_verifier):
    from torch_mlir import ir
    from torch_mlir._mlir_libs import _stablehlo

    from torchneuron.compiler.program import portable_artifact as compiler_artifact

    text = f"func.func @main(%x: {F32_2x2}) -> {F32_2x2} {{\n  return %x : {F32_2x2}\n}}"
    with ir.Context() as context:
        _stablehlo.register_dialect(context)
        program = compiler_artifact(ir.Module.parse(text))
    loaded = load_neff(neff_file(tmp_path, "ours", program))
    x = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(loaded.execute([x])[0], x)
    assert own_verifier.starts == 0 and own_verifier.requests == 0


def test_the_signature_our_serializer_records_is_the_one_the_bytes_hold(own_verifier):
    from torch_mlir import ir
    from torch_mlir._mlir_libs import _stablehlo

    from torchneuron.compiler.program import portable_artifact as compiler_artifact
    from torchneuron.runtime.program import program_signature

    i8, bf16 = "tensor<3xi8>", "tensor<2x1x4xbf16>"
    text = (
        f"func.func @main(%x: {F32_2x2}, %y: {i8}, %z: {bf16}) -> ({bf16}, {F32_2x2}) {{\n"
        f"  return %z, %x : {bf16}, {F32_2x2}\n}}"
    )
    with ir.Context() as context:
        _stablehlo.register_dialect(context)
        program = compiler_artifact(ir.Module.parse(text))
    recorded = verifier._TRUSTED.get(hashlib.sha256(program).hexdigest())
    assert recorded is not None and recorded == program_signature(program, "ours")
    assert verifier.verified_program(program, "ours").signature == recorded
    assert [str(t) for t in recorded.arguments] == ["float32[2, 2]", "int8[3]", "bfloat16[2, 1, 4]"]
    assert own_verifier.requests == 0


def test_a_hanging_verifier_gives_neff_error_within_the_timeout(monkeypatch):
    # A stand-in child that reads and never answers: the parent's clock must end it.
    hanging = VerifierProcess(
        command=[sys.executable, "-c", "import sys, time\nsys.stdin.buffer.read()\ntime.sleep(60)"],
        timeout_s=1.0,
    )
    monkeypatch.setattr(verifier, "VERIFIER", hanging)
    start = time.monotonic()
    with pytest.raises(
        NeffError,
        match=r"NEFF 'slow': the program could not be verified: "
        r"verifying the program took more than 1 s",
    ):
        verifier.verified_program(portable_artifact(LAPACK_PROGRAM), "NEFF 'slow'")
    assert time.monotonic() - start < 10
    hanging.close()


def test_a_crashing_verifier_gives_neff_error_and_is_restarted(monkeypatch):
    crash = "import os, signal, sys\nsys.stdin.buffer.read(8)\nos.kill(os.getpid(), signal.SIGSEGV)"
    crashing = VerifierProcess(command=[sys.executable, "-c", crash], timeout_s=10.0)
    monkeypatch.setattr(verifier, "VERIFIER", crashing)
    program = portable_artifact(LAPACK_PROGRAM)
    for attempt in (1, 2):
        with pytest.raises(
            NeffError,
            match=r"could not be verified: the program crashed the "
            r"verifier \(SIGSEGV\)$",
        ):
            verifier.verified_program(program, "NEFF 'crash'")
        assert crashing.starts == attempt
    crashing.close()


# Runs in a child interpreter: a regression that crashes or hangs the process shows as
# a failing test, not a dead pytest. Byte 109 ^ 0xff made the bytecode reader of
# torch-mlir (StableHLO 1.17 artifacts) loop forever; the others are a sample.
MUTATIONS_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from conftest import portable_artifact
    from torchneuron.neff import NeffError
    from torchneuron.runtime import verifier

    verifier.VERIFIER = verifier.VerifierProcess(timeout_s=2.0)
    t = "tensor<2x3xf32>"
    program = portable_artifact(
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\\n"
        f"  %0 = stablehlo.add %x, %y : {t}\\n  %1 = stablehlo.multiply %0, %y : {t}\\n"
        f"  return %1 : {t}\\n}}"
    )
    refused = accepted = 0
    for position in [109, 43, 242, *range(0, len(program), 13)]:
        for flip in (0xFF, 0x01):
            mutated = bytearray(program)
            mutated[position % len(program)] ^= flip
            try:
                verifier.verified_program(bytes(mutated), "NEFF 'mutated'")
                accepted += 1
            except NeffError as error:
                assert "\\n" not in str(error), str(error)
                refused += 1
    print(refused, accepted, verifier.verifier_info()["starts"])
    """
)


def test_one_byte_mutations_are_refused_or_accepted_never_fatal():
    tests_dir = str(__import__("pathlib").Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", MUTATIONS_SCRIPT, tests_dir],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    refused, accepted, starts = map(int, done.stdout.split())
    assert refused > 0 and refused + accepted >= 40


def test_mutated_program_in_a_neff_file_is_refused_at_load(tmp_path, own_verifier):
    program = bytearray(portable_artifact(LAPACK_PROGRAM))
    program[len(program) // 2] ^= 0xFF
    path = neff_file(tmp_path, "mutated", bytes(program))
    assert read_neff(path).program == bytes(program)  # the reader does not parse programs
    with pytest.raises(NeffError, match="NEFF 'mutated': "):
        load_neff(path)


# -- counted loops (lowering/loops.py): admitted only with a proved trip count ------------


def loop_program(
    trips: int = 5,
    start: int = 0,
    step: int = 1,
    direction: str = "LT",
    bound: str = "",
    counter: str = "i32",
    extra_condition: str = "",
) -> str:
    """x doubled ``trips`` times by a ``stablehlo.while`` of our compiler's form (counter
    from ``start``, ``+ step`` per trip, compared ``direction`` with ``start + trips *
    step``); each argument bends one part of that form."""
    limit = bound or f"stablehlo.constant dense<{start + trips * step}> : tensor<{counter}>"
    return f"""
func.func @main(%x: {F32_2x2}) -> {F32_2x2} {{
  %start = stablehlo.constant dense<{start}> : tensor<{counter}>
  %step = stablehlo.constant dense<{step}> : tensor<{counter}>
  %bound = {limit}
  %r:2 = stablehlo.while(%i = %start, %v = %x) : tensor<{counter}>, {F32_2x2}
  cond {{
    {extra_condition}
    %c = stablehlo.compare {direction}, %i, %bound, SIGNED : (tensor<{counter}>, tensor<{counter}>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %next = stablehlo.add %i, %step : tensor<{counter}>
    %twice = stablehlo.add %v, %v : {F32_2x2}
    stablehlo.return %next, %twice : tensor<{counter}>, {F32_2x2}
  }}
  return %r#1 : {F32_2x2}
}}
"""


def test_a_counted_loop_is_verified_in_the_child_and_runs_its_trips(tmp_path, own_verifier):
    x = np.array([[1, 2], [3, 4]], np.float32)
    for trips, step in ((5, 1), (3, 4)):
        path = neff_file(tmp_path, f"loop{trips}", loop_program(trips, step=step).encode())
        (out,) = load_neff(path).execute([x])
        np.testing.assert_array_equal(out, x * 2.0**trips)
    assert own_verifier.requests == 2


@pytest.mark.parametrize(
    ("bent", "reason"),
    [
        ({"direction": "NE"}, "compares .*NE.*, not LT"),
        ({"step": 0}, "does not start at a constant and grow by a positive one"),
        ({"step": -1}, "does not start at a constant and grow by a positive one"),
        ({"bound": "stablehlo.add %start, %step : tensor<i32>"}, "does not compare .* constant"),
        ({"trips": 5000}, "runs its body 5000 times .* more than the 4096"),
        (
            {
                "start": 2147483000,
                "step": 1000,
                "bound": "stablehlo.constant dense<2147483647> : tensor<i32>",
            },
            "its counter overflows",
        ),
        (
            {"extra_condition": f"%w = stablehlo.multiply %v, %v : {F32_2x2}"},
            "its condition computes more than a comparison",
        ),
    ],
)
def test_a_loop_whose_trip_count_is_not_proved_is_refused(tmp_path, own_verifier, bent, reason):
    path = neff_file(tmp_path, "bent", loop_program(**bent).encode())
    with pytest.raises(NeffError, match=reason):
        load_neff(path)


def test_nested_loops_count_their_trips_multiplied(own_verifier):
    inner = loop_program(trips=100)
    body = inner[inner.index("%start") : inner.index("  return %r#1")]
    nested = f"""
func.func @main(%a: {F32_2x2}) -> {F32_2x2} {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %cn = stablehlo.constant dense<TRIPS> : tensor<i32>
  %o:2 = stablehlo.while(%j = %c0, %y = %a) : tensor<i32>, {F32_2x2}
  cond {{
    %c = stablehlo.compare LT, %j, %cn, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %x = stablehlo.add %y, %y : {F32_2x2}
    {body}
    %j1 = stablehlo.add %j, %c1 : tensor<i32>
    stablehlo.return %j1, %r#1 : tensor<i32>, {F32_2x2}
  }}
  return %o#1 : {F32_2x2}
}}
"""
    verifier.verified_program(portable_artifact(nested.replace("TRIPS", "40")), "NEFF 'ok'")
    with pytest.raises(NeffError, match="runs its body 4100 times"):
        verifier.verified_program(portable_artifact(nested.replace("TRIPS", "41")), "NEFF 'n'")
