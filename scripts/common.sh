# Shared by the benchmark scripts (sourced, not run): `die`, a scratch folder `$tmp` and the
# background processes in `pids`, both cleaned up on exit (SIGTERM, then SIGKILL 5 s later), and
# `start`. The sourcing script sets SCRIPT, the name its messages begin with.

die() {
    echo "$SCRIPT: $*" >&2
    exit 1
}

tmp=$(mktemp -d)
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    # Bounded: whatever has not exited 5 s after SIGTERM is killed.
    for _ in $(seq 50); do
        local alive=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME WAIT_S CMD... : runs CMD in the background; sets PID, and URL to the first
# http://127.0.0.1:PORT it prints (fails after WAIT_S seconds, or if CMD exits first).
start() {
    local name=$1 wait_s=$2
    shift 2
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    PID=$!
    pids+=("$PID")
    URL=
    for _ in $(seq $((wait_s * 20))); do
        URL=$(grep -o -m1 'http://127\.0\.0\.1:[0-9]*' "$tmp/$name.out" | head -n1 || true)
        [ -n "$URL" ] && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "$SCRIPT: $name did not print its URL within ${wait_s}s: $*" >&2
    cat "$tmp/$name.err" >&2
    exit 1
}

# need PACKAGE:COMMAND... : installs each Debian PACKAGE whose COMMAND is missing (apt-get update
# first; sudo when not root), so the scripts run on a fresh machine.
need() {
    local missing=() item
    for item in "$@"; do
        command -v "${item#*:}" >/dev/null || missing+=("${item%%:*}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "$SCRIPT: installing ${missing[*]}…" >&2
    $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2 ||
        die "cannot install ${missing[*]} (apt-get install -y ${missing[*]})"
}
