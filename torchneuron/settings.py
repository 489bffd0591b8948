"""Every environment variable torchneuron reads, and the one way each kind is parsed.

``VARIABLES`` lists them with their meaning (README's table says the same). Modules
read a variable only through ``env_flag``/``env_text``/``env_choice`` with the name
constants below: one set of true/false words for every switch, and a malformed value
is a ``SettingsError`` that names the variable and what it accepts (the switches and
counts are all checked when the device registers: ``check_environment``). Values are read
when asked for; callers that must read once (the topology, as CUDA reads
``CUDA_VISIBLE_DEVICES``) cache the result themselves and offer a reset.
"""

from __future__ import annotations

import os

from torchneuron.errors import TorchNeuronError

# The emulated hardware (target/topology.py).
TARGET = "NEURON_PLATFORM_TARGET_OVERRIDE"
LNC = "NEURON_LOGICAL_NC_CONFIG"
VISIBLE_CORES = "NEURON_RT_VISIBLE_CORES"
HBM_BYTES_PER_CORE = "TORCHNEURON_HBM_BYTES_PER_CORE"
# Compilation and execution.
NO_FALLBACK = "TORCHNEURON_NO_FALLBACK"
CACHE = "TORCHNEURON_CACHE"
CACHE_DIR = "TORCHNEURON_CACHE_DIR"
XLA_SINGLE_THREADED = "TORCHNEURON_XLA_SINGLE_THREADED"
XLA_THREADS = "TORCHNEURON_XLA_THREADS"
LAUNCH_BLOCKING = "NEURON_LAUNCH_BLOCKING"
EAGER_FUSION = "TORCHNEURON_EAGER_FUSION"
INTERPRET = "TORCHNEURON_INTERPRET"
BUILD_NICE = "TORCHNEURON_BUILD_NICE"
BUCKETS = "TORCHNEURON_BUCKETS"
CHECK = "TORCHNEURON_CHECK"
CHECK_DIR = "TORCHNEURON_CHECK_DIR"
# Tests.
UPDATE_GOLDENS = "TORCHNEURON_UPDATE_GOLDENS"
CONFORMANCE_ENTRIES = "TORCHNEURON_CONFORMANCE_ENTRIES"
CONFORMANCE_WORKERS = "TORCHNEURON_CONFORMANCE_WORKERS"

VARIABLES: dict[str, str] = {
    TARGET: "emulated chip: trn2 (default) or trn3",
    LNC: "logical NeuronCore size, 1 or 2 (default 2)",
    VISIBLE_CORES: "visible logical cores, e.g. 0-3 or 1,3",
    HBM_BYTES_PER_CORE: "override the per-core HBM capacity (e.g. 64MiB), for tests",
    NO_FALLBACK: "an op or graph that cannot be compiled raises instead of running on the CPU",
    CACHE: "0: no on-disk NEFF cache (the in-memory one stays)",
    CACHE_DIR: "on-disk NEFF cache (default $XDG_CACHE_HOME/torchneuron or ~/.cache/torchneuron)",
    XLA_SINGLE_THREADED: "run the numerics single-threaded (benchmarks)",
    XLA_THREADS: "threads of the numerics (default: every core the process may use)",
    LAUNCH_BLOCKING: "1: eager ops run synchronously, errors raised at the op (read once)",
    EAGER_FUSION: "0: eager ops are never fused into one program (default on)",
    INTERPRET: "0: a new bucket of an eager op or of a torch.compile(dynamic=True) graph waits for its compile instead of running interpreted until the compile is done (default on)",
    BUILD_NICE: "0: the background thread that builds specializations, and the threads XLA starts from it, keep the process's scheduling priority instead of nice 10 (Linux; default on)",
    BUCKETS: "sizes torch.compile pads dynamic inference sizes (and eager ops their changed sizes) up to: 32,64,128, auto (default) or off",
    CHECK: "1: every compiled graph also runs on the CPU; a differing output raises NumericsMismatchError",
    CHECK_DIR: "check mode writes the smallest failing program (script, inputs, StableHLO) here",
    UPDATE_GOLDENS: "assert_golden (and tests/golden) rewrite goldens instead of failing",
    CONFORMANCE_ENTRIES: "limit tests/conformance to some OpInfo entries (names or globs)",
    CONFORMANCE_WORKERS: "worker processes of tests/conformance (default: up to 2)",
}

# The switches and the counts: read by their users when needed, and all checked when the
# device registers (``check_environment``), so that a malformed one is reported at
# ``import torch`` rather than accepted until the first op that happens to read it.
FLAGS = (
    NO_FALLBACK,
    CACHE,
    XLA_SINGLE_THREADED,
    LAUNCH_BLOCKING,
    EAGER_FUSION,
    INTERPRET,
    BUILD_NICE,
    CHECK,
    UPDATE_GOLDENS,
)
COUNTS = (XLA_THREADS, CONFORMANCE_WORKERS)

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


class SettingsError(TorchNeuronError, ValueError):
    """An environment variable (or an option standing for one) holds a malformed value;
    ``variable`` names the environment variable (None: an option, not a variable)."""

    def __init__(self, message: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


def env_text(name: str, default: str | None = None) -> str | None:
    """The variable's value without surrounding blanks; ``default`` when unset or blank."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip()


def parse_flag(name: str, value: str | None, default: bool) -> bool:
    """``value`` read as a switch named ``name`` (unset or blank -> ``default``)."""
    if value is None or not value.strip():
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingsError(
        f"{name}={value!r} is not a switch; use one of {', '.join(sorted(TRUE_WORDS))} "
        f"(on) or {', '.join(sorted(FALSE_WORDS))} (off)",
        name,
    )


def env_flag(name: str, default: bool = False) -> bool:
    """A switch: 1/true/yes/on or 0/false/no/off (any case; unset or blank is ``default``)."""
    return parse_flag(name, os.environ.get(name), default)


def parse_choice(name: str, value: str | None, choices: tuple[str, ...], default: str) -> str:
    """``value`` as one of ``choices`` (case-insensitive, returned as spelled in ``choices``)."""
    if value is None or not value.strip():
        return default
    by_lower = {choice.lower(): choice for choice in choices}
    found = by_lower.get(value.strip().lower())
    if found is None:
        raise SettingsError(f"{name}={value!r} is not one of {', '.join(choices)}", name)
    return found


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices`` (case-insensitive); ``default`` when unset or blank."""
    return parse_choice(name, os.environ.get(name), choices, default)


def env_count(name: str, default: int | None = None) -> int | None:
    """A whole number >= 1 (e.g. a thread count); ``default`` when unset or blank."""
    text = env_text(name)
    if text is None:
        return default
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise SettingsError(
            f"{name}={text!r} is not a whole number >= 1; leave it unset for the default", name
        )
    return count


def check_environment() -> None:
    """Raise the ``SettingsError`` of the first malformed switch or count that is set."""
    for name in FLAGS:
        env_flag(name)
    for name in COUNTS:
        env_count(name)
