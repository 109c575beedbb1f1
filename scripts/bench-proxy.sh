#!/usr/bin/env bash
# Figures for `agent-tck proxy` ("cheap enough to leave in staging"), measured on this machine,
# everything on 127.0.0.1, every row against the same upstream: one `agent-tck mock agent --name
# alpha --seed 1` (the real agent), sent the fixed POST /analyze body of scripts/bench-mock.sh.
#   (a) direct to the agent, no proxy: the baseline of "added latency";
#   (b) through `agent-tck proxy --protocol roundtable --agent alpha=UPSTREAM --quiet` (the
#       platform's requests and the agent's answers judged live), at /agents/alpha/analyze;
#   (b') the same with `--record FILE.har` (every exchange written to disk, as Redocly's proxy
#       always does); RECORD=0 leaves it out;
#   (b") the same with `--judging spare` (answers judged beside the traffic on spare CPU, those
#       the judge falls behind on passed on unjudged and counted: how many, printed at the end);
#       SPARE=0 leaves it out;
#   (c) a bare forwarding proxy on hyper (examples/bare_forward.rs: hyper-util's pooled client,
#       bodies streamed through, nothing judged): the yardstick of "within 0.8×";
#   (d) nginx as a reverse proxy (apt's nginx; a generated config in the scratch folder:
#       `proxy_pass` to an upstream block with `keepalive`, access log off, in the foreground with
#       its own pid and log paths);
#   (e) Stoplight Prism's validation proxy (`prism proxy scripts/bench-proxy/roundtable.openapi.yaml
#       UPSTREAM --errors=false -v warn`: requests and answers validated against the OpenAPI file,
#       violations logged, never answered in their place);
#   (f) Redocly's `proxy` (`redocly proxy --target UPSTREAM --har FILE --api …openapi.yaml`: it
#       records to HAR, always, and validates against the OpenAPI file), when the installed
#       @redocly/cli has that command (the script says so when it has not).
# Prism and Redocly come from npm, pinned (PRISM_VERSION, REDOCLY_VERSION), installed once into
# $TARGET_DIR/bench-tools/npm-proxy. In each of ROUNDS rounds, the rows take turns:
#   throughput: `wrk -t2 -c50 -d$DURATION` with a Lua script for the POST: req/s, the proxy's
#       own CPU per request (utime+stime of its processes over the run / requests);
#   latency: `oha -q $RATE -z $OHA_DURATION -c 50 --latency-correction` (a fixed rate; times from
#       each request's scheduled start, so a stall counts for every request it delays): p50, p99,
#       and the added p50/p99 over (a) in the same round;
#   ratios within the run: (b)/(c), (b)/(d), (b)/(e), (b)/(f) of wrk's req/s, the median over the
#   rounds; the load average at each run's end beside the figures (other builds share the CPUs).
# Then memory: a fresh `agent-tck proxy` under `oha -q $RATE` for DURATION_MEM (default 10m;
# DURATION_MEM=1h for the hour of the issue), its RSS sampled every MEM_EVERY seconds (default
# 10): the series, first/last/max, the slope after the first minute, "flat" or not; and what the
# proxy said when it was stopped (SIGINT: it writes its report).
# Every process started here is killed on exit (scripts/common.sh).
#
# Usage: scripts/bench-proxy.sh   (ROUNDS=2; DURATION=10s: each wrk run; OHA_DURATION=20s; RATE=1000;
#        DURATION_MEM=10m, MEM_EVERY=10, MEM=0: no memory run; NGINX=0, PRISM=0, REDOCLY=0,
#        RECORD=0, SPARE=0: leave that row out; PRISM_VERSION=5.14.2, REDOCLY_VERSION=2.77.0)
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10s}
OHA_DURATION=${OHA_DURATION:-20s}
RATE=${RATE:-1000}
DURATION_MEM=${DURATION_MEM:-10m}
MEM_EVERY=${MEM_EVERY:-10}
MEM=${MEM:-1}
NGINX=${NGINX:-1}
PRISM=${PRISM:-1}
REDOCLY=${REDOCLY:-1}
RECORD=${RECORD:-1}
SPARE=${SPARE:-1}
PRISM_VERSION=${PRISM_VERSION:-5.14.2}
REDOCLY_VERSION=${REDOCLY_VERSION:-2.77.0}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
OPENAPI=$PWD/scripts/bench-proxy/roundtable.openapi.yaml

