#!/usr/bin/env bash
# Renders an HTML report in headless Chromium (Debian's `chromium` package): a screenshot, and the
# DOM as the browser built it after running the page's script (what a test reads to prove that an
# agent's `<script>` stayed text).
#
# Usage: scripts/html-screenshot.sh [--html REPORT.html] [--png OUT.png] [--dom OUT.html] [--height PX]
#                                   [--fragment F] [--dry-run]
#   Runs from any directory: the paths given are the caller's (relative to where it is run); the
#   defaults are the checkout's. Without --html: runs `agent-tck selftest --html` (release build)
#   and renders its report; the default --png is docs/html-report.png of the checkout.
#   --fragment F: load REPORT.html#F (the page of many targets opens `#p-N`, its Nth target).
#   --dry-run: print the paths it would read and write (html=…, png=…, dom=…) and stop.
set -euo pipefail

# Arguments are resolved against the caller's directory before the script moves to the checkout.
CALLER=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SCRIPT=html-screenshot.sh
source scripts/common.sh
# An argument's path as an absolute one, relative to where the script was run.
from_caller() {
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s\n' "$CALLER/$1" ;;
    esac
}
# A flag's value, or a clear error when it is missing.
value_of() {
    [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see the usage at the top of $0)"
    printf '%s\n' "$2"
}
HTML="" PNG=$PWD/docs/html-report.png DOM="" HEIGHT=2400 FRAGMENT="" DRY_RUN=0
while [ $# -gt 0 ]; do
    case "$1" in
        --html) HTML=$(from_caller "$(value_of "$@")"); shift 2 ;;
        --png) PNG=$(from_caller "$(value_of "$@")"); shift 2 ;;
        --dom) DOM=$(from_caller "$(value_of "$@")"); shift 2 ;;
        --height) HEIGHT=$(value_of "$@"); shift 2 ;;
        --fragment) FRAGMENT=$(value_of "$@"); shift 2 ;;
        --dry-run) DRY_RUN=1; shift ;;
        *) die "unknown argument $1 (see the usage at the top of $0)" ;;
    esac
done
if [ "$DRY_RUN" = 1 ]; then
    echo "html=${HTML:-(the report of a self-test run)}"
    echo "png=$PNG"
    echo "dom=${DOM:-(none)}"
    exit 0
fi
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || die "chromium is not installed (apt-get install -y chromium)"
if [ -z "$HTML" ]; then
    cargo build --release --bins
    HTML=$tmp/selftest.html
    ./target/release/agent-tck selftest --seed 1 --html "$HTML" >/dev/null || true
fi
[ -f "$HTML" ] || die "$HTML: no such report"
URL="file://$(cd "$(dirname "$HTML")" && pwd)/$(basename "$HTML")${FRAGMENT:+#$FRAGMENT}"
# --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start. The page fetches
# nothing, so the network being absent changes nothing.
FLAGS=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
       --user-data-dir="$tmp/profile" --window-size=1280,"$HEIGHT")
timeout 120 "$CHROMIUM" "${FLAGS[@]}" --screenshot="$PNG" "$URL" >"$tmp/shot.log" 2>&1 ||
    die "chromium failed: $(tail -3 "$tmp/shot.log")"
[ -s "$PNG" ] || die "chromium wrote no screenshot: $(tail -3 "$tmp/shot.log")"
if [ -n "$DOM" ]; then
    timeout 120 "$CHROMIUM" "${FLAGS[@]}" --dump-dom "$URL" >"$DOM" 2>"$tmp/dom.log" ||
        die "chromium failed: $(tail -3 "$tmp/dom.log")"
fi
echo "$PNG"
