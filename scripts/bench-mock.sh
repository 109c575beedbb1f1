#!/usr/bin/env bash
# Figures for the mock fleet, measured on this machine, everything on 127.0.0.1:
#   (1) throughput of a conforming fleet agent (shared port, /agents/<name>/analyze), and of one
#       agent alone (`mock agent`, /analyze), under
#       `wrk -c 50 -t 2 -d 10s` (POST with a fixed /analyze body), against a bare hyper server
#       (examples/bare_hyper.rs) answering every request with the very bytes the mock answered:
#       req/s, wrk's p99 latency, the server's CPU per request; rounds alternate mock, bare, mock
#       with --journal, then mock and bare once more with a new task_id in every request (so no
#       answer repeats), and, when oha is installed, mock and bare under `oha -c 50` too; the
#       ratios are the median over the rounds;
#   (2) accuracy of `slow:200ms`: 10,000 connections opened, then 10,000 POST /analyze sent at once
#       (examples/slow_accuracy.rs); the time from each request written to its answer's first byte,
#       minus 200 ms, as the client sees it; the same against bare hyper sleeping 200 ms (the
#       baseline of this machine); and once more with --journal, whose answer records give the
#       server's own view (request read → first byte written);
#   (2') the same 10,000 in flight at once, but released 5,000 a second against `slow:2s`, so the
#       server reads them as they come: the timer's accuracy rather than the server's queue;
#   (3) resident memory of an idle 10,000-agent fleet (generate: 10000, one port);
#   (4) resident memory of a `hang` agent holding 10,000 connections with a request each;
#   (5) instructions per request, mock and bare hyper, under callgrind (scripts/instructions.sh).
#   (1w) in (1)'s rounds, WireMock (standalone, one stub answering the same bytes; its jar from
#       the npm package `wiremock`, run on the machine's Java) beside the one agent alone.
# Every server started here is killed on exit.
#
# Usage: scripts/bench-mock.sh   (ROUNDS=N: throughput rounds, default 2; DURATION=10s: each wrk
#        run; CONNS=10000: connections for (2) and (4); SMALL="100 1000": smaller bursts for (2);
#        AGENTS=10000: fleet size for (3); WIREMOCK=0: no WireMock row; WIREMOCK_VERSION=3.13.2)
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-10000}
SMALL=${SMALL:-100 1000}
AGENTS=${AGENTS:-10000}
TARGET_DIR=${CARGO_TARGET_DIR:-target}

SCRIPT=bench-mock.sh
source scripts/common.sh

need wrk:wrk curl:curl python3:python3 iproute2:ss
WIREMOCK=${WIREMOCK:-1}
WIREMOCK_VERSION=${WIREMOCK_VERSION:-3.13.2}
[ "$WIREMOCK" = 0 ] || need default-jre-headless:java npm:npm
# oha is optional: with it, (1) is measured under oha as well.
OHA=$(command -v oha || true)

cargo build --release --examples --bins
BIN=$TARGET_DIR/release/agent-tck
BARE=$TARGET_DIR/release/examples/bare_hyper
BURST=$TARGET_DIR/release/examples/slow_accuracy

# Each connection is a file descriptor, in the client and in the server.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" -ge $((CONNS + 1000)) ] ||
    die "the open-file limit is $(ulimit -n) (hard: $(ulimit -Hn)); $CONNS connections need $((CONNS + 1000))"

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
# stop PID : SIGTERM, then waits at most 10 s; sets STOP ("exit N after S s" or "killed").
stop() {
    local pid=$1 t0 rc=0
    t0=$(date +%s%N)
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        STOP="killed: still running 10 s after SIGTERM"
        return 0
    fi
    wait "$pid" 2>/dev/null || rc=$?
    STOP="exit $rc after $(((($(date +%s%N) - t0) / 1000000))) ms"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }
port_of() { echo "${1##*:}"; }
# established PORT : server-side connections on PORT, and how many have unread bytes.
established() {
    ss -tnH state established "( sport = :$1 )" | awk '{ n++; if ($1 > 0) u++ } END { printf "%d %d\n", n, u }'
}
# verdict VALUE OP LIMIT
verdict() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
    ok = (op == ">=") ? v >= l : v <= l; if (v == "nan" || v == "") ok = 0
    print ok ? "met" : "MISSED" }'; }

