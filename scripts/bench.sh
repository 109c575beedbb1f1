#!/usr/bin/env bash
# Figures for the probe, measured on this machine:
#   (a) wall time of the full roundtable suite against the reference agent (`mock agent`), and of
#       `selftest` (which starts its own reference agent): hyperfine when installed, else a loop;
#   (b) peak RSS of `probe --only analyze.response` against a hostile agent that sends an endless
#       body and one that sends a 6 MB body (default --max-body 5000000), against the baseline of
#       the same probe of the reference agent (GNU time's %M, "Maximum resident set size");
#   (c) time to give up on an agent that trickles its body one byte a second, with --timeout 2s.
# The hostile agents are examples/hostile_agent.rs. Every server started here is killed on exit.
#
# Usage: scripts/bench.sh            (RUNS=N sets the repetitions; default 10 for (a), 3 for (b))
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=bench.sh
source scripts/common.sh
RUNS=${RUNS:-10}
RSS_RUNS=3

cargo build --release --examples --bins
BIN=target/release/agent-tck
HOSTILE=target/release/examples/hostile_agent
TIME=/usr/bin/time
need time:/usr/bin/time

start reference 10 "$BIN" mock agent --port 0 --seed 1
REFERENCE=$URL
start endless 10 "$HOSTILE" --mode endless
ENDLESS=$URL
start six-mb 10 "$HOSTILE" --mode six-mb
SIX_MB=$URL
start trickle 10 "$HOSTILE" --mode trickle
TRICKLE=$URL

# ---- (a) wall time ---------------------------------------------------------------------------
PROBE_FULL="$BIN probe roundtable --url $REFERENCE --seed 1"
SELFTEST="$BIN selftest --seed 1"
# Both must pass: a failing run would time something else.
$PROBE_FULL >/dev/null
$SELFTEST >/dev/null 2>&1

# mean_sd CMD : "mean ± sd ms (min … max)" over RUNS runs.
mean_sd() {
    if command -v hyperfine >/dev/null; then
        hyperfine --warmup 2 --runs "$RUNS" --style none --export-json "$tmp/h.json" "$1" >/dev/null
        python3 - "$tmp/h.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"{r['mean']*1e3:.1f} ± {r['stddev']*1e3:.1f} ms (min {r['min']*1e3:.1f}, max {r['max']*1e3:.1f}; hyperfine, {len(r['times'])} runs)")
EOF
    else
        local times=()
        for _ in $(seq "$RUNS"); do
            local t0 t1
            t0=$(date +%s%N)
            $1 >/dev/null 2>&1
            t1=$(date +%s%N)
            times+=("$(((t1 - t0) / 1000))")
        done
        python3 - "${times[@]}" <<'EOF'
import statistics, sys
t = [int(x) / 1e3 for x in sys.argv[1:]]
print(f"{statistics.mean(t):.1f} ± {statistics.pstdev(t):.1f} ms (min {min(t):.1f}, max {max(t):.1f}; date loop, {len(t)} runs)")
EOF
    fi
}

echo "measuring (a) wall time…" >&2
WALL_PROBE=$(mean_sd "$PROBE_FULL")
WALL_SELFTEST=$(mean_sd "$SELFTEST")

# ---- (b) peak RSS, (c) time to give up --------------------------------------------------------
# measure URL EXTRA_ARGS... : runs the probe of analyze.response under GNU time; prints
# "RSS_KB SECONDS EXIT" and keeps the analyze.response message in $tmp/last.msg.
measure() {
    local url=$1
    shift
    local rc=0
    "$TIME" -f '%M %e' -o "$tmp/time.out" \
        "$BIN" probe roundtable --url "$url" --only analyze.response --seed 1 "$@" \
        >"$tmp/probe.out" 2>&1 || rc=$?
    grep -A1 'analyze.response' "$tmp/probe.out" | tail -n1 | sed 's/^ *//' >"$tmp/last.msg"
    echo "$(tail -n1 "$tmp/time.out") $rc"
}

# rss NAME URL : median peak RSS (KB) of RSS_RUNS probes; the last message and exit code go to
# $tmp/NAME.msg and $tmp/NAME.rc (this runs in a command substitution: variables would be lost).
rss() {
    local values=() m
    for _ in $(seq "$RSS_RUNS"); do
        m=$(measure "$2")
        values+=("${m%% *}")
        echo "${m##* }" >"$tmp/$1.rc"
    done
    cp "$tmp/last.msg" "$tmp/$1.msg"
    printf '%s\n' "${values[@]}" | sort -n | sed -n "$(((RSS_RUNS + 1) / 2))p"
}

echo "measuring (b) peak RSS…" >&2
RSS_REFERENCE=$(rss reference "$REFERENCE")
RSS_ENDLESS=$(rss endless "$ENDLESS")
RSS_SIX_MB=$(rss six-mb "$SIX_MB")

echo "measuring (c) trickle…" >&2
read -r _ TRICKLE_S TRICKLE_RC < <(measure "$TRICKLE" --timeout 2s)
cp "$tmp/last.msg" "$tmp/trickle.msg"

# ---- table -------------------------------------------------------------------------------------
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }
delta() { awk -v k="$1" -v b="$RSS_REFERENCE" 'BEGIN { printf "%+.1f MB", (k - b) / 1024 }'; }

echo
echo "agent-tck $("$BIN" --version 2>/dev/null | awk '{print $2}') · $(uname -sm) · $(nproc) CPUs"
echo
printf '%-58s %s\n' "figure" "value (peak RSS: median of $RSS_RUNS runs)"
printf '%-58s %s\n' "----------------------------------------------------------" "-----"
printf '%-58s %s\n' "(a) full suite vs reference agent (probe --seed 1)" "$WALL_PROBE"
printf '%-58s %s\n' "(a) selftest --seed 1" "$WALL_SELFTEST"
printf '%-58s %s\n' "(b) peak RSS, --only analyze.response, reference agent" "$(mb "$RSS_REFERENCE") (median of $RSS_RUNS; exit $(cat "$tmp/reference.rc"))"
printf '%-58s %s\n' "(b) peak RSS, endless body (--max-body 5000000)" "$(mb "$RSS_ENDLESS") ($(delta "$RSS_ENDLESS") vs reference; exit $(cat "$tmp/endless.rc"))"
printf '%-58s %s\n' "(b) peak RSS, 6,000,000-byte body (--max-body 5000000)" "$(mb "$RSS_SIX_MB") ($(delta "$RSS_SIX_MB") vs reference; exit $(cat "$tmp/six-mb.rc"))"
printf '%-58s %s\n' "(c) time to give up on a 1 byte/s trickle (--timeout 2s)" "${TRICKLE_S} s (exit $TRICKLE_RC)"
echo
echo "analyze.response said:"
for name in endless six-mb trickle; do
    printf '  %-8s %s\n' "$name:" "$(cat "$tmp/$name.msg")"
done
