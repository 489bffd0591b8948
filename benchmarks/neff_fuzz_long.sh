#!/usr/bin/env bash
# The long NEFF fuzz run: 100,000 mutated NEFFs on every CPU, crash- and hang-isolated.
#
#   benchmarks/neff_fuzz_long.sh [OUT_DIR] [extra options for python -m torchneuron.fuzz.neff]
#
# Prints the summary table (mutator x outcome), the wall time and cases/s, and every
# distinct failure with one reproducer; OUT_DIR (default neff-fuzz-long) keeps
# summary.txt, counts.json, findings.jsonl and one .neff per failing case.
# Exit status: 0 when no case crashed, hung, leaked an exception other than NeffError
# or executed a forbidden op; 1 otherwise.
#
# Environment: PYTHON (default: .venv/bin/python if present, else python3),
# CASES (default 100000), SEED (default 0), WORKERS (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-neff-fuzz-long}"
shift || true
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x .venv/bin/python ]]; then python=.venv/bin/python; else python=python3; fi
fi
start=$(date +%s)
status=0
"$python" -m torchneuron.fuzz.neff \
    --cases "${CASES:-100000}" \
    --seed "${SEED:-0}" \
    --workers "${WORKERS:-$(nproc)}" \
    --out "$out" \
    --quiet \
    "$@" || status=$?
echo "wall time including corpus and start-up: $(( $(date +%s) - start )) s; exit status $status"
exit "$status"
