"""The NEFF fuzzer: a bounded smoke run over every mutator, and the fuzzer's own checks
(deterministic cases, re-signing that reaches the deep checks, crash/hang/leak isolation,
forbidden ops detected)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from torchneuron.neff import NeffError, read_neff
from torchneuron.testing.fuzz.neff.cases import DEFAULT_MUTATORS, MUTATORS, CaseMaker
from torchneuron.testing.fuzz.neff.corpus import ensure_corpus, load_corpus
from torchneuron.testing.fuzz.neff.mutate_content import forbidden_program_text
from torchneuron.testing.fuzz.neff.pack import (
    crc32_after_zeros,
    finish,
    gzip_with_zeros,
    open_draft,
)

SMOKE_CASES = 240
INJECTED_CASES = 6
FAILURES = ("crash", "hang", "leak", "forbidden-executed", "fuzzer-error")


@pytest.fixture(scope="module")
def corpus_dir() -> Path:
    return ensure_corpus()


@pytest.fixture(scope="module")
def maker(corpus_dir) -> CaseMaker:
    return CaseMaker(load_corpus(corpus_dir))


def _fuzz(out: Path, *options: str, timeout: float = 600) -> tuple[int, dict, str]:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchneuron.testing.fuzz.neff",
            "--out",
            str(out),
            "--quiet",
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    counts_path = out / "counts.json"
    assert counts_path.is_file(), completed.stderr[-2000:]
    return completed.returncode, json.loads(counts_path.read_text()), completed.stdout


def test_smoke_run_finds_no_crash_hang_leak_or_forbidden_execution(tmp_path, corpus_dir):
    status, counts, stdout = _fuzz(
        tmp_path, "--cases", str(SMOKE_CASES), "--workers", "2", "--seed", "11"
    )
    assert counts["cases"] == SMOKE_CASES
    assert set(counts["by_mutator"]) == set(DEFAULT_MUTATORS), "every mutator drawn"
    assert counts["outcomes"].get("ran", 0) > 0, "the seed NEFFs must still run"
    found = {outcome: counts["outcomes"].get(outcome, 0) for outcome in FAILURES}
    assert found == dict.fromkeys(FAILURES, 0), stdout
    assert status == 0


@pytest.fixture(scope="module")
def injected_run(tmp_path_factory, corpus_dir):
    out = tmp_path_factory.mktemp("injected")
    # 4 s per case: a worker warms up (its first load starts the verifier's child and
    # XLA's client) before it says ready, so an identity case on a worker restarted
    # after an injected abort or hang is timed like any other; an injected hang never
    # answers, so it is a hang at any limit. Cases 0-5 of seed 0 are abort, hang,
    # identity and three leaks (INJECTED_CASES): each kind once, the identity case after
    # a worker died, and only two restarts (each costs a worker's start-up and warm-up).
    status, counts, stdout = _fuzz(
        out,
        "--cases", str(INJECTED_CASES), "--seed", "0", "--workers", "2", "--timeout", "4",
        "--cli-every", "0",
        "--mutators", "test-abort,test-hang,test-leak,identity",
    )  # fmt: skip
    return out, status, counts


def test_injected_abort_is_counted_as_crash_and_the_run_goes_on(injected_run):
    out, status, counts = injected_run
    aborts = counts["by_mutator"]["test-abort"]
    assert aborts == {"crash": sum(aborts.values())} and aborts["crash"] > 0
    assert counts["cases"] == INJECTED_CASES
    assert status == 1
    records = [json.loads(line) for line in (out / "findings.jsonl").read_text().splitlines()]
    crash = next(r for r in records if r["outcome"] == "crash")
    assert crash["type"] == "SIGABRT"
    assert Path(crash["reproducer"]).is_file()
    assert crash["command"].startswith("python -m torchneuron.fuzz.neff --replay ")


def test_injected_hang_is_counted_as_hang(injected_run):
    _, _, counts = injected_run
    hangs = counts["by_mutator"]["test-hang"]
    assert hangs == {"hang": sum(hangs.values())} and hangs["hang"] > 0


def test_injected_exception_other_than_neff_error_is_a_leak(injected_run):
    _, _, counts = injected_run
    leaks = counts["by_mutator"]["test-leak"]
    assert leaks == {"leak": sum(leaks.values())} and leaks["leak"] > 0
    assert counts["by_mutator"]["identity"] == {"ran": counts["by_mutator"]["identity"]["ran"]}


def test_case_bytes_depend_only_on_seed_and_index(corpus_dir, maker):
    again = CaseMaker(load_corpus(corpus_dir))
    for index in range(0, 400, 7):
        first, second = maker.make(5, index), again.make(5, index)
        assert (first.mutator, first.note, first.data) == (second.mutator, second.note, second.data)
    assert maker.make(5, 1).data != maker.make(6, 1).data or maker.make(5, 1).mutator == "identity"


def test_test_only_mutators_are_not_drawn_by_default():
    assert not any(MUTATORS[name].test_only for name in DEFAULT_MUTATORS)
    assert {"test-abort", "test-hang", "test-leak"} <= set(MUTATORS)


def test_repacking_a_seed_reproduces_a_readable_equal_neff(maker):
    for entry in maker.corpus:
        repacked = finish(open_draft(entry.neff))
        assert read_neff(repacked) == read_neff(entry.neff)


def test_resigned_weight_mutation_passes_the_sha_check_and_reaches_the_weights(maker):
    entry = next(e for e in maker.corpus if e.name == "mlp")
    draft = open_draft(entry.neff)
    member = next(m for m in draft.members if m.path.startswith("sg00/weights/"))
    member.data = bytes(len(member.data))
    assert not read_neff(finish(draft)).weights[member.path[13:-4]].any()
    stale = open_draft(entry.neff)
    next(m for m in stale.members if m.path == member.path).data = bytes(len(member.data))
    with pytest.raises(NeffError, match="sha256"):
        read_neff(finish(stale, weights=False))


def test_bomb_stream_is_valid_gzip_with_its_crc():
    assert crc32_after_zeros(zlib.crc32(b"abc"), 12345) == zlib.crc32(b"abc" + bytes(12345))
    stream = gzip_with_zeros(b"tar bytes", 3)
    assert len(stream) < 10_000
    assert gzip.decompress(stream) == b"tar bytes" + bytes(3 << 20)


def test_forbidden_text_holds_the_op_in_place_of_the_returned_value(maker):
    import random

    entry = next(e for e in maker.corpus if e.name == "eager-mul")
    for seed in range(20):
        text, what = forbidden_program_text(random.Random(seed), entry.program_text)
        op = what.split(" ")[0].removeprefix("custom_call ")
        assert op.lstrip("@") in text
        if "unused" not in what and op != "outfeed":
            assert "return %fz" in text


def test_a_forbidden_case_that_loads_is_reported_as_forbidden_executed(maker):
    from torchneuron.testing.fuzz.neff.execute import run_case

    entry = next(e for e in maker.corpus if e.name == "eager-mul")
    # The seed's own program loads; marked forbidden, reaching execution is the failure.
    assert run_case(entry.neff, forbidden=True)["outcome"] == "forbidden-executed"
    assert run_case(entry.neff)["outcome"] == "ran"
