"""A NEFF fuzz worker process: makes and runs the cases the parent names, one per line.

    python -m torchneuron.testing.fuzz.neff.worker CORPUS_DIR MUTATORS MEMORY_MIB [cli]

Protocol (``pool.WorkerPool``): the worker prints ``{"event": "ready"}`` once its
imports are done and one of our seeds has run through every stage (``_warm_up``; with
``cli``, after one ``neuronc`` warm-up run too). For each input line
``{"seed", "index", "cli"}`` it prints
``{"event": "case", "mutator", "entry", "note", "forbidden"}`` once the case is made,
``{"event": "stage", "stage"}`` before each stage, and ``{"event": "done", "result"}``
at the end, so a death or a silence is attributed to its case and stage. Events go to
a private copy of the original stdout; file descriptor 1 points at stderr, so native
code that prints cannot corrupt the protocol. Its stderr (a file the parent reads
after a crash) is emptied before every case.

The worker's address space is capped at what it uses after its imports plus
``MEMORY_MIB``, so a decompression bomb ends as a ``MemoryError`` (a leak) or an abort
(a crash) of this worker instead of exhausting the machine.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import warnings


def _cap_memory(headroom_mib: int) -> None:
    if headroom_mib <= 0:
        return
    with open(f"/proc/{os.getpid()}/status") as status:
        size_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = (size_kib << 10) + (headroom_mib << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _warm_up(corpus) -> None:
    """Run one of our own seeds through every stage once, then forget it.

    A process's first load starts the runtime verifier's child and XLA's client, which
    took seconds on a loaded 2-core machine: paid here, before ``ready``, a restarted
    worker's first case is timed like any other (a hang is still a hang at the same
    limit). The verified-program memory and the compiled-program cache are emptied
    after, so no case finds the warm-up's program already verified or compiled. A seed
    given with ``--corpus`` (no program text: not ours) is never used for this.
    """
    from torchneuron.runtime.executor import clear_executable_cache
    from torchneuron.runtime.verifier import clear_verified_programs

    from .execute import run_case

    ours = [entry for entry in corpus if entry.program_text is not None]
    if ours:
        run_case(min(ours, key=lambda entry: len(entry.neff)).neff)
    clear_verified_programs()
    clear_executable_cache()


def main(argv: list[str]) -> int:
    corpus_dir, mutators, memory_mib = argv[0], tuple(argv[1].split(",")), int(argv[2])
    cli = len(argv) > 3 and argv[3] == "cli"
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    warnings.filterwarnings("ignore")

    from torchneuron.runtime import load_neff  # noqa: F401 - XLA and the bindings, once

    from .cases import CaseMaker
    from .corpus import load_corpus
    from .execute import leak_detail, run_case

    corpus = load_corpus(corpus_dir)
    maker = CaseMaker(corpus, mutators)
    if cli:
        # neuronc's first use imports torch and the compiler (seconds): done here, so it
        # is never timed as part of a case.
        from .execute import run_cli

        run_cli(corpus[0].neff, lambda name: None, False)
    _warm_up(corpus)

    def emit(event: dict) -> None:
        events.write(json.dumps(event) + "\n")

    def stage(name: str) -> None:
        emit({"event": "stage", "stage": name})

    _cap_memory(memory_mib)
    emit({"event": "ready"})
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        try:
            os.ftruncate(2, 0)
        except OSError:
            pass
        try:
            case = maker.make(task["seed"], task["index"])
        except Exception as error:  # noqa: BLE001 - a bug of the fuzzer, reported as such
            _, entry, mutator = maker.choose(task["seed"], task["index"])
            emit({"event": "case", "mutator": mutator.name, "entry": entry.name,
                  "note": "", "forbidden": False})  # fmt: skip
            detail = leak_detail("make", error)
            emit({"event": "done", "result": {"outcome": "fuzzer-error", **detail}})
            continue
        emit(
            {
                "event": "case",
                "mutator": case.mutator,
                "entry": case.entry,
                "note": case.note[:300],
                "forbidden": case.forbidden,
            }
        )
        result = run_case(
            case.data,
            forbidden=case.forbidden,
            cli=task.get("cli", False),
            hook=case.hook,
            stage=stage,
            input_seed=task["index"],
        )
        emit({"event": "done", "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
