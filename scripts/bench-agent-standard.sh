#!/usr/bin/env bash
# Figures for the agent protocol standard, measured on this machine:
#   (a) `lint agents` over 10,000 definitions (written by `mock agents --count 10000`): files
#       per second and peak RSS (GNU time's %M);
#   (b) probe time per saved response: `probe agent-standard --output` over N copies of the
#       standard's execute example, timed as one run, divided by N;
#   (c) probe time per agent run: `probe agent-standard --exec` against the release mock agent
#       (plan, then execute, with a --workdir of 200 files), beside the same mock run bare from
#       the shell with the same input (the cost of the agent itself).
#
# Usage: scripts/bench-agent-standard.sh    (N=… sets (b)'s responses, default 2000; RUNS=… (c)'s
#        probe runs, default 20)
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=bench-agent-standard.sh
source scripts/common.sh
N=${N:-2000}
RUNS=${RUNS:-20}
cargo build --release --bins
BIN=$PWD/target/release/agent-tck
TIME=/usr/bin/time
need time:/usr/bin/time

now() { date +%s.%N; }
per() { echo "scale=3; ($2 - $1) * 1000 / $3" | bc; }

# ---- (a) lint --------------------------------------------------------------------------------------
echo "measuring (a) lint over 10,000 definitions…" >&2
"$BIN" mock agents --dir "$tmp/set" --count 10000 --seed 1 >/dev/null
t0=$(now)
$TIME -f '%M' -o "$tmp/lint.rss" "$BIN" lint agents "$tmp/set/agents" --format json >/dev/null
t1=$(now)
LINT_S=$(echo "$t1 - $t0" | bc)
LINT_RATE=$(echo "10000 / $LINT_S" | bc)
LINT_RSS=$(tail -1 "$tmp/lint.rss")

# ---- (b) saved responses ---------------------------------------------------------------------------
echo "measuring (b) $N saved responses…" >&2
mkdir -p "$tmp/out"
for i in $(seq "$N"); do cp tests/fixtures/agent-standard/execute.txt "$tmp/out/r$i.txt"; done
t0=$(now)
"$BIN" probe agent-standard --output "$tmp"/out/*.txt --mode execute --json "$tmp/b.json" >/dev/null 2>&1
t1=$(now)
SAVED_MS=$(per "$t0" "$t1" "$N")

# ---- (c) agent runs ----------------------------------------------------------------------------------
echo "measuring (c) $RUNS probe runs of two agent runs each…" >&2
mkdir -p "$tmp/project/src"
for i in $(seq 200); do printf 'fn f%s() {}\n' "$i" >"$tmp/project/src/f$i.rs"; done
MOCK="$BIN mock agent --protocol agent-standard --name security-scanner --next reviewer --seed 1"
t0=$(now)
for _ in $(seq "$RUNS"); do
    "$BIN" probe agent-standard --exec "$MOCK" --workdir "$tmp/project" --json "$tmp/c.json" >/dev/null 2>&1
done
t1=$(now)
EXEC_MS=$(per "$t0" "$t1" "$((RUNS * 2))")
t0=$(now)
for _ in $(seq "$RUNS"); do
    echo '{"execution_mode":"plan","task":"t"}' | $MOCK >/dev/null
    echo '{"execution_mode":"execute","task":"t","approved":true}' | $MOCK >/dev/null
done
t1=$(now)
BARE_MS=$(per "$t0" "$t1" "$((RUNS * 2))")

cat <<OUT
agent standard, $(nproc) CPUs:
  (a) lint agents, 10,000 definitions: ${LINT_S} s, ${LINT_RATE} files/s, peak RSS ${LINT_RSS} KB
  (b) probe --output: ${SAVED_MS} ms per saved response (${N} responses in one run)
  (c) probe --exec: ${EXEC_MS} ms per agent run (a scratch copy of 200 files, read before and
      after each), against ${BARE_MS} ms for the same mock run bare from the shell
OUT
