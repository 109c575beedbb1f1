#!/usr/bin/env bash
# Soak: does anything grow or go wrong over time? Two runs, everything on 127.0.0.1:
#   (1) a mock fleet (50 conforming agents and one that answers 503 one time in ten, on one port,
#       --journal) under wrk for FLEET_SECONDS (default 600): /analyze, /challenge and /vote in
#       turn, a new task_id in every request, across the agents. The fleet's RSS is sampled every
#       10 s; it must stay flat after the first minute (every later sample under 1.10× the
#       first minute's highest; the trend after it is printed too). No error answer that no behaviour asked for (wrk: no socket errors, its
#       non-2xx count equal to the journal's answers decided by a behaviour; the journal: no
#       non-200 decision without a behaviour), and the journal's request and answer records each
#       equal to the number of answers the fleet itself counted (its report's timeline note).
#   (2) the probe certifying the reference agent PROBE_RUNS times (default 10,000) in one process
#       (`probe roundtable --targets`, every target the same `mock agent`); the probe's RSS and
#       open file descriptors are sampled every 10 s and must not grow after the first minute
#       (RSS under 1.10× the first minute's highest, descriptors at most its highest + 8: the
#       connections in flight vary), and every run must pass.
# Wrk is paced (each connection waits DELAY_MS between requests) so that the journal stays a
# few GB on disk. The samples are printed as a curve; the script exits 1 when a check fails.
#
# Usage: scripts/soak.sh [fleet|probe]   (default both; FLEET_SECONDS, PROBE_RUNS, CONNS=20,
#        DELAY_MS=10, TARGET_CONCURRENCY=4)
set -euo pipefail

cd "$(dirname "$0")/.."
FLEET_SECONDS=${FLEET_SECONDS:-600}
PROBE_RUNS=${PROBE_RUNS:-10000}
CONNS=${CONNS:-20}
DELAY_MS=${DELAY_MS:-10}
TARGET_CONCURRENCY=${TARGET_CONCURRENCY:-4}
WHAT=${1:-both}
TARGET_DIR=${CARGO_TARGET_DIR:-target}

SCRIPT=soak.sh
source scripts/common.sh
need wrk:wrk python3:python3 curl:curl

