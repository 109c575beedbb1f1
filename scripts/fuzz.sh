#!/usr/bin/env bash
# Fuzzes every parser that reads the other side's bytes or a user's file (src/fuzz.rs) with
# cargo-fuzz (libFuzzer) on the nightly toolchain, one target after the other, and prints a line
# per target: time, executions, executions/s, coverage, corpus, peak RSS, findings.
#
# Usage: scripts/fuzz.sh [TARGET…]     (default: all; SECONDS_EACH=600: time per target)
#
# Seeds: fuzz/seeds/<target>/ and, for the YAML loaders, the project's own suites and fleets; the
# corpus grows in fuzz/corpus/<target>/ (not committed). A crash, leak, timeout (10 s) or an input
# using over 2 GB stops its target and is kept in fuzz/artifacts/<target>/; the script ends with
# exit 1 and names it. Make it a regression test: copy it to fuzz/regressions/<target>/ (the
# stable suite, tests/tck/fuzz.rs, replays every file there), then fix the code.
#
# Without a nightly toolchain, the stable stand-in runs instead: the same targets over
# FUZZ_INPUTS (default 20000) inputs each from a fixed-seed mutator.
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_EACH=${SECONDS_EACH:-600}
ALL="mock_request mock_body probe_response line_reader suite_yaml config_yaml"
TARGETS=${*:-$ALL}

seed_dirs() { # seed_dirs TARGET : the directories its seeds come from (tests/tck/fuzz.rs has the same list)
    local dir
    for dir in "fuzz/seeds/$1" $(case $1 in
        suite_yaml) echo suites tests/tck/toy ;;
        config_yaml) echo mocks mocks/injection suites/execute_task ;;
        esac); do
        [ -d "$dir" ] && echo "$dir"
    done
    return 0
}

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz.sh: no nightly toolchain (rustup toolchain install nightly); running the stable stand-in" >&2
    FUZZ_INPUTS=${FUZZ_INPUTS:-20000} exec cargo test --release --test tck fuzz::
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/fuzz/target}
(cd fuzz && cargo +nightly fuzz build -O --fuzz-dir .)
TRIPLE=$(rustc -vV | awk '/^host:/ { print $2 }')

status=0
printf '%-15s %8s %12s %9s %6s %6s %8s %s\n' target seconds executions exec/s cov corpus "RSS MB" findings
for t in $TARGETS; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    log=fuzz/artifacts/$t/last-run.log
    rc=0
    # The binary built above, run directly: sources edited meanwhile do not rebuild it midway.
    # shellcheck disable=SC2046
    "$CARGO_TARGET_DIR/$TRIPLE/release/$t" "fuzz/corpus/$t" $(seed_dirs "$t") \
        -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1 || rc=$?
    # A run that stopped early prints no statistics: each figure is then "?".
    runs=$(awk '/^stat::number_of_executed_units:/ { print $NF }' "$log")
    rss=$(awk '/^stat::peak_rss_mb:/ { print $NF }' "$log")
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{ print $2 }' || true)
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | awk '{ print $5 }' || true)
    found=$(find "fuzz/artifacts/$t" -type f ! -name last-run.log | wc -l)
    if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
        status=1
        what="$found kept in fuzz/artifacts/$t/ (exit $rc; see $log)"
    else
        what=none
    fi
    printf '%-15s %8s %12s %9s %6s %6s %8s %s\n' "$t" "${secs:-?}" "${runs:-?}" \
        "$(awk -v r="${runs:-0}" -v s="${secs:-0}" 'BEGIN { if (s > 0) printf "%.0f", r / s; else print "?" }')" \
        "${cov:-?}" "$corpus" "${rss:-?}" "$what"
done
exit $status