# ---- the request, the fleets --------------------------------------------------------------------
cat >"$tmp/body.json" <<'EOF'
{"task_id":"task-7f3a9c21-bench","content":"Review the proposed migration of the payments service from a single PostgreSQL primary to a two-region active/passive setup. The plan moves writes to the new primary in eu-west-1 during a 30-minute maintenance window, replays the WAL to the standby in us-east-1, and switches the connection string through the service mesh. Identify risks to data integrity, availability and rollback, and say what should be verified before, during and after the cut-over.","context":{"strategy":"risk-first","focus_areas":["data integrity","availability","rollback"],"requested_by":"platform-team","round":1},"constraints":["Cite evidence from the plan for every observation","Keep each recommendation actionable","Do not propose changing the database engine"]}
EOF
BODY_BYTES=$(wc -c <"$tmp/body.json")
cat >"$tmp/post.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open("$tmp/body.json", "rb"))
wrk.body = f:read("*a")
f:close()
EOF
# The same body with a task_id of its own per request ("bench-<thread>-<n>"): every answer is
# generated afresh and the observer follows a new task each time, as in a real deliberation.
cat >"$tmp/unique.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open("$tmp/body.json", "rb"))
local template = f:read("*a")
f:close()
local before, after = template:match('^(.-"task_id":")[^"]*(".*)\$')
assert(before, "body.json has no task_id")
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("tid", threads)
end
local n = 0
function request()
    n = n + 1
    return wrk.format(nil, nil, nil, before .. "bench-" .. tid .. "-" .. n .. after)
end
EOF
cat >"$tmp/conforming.yaml" <<'EOF'
# 100 conforming agents on one port; the benchmark talks to bench-1.
agents:
  - name: "bench-{i}"
    generate: 100
EOF
cat >"$tmp/slow.yaml" <<'EOF'
agents:
  - name: slow
    behaviors: ["slow:200ms"]
EOF
cat >"$tmp/slow2s.yaml" <<'EOF'
agents:
  - name: slow
    behaviors: ["slow:2s"]
EOF
cat >"$tmp/hang.yaml" <<'EOF'
agents:
  - name: hung
    behaviors: ["hang"]
EOF
cat >"$tmp/big.yaml" <<EOF
agents:
  - name: "agent-{i}"
    generate: $AGENTS
EOF

post() { # post URL OUT : POSTs the body; prints "STATUS TTFB_S CONTENT_TYPE".
    curl -sS --max-time 10 -o "$2" -X POST -H 'content-type: application/json' \
        --data-binary @"$tmp/body.json" -w '%{http_code} %{time_starttransfer} %{content_type}\n' "$1"
}

# ---- (1) throughput -------------------------------------------------------------------------------
echo "measuring (1) throughput: $ROUNDS rounds of mock, bare hyper, mock --journal (wrk), then with new task_ids (wrk), then one agent alone (both bodies)${OHA:+ and under oha}, $DURATION each…" >&2
start mock 10 "$BIN" mock fleet --config "$tmp/conforming.yaml" --port 0 --seed 1
MOCK_PID=$PID MOCK_URL=$URL/agents/bench-1/analyze
start journal 10 "$BIN" mock fleet --config "$tmp/conforming.yaml" --port 0 --seed 1 \
    --journal "$tmp/journal.jsonl"
JOURNAL_PID=$PID JOURNAL_URL=$URL/agents/bench-1/analyze

# One agent alone, with the fleet agent's name and seed: it answers the same bytes, so the same
# bare hyper stands for both (checked below).
start one 10 "$BIN" mock agent --port 0 --seed 1 --name bench-1 --quiet
ONE_PID=$PID ONE_URL=$URL/analyze