cargo build --release
BIN=$TARGET_DIR/release/agent-tck
failed=0
verdict() { # verdict OK TEXT
    if [ "$1" = 1 ]; then echo "  ok      $2"; else
        echo "  FAILED  $2"
        failed=1
    fi
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# flat FILE : from "SECONDS RSS_KB [FDS]" samples, prints "OK TEXT" on RSS (and descriptors).
flat() {
    python3 - "$1" <<'EOF'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
# The first minute (start-up, warm-up) sets the level: its highest sample, since a process whose
# memory moves with the work in flight goes up and down by a few MB from one sample to the next.
# A leak shows as later samples above it, and as a slope (least squares over the later ones).
first = [r for r in rows if 0 < r[0] <= 60] or rows[:1]
later = [r for r in rows if r[0] > 60]
base = max(r[1] for r in first)
top = max((r[1] for r in later), default=base)
ok = top <= base * 1.10
slope = 0.0
if len(later) > 2:
    mx = sum(r[0] for r in later) / len(later)
    my = sum(r[1] for r in later) / len(later)
    sxx = sum((r[0] - mx) ** 2 for r in later)
    slope = sum((r[0] - mx) * (r[1] - my) for r in later) / sxx * 60 / 1024 if sxx else 0.0
text = (f"RSS: highest {base / 1024:.1f} MB in the first minute, {top / 1024:.1f} MB after it "
        f"({(top / base - 1) * 100:+.1f}%; limit +10%), trend after it {slope:+.2f} MB/min")
if len(rows[0]) > 2:
    fd_first = max(r[2] for r in first)
    fd_later = max((r[2] for r in later), default=fd_first)
    ok = ok and fd_later <= fd_first + 8
    text += f"; open descriptors: highest {fd_first} in the first minute, {fd_later} later (limit +8)"
print(int(ok), text)
EOF
}
curve() { # curve FILE : the samples, one line
    awk '{ printf "%s%ss %.1fMB%s", (NR > 1 ? ", " : ""), $1, $2 / 1024, (NF > 2 ? "/" $3 "fd" : "") } END { print "" }' "$1"
}

# ---- (1) the fleet --------------------------------------------------------------------------------
soak_fleet() {
    echo "soak (1): a fleet under wrk for $FLEET_SECONDS s with --journal…" >&2
    local df_gb
    df_gb=$(df -Pk "$tmp" | awk 'NR == 2 { print int($4 / 1048576) }')
    [ "$df_gb" -ge 8 ] || die "the journal needs a few GB in $tmp: $df_gb GB free"
    cat >"$tmp/fleet.yaml" <<'EOF'
agents:
  - name: "soak-{i}"
    generate: 50
  - name: flaky
    behaviors: ["flaky:0.1", "http-error:503"]
EOF
    start fleet 30 "$BIN" mock fleet --config "$tmp/fleet.yaml" --port 0 --seed 7 \
        --journal "$tmp/journal.jsonl" --journal-body-cap 256 --json "$tmp/fleet.json"
    local pid=$PID base=$URL
    # The bodies: the fuzz seeds' valid requests, a new task_id each time.
    python3 - "$tmp/requests.lua" "$DELAY_MS" fuzz/seeds/mock_body/03-analyze.json \
        fuzz/seeds/mock_body/05-challenge.json fuzz/seeds/mock_body/11-vote.json <<'EOF'
import json, sys
out, delay, files = sys.argv[1], sys.argv[2], sys.argv[3:]
bodies = []
for f in files:
    body = json.load(open(f))
    body["task_id"] = "@@"
    endpoint = f.rsplit("-", 1)[1].split(".")[0]
    bodies.append((endpoint, json.dumps(body)))
with open(out, "w") as w:
    w.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n')
    w.write("local bodies = {\n")
    for endpoint, body in bodies:
        w.write(f"  {{ {json.dumps(endpoint)}, {json.dumps(body)} }},\n")
    w.write("}\n")
    w.write(f"""local agents = {{}}
for i = 1, 50 do agents[i] = "soak-" .. i end
agents[51] = "flaky"
local id, n = 0, 0
function setup(thread) id = id + 1; thread:set("tid", id) end
function request()
    n = n + 1
    local b = bodies[(n % #bodies) + 1]
    local agent = agents[((n * 7 + tid) % #agents) + 1]
    local body = b[2]:gsub("@@", "soak-" .. tid .. "-" .. n, 1)
    return wrk.format(nil, "/agents/" .. agent .. "/" .. b[1], nil, body)
end
function delay() return {delay} end
""")
EOF
    : >"$tmp/fleet.samples"
    timeout $((FLEET_SECONDS + 60)) wrk -c "$CONNS" -t 2 -d "${FLEET_SECONDS}s" -s "$tmp/requests.lua" \
        "$base" >"$tmp/wrk.out" 2>&1 &
    local wrk_pid=$! t=0
    pids+=("$wrk_pid")
    while kill -0 "$wrk_pid" 2>/dev/null; do
        echo "$t $(rss_kb "$pid")" >>"$tmp/fleet.samples"
        sleep 10
        t=$((t + 10))
    done
    wait "$wrk_pid" || die "wrk failed: $(cat "$tmp/wrk.out")"
    kill -TERM "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$pid" 2>/dev/null || die "the fleet did not stop within 30 s of SIGTERM"
    python3 - "$tmp/wrk.out" "$tmp/journal.jsonl" "$tmp/fleet.json" >"$tmp/fleet.checks" <<'EOF'
import json, re, sys
wrk = open(sys.argv[1]).read()
total = int(re.search(r"(\d+) requests in", wrk).group(1))
socket_errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", wrk))
m = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk)
non2xx = int(m.group(1)) if m else 0
requests = answers = asked = unasked = 0
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r["event"] == "request":
        requests += 1
        d = r["decision"]
        if d["status"] != 200:
            if d.get("applied"):
                asked += 1
            else:
                unasked += 1
    else:
        answers += 1
report = json.load(open(sys.argv[3]))
counted = None
for note in report.get("notes", []):
    m = re.search(r"of the (\d+) answers", note)
    if m:
        counted = int(m.group(1))
if counted is None:
    counted = len(report.get("timeline", []))
# wrk stops counting at its deadline; the answers still in flight then reach the server.
print(int(socket_errors == 0), f"wrk: {total} requests, {socket_errors} socket errors")
print(int(unasked == 0), f"non-200 answers no behaviour asked for: {unasked} (the flaky agent's 503s: {asked})")
print(int(abs(non2xx - asked) <= 64), f"wrk's non-2xx answers {non2xx} against the journal's 503s {asked} (the last ones in flight are not wrk's)")
print(int(requests == counted == answers), f"journal: {requests} requests, {answers} answers; the fleet counted {counted} answers")
print(int(0 <= counted - total <= 64), f"the fleet's count {counted} against wrk's {total} (wrk leaves up to {64} in flight)")
EOF
    echo
    echo "(1) fleet under wrk -c $CONNS (each connection ${DELAY_MS} ms between requests), $FLEET_SECONDS s, --journal"
    echo "  RSS every 10 s: $(curve "$tmp/fleet.samples")"
    read -r ok text < <(flat "$tmp/fleet.samples")
    verdict "$ok" "$text"
    while read -r ok text; do verdict "$ok" "$text"; done <"$tmp/fleet.checks"
    echo "  journal: $(du -h "$tmp/journal.jsonl" | cut -f1)"
    rm -f "$tmp/journal.jsonl"
}