SCRIPT=bench-proxy.sh
source scripts/common.sh

need wrk:wrk curl:curl python3:python3
[ "$NGINX" = 0 ] || need nginx:nginx
[ "$PRISM$REDOCLY" = 00 ] || need npm:npm
command -v oha >/dev/null || PATH=$HOME/.cargo/bin:$PATH
command -v oha >/dev/null || {
    echo "$SCRIPT: installing oha (cargo install oha, into ~/.cargo/bin)…" >&2
    cargo install --locked oha >&2 || die "cannot install oha (cargo install oha)"
}

cargo build --release --bins --example bare_forward
BIN=$TARGET_DIR/release/agent-tck
BARE=$TARGET_DIR/release/examples/bare_forward

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
secs() { python3 -c 'import sys, re
m = re.fullmatch(r"(\d+)(ms|s|m|h)?", sys.argv[1]) or sys.exit(f"not a duration: {sys.argv[1]}")
print(int(m[1]) * {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600}[m[2]])' "$1"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# cpu_ticks PID : utime+stime of PID and of every process under it (nginx's workers, node's
# helpers), in clock ticks.
cpu_ticks() {
    python3 - "$1" <<'EOF'
import os, sys
stats = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(p)] = (int(f[1]), int(f[11]) + int(f[12]))  # ppid, utime + stime
todo, total = [int(sys.argv[1])], 0
while todo:
    pid = todo.pop()
    total += stats.get(pid, (0, 0))[1]
    todo += [c for c, (ppid, _) in stats.items() if ppid == pid]
print(total)
EOF
}
# stop PID : SIGINT (the proxy writes its report on it), then waits at most 30 s; sets STOP.
stop() {
    local pid=$1 t0 rc=0
    t0=$(date +%s%N)
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        STOP="killed: still running 30 s after SIGINT"
        return 0
    fi
    wait "$pid" 2>/dev/null || rc=$?
    STOP="exit $rc after $((($(date +%s%N) - t0) / 1000000)) ms"
}
# ready NAME PID URL : waits (60 s at most) until POST URL answers, or fails if PID exited.
ready() {
    for _ in $(seq 600); do
        curl -s -o /dev/null --max-time 2 -X POST -H 'content-type: application/json' \
            --data-binary @"$tmp/body.json" "$3" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || die "$1 exited: $(tail -5 "$tmp/$1.out" "$tmp/$1.err" 2>/dev/null)"
        sleep 0.1
    done
    die "$1 did not answer POST $3 within 60 s: $(tail -5 "$tmp/$1.err" 2>/dev/null)"
}
post() { # post URL OUT : POSTs the body; prints "STATUS CONTENT_TYPE".
    curl -sS --max-time 10 -o "$2" -X POST -H 'content-type: application/json' \
        --data-binary @"$tmp/body.json" -w '%{http_code} %{content_type}\n' "$1"
}

# said JSON : what a proxy's JSON report says: its counts, the cases judged, and each failure
# with its message.
said() {
    python3 - "$1" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(print(f"no report ({e})"))
s = d["summary"]
out = f"{s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped"
judged = [c for c in d["cases"] if c["status"] != "skip"]
ev = lambda c: " ".join(f"{v}" for v in (c.get("evidence") or {}).values())
out += "; judged: " + ", ".join(f"{c['id']} {c['status']} ({ev(c)})" for c in judged)
for c in d["cases"]:
    if c["status"] == "fail":
        out += f"\n      FAIL {c['id']}: {c['message'][:300]}"
print(out)
EOF
}

