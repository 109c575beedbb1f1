#!/usr/bin/env bash
# The HTML report's size and the time to write it (examples/html_figures.rs: the fastest of five
# renders of a saved JSON report), for:
#   (a) the self-test's report (`agent-tck selftest --json`);
#   (b) a fleet run of 10,000 requests: `mock fleet --preset chaos`, sent N requests (POST /analyze
#       round-robin over six of its quick agents — conforming, 500s, truncated JSON, wrong schema,
#       an HTML page —, 8 keep-alive clients), then stopped.
# Every server started here is killed on exit.
#
# Usage: scripts/bench-html.sh      (N=… sets (b)'s requests, default 10000)
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=bench-html.sh
source scripts/common.sh
N=${N:-10000}
need python3:python3
cargo build --release --bins --examples
BIN=$PWD/target/release/agent-tck

echo "(a) the self-test…" >&2
"$BIN" selftest --seed 1 --json "$tmp/selftest.json" >/dev/null 2>&1 || true
[ -s "$tmp/selftest.json" ] || die "the self-test wrote no report"

echo "(b) a fleet run of $N requests…" >&2
start fleet 30 "$BIN" mock fleet --preset chaos --port 0 --seed 1 --quiet --json "$tmp/fleet.json"
python3 - "$URL" "$N" <<'PY'
import http.client, json, sys, threading, urllib.parse
base, n = sys.argv[1], int(sys.argv[2])
agents = ["steady-1", "steady-2", "errors", "truncated-json", "string-false", "html-page"]
body = json.dumps({"task_id": "bench", "content": "Review the plan.", "context": {}, "constraints": []})
host = urllib.parse.urlparse(base).netloc
def client(k):
    c = http.client.HTTPConnection(host, timeout=10)
    for i in range(k, n, 8):
        path = f"/agents/{agents[i % len(agents)]}/analyze"
        try:
            c.request("POST", path, body, {"Content-Type": "application/json"})
            c.getresponse().read()
        except Exception:
            c.close(); c = http.client.HTTPConnection(host, timeout=10)
threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
PY
kill -INT "$PID"
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
[ -s "$tmp/fleet.json" ] || die "the fleet wrote no report: $(tail -3 "$tmp/fleet.err")"

./target/release/examples/html_figures "$tmp/selftest.json" "$tmp/fleet.json"