read -r status _ ctype < <(post "$MOCK_URL" "$tmp/answer.bin")
[ "$status" = 200 ] || die "the mock answered $status to POST $MOCK_URL: $(head -c 300 "$tmp/answer.bin")"
start bare 10 "$BARE" --body "$tmp/answer.bin" --content-type "$ctype"
BARE_PID=$PID BARE_URL=$URL/agents/bench-1/analyze
post "$BARE_URL" "$tmp/bare.bin" >/dev/null
cmp -s "$tmp/answer.bin" "$tmp/bare.bin" || die "bare hyper does not answer the mock's bytes"
post "$JOURNAL_URL" "$tmp/journal.bin" >/dev/null
cmp -s "$tmp/answer.bin" "$tmp/journal.bin" || die "the journaled mock answers other bytes"
post "$ONE_URL" "$tmp/one.bin" >/dev/null
cmp -s "$tmp/answer.bin" "$tmp/one.bin" || die "the one-agent mock answers other bytes than the fleet's agent"
ANSWER_BYTES=$(wc -c <"$tmp/answer.bin")

# wiremock_jar : the path of WireMock's standalone jar, taken from the npm package of the same
# version the first time and kept in $TARGET_DIR/bench-tools.
wiremock_jar() {
    local jar=$TARGET_DIR/bench-tools/wiremock-standalone-$WIREMOCK_VERSION.jar
    if [ ! -s "$jar" ]; then
        mkdir -p "$(dirname "$jar")"
        (cd "$tmp" && npm pack --silent "wiremock@$WIREMOCK_VERSION" >/dev/null) ||
            die "cannot fetch the npm package wiremock@$WIREMOCK_VERSION (npm pack)"
        tar xzf "$tmp/wiremock-$WIREMOCK_VERSION.tgz" -C "$tmp" ||
            die "cannot unpack wiremock-$WIREMOCK_VERSION.tgz"
        mv "$tmp/package/build/wiremock-standalone-$WIREMOCK_VERSION.jar" "$jar" ||
            die "wiremock@$WIREMOCK_VERSION holds no build/wiremock-standalone-$WIREMOCK_VERSION.jar"
    fi
    echo "$jar"
}

# WireMock: one stub, POST /analyze → the mock's answer bytes and content-type. No request
# journal (it would keep every request) and no request log, as for a load test.
if [ "$WIREMOCK" != 0 ]; then
    WM_JAR=$(wiremock_jar)
    mkdir -p "$tmp/wiremock/mappings" "$tmp/wiremock/__files"
    cp "$tmp/answer.bin" "$tmp/wiremock/__files/answer.bin"
    cat >"$tmp/wiremock/mappings/analyze.json" <<EOF
{"request": {"method": "POST", "urlPath": "/analyze"},
 "response": {"status": 200, "headers": {"content-type": "$ctype"}, "bodyFileName": "answer.bin"}}
EOF
    WM_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    java -jar "$WM_JAR" --port "$WM_PORT" --bind-address 127.0.0.1 --root-dir "$tmp/wiremock" \
        --no-request-journal --disable-request-logging --disable-banner \
        >"$tmp/wiremock.out" 2>&1 &
    WM_PID=$!
    pids+=("$WM_PID")
    WM_URL=http://127.0.0.1:$WM_PORT/analyze
    for _ in $(seq 120); do
        curl -s -o /dev/null -X POST --data-binary @"$tmp/body.json" "$WM_URL" 2>/dev/null && break
        kill -0 "$WM_PID" 2>/dev/null || die "WireMock exited: $(tail -5 "$tmp/wiremock.out")"
        sleep 0.5
    done
    post "$WM_URL" "$tmp/wiremock.bin" >/dev/null
    cmp -s "$tmp/answer.bin" "$tmp/wiremock.bin" || die "WireMock does not answer the mock's bytes"
fi