# ---- the request ----------------------------------------------------------------------------------
# The body of scripts/bench-mock.sh, byte for byte.
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

# ---- the parties ----------------------------------------------------------------------------------
rows=() # the rows measured, in order: NAME (its PID in PID_<NAME>, its URL in URL_<NAME>)
add_row() { rows+=("$1"); printf -v "PID_$1" '%s' "$2"; printf -v "URL_$1" '%s' "$3"; }

start upstream 10 "$BIN" mock agent --port 0 --name alpha --seed 1 --quiet
UPSTREAM=$URL UPSTREAM_PID=$PID
add_row direct "$PID" "$UPSTREAM/analyze"

start proxy 10 "$BIN" proxy --protocol roundtable --listen 127.0.0.1:0 --agent "alpha=$UPSTREAM" \
    --quiet --json "$tmp/proxy.json"
add_row proxy "$PID" "$URL/agents/alpha/analyze"
if [ "$RECORD" != 0 ]; then
    start record 10 "$BIN" proxy --protocol roundtable --listen 127.0.0.1:0 --agent "alpha=$UPSTREAM" \
        --quiet --json "$tmp/record.json" --record "$tmp/record.har"
    add_row record "$PID" "$URL/agents/alpha/analyze"
fi
if [ "$SPARE" != 0 ]; then
    start spare 10 "$BIN" proxy --protocol roundtable --listen 127.0.0.1:0 --agent "alpha=$UPSTREAM" \
        --quiet --json "$tmp/spare.json" --judging spare
    add_row spare "$PID" "$URL/agents/alpha/analyze"
fi

start bare 10 "$BARE" --upstream "$UPSTREAM"
add_row bare "$PID" "$URL/analyze"

if [ "$NGINX" != 0 ]; then
    NGINX_VERSION=$(nginx -v 2>&1 | sed 's/.*nginx\///')
    mkdir -p "$tmp/nginx"
    NGINX_PORT=$(free_port)
    # As root, nginx's workers would run as nobody, who cannot enter the scratch folder: as us.
    user_line=
    [ "$(id -u)" -ne 0 ] || user_line="user $(id -un) $(id -gn);"
    cat >"$tmp/nginx/nginx.conf" <<EOF
