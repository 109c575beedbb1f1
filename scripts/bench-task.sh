#!/usr/bin/env bash
# Figures for the execute_task probe, measured on this machine:
#   (a) turns per second against the conforming stdio mock, persistent vs per-turn (a process per
#       turn), and over TCP (examples/turns.rs: N first-turn exchanges, timed as a whole);
#   (b) peak RSS of `probe execute-task` against an agent that writes 50 MB to stderr before its
#       answer (GNU time's %M), beside its RSS against the conforming agent;
#   (c) time to give up on a hung stdio agent with --timeout 2s and clean up its process group:
#       one that dies on SIGTERM (the mock's `hang`) and one that ignores it (SIGKILL after 500 ms).
# Every server started here is killed on exit.
#
# Usage: scripts/bench-task.sh      (TURNS=N sets the exchanges of (a); default 1000, 200 per-turn)
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=bench-task.sh
source scripts/common.sh
TURNS=${TURNS:-1000}
cargo build --release --bins --examples
BIN=$PWD/target/release/agent-tck
TURNS_BIN=$PWD/target/release/examples/turns
TIME=/usr/bin/time
need time:/usr/bin/time

MOCK="$BIN mock agent --protocol execute-task --stdio --seed 1"

# ---- (a) turns per second -----------------------------------------------------------------------
echo "measuring (a) turns per second…" >&2
PERSISTENT=$("$TURNS_BIN" stdio-persistent "$MOCK" "$TURNS")
PER_TURN=$("$TURNS_BIN" stdio-per-turn "$MOCK" "$((TURNS / 5))")
"$BIN" mock agent --protocol execute-task --tcp 0 --seed 1 >"$tmp/tcp.out" 2>/dev/null &
pids+=("$!")
for _ in $(seq 100); do
    ADDR=$(grep -o 'tcp://[0-9.:]*' "$tmp/tcp.out" | sed 's|tcp://||' || true)
    [ -n "$ADDR" ] && break
    sleep 0.05
done
[ -n "$ADDR" ] || die "the TCP mock did not start"
TCP=$("$TURNS_BIN" tcp "$ADDR" "$TURNS")

# ---- (b) peak RSS ---------------------------------------------------------------------------------
echo "measuring (b) peak RSS…" >&2
rss() {
    "$TIME" -f '%M' -o "$tmp/rss" "$BIN" probe execute-task --stdio "$1" --only protocol.first-turn \
        --timeout 30s --seed 1 >"$tmp/probe.out" 2>&1 || true
    cat "$tmp/rss"
}
RSS_PLAIN=$(rss "$MOCK")
RSS_FLOOD=$(rss "$MOCK --behavior stderr-flood:bytes=50MB")
FLOOD_MSG=$(grep -A1 'protocol.first-turn' "$tmp/probe.out" | head -n1 | sed 's/^ *//')

# ---- (c) give up and clean up -----------------------------------------------------------------------
echo "measuring (c) hung agents…" >&2
give_up() {
    local t0 t1
    t0=$(date +%s%N)
    "$BIN" probe execute-task --stdio "$1" --only protocol.first-turn --timeout 2s >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    awk -v ns="$((t1 - t0))" 'BEGIN { printf "%.2f s", ns / 1e9 }'
}
HANG=$(give_up "$MOCK --behavior hang")
STUBBORN=$(give_up "sh -c 'trap \"\" TERM; sleep 1000'")
LEFT=$(pgrep -f 'sleep 1000' | wc -l || true)

mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }
echo
echo "agent-tck $("$BIN" --version | awk '{print $2}') · $(uname -sm) · $(nproc) CPUs"
echo
printf '%-62s %s\n' "(a) stdio persistent (conforming mock)" "$PERSISTENT"
printf '%-62s %s\n' "(a) stdio per-turn (a process per turn)" "$PER_TURN"
printf '%-62s %s\n' "(a) tcp persistent" "$TCP"
printf '%-62s %s\n' "(b) peak RSS, probe vs the conforming stdio agent" "$(mb "$RSS_PLAIN")"
printf '%-62s %s\n' "(b) peak RSS, probe vs 50 MB of stderr before the answer" "$(mb "$RSS_FLOOD")"
printf '%-62s %s\n' "(c) hung stdio agent (dies on TERM), --timeout 2s: total run" "$HANG"
printf '%-62s %s\n' "(c) hung stdio agent ignoring TERM, --timeout 2s: total run" "$STUBBORN"
printf '%-62s %s\n' "(c) 'sleep 1000' processes left afterwards" "$LEFT"
echo
echo "with the flood, protocol.first-turn said: $FLOOD_MSG"
