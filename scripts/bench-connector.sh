#!/usr/bin/env bash
# Figures for the async connector, measured on this machine (release build):
#   (a) callbacks per second the probe's callback endpoint takes (wrk -t2 -c50, POSTs of raw
#       text to one session's callback URL);
#   (b) peak RSS of `mock fleet` holding CLIENTS WebSocket clients (1,000 and 10,000, GNU time's
#       %M) of one session of the reference agent server (examples/connector_figures.rs);
#   (c) latency through the reference server: callback → broadcast and user message → forward →
#       callback → broadcast (p50/p99), from the fleet's report.
# Every server started here is killed on exit.
#
# Usage: scripts/bench-connector.sh      (DURATION=10s for wrk; CLIENTS="1000 10000")
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=bench-connector.sh
source scripts/common.sh
DURATION=${DURATION:-10s}
CLIENTS=${CLIENTS:-"1000 10000"}
need wrk:wrk time:/usr/bin/time
cargo build --release --bins --examples
BIN=$PWD/target/release/agent-tck
FIG=$PWD/target/release/examples/connector_figures

# ---- (a) callbacks per second -------------------------------------------------------------------
start listener 10 "$FIG" listener 120
CALLBACK=$(head -n1 "$tmp/listener.out")
cat >"$tmp/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = "Here is a *Markdown* reply.\n\n- one\n- two\n"
wrk.headers["Content-Type"] = "text/markdown; charset=utf-8"
LUA
RPS=$(wrk -t2 -c50 -d"$DURATION" -s "$tmp/post.lua" "$CALLBACK" | awk '/Requests\/sec/ {print $2}')
echo "(a) the probe's callback endpoint: $RPS callbacks/s (wrk -t2 -c50 -d$DURATION)"

# ---- (b) and (c) WebSocket clients and latency --------------------------------------------------
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start server 10 "$FIG" server "$PORT" 600
for n in $CLIENTS; do
    cat >"$tmp/fleet-$n.yaml" <<YAML
protocol: connector
seed: 1
connector:
  url: $URL
  listen: 127.0.0.1:$PORT
  messages: 3
  clients: $n
  agents:
    - { name: steady, agent-id: ext-steady, behavior: conforming }
YAML
    /usr/bin/time -f "%M" -o "$tmp/rss-$n" "$BIN" mock fleet --config "$tmp/fleet-$n.yaml" \
        --json "$tmp/report-$n.json" --quiet >"$tmp/fleet-$n.out" 2>&1 || true
    python3 - "$tmp/report-$n.json" "$(cat "$tmp/rss-$n")" "$n" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
cases = {c["id"]: c for c in report["cases"]}
attach = cases["platform.ws-attach"]
print(f"(b) {sys.argv[3]} WebSocket clients: peak RSS {int(sys.argv[2]) / 1024:.1f} MB; "
      f"ws-attach {attach['status']} ({attach['message'].splitlines()[0]}); "
      f"exit {'green' if report['summary']['failed'] == 0 else 'red'}")
print(f"(c) {cases['platform.broadcast-latency']['message']}")
PY
done