$user_line
daemon off;
worker_processes auto;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    upstream agent {
        server ${UPSTREAM#http://};
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        location / {
            proxy_pass http://agent;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF
    nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" \
        >"$tmp/nginx.out" 2>"$tmp/nginx.err" &
    pids+=("$!")
    add_row nginx "$!" "http://127.0.0.1:$NGINX_PORT/analyze"
    ready nginx "$!" "$URL_nginx"
fi

# The npm tools, pinned, installed once into the script's own folder.
NPM_DIR=$TARGET_DIR/bench-tools/npm-proxy
npm_tool() { # npm_tool PACKAGE VERSION BIN : the path of BIN, installing PACKAGE@VERSION first
    local bin=$NPM_DIR/node_modules/.bin/$3
    if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$2\"" "$NPM_DIR/node_modules/$1/package.json" 2>/dev/null; then
        mkdir -p "$NPM_DIR"
        echo "$SCRIPT: installing $1@$2 into $NPM_DIR (npm install)…" >&2
        npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error "$1@$2" >&2 ||
            die "cannot install $1@$2 (npm install)"
    fi
    echo "$bin"
}
if [ "$PRISM" != 0 ]; then
    PRISM_BIN=$(npm_tool @stoplight/prism-cli "$PRISM_VERSION" prism)
    PRISM_PORT=$(free_port)
    # -v warn: the request and answer violations are still logged (as warnings), not every
    # request's info lines — as `agent-tck proxy --quiet` prints nothing per exchange.
    "$PRISM_BIN" proxy "$OPENAPI" "$UPSTREAM" -h 127.0.0.1 -p "$PRISM_PORT" --errors=false -v warn \
        >"$tmp/prism.out" 2>"$tmp/prism.err" &
    pids+=("$!")
    add_row prism "$!" "http://127.0.0.1:$PRISM_PORT/analyze"
    ready prism "$!" "$URL_prism"
fi
REDOCLY_NOTE=
if [ "$REDOCLY" != 0 ]; then
    REDOCLY_BIN=$(npm_tool @redocly/cli "$REDOCLY_VERSION" redocly)
    if "$REDOCLY_BIN" proxy --help >"$tmp/redocly-help.out" 2>&1; then
        REDOCLY_PORT=$(free_port)
        # basepath: the OpenAPI file's server (http://127.0.0.1) is matched by path, not by host
        # and port.
        "$REDOCLY_BIN" proxy --target "$UPSTREAM" --host 127.0.0.1 --port "$REDOCLY_PORT" \
            --har "$tmp/redocly.har" --api "$OPENAPI" --match-mode basepath \
            >"$tmp/redocly.out" 2>"$tmp/redocly.err" &
        pids+=("$!")
        add_row redocly "$!" "http://127.0.0.1:$REDOCLY_PORT/analyze"
        ready redocly "$!" "$URL_redocly"
    else
        REDOCLY_NOTE="@redocly/cli $REDOCLY_VERSION has no proxy command (redocly proxy --help: $(grep -v '[║╔╚]' "$tmp/redocly-help.out" | grep -m1 .))"
        echo "$SCRIPT: $REDOCLY_NOTE; no Redocly row" >&2
    fi
fi

# Every row answers what the agent answers: the same status, and the same analysis.
read -r status ctype < <(post "$URL_direct" "$tmp/direct.bin")
[ "$status" = 200 ] || die "the agent answered $status to POST $URL_direct: $(head -c 300 "$tmp/direct.bin")"
ANSWER_BYTES=$(wc -c <"$tmp/direct.bin")
SAME=()
for row in "${rows[@]}"; do
    url=URL_$row
    read -r status _ < <(post "${!url}" "$tmp/$row.bin")
    [ "$status" = 200 ] || die "$row answered $status to POST ${!url}: $(head -c 300 "$tmp/$row.bin")"
    if cmp -s "$tmp/direct.bin" "$tmp/$row.bin"; then
        SAME+=("$row: the same bytes")
    else
        python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); sys.exit(a != b)' \
            "$tmp/direct.bin" "$tmp/$row.bin" ||
            die "$row answers another analysis than the agent's: $(head -c 300 "$tmp/$row.bin")"
        SAME+=("$row: the same JSON, other bytes ($(wc -c <"$tmp/$row.bin") B)")
    fi
done

# ---- the rounds -----------------------------------------------------------------------------------
# wrk_run NAME : one wrk run against NAME; appends "RPS CPU_US_PER_REQ ERRORS LOAD1" to
# $tmp/NAME.wrk.
wrk_run() {
    local name=$1 pid url t0 t1
    pid=PID_$name url=URL_$name
    t0=$(cpu_ticks "${!pid}")
    timeout 60 wrk -t 2 -c 50 -d "$DURATION" -s "$tmp/post.lua" "${!url}" >"$tmp/load.out" ||
        die "wrk against $name failed: $(cat "$tmp/load.out")"
    t1=$(cpu_ticks "${!pid}")
    python3 - "$tmp/load.out" "$((t1 - t0))" "$(getconf CLK_TCK)" >>"$tmp/$name.wrk" <<'EOF'
import re, sys
text, ticks, hz = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
total = int(re.search(r"(\d+) requests in", text).group(1))
errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errors += int(m.group(1)) if m else 0
load = open("/proc/loadavg").read().split()[0]
print(f"{rps:.0f} {ticks / hz * 1e6 / max(total, 1):.1f} {errors} {load}")
EOF
}
# oha_run NAME : one oha run at RATE against NAME; appends "P50_MS P99_MS RPS ERRORS LOAD1" to
# $tmp/NAME.oha (errors: non-200 answers and failed requests, except those oha itself cut off
# when -z ended).
oha_run() {
    local name=$1 url=URL_$1
    timeout $(($(secs "$OHA_DURATION") + 60)) oha -q "$RATE" -z "$OHA_DURATION" -c 50 --latency-correction \
        --no-tui --output-format json -m POST -H 'content-type: application/json' \
        -D "$tmp/body.json" "${!url}" >"$tmp/oha.out" 2>"$tmp/oha.err" ||
        die "oha against $name failed: $(head -c 500 "$tmp/oha.out" "$tmp/oha.err")"
    python3 - "$tmp/oha.out" >>"$tmp/$name.oha" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["latencyPercentiles"]
codes = {int(k): v for k, v in d["statusCodeDistribution"].items()}
errors = sum(v for k, v in codes.items() if k != 200) + sum(
    v for k, v in d["errorDistribution"].items() if "deadline" not in k)
load = open("/proc/loadavg").read().split()[0]
print(f"{p['p50'] * 1e3:.3f} {p['p99'] * 1e3:.3f} {d['summary']['requestsPerSec']:.0f} {errors} {load}")
EOF
    # oha's error kinds, kept for the table.
    python3 -c 'import json, sys; [print(f"{v} {k}") for k, v in json.load(open(sys.argv[1]))["errorDistribution"].items()]' \
        "$tmp/oha.out" >>"$tmp/$name.oha-errors"
}

echo "warming up (wrk, 2 s each; Prism and Redocly 10 s: node compiles its hot code under load)…" >&2
for row in "${rows[@]}"; do
    url=URL_$row
    case $row in prism | redocly) warm=10s ;; *) warm=2s ;; esac
    timeout 60 wrk -t 2 -c 50 -d "$warm" -s "$tmp/post.lua" "${!url}" >/dev/null
