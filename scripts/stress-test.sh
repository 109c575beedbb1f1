#!/usr/bin/env bash
# The test suite on a busy machine: `cargo test` three times (RUNS), each beside two CPU hogs
# (`yes > /dev/null`, HOGS of them), each run bounded in time (LIMIT seconds). Every run must be
# green; the script exits non-zero at the first red or over-long run and says which.
#
#   scripts/stress-test.sh            # 3 runs, 2 hogs, 1800 s per run
#   RUNS=1 HOGS=4 scripts/stress-test.sh -- --test tck fleet   # arguments after -- go to cargo test
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
HOGS=${HOGS:-2}
LIMIT=${LIMIT:-1800}
[[ "${1:-}" == "--" ]] && shift

hogs=()
stop_hogs() {
    for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    hogs=()
}
trap stop_hogs EXIT INT TERM

# Build first, without the hogs: the runs time the tests, not the compiler.
cargo test --locked --no-run "$@" >/dev/null 2>&1 || cargo test --locked --no-run "$@"

for run in $(seq 1 "$RUNS"); do
    for _ in $(seq 1 "$HOGS"); do
        # Each hog is bounded too, should this script be killed without its trap.
        timeout "$LIMIT" yes >/dev/null &
        hogs+=($!)
    done
    started=$(date +%s)
    log=$(mktemp -t stress-test.XXXXXX)
    if timeout "$LIMIT" cargo test --locked "$@" >"$log" 2>&1; then
        summary=$(grep -E '^test result:' "$log" | awk '{p+=$4; f+=$6} END {print p " passed, " f " failed"}')
        echo "run $run/$RUNS: green in $(( $(date +%s) - started )) s beside $HOGS CPU hogs ($summary)"
        rm -f "$log"
    else
        status=$?
        echo "run $run/$RUNS: RED (exit $status after $(( $(date +%s) - started )) s beside $HOGS CPU hogs); the log: $log"
        grep -E '^(failures:|    [a-z_:]+$|test .* FAILED)' "$log" | head -20 || true
        exit 1
    fi
    stop_hogs
done
echo "stress test: $RUNS of $RUNS runs green"