# bench NAME PID URL [SCRIPT|oha] : one run of wrk with SCRIPT (post.lua, the default, or
# unique.lua), or of oha with the fixed body; appends "RPS P99_MS CPU_US_PER_REQ ERRORS" to
# $tmp/NAME.runs.
bench() {
    local name=$1 pid=$2 url=$3 how=${4:-post.lua} t0 t1
    t0=$(cpu_ticks "$pid")
    if [ "$how" = oha ]; then
        timeout 60 oha -c 50 -z "$DURATION" --no-tui --output-format json -m POST \
            -H 'content-type: application/json' -D "$tmp/body.json" "$url" >"$tmp/load.out" ||
            die "oha against $name failed: $(head -c 500 "$tmp/load.out")"
    else
        timeout 60 wrk -c 50 -t 2 -d "$DURATION" --latency -s "$tmp/$how" "$url" >"$tmp/load.out" ||
            die "wrk against $name failed: $(cat "$tmp/load.out")"
    fi
    t1=$(cpu_ticks "$pid")
    python3 - "$tmp/load.out" "$how" "$((t1 - t0))" "$(getconf CLK_TCK)" >>"$tmp/$name.runs" <<'EOF'
import json, re, sys
text, how = open(sys.argv[1]).read(), sys.argv[2]
ticks, hz = int(sys.argv[3]), int(sys.argv[4])
if how == "oha":
    d = json.loads(text)
    rps, p99 = d["summary"]["requestsPerSec"], d["latencyPercentiles"]["p99"] * 1e3
    codes = {int(k): v for k, v in d["statusCodeDistribution"].items()}
    total = sum(codes.values())
    # Requests still in flight when -z ends are aborted by oha itself: not errors.
    errors = sum(v for k, v in codes.items() if k != 200) + sum(
        v for k, v in d["errorDistribution"].items() if "deadline" not in k)
else:
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    total = int(re.search(r"(\d+) requests in", text).group(1))
    v, unit = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    p99 = float(v) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors += int(m.group(1)) if m else 0
print(f"{rps:.0f} {p99:.2f} {ticks / hz * 1e6 / max(total, 1):.1f} {errors}")
EOF
}

# Warm-up (allocator, lazily built tables): 2 s each, not counted.
for target in "$MOCK_URL" "$BARE_URL" "$JOURNAL_URL" "$ONE_URL"; do
    timeout 30 wrk -c 50 -t 2 -d 2s -s "$tmp/post.lua" "$target" >/dev/null
done
# The JVM compiles its hot code over the first tens of seconds under load (with 10 s of
# warm-up, WireMock served 7,287 req/s in the first round and 15,630 in the second): 30 s, not
# counted.
[ "$WIREMOCK" = 0 ] || timeout 90 wrk -c 50 -t 2 -d 30s -s "$tmp/post.lua" "$WM_URL" >/dev/null
for round in $(seq "$ROUNDS"); do
    echo "  round $round/$ROUNDS" >&2
    bench mock "$MOCK_PID" "$MOCK_URL"
    bench bare "$BARE_PID" "$BARE_URL"
    bench journal "$JOURNAL_PID" "$JOURNAL_URL"
    bench mock-unique "$MOCK_PID" "$MOCK_URL" unique.lua
    bench bare-unique "$BARE_PID" "$BARE_URL" unique.lua
    bench one "$ONE_PID" "$ONE_URL"
    bench one-unique "$ONE_PID" "$ONE_URL" unique.lua
    [ "$WIREMOCK" = 0 ] || bench wiremock "$WM_PID" "$WM_URL"
    if [ -n "$OHA" ]; then
        bench mock-oha "$MOCK_PID" "$MOCK_URL" oha
        bench bare-oha "$BARE_PID" "$BARE_URL" oha
    fi
done
JOURNAL_LINES=$(wc -l <"$tmp/journal.jsonl")
JOURNAL_MB=$(du -m "$tmp/journal.jsonl" | cut -f1)
stop "$MOCK_PID"
stop "$BARE_PID"
stop "$JOURNAL_PID"
stop "$ONE_PID"
[ "$WIREMOCK" = 0 ] || stop "$WM_PID"
rm -f "$tmp/journal.jsonl"