done
for round in $(seq "$ROUNDS"); do
    echo "round $round/$ROUNDS: wrk ($DURATION) then oha at $RATE/s ($OHA_DURATION), rows taking turns: ${rows[*]}" >&2
    for row in "${rows[@]}"; do wrk_run "$row"; done
    for row in "${rows[@]}"; do oha_run "$row"; done
done

# ---- memory ---------------------------------------------------------------------------------------
if [ "$MEM" != 0 ]; then
    echo "memory: a fresh agent-tck proxy under oha at $RATE/s for $DURATION_MEM, RSS every $MEM_EVERY s…" >&2
    start mem 10 "$BIN" proxy --protocol roundtable --listen 127.0.0.1:0 --agent "alpha=$UPSTREAM" \
        --quiet --json "$tmp/mem.json"
    MEM_PID=$PID MEM_URL=$URL/agents/alpha/analyze
    ready mem "$MEM_PID" "$MEM_URL"
    mem_s=$(secs "$DURATION_MEM")
    timeout $((${mem_s%.*} + 120)) oha -q "$RATE" -z "$DURATION_MEM" -c 50 --latency-correction \
        --no-tui --output-format json -m POST -H 'content-type: application/json' \
        -D "$tmp/body.json" "$MEM_URL" >"$tmp/mem-oha.out" 2>"$tmp/mem-oha.err" &
    MEM_OHA=$!
    pids+=("$MEM_OHA")
    t0=$(date +%s) next=0
    : >"$tmp/mem.series"
    while kill -0 "$MEM_OHA" 2>/dev/null; do
        if [ $(($(date +%s) - t0)) -ge "$next" ]; then
            echo "$(($(date +%s) - t0)) $(rss_kb "$MEM_PID") $(cut -d' ' -f1 /proc/loadavg)" >>"$tmp/mem.series"
            next=$((next + MEM_EVERY))
        fi
        sleep 0.5
    done
    wait "$MEM_OHA" || die "oha in the memory run failed: $(head -c 500 "$tmp/mem-oha.out" "$tmp/mem-oha.err")"
    echo "$(($(date +%s) - t0)) $(rss_kb "$MEM_PID") $(cut -d' ' -f1 /proc/loadavg) (after the load)" >>"$tmp/mem.series"
    MEM_LOAD=$(python3 - "$tmp/mem-oha.out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p, s = d["latencyPercentiles"], d["summary"]
codes = {int(k): v for k, v in d["statusCodeDistribution"].items()}
bad = sum(v for k, v in codes.items() if k != 200)
errs = {k: v for k, v in d["errorDistribution"].items() if "deadline" not in k}
print(f"{sum(codes.values())} answers ({s['requestsPerSec']:.0f}/s), p50 {p['p50'] * 1e3:.3f} ms, "
      f"p99 {p['p99'] * 1e3:.3f} ms, max {s['slowest'] * 1e3:.1f} ms; non-200: {bad}; "
      f"errors: {sum(errs.values())}{' ' + str(errs) if errs else ''}")
EOF
)
    stop "$MEM_PID"
    MEM_STOP=$STOP
    MEM_SAID=$(said "$tmp/mem.json")
