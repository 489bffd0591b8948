"""The mutator table and the making of case ``index`` of run ``seed``.

A case is a pure function of (corpus, seed, index, selected mutators): its random
generator is seeded with ``f"neff-fuzz:{seed}:{index}"``, which picks the seed NEFF,
the mutator, and every choice the mutator makes. So the parent process, which never
runs cases, can rebuild the bytes of any case a worker reported and save them.

Mutators marked ``test_only`` are never drawn unless named with ``--mutators``: they
make the worker abort, hang or raise, so the fuzzer's own isolation can be tested.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from . import mutate_container as container
from . import mutate_content as content
from .corpus import CorpusEntry
from .pack import PROGRAM, Draft, open_draft


@dataclass(frozen=True)
class Mutator:
    name: str
    function: Callable | None  # None: the seed's bytes unchanged
    layer: str
    forbidden: bool = False  # the mutation puts an op outside the allowlist in the program
    hook: str | None = None  # test only: what the worker does instead of reading the case
    test_only: bool = False


MUTATORS: dict[str, Mutator] = {
    m.name: m
    for m in (
        Mutator("identity", None, "none"),
        Mutator("header-field", container.header_field, "header"),
        Mutator("header-bytes", container.header_bytes, "header"),
        Mutator("file-length", container.file_length, "header"),
        Mutator("tar-header-field", container.tar_header_field, "tar"),
        Mutator("tar-pax", container.tar_pax, "tar"),
        Mutator("tar-pax-raw", container.tar_pax_raw, "tar"),
        Mutator("tar-members", container.tar_members, "tar"),
        Mutator("tar-truncate", container.tar_truncate, "tar"),
        Mutator("tar-size-lie", container.tar_size_lie, "tar"),
        Mutator("gzip-flip", container.gzip_flip, "gzip"),
        Mutator("gzip-truncate", container.gzip_truncate, "gzip"),
        Mutator("gzip-trailing", container.gzip_trailing, "gzip"),
        Mutator("gzip-header", container.gzip_header, "gzip"),
        Mutator("gzip-bomb", container.gzip_bomb, "gzip"),
        Mutator("compression-switch", container.compression_switch, "gzip"),
        Mutator("json-structure", content.json_structure, "json"),
        Mutator("json-bytes", content.json_bytes, "json"),
        Mutator("weight-bytes", content.weight_bytes, "weights"),
        Mutator("weight-entry", content.weight_entry, "weights"),
        Mutator("def-signature", content.def_signature, "json"),
        Mutator("program-bytes", content.program_bytes, "program"),
        Mutator("program-text", content.program_text, "program"),
        Mutator("forbidden-op", content.forbidden_op, "program", forbidden=True),
        Mutator("test-abort", None, "test", hook="abort", test_only=True),
        Mutator("test-hang", None, "test", hook="hang", test_only=True),
        Mutator("test-leak", None, "test", hook="leak", test_only=True),
    )
}
DEFAULT_MUTATORS = tuple(name for name, m in MUTATORS.items() if not m.test_only)


def select_mutators(spec: str | None) -> tuple[str, ...]:
    """Mutator names from a comma-separated list (default: every mutator not test-only)."""
    if not spec:
        return DEFAULT_MUTATORS
    names = tuple(dict.fromkeys(name.strip() for name in spec.split(",") if name.strip()))
    unknown = [name for name in names if name not in MUTATORS]
    if unknown or not names:
        raise ValueError(
            f"unknown mutator(s) {', '.join(unknown) or '(none given)'}; "
            f"known: {', '.join(MUTATORS)}"
        )
    return names


@dataclass
class Case:
    seed: int
    index: int
    entry: str  # the seed NEFF's corpus name
    mutator: str
    data: bytes
    note: str
    forbidden: bool = False
    hook: str | None = None

    @property
    def label(self) -> str:
        return f"s{self.seed}-c{self.index}-{self.mutator}"


class CaseMaker:
    """Builds cases from a corpus; keeps the opened seed NEFFs between cases."""

    def __init__(self, corpus: list[CorpusEntry], mutators: tuple[str, ...] = DEFAULT_MUTATORS):
        if not corpus:
            raise ValueError("the NEFF fuzz corpus is empty")
        self.corpus = corpus
        self.mutators = mutators
        self._drafts: dict[str, Draft] = {}

    def open(self, entry: CorpusEntry) -> Draft:
        if entry.name not in self._drafts:
            self._drafts[entry.name] = open_draft(entry.neff)
        return self._drafts[entry.name].copy()

    @cached_property
    def programs(self) -> list[bytes]:
        programs = []
        for entry in self.corpus:
            member = self.open(entry).member(PROGRAM)
            if member is not None:
                programs.append(member.data)
        return programs

    @cached_property
    def text_entry(self) -> CorpusEntry | None:
        return next((entry for entry in self.corpus if entry.program_text), None)

    def choose(self, seed: int, index: int) -> tuple[random.Random, CorpusEntry, Mutator]:
        """The case's generator, after it drew the seed NEFF and the mutator."""
        rng = random.Random(f"neff-fuzz:{seed}:{index}")
        entry = rng.choice(self.corpus)
        return rng, entry, MUTATORS[rng.choice(self.mutators)]

    def make(self, seed: int, index: int) -> Case:
        rng, entry, mutator = self.choose(seed, index)
        case = Case(seed, index, entry.name, mutator.name, entry.neff, "seed unchanged",
                    mutator.forbidden, mutator.hook)  # fmt: skip
        if mutator.function is not None:
            context = _Context(self, entry, entry.neff)
            case.data, case.note = mutator.function(rng, self.open(entry), context)
        return case


@dataclass
class _Context:
    """What a mutator may consult besides its draft."""

    maker: CaseMaker
    entry: CorpusEntry
    seed_bytes: bytes

    @property
    def programs(self) -> list[bytes]:
        return self.maker.programs

    @property
    def text_entry(self) -> CorpusEntry | None:
        return self.maker.text_entry

    def open(self, entry: CorpusEntry) -> Draft:
        return self.maker.open(entry)