# summary NAME : "median req/s, p99, CPU" of NAME's rounds; ratio NAME [BASE [COLUMN]] : the
# per-round ratios NAME/BASE (default bare) of COLUMN (0, the default: req/s; 2: CPU per request)
# and their median.
summary() {
    python3 - "$tmp/$1.runs" <<'EOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
col = lambda i: statistics.median(r[i] for r in rows)
runs = ", ".join(f"{r[0]:.0f}" for r in rows)
errors = sum(r[3] for r in rows)
print(f"{col(0):.0f} req/s, p99 {col(1):.2f} ms, server CPU {col(2):.1f} µs/req "
      f"(medians; runs: {runs}){'; ERRORS: %d' % errors if errors else ''}")
EOF
}
ratio() {
    python3 - "$tmp/$1.runs" "$tmp/${2:-bare}.runs" "${3:-0}" <<'EOF'
import statistics, sys
column = int(sys.argv[3])
a = [float(l.split()[column]) for l in open(sys.argv[1])]
b = [float(l.split()[column]) for l in open(sys.argv[2])]
r = [x / y for x, y in zip(a, b)]
print(f"{statistics.median(r):.2f} " + ", ".join(f"{x:.2f}" for x in r))
EOF
}
read -r RATIO RATIO_RUNS < <(ratio mock)
read -r JRATIO JRATIO_RUNS < <(ratio journal)
read -r URATIO URATIO_RUNS < <(ratio mock-unique bare-unique)
read -r ONE_RATIO ONE_RATIO_RUNS < <(ratio one)
read -r ONE_URATIO ONE_URATIO_RUNS < <(ratio one-unique bare-unique)
[ -z "$OHA" ] || read -r ORATIO ORATIO_RUNS < <(ratio mock-oha bare-oha)
if [ "$WIREMOCK" != 0 ]; then
    read -r WM_RATIO WM_RATIO_RUNS < <(ratio one wiremock)
    read -r WM_BARE WM_BARE_RUNS < <(ratio bare wiremock)
    # Server CPU per request, WireMock's over the one agent's: how much less work a request
    # costs, whatever share of the two CPUs the client leaves each server.
    read -r WM_CPU WM_CPU_RUNS < <(ratio wiremock one 2)
fi

# ---- (2) slow:200ms accuracy ------------------------------------------------------------------------
echo "measuring (2) slow:200ms with $CONNS requests at once…" >&2
# burst NAME URL [N [DELAY [RATE]]] : N requests (default CONNS) against an agent that waits DELAY
# (default 200ms), all at once or RATE a second; keeps the key=value lines in $tmp/NAME.burst.
burst() {
    local rc=0
    timeout 45 "$BURST" --url "$2" --body "$tmp/body.json" --connections "${3:-$CONNS}" \
        --delay "${4:-200ms}" ${5:+--rate "$5"} --timeout 30s >"$tmp/$1.burst" 2>"$tmp/$1.burst.err" || rc=$?
    echo "rc=$rc" >>"$tmp/$1.burst"
    grep -q '^answered=' "$tmp/$1.burst" || die "the burst against $1 did not finish: $(cat "$tmp/$1.burst.err")"
}
kv() { grep -m1 "^$2=" "$tmp/$1.burst" | cut -d= -f2; }
# burst_line NAME [DELAY_MS] : one burst's figures, overshoot over DELAY_MS (default 200).
burst_line() {
    local n=$1
    printf '%s/%s answered (peak in flight %s), %s failed; early: %s (%s from the write'"'"'s return); min %s ms; over %s ms: p50 %s, p99 %s, max %s ms' \
        "$(kv "$n" answered)" "$(kv "$n" connections)" "$(kv "$n" peak_in_flight)" "$(kv "$n" failed)" \
        "$(kv "$n" early_from_write_start)" "$(kv "$n" early)" "$(kv "$n" min_ms)" "${2:-200}" \
        "$(kv "$n" over_p50_ms)" "$(kv "$n" over_p99_ms)" "$(kv "$n" over_max_ms)"
}

start slow 10 "$BIN" mock fleet --config "$tmp/slow.yaml" --port 0 --seed 1
SLOW_PID=$PID SLOW_URL=$URL/agents/slow/analyze
read -r status ttfb _ < <(post "$SLOW_URL" /dev/null)
[ "$status" = 200 ] || die "the slow agent answered $status"
SLOW_SINGLE_MS=$(awk -v t="$ttfb" 'BEGIN { printf "%.1f", t * 1000 }')
burst mock-slow "$SLOW_URL"
SLOW_RSS=$(hwm_kb "$SLOW_PID")
for n in $SMALL; do
    sleep 1
    burst "mock-slow-$n" "$SLOW_URL" "$n"
done
stop "$SLOW_PID"