fi

# ---- stop the proxies, hear what they said --------------------------------------------------------
# Stopped before the table (the reports are written on SIGINT); the HAR files' sizes kept.
for row in proxy record spare; do
    pid=PID_$row
    [ -n "${!pid:-}" ] || continue
    stop "${!pid}"
    printf -v "STOP_$row" '%s' "$STOP"
    printf -v "SAID_$row" '%s' "$(said "$tmp/$row.json")"
done
RECORD_MB=$( [ -f "$tmp/record.har" ] && du -m "$tmp/record.har" | cut -f1 || echo -)
REDOCLY_MB=$( [ -f "$tmp/redocly.har" ] && du -m "$tmp/redocly.har" | cut -f1 || echo -)
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the table ------------------------------------------------------------------------------------
label() {
    case $1 in
    direct) echo "(a) direct to the agent" ;;
    proxy) echo "(b) agent-tck proxy" ;;
    record) echo "(b') agent-tck proxy --record .har" ;;
    spare) echo "(b\") agent-tck proxy --judging spare" ;;
    bare) echo "(c) bare forward (hyper)" ;;
    nginx) echo "(d) nginx $NGINX_VERSION" ;;
    prism) echo "(e) Prism $PRISM_VERSION proxy" ;;
    redocly) echo "(f) Redocly $REDOCLY_VERSION proxy" ;;
    esac
}
echo
echo "agent-tck $("$BIN" --version 2>/dev/null | awk 'NR == 1 {print $2}') · $(git rev-parse --short HEAD) · $(uname -sm) · $(nproc) CPUs · load average: $LOAD_START at the start, $LOAD_END at the end"
echo "oha $(oha --version | awk '{print $2}') · wrk $(wrk -v 2>&1 | awk 'NR == 1 {print $2}') · node $(node --version 2>/dev/null || echo -)"
echo
echo "How measured: everything on 127.0.0.1, client, proxies and the agent sharing the machine's CPUs"
echo "(and any other load on it). The agent: agent-tck mock agent --name alpha --seed 1 (one for all"
echo "rows). POST /analyze, a $BODY_BYTES-byte JSON body, a $ANSWER_BYTES-byte answer. req/s: wrk -t2 -c50 -d$DURATION"
echo "(Lua POST); proxy CPU: utime+stime of the proxy's processes over the wrk run / requests."
echo "Latency: oha -q $RATE -z $OHA_DURATION -c 50 --latency-correction; added = the row's minus (a)'s, in"
echo "the same round. $ROUNDS rounds, rows taking turns; figures are medians over the rounds (runs in"
echo "brackets); load: the 1-minute load average at the end of each run."
echo "Answers: ${SAME[*]/%/;}"
echo
python3 - "$tmp" "$ROUNDS" "${rows[@]}" <<'EOF' >"$tmp/table.txt"
import os, statistics, sys
tmp, rounds, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(name, kind):
    return [list(map(float, l.split())) for l in open(f"{tmp}/{name}.{kind}")]
