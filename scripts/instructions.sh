#!/usr/bin/env bash
# Instructions per request, counted by valgrind (callgrind): a figure that does not move with the
# machine's load, unlike requests/s. For a conforming mock fleet agent (100 agents on one port,
# as in bench-mock.sh) and for bare hyper answering the mock's own bytes (examples/bare_hyper.rs),
# each server is run twice under callgrind, serving N1 and then N2 keep-alive POSTs of the
# bench-mock.sh /analyze body (a new task_id in each); (total(N2) − total(N1)) / (N2 − N1) is the
# cost of one request in user space, start-up and shutdown cancelled out. Prints one line per
# server and the ratio (target: mock ≤ 1.25× bare hyper).
#
# With `proxy`: `agent-tck proxy --protocol roundtable` and the bare forwarding proxy on hyper
# (examples/bare_forward.rs), each in front of one `agent-tck mock agent --name alpha` (not counted),
# the same way; the proxy's figure is then split into what judging the answers took (the agent
# rules, TrafficJudge::judge) and their parse (dupkeys::parse), from callgrind_annotate. The
# throughput target (proxy ≥ 0.8× bare, scripts/bench-proxy.sh) is of req/s, not instructions:
# both make the same system calls, so the kernel's share narrows the ratio in req/s.
#
# Usage: scripts/instructions.sh [proxy]   (N1=1000, N2=3000; PROFILE=profiling: the release
#        build with line tables, so that callgrind_annotate can name functions; the files are
#        kept when KEEP=DIR is set)
set -euo pipefail

cd "$(dirname "$0")/.."
N1=${N1:-1000}
N2=${N2:-3000}
PROFILE=${PROFILE:-profiling}
TARGET_DIR=${CARGO_TARGET_DIR:-target}

SCRIPT=instructions.sh
source scripts/common.sh
need valgrind:valgrind python3:python3 curl:curl

WHAT=${1:-mock}
case $WHAT in mock | proxy) ;; *) die "usage: scripts/instructions.sh [proxy] (not $WHAT)" ;; esac

cargo build --profile "$PROFILE" --bin agent-tck --example bare_hyper --example bare_forward
BIN=$TARGET_DIR/$PROFILE/agent-tck
BARE=$TARGET_DIR/$PROFILE/examples/bare_hyper
BARE_FORWARD=$TARGET_DIR/$PROFILE/examples/bare_forward

cat >"$tmp/fleet.yaml" <<'EOF'
agents:
  - name: "bench-{i}"
    generate: 100
EOF
cat >"$tmp/body.json" <<'EOF'
{"task_id":"task-7f3a9c21-bench","content":"Review the proposed migration of the payments service from a single PostgreSQL primary to a two-region active/passive setup. The plan moves writes to the new primary in eu-west-1 during a 30-minute maintenance window, replays the WAL to the standby in us-east-1, and switches the connection string through the service mesh. Identify risks to data integrity, availability and rollback, and say what should be verified before, during and after the cut-over.","context":{"strategy":"risk-first","focus_areas":["data integrity","availability","rollback"],"requested_by":"platform-team","round":1},"constraints":["Cite evidence from the plan for every observation","Keep each recommendation actionable","Do not propose changing the database engine"]}
EOF

# post N URL : N keep-alive POSTs on one connection, each with a task_id of its own; fails on any
# answer but 200.
post() {
    python3 - "$1" "$2" "$tmp/body.json" <<'EOF'
import http.client, sys, urllib.parse
n, url, body = int(sys.argv[1]), urllib.parse.urlsplit(sys.argv[2]), open(sys.argv[3]).read()
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
for i in range(n):
    conn.request("POST", url.path, body.replace("task-7f3a9c21-bench", f"task-{i}"),
                 {"content-type": "application/json"})
    r = conn.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"answer {i}: {r.status}")
EOF
}

# count NAME N CMD… : runs CMD under callgrind, serves N requests (at $AT, its path), stops it;
# prints total Ir.
AT=/agents/bench-1/analyze # bare hyper answers any path; the mock's agent is at this one
count() {
    local name=$1 n=$2
    shift 2
    local out="$tmp/$name-$n.callgrind"
    start "$name-$n" 120 valgrind --tool=callgrind --callgrind-out-file="$out" "$@"
    local pid=$PID url=$URL$AT
    post 20 "$url" # warm: lazily built tables, the first connection
    post "$n" "$url"
    kill -TERM "$pid"
    for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && die "$name did not stop within 60 s under valgrind"
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$out" "$KEEP/"
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

per_request() { # per_request NAME CMD… : instructions per request
    local name=$1 a b
    shift
    a=$(count "$name" "$N1" "$@")
    b=$(count "$name" "$N2" "$@")
    echo $(((b - a) / (N2 - N1)))
}

# inclusive NAME N FUNCTION : FUNCTION's inclusive Ir in the kept run of N requests.
inclusive() {
    callgrind_annotate --inclusive=yes "$tmp/$1-$2.callgrind" 2>/dev/null |
        awk -v f="$3" 'index($0, f " [") { gsub(",", "", $1); print $1; exit }'
}

if [ "$WHAT" = proxy ]; then
    start upstream 30 "$BIN" mock agent --port 0 --name alpha --seed 1 --quiet
    UPSTREAM=$URL
    AT=/agents/alpha/analyze
    PROXY=$(per_request proxy "$BIN" proxy --protocol roundtable --listen 127.0.0.1:0 \
        --agent "alpha=$UPSTREAM" --quiet)
    share() { # share FUNCTION : its instructions per request in the proxy
        local a b
        a=$(inclusive proxy "$N1" "$1")
        b=$(inclusive proxy "$N2" "$1")
        echo $(((${b:-0} - ${a:-0}) / (N2 - N1)))
    }
    JUDGE=$(share agent_tck::probe::traffic::TrafficJudge::judge)
    PARSE=$(share agent_tck::probe::dupkeys::parse)
    AT=/analyze
    BARE_IR=$(per_request bare "$BARE_FORWARD" --upstream "$UPSTREAM")
    echo "instructions per request (callgrind, user space, ($N2 − $N1) keep-alive POSTs /analyze to one mock agent, a new task_id each):"
    echo "  agent-tck proxy         $PROXY"
    echo "    judging the answer    $JUDGE"
    echo "    parsing the answer    $PARSE"
    echo "  bare forward (hyper)    $BARE_IR"
    awk -v p="$PROXY" -v b="$BARE_IR" 'BEGIN { printf "  ratio proxy / bare %.2f\n", p / b }'
    exit 0
fi

# The answer bare hyper serves: the mock's own bytes.
start answer 30 "$BIN" mock fleet --config "$tmp/fleet.yaml" --port 0 --seed 1
curl -sS -o "$tmp/answer.bin" -X POST -H 'content-type: application/json' \
    --data-binary @"$tmp/body.json" "$URL/agents/bench-1/analyze"
kill -TERM "$PID"

MOCK=$(per_request mock "$BIN" mock fleet --config "$tmp/fleet.yaml" --port 0 --seed 1)
BARE_IR=$(per_request bare "$BARE" --body "$tmp/answer.bin" --content-type application/json)
echo "instructions per request (callgrind, user space, ($N2 − $N1) keep-alive POSTs /analyze, a new task_id each):"
echo "  mock fleet agent  $MOCK"
echo "  bare hyper        $BARE_IR"
awk -v m="$MOCK" -v b="$BARE_IR" 'BEGIN { r = m / b; printf "  ratio mock / bare %.2f — target ≤ 1.25: %s\n", r, (r <= 1.25 ? "met" : "MISSED") }'