start bare-slow 10 "$BARE" --body "$tmp/answer.bin" --content-type "$ctype" --delay 200ms
BARE_SLOW_PID=$PID
post "$URL/agents/slow/analyze" /dev/null >/dev/null
burst bare-slow "$URL/agents/slow/analyze"
stop "$BARE_SLOW_PID"

# (2') The same number in flight at once, paced: released at CONNS/2 a second against an agent
# that waits 2 s, so the server can read them as they come; then the same against bare hyper.
PACE=$((CONNS / 2))
start slow-paced 10 "$BIN" mock fleet --config "$tmp/slow2s.yaml" --port 0 --seed 1
SP_PID=$PID
post "$URL/agents/slow/analyze" /dev/null >/dev/null
burst mock-paced "$URL/agents/slow/analyze" "$CONNS" 2s "$PACE"
stop "$SP_PID"
start bare-paced 10 "$BARE" --body "$tmp/answer.bin" --content-type "$ctype" --delay 2s
BP_PID=$PID
post "$URL/agents/slow/analyze" /dev/null >/dev/null
burst bare-paced "$URL/agents/slow/analyze" "$CONNS" 2s "$PACE"
stop "$BP_PID"

start slow-journal 10 "$BIN" mock fleet --config "$tmp/slow.yaml" --port 0 --seed 1 \
    --journal "$tmp/slow.jsonl"