wrk = {r: load(r, "wrk") for r in rows}
oha = {r: load(r, "oha") for r in rows}
med = statistics.median
for r in rows:
    w, o = wrk[r], oha[r]
    added = ""
    if r != "direct":
        d50 = [x[0] - y[0] for x, y in zip(o, oha["direct"])]
        d99 = [x[1] - y[1] for x, y in zip(o, oha["direct"])]
        added = f"{med(d50):+.3f} / {med(d99):+.3f}"
    errors = sum(x[2] for x in w) + sum(x[3] for x in o)
    print("\t".join([
        r,
        f"{med(x[0] for x in w):.0f} [{', '.join(f'{x[0]:.0f}' for x in w)}]",
        f"{med(x[1] for x in w):.1f}" if r != "direct" else "-",
        f"{med(x[0] for x in o):.3f} / {med(x[1] for x in o):.3f} [p99s: {', '.join(f'{x[1]:.2f}' for x in o)}]",
        added or "-",
        f"{med(x[2] for x in o):.0f}",
        f"{int(errors)}",
        " ".join(f"{x[3]:.1f}" for x in w) + " | " + " ".join(f"{x[4]:.1f}" for x in o),
    ]))
EOF
printf '%-34s | %-26s | %-8s | %-34s | %-17s | %-6s | %-6s | %s\n' "row" "req/s (wrk) [rounds]" \
    "CPU µs/r" "p50 / p99 ms at $RATE/s [p99s]" "added p50/p99 ms" "oha/s" "errors" "load (wrk | oha)"
while IFS=$'\t' read -r row rps cpu lat added orps errors loads; do
    printf '%-34s | %-26s | %-8s | %-34s | %-17s | %-6s | %-6s | %s\n' "$(label "$row")" "$rps" "$cpu" \
        "$lat" "$added" "$orps" "$errors" "$loads"
done <"$tmp/table.txt"
[ -z "$REDOCLY_NOTE" ] || printf '%-34s | %s\n' "(f) Redocly" "not measured: $REDOCLY_NOTE"
for row in "${rows[@]}"; do
    [ -s "$tmp/$row.oha-errors" ] || continue
    echo "  $(label "$row"), oha's errors: $(awk '{ n[$0] += 0 } { k = $0; sub(/^[0-9]+ /, "", k); c[k] += $1 } END { for (k in c) printf "%d × %s; ", c[k], k }' "$tmp/$row.oha-errors")"
done

echo
# ratio A B : the per-round ratios of wrk's req/s, A/B, and their median.
ratio() {
    python3 - "$tmp/$1.wrk" "$tmp/$2.wrk" <<'EOF'
import statistics, sys
a = [float(l.split()[0]) for l in open(sys.argv[1])]
b = [float(l.split()[0]) for l in open(sys.argv[2])]
r = [x / y for x, y in zip(a, b)]
print(f"{statistics.median(r):.2f} (rounds: {', '.join(f'{x:.2f}' for x in r)})")
EOF
}
verdict() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
    ok = (op == ">=") ? v >= l : v < l; print ok ? "met" : "MISSED" }'; }
