#!/usr/bin/env bash
# Figures for certifying many agents, measured on this machine, everything on 127.0.0.1: for each
# N of N_LIST, a conforming round-table fleet of N agents in one process (`mock fleet`, layout
# shared, agents at http://127.0.0.1:PORT/agents/a-K) and, in another,
#   agent-tck probe roundtable --targets T --target-concurrency 16 --out-dir D \
#       --json all.json --junit all.xml --html all.html
# (T lists the N agents). Per N: wall time, agents/s, CPU per agent (user+sys of the probe, from
# /usr/bin/time -v, and of the fleet over the probe's run, from /proc/PID/stat; divided by N),
# the probe's peak RSS, the out-dir's size (du -sb), the merged files' sizes, and whether every
# target passed. With BEFORE=/path/to/old/agent-tck the same runs with that binary too (its own
# fleet and probe), in the same run, one after the other at each N, and the ratios after/before
# are printed: agents/s and CPU per agent.
#
# Usage: scripts/bench-targets.sh   (N_LIST="100 1000 10000"; CONCURRENCY=16; BIN=path: the
#        binary measured, default the release build of this checkout; BEFORE=path: an older
#        binary measured beside it; MERGED=0: no --json/--junit/--html of the whole run;
#        BEFORE_MERGED_MAX=1000: above this N the BEFORE binary runs without the merged outputs
#        (an older kit held the merged report in memory: ~7 GB at 10,000), and the table says
#        so; KEEP=DIR: the out-dirs and merged files are kept under DIR)
set -euo pipefail

cd "$(dirname "$0")/.."
N_LIST=${N_LIST:-100 1000 10000}
CONCURRENCY=${CONCURRENCY:-16}
MERGED=${MERGED:-1}
BEFORE=${BEFORE:-}
BEFORE_MERGED_MAX=${BEFORE_MERGED_MAX:-1000}
TARGET_DIR=${CARGO_TARGET_DIR:-target}

SCRIPT=bench-targets.sh
source scripts/common.sh
need time:/usr/bin/time

if [ -z "${BIN:-}" ]; then
    cargo build --release --bin agent-tck
    BIN=$TARGET_DIR/release/agent-tck
fi
[ -x "$BIN" ] || die "BIN=$BIN is not an executable"
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || die "BEFORE=$BEFORE is not an executable"
ulimit -n 65536 2>/dev/null || true
HZ=$(getconf CLK_TCK)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# stop PID : SIGTERM, then SIGKILL after 10 s.
stop() {
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 100); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# fleet_file N : the conforming fleet of N agents a-1 … a-N on one port.
fleet_file() {
    local f=$tmp/fleet-$1.yaml
    [ -s "$f" ] || {
        printf 'layout: shared\nagents:\n'
        seq "$1" | awk '{ printf "  - { name: a-%d }\n", $1 }'
    } >"$f"
    echo "$f"
}