SJ_PID=$PID
post "$URL/agents/slow/analyze" /dev/null >/dev/null
burst mock-slow-journal "$URL/agents/slow/analyze"
stop "$SJ_PID"
# The server's view: per answer, request read → first byte written (the warm-up one excluded).
SERVER_SIDE=$(python3 - "$tmp/slow.jsonl" <<'EOF'
import json, sys
req, ans = {}, {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    (req if r["event"] == "request" else ans)[r["seq"]] = r
first = min(req)
ttfb = sorted(a["ttfb_ms"] for s, a in ans.items() if s != first and "ttfb_ms" in a)
over = [t - 200 for t in ttfb]
pct = lambda p: over[max(0, min(len(over) - 1, -(-len(over) * p // 100) - 1))]
reads = sorted(r["t_ms"] for s, r in req.items() if s != first)
print(f"{len(ttfb)} answers, early: {sum(t < 200 for t in ttfb)}; min {ttfb[0]:.3f} ms; "
      f"over 200 ms: p50 {pct(50):.3f}, p99 {pct(99):.3f}, max {over[-1]:.3f} ms; "
      f"requests read over {reads[-1] - reads[0]:.0f} ms")
EOF
)
rm -f "$tmp/slow.jsonl"

# ---- (3) idle 10,000-agent fleet --------------------------------------------------------------------
echo "measuring (3) an idle fleet of $AGENTS agents…" >&2
t0=$(date +%s%N)
start big 60 "$BIN" mock fleet --config "$tmp/big.yaml" --port 0 --seed 1
BIG_PID=$PID
BIG_START_MS=$((($(date +%s%N) - t0) / 1000000))
read -r status _ _ < <(post "$URL/agents/agent-$AGENTS/analyze" "$tmp/big.bin")
[ "$status" = 200 ] || die "agent-$AGENTS of the big fleet answered $status"
grep -q "\"agent_name\":\"agent-$AGENTS\"" "$tmp/big.bin" || die "agent-$AGENTS answered under another name"
sleep 1
BIG_RSS=$(rss_kb "$BIG_PID")
BIG_HWM=$(hwm_kb "$BIG_PID")
stop "$BIG_PID"
BIG_STOP=$STOP

# ---- (4) 10,000 hung connections --------------------------------------------------------------------
echo "measuring (4) a hang agent holding $CONNS connections…" >&2
start hang 10 "$BIN" mock fleet --config "$tmp/hang.yaml" --port 0 --seed 1
HANG_PID=$PID HANG_PORT=$(port_of "$URL")
HANG_RSS0=$(rss_kb "$HANG_PID")
timeout 45 "$BURST" --url "$URL/agents/hung/analyze" --body "$tmp/body.json" --connections "$CONNS" \
    --hold 6s --timeout 30s >"$tmp/hold.out" 2>"$tmp/hold.err" &
HOLD_PID=$!
pids+=("$HOLD_PID")
for _ in $(seq 400); do
    grep -q '^holding' "$tmp/hold.out" && break
    kill -0 "$HOLD_PID" 2>/dev/null || break
    sleep 0.05
done
grep -q '^holding' "$tmp/hold.out" || die "the client did not start holding: $(cat "$tmp/hold.err")"
sleep 2
read -r HELD UNREAD < <(established "$HANG_PORT")
HANG_RSS=$(rss_kb "$HANG_PID")
rc=0
wait "$HOLD_PID" || rc=$?
HOLD_FAILED=$(grep -m1 '^failed=' "$tmp/hold.out" | cut -d= -f2)
sleep 1
read -r LEFT _ < <(established "$HANG_PORT")
HANG_RSS_AFTER=$(rss_kb "$HANG_PID")
stop "$HANG_PID"
HANG_STOP=$STOP

# ---- table ------------------------------------------------------------------------------------------
row() { printf '%-46s %s\n' "$1" "$2"; }
echo
echo "agent-tck $("$BIN" --version 2>/dev/null | awk '{print $2}') · $(uname -sm) · $(nproc) CPUs · load average: $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo
echo "How measured: everything on 127.0.0.1; client and server share the machine's CPUs (and any"
echo "other load on it). (1) wrk -c 50 -t 2 -d $DURATION --latency, POST /agents/bench-1/analyze of a"
echo "100-agent shared-port fleet, a $BODY_BYTES-byte JSON body; bare hyper answers the mock's own $ANSWER_BYTES-byte"
echo "answer (same content-type); server CPU = its utime+stime over the run / requests; $ROUNDS rounds"
echo "(mock, bare, mock --journal), medians; (1') the same with a task_id of its own per request"
echo "(wrk's request function), so no two answers are alike; (1a) the same against one agent alone"
echo "(mock agent --name bench-1 --seed 1: the same answer bytes, so the same bare hyper rounds); (1w) WireMock"
echo "$WIREMOCK_VERSION on $(java -version 2>&1 | head -n1 | tr -d '"') (one stub, the same bytes; --no-request-journal"
echo "--disable-request-logging; 30 s of warm-up first) in the same rounds; (1\") the fixed body under oha -c 50"
echo "(oha spends more CPU per request than wrk, leaving the servers less of the shared CPUs)."
echo "(2) $CONNS connections opened first, then one POST each, all at once; the client times each"
echo "from the write of its request to the first byte of the answer: it includes the client's own"
echo "scheduling and the server's queue before it reads a request; \"early\" counts from the write's"
echo "start (sound: the server cannot have the request before), and in parentheses from its return (a"
echo "client preempted after its write looks early). --journal adds the server's own view. (2') the"
echo "same number in flight at once, but released $((CONNS / 2)) a second against a 2 s delay (the client's"
echo "--rate). (3) RSS one second after one request. (4) RSS 2 s after the last of the $CONNS requests"
echo "was written."
echo
row "figure" "value"
row "----------------------------------------------" "-----"
row "(1) mock, conforming agent" "$(summary mock)"
row "(1) mock --journal" "$(summary journal); journal: $JOURNAL_LINES lines, $JOURNAL_MB MB"
row "(1) bare hyper, same answer" "$(summary bare)"
row "(1) ratio mock / bare" "$RATIO (median; rounds: $RATIO_RUNS) — target ≥ 0.8: $(verdict "$RATIO" ">=" 0.8)"
row "(1) ratio mock --journal / bare" "$JRATIO (median; rounds: $JRATIO_RUNS)"
row "(1') mock, a new task_id per request" "$(summary mock-unique)"
row "(1') bare hyper, the same requests" "$(summary bare-unique)"
row "(1') ratio mock / bare, new task_ids" "$URATIO (median; rounds: $URATIO_RUNS) — target ≥ 0.8: $(verdict "$URATIO" ">=" 0.8)"
row "(1a) one agent (mock agent)" "$(summary one)"
row "(1a) ratio one agent / bare" "$ONE_RATIO (median; rounds: $ONE_RATIO_RUNS) — target ≥ 0.8: $(verdict "$ONE_RATIO" ">=" 0.8)"
row "(1a') one agent, a new task_id per request" "$(summary one-unique)"
row "(1a') ratio one agent / bare, new task_ids" "$ONE_URATIO (median; rounds: $ONE_URATIO_RUNS) — target ≥ 0.8: $(verdict "$ONE_URATIO" ">=" 0.8)"
if [ "$WIREMOCK" != 0 ]; then
    row "(1w) WireMock $WIREMOCK_VERSION, one stub" "$(summary wiremock)"
    row "(1w) ratio one agent / WireMock" "$WM_RATIO (median; rounds: $WM_RATIO_RUNS) — aim ≥ 10: $(verdict "$WM_RATIO" ">=" 10)"
    row "(1w) ratio bare hyper / WireMock" "$WM_BARE (median; rounds: $WM_BARE_RUNS): a bare server on this machine, for scale (the client shares the CPUs)"
    row "(1w) CPU per request, WireMock / one agent" "$WM_CPU (median; rounds: $WM_CPU_RUNS)"
fi
if [ -n "$OHA" ]; then
    row "(1\") mock, under oha" "$(summary mock-oha)"
    row "(1\") bare hyper, under oha" "$(summary bare-oha)"
    row "(1\") ratio mock / bare, under oha" "$ORATIO (median; rounds: $ORATIO_RUNS) — target ≥ 0.8: $(verdict "$ORATIO" ">=" 0.8)"
else
    row "(1\") under oha" "not measured: oha is not installed (cargo install oha)"
fi
row "(2) slow:200ms, one request alone (curl)" "first byte after $SLOW_SINGLE_MS ms"
row "(2) slow:200ms, $CONNS at once (client)" "$(burst_line mock-slow)"
row "    target: 0 early, p99 ≤ 5 ms" "$(verdict "$(kv mock-slow early_from_write_start)" "<=" 0) / $(verdict "$(kv mock-slow over_p99_ms)" "<=" 5); server peak RSS $(mb "$SLOW_RSS")"
for n in $SMALL; do
    row "(2) slow:200ms, $n at once (client)" "$(burst_line "mock-slow-$n") — p99 ≤ 5 ms: $(verdict "$(kv "mock-slow-$n" over_p99_ms)" "<=" 5)"
done
row "(2) baseline: bare hyper + sleep_until 200 ms" "$(burst_line bare-slow)"
row "(2) mock --journal (client)" "$(burst_line mock-slow-journal)"
row "(2) mock --journal (server's own view)" "$SERVER_SIDE"
row "(2') slow:2s, $CONNS in flight, $PACE/s (client)" "$(burst_line mock-paced 2000) — p99 ≤ 5 ms: $(verdict "$(kv mock-paced over_p99_ms)" "<=" 5)"
row "(2') baseline: bare hyper, the same" "$(burst_line bare-paced 2000)"
row "(3) idle fleet of $AGENTS agents, RSS" "$(mb "$BIG_RSS") (peak $(mb "$BIG_HWM"); listening after $BIG_START_MS ms; $BIG_STOP) — target < 100 MB: $(verdict "$BIG_RSS" "<=" 102400)"
row "(4) hang agent, RSS before" "$(mb "$HANG_RSS0")"
row "(4) hang agent, $CONNS connections held" "$(mb "$HANG_RSS") ($(awk -v a="$HANG_RSS" -v b="$HANG_RSS0" -v n="$CONNS" 'BEGIN { printf "%.1f", (a - b) / n }') KB per connection; $HELD established, $UNREAD with unread bytes; client: $HOLD_FAILED failed, exit $rc) — target < 200 MB: $(verdict "$HANG_RSS" "<=" 204800)"
row "(4) hang agent, after the client left" "$(mb "$HANG_RSS_AFTER") ($LEFT connections left); stop: $HANG_STOP"

# ---- (5) instructions per request -------------------------------------------------------------------
# The figure that does not move with the machine's load: callgrind's count (scripts/instructions.sh).
echo
scripts/instructions.sh 2>/dev/null | grep -v '^ *\(Compiling\|Finished\)'