has() { [[ " ${rows[*]} " == *" $1 "* ]]; }
R=$(ratio proxy bare)
echo "throughput, agent-tck proxy / bare forward:   $R — target ≥ 0.8: $(verdict "${R%% *}" ">=" 0.8)"
! has nginx || { R=$(ratio proxy nginx); echo "throughput, agent-tck proxy / nginx:          $R — target > 1: $(verdict "${R%% *}" ">=" 1.0)"; }
! has prism || { R=$(ratio proxy prism); echo "throughput, agent-tck proxy / Prism:          $R — target > 1: $(verdict "${R%% *}" ">=" 1.0)"; }
! has redocly || { R=$(ratio proxy redocly); echo "throughput, agent-tck proxy / Redocly:        $R — target > 1: $(verdict "${R%% *}" ">=" 1.0)"; }
! has record || { R=$(ratio record bare); echo "throughput, agent-tck proxy --record / bare:  $R"; }
! has spare || { R=$(ratio spare bare); echo "throughput, agent-tck proxy --judging spare / bare: $R — target ≥ 0.8: $(verdict "${R%% *}" ">=" 0.8)"; }
! has record || ! has redocly || { R=$(ratio record redocly); echo "throughput, proxy --record / Redocly (both record HAR): $R"; }
ADDED99=$(python3 -c 'import statistics, sys
o = [list(map(float, l.split())) for l in open(sys.argv[1])]
d = [list(map(float, l.split())) for l in open(sys.argv[2])]
print(f"{statistics.median(x[1] - y[1] for x, y in zip(o, d)):.3f}")' "$tmp/proxy.oha" "$tmp/direct.oha")
echo "added p99 of agent-tck proxy at $RATE/s:       $ADDED99 ms — target < 1 ms: $(verdict "$ADDED99" "<" 1)"
echo "agent-tck proxy at SIGINT:                    ${STOP_proxy:-}; its report: $SAID_proxy"
! has record || echo "agent-tck proxy --record at SIGINT:           ${STOP_record:-}; HAR: $RECORD_MB MB; its report: $SAID_record"
! has spare || echo "agent-tck proxy --judging spare at SIGINT:    ${STOP_spare:-}; its report: $SAID_spare; answers judged: $(python3 -c 'import json, sys
c = {c["id"]: c for c in json.load(open(sys.argv[1]))["cases"]}["alpha/analyze.response"]
print(c["evidence"]["judged"] if c.get("evidence") else 0, "judged;", c["message"] or "none passed over")' "$tmp/spare.json" 2>/dev/null || echo "?")"
! has redocly || echo "Redocly's HAR:                                $REDOCLY_MB MB"

if [ "$MEM" != 0 ]; then
    echo
    echo "memory: RSS of a fresh agent-tck proxy under oha -q $RATE -c 50 for $DURATION_MEM (t s, RSS MB, load):"
    awk '{ printf "  %s s %.1f MB (load %s)%s\n", $1, $2 / 1024, $3, ($4 ? " " $4 " " $5 " " $6 : "") }' "$tmp/mem.series" |
        paste -d' ' - - - - | sed 's/  */ /g; s/^ //'
    python3 - "$tmp/mem.series" <<'EOF'
import sys
pts = [(int(l.split()[0]), int(l.split()[1]) / 1024) for l in open(sys.argv[1]) if "after" not in l]
rss = [r for _, r in pts]
# After the first minute (allocator pools, the judge's tables filled): the trend.
late = [(t, r) for t, r in pts if t >= 60] or pts
n = len(late)
mt, mr = sum(t for t, _ in late) / n, sum(r for _, r in late) / n
var = sum((t - mt) ** 2 for t, _ in late)
slope = sum((t - mt) * (r - mr) for t, r in late) / var * 3600 if var else 0.0
third = max(1, len(late) // 3)
first_max, last_max = max(r for _, r in late[:third]), max(r for _, r in late[-third:])
flat = last_max <= first_max * 1.05 + 1
print(f"  first {rss[0]:.1f} MB (idle), at 1 min {late[0][1]:.1f} MB, last {rss[-1]:.1f} MB, max {max(rss):.1f} MB; "
      f"trend after the first minute {slope:+.1f} MB/hour; max of the last third {last_max:.1f} vs the first {first_max:.1f} MB: "
      + ("flat" if flat else "NOT flat"))
EOF
    echo "  the load: $MEM_LOAD"
    echo "  the proxy at SIGINT: $MEM_STOP; its report: $MEM_SAID"
fi
