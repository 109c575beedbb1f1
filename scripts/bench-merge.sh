#!/usr/bin/env bash
# Peak RSS and wall time of `agent-tck report merge` of N target-like reports with --json --junit
# --html, before and after: one real target report (`probe roundtable` against `mock agent`),
# copied N times with its target varied (http://agent-I: the same case ids in every file, so the
# merge prefixes every case by its target, as a run over targets does), then merged by each
# binary under `/usr/bin/time -v`.
#
# Usage: scripts/bench-merge.sh [N…]                (default: 1000 10000)
#   BEFORE=PATH   the binary to compare with (default /work/base-bin/agent-tck; none: skipped)
#   AFTER=PATH    the binary measured (default: this tree's release build, built first)
#   BEFORE_MAX=N  merge with BEFORE only up to N files (default 1000: the merge held whole needs
#                 ~0.7 MB per target, ~7 GB for 10,000)
# Prints a line per (binary, N): files' total size, peak RSS, wall time, exit status, and the
# sizes of the merged files.
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=bench-merge.sh
source scripts/common.sh
need python3:python3 time:/usr/bin/time
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000 10000)
BEFORE=${BEFORE-/work/base-bin/agent-tck}
BEFORE_MAX=${BEFORE_MAX:-1000}
if [ -z "${AFTER:-}" ]; then
    cargo build --release --bins >&2
    AFTER=$PWD/target/release/agent-tck
fi

start agent 10 "$AFTER" mock agent --port 0 --seed 1
"$AFTER" probe roundtable --url "$URL" --seed 1 --json "$tmp/one.json" >/dev/null ||
    [ -s "$tmp/one.json" ] || die "the probe wrote no report"

# make N : writes $tmp/N/agent-I.json (I < N) from the one report, the target varied.
make() {
    mkdir -p "$tmp/$1"
    python3 - "$tmp/one.json" "$tmp/$1" "$1" <<'PY'
import json, sys
one, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(one).read()
target = json.loads(text)["target"]
for i in range(n):
    # The target appears in the report's header and its cases' requests: replaced everywhere.
    open(f"{out}/agent-{i}.json", "w").write(text.replace(target, f"http://agent-{i}"))
PY
}

# measure LABEL BIN N : one merge under /usr/bin/time -v.
measure() {
    local label=$1 bin=$2 n=$3 out="$tmp/out-$1-$3"
    mkdir -p "$out"
    local status=0
    /usr/bin/time -v -o "$out/time" "$bin" report merge --quiet "$tmp/$n"/agent-*.json \
        --json "$out/all.json" --junit "$out/all.xml" --html "$out/all.html" \
        >"$out/stdout" 2>"$out/stderr" || status=$?
    local rss wall
    rss=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2 / 1024}' "$out/time")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out/time")
    printf '%-7s N=%-6s files %6s MB · peak RSS %6s MB · wall %8s · exit %s · json %s, junit %s, html %s\n' \
        "$label" "$n" "$(du -sm "$tmp/$n" | cut -f1)" "$rss" "$wall" "$status" \
        "$(du -h "$out/all.json" 2>/dev/null | cut -f1)" "$(du -h "$out/all.xml" 2>/dev/null | cut -f1)" \
        "$(du -h "$out/all.html" 2>/dev/null | cut -f1)"
    # The last lines the merge printed (its verdict), for the record.
    tail -n 2 "$out/stdout" | sed 's/^/        /'
    rm -rf "$out"
}

for n in "${SIZES[@]}"; do
    make "$n"
    if [ -n "$BEFORE" ] && [ -x "$BEFORE" ] && [ "$n" -le "$BEFORE_MAX" ]; then
        measure before "$BEFORE" "$n"
    fi
    measure after "$AFTER" "$n"
    rm -rf "${tmp:?}/$n"
done