# ---- (2) the probe ---------------------------------------------------------------------------------
soak_probe() {
    echo "soak (2): the probe certifying the reference agent $PROBE_RUNS times in one process…" >&2
    start agent 30 "$BIN" mock agent --port 0 --seed 3
    local agent_url=$URL
    python3 - "$tmp/targets.yaml" "$agent_url" "$PROBE_RUNS" <<'EOF'
import sys
path, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "w") as w:
    w.write("targets:\n")
    for i in range(n):
        w.write(f"  - name: run-{i}\n    url: {url}\n")
EOF
    mkdir -p "$tmp/reports"
    "$BIN" probe roundtable --targets "$tmp/targets.yaml" --target-concurrency "$TARGET_CONCURRENCY" \
        --out-dir "$tmp/reports" >"$tmp/probe.out" 2>"$tmp/probe.err" &
    local pid=$! t=0
    pids+=("$pid")
    : >"$tmp/probe.samples"
    while kill -0 "$pid" 2>/dev/null; do
        echo "$t $(rss_kb "$pid") $(fds "$pid")" >>"$tmp/probe.samples"
        # Each target's JSON report is written once and never read again here.
        find "$tmp/reports" -name '*.json' -mmin +0.2 -delete 2>/dev/null || true
        sleep 10
        t=$((t + 10))
    done
    local rc=0
    wait "$pid" || rc=$?
    local passed
    passed=$(grep -c '^  run-[0-9]* *PASS' "$tmp/probe.out" || true)
    echo
    echo "(2) probe roundtable --targets: $PROBE_RUNS runs of the whole suite against one \`mock agent\`, $TARGET_CONCURRENCY at a time, ${t} s"
    echo "  RSS/descriptors every 10 s: $(curve "$tmp/probe.samples")"
    read -r ok text < <(flat "$tmp/probe.samples")
    verdict "$ok" "$text"
    verdict "$([ "$rc" = 0 ] && [ "$passed" = "$PROBE_RUNS" ] && echo 1 || echo 0)" \
        "$passed of $PROBE_RUNS runs passed, exit $rc$(tail -c 300 "$tmp/probe.err" | tr '\n' ' ')"
}

case $WHAT in
fleet) soak_fleet ;;
probe) soak_probe ;;
both) soak_fleet; soak_probe ;;
*) die "usage: scripts/soak.sh [fleet|probe|both]" ;;
esac
exit $failed