# measure LABEL BINARY N MERGE : one fleet and one probe run; appends a row of key=value to
# $tmp/rows.
measure() {
    local label=$1 bin=$2 n=$3 merge=$4 run=$tmp/$1-$3
    mkdir -p "$run"
    start "fleet-$label-$n" 120 "$bin" mock fleet --config "$(fleet_file "$n")" --port 0 --seed 1
    local fleet=$PID base=$URL
    seq "$n" | awk -v u="$base" 'BEGIN { print "targets:" }
        { printf "  - name: a-%d\n    url: %s/agents/a-%d\n", $1, u, $1 }' >"$run/targets.yaml"
    local outputs=()
    [ "$merge" = 1 ] && outputs=(--json "$run/all.json" --junit "$run/all.xml" --html "$run/all.html")
    echo "$label, N=$n: probe roundtable --targets ($n) --target-concurrency $CONCURRENCY${outputs:+ --json --junit --html}…" >&2
    local f0 f1 t0 t1 rc=0
    f0=$(cpu_ticks "$fleet")
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$run/time.txt" "$bin" probe roundtable --targets "$run/targets.yaml" \
        --target-concurrency "$CONCURRENCY" --out-dir "$run/out" "${outputs[@]}" \
        >"$run/probe.out" 2>"$run/probe.err" || rc=$?
    t1=$(date +%s%N)
    f1=$(cpu_ticks "$fleet")
    stop "$fleet"
    local summary passed
    summary=$(grep -E '^[0-9]+ target\(s\): ' "$run/probe.out" | tail -n1 || true)
    passed=$(awk -v n="$n" '{ print ($1 == n && $3 == n && $5 == 0) ? "yes" : "NO" }' <<<"${summary:-x}")
    [ "$passed" = yes ] || echo "$SCRIPT: $label at N=$n: exit $rc, not every target passed: ${summary:-no summary line}; $(tail -n3 "$run/probe.err")" >&2
    local size=()
    for f in all.json all.xml all.html; do
        [ -f "$run/$f" ] && size+=("$f $(du -b "$run/$f" | cut -f1)")
    done
    python3 - "$run/time.txt" "$label" "$n" "$t0" "$t1" "$((f1 - f0))" "$HZ" "$(du -sb "$run/out" | cut -f1)" \
        "$passed" "$merge" "${size[@]}" >>"$tmp/rows" <<'EOF'
import re, sys
time_txt, label, n, t0, t1, fleet_ticks, hz, out_bytes, passed, merge, *sizes = sys.argv[1:]
t = open(time_txt).read()
get = lambda key: float(re.search(rf"{key}: ([\d.]+)", t).group(1))
n, wall = int(n), (int(t1) - int(t0)) / 1e9
probe_cpu = get(r"User time \(seconds\)") + get(r"System time \(seconds\)")
rss_mb = get(r"Maximum resident set size \(kbytes\)") / 1024
fleet_cpu = int(fleet_ticks) / int(hz)
print(label, n, f"{wall:.2f}", f"{n / wall:.1f}", f"{(probe_cpu + fleet_cpu) / n * 1e3:.2f}",
      f"{probe_cpu / n * 1e3:.2f}", f"{fleet_cpu / n * 1e3:.2f}",
      f"{rss_mb:.0f}", f"{int(out_bytes) / 1e6:.1f}",
      passed, merge, ",".join(f"{s.split()[0]}={int(s.split()[1]) / 1e6:.1f}MB" for s in sizes) or "-",
      sep="\t")
EOF
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp -r "$run" "$KEEP/"
    rm -rf "$run"
}

: >"$tmp/rows"
for n in $N_LIST; do
    measure after "$BIN" "$n" "$MERGED"
    if [ -n "$BEFORE" ]; then
        merge=$MERGED
        [ "$n" -gt "$BEFORE_MERGED_MAX" ] && merge=0
        measure before "$BEFORE" "$n" "$merge"
    fi
done

echo
echo "agent-tck $("$BIN" --version 2>/dev/null | awk '{print $2}')${BEFORE:+ (before: $("$BEFORE" --version 2>/dev/null | awk '{print $2}'), $BEFORE)} · $(uname -sm) · $(nproc) CPUs · load average: $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "How measured: a conforming fleet of N agents (mock fleet, one port) and probe roundtable --targets"
echo "with --target-concurrency $CONCURRENCY in two processes; CPU = user+sys of the probe plus the fleet's"
echo "over the probe's run, per agent; RSS = the probe's peak (/usr/bin/time -v); out-dir = du -sb."
echo
python3 - "$tmp/rows" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
head = ["binary", "N", "wall s", "agents/s", "CPU ms/agent", "(probe", "fleet)", "peak RSS MB",
        "out-dir MB", "all passed", "merged outputs"]
fmt = "{:<7} {:>6} {:>8} {:>9} {:>13} {:>7} {:>7} {:>12} {:>11} {:>11}  {}"
print(fmt.format(*head))
for r in rows:
    merged = r[11] if r[10] == "1" else "not asked (merged outputs skipped)"
    print(fmt.format(*r[:10], merged))
after = {r[1]: r for r in rows if r[0] == "after"}
before = {r[1]: r for r in rows if r[0] == "before"}
if before:
    print()
    for n, b in before.items():
        a = after[n]
        print(f"N={n}: agents/s after/before {float(a[3]) / float(b[3]):.2f}x; "
              f"CPU per agent after/before {float(a[4]) / float(b[4]):.2f} "
              f"(probe {float(a[5]) / float(b[5]):.2f}, fleet {float(a[6]) / max(float(b[6]), 1e-9):.2f})"
              + ("" if a[10] == b[10] else "; the before run skipped the merged outputs"))
EOF
