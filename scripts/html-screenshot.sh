#!/usr/bin/env bash
# Renders an HTML report in headless Chromium (Debian's `chromium` package): a screenshot, and the
# DOM as the browser built it after running the page's script (what a test reads to prove that an
# agent's `<script>` stayed text).
#
# Usage: scripts/html-screenshot.sh [--html REPORT.html] [--png OUT.png] [--dom OUT.html] [--height PX]
#   Without --html: runs `agent-tck selftest --html` (release build) and renders its report;
#   the default --png is docs/html-report.png.
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=html-screenshot.sh
source scripts/common.sh
HTML="" PNG=docs/html-report.png DOM="" HEIGHT=2400
while [ $# -gt 0 ]; do
    case "$1" in
        --html) HTML=$2; shift 2 ;;
        --png) PNG=$2; shift 2 ;;
        --dom) DOM=$2; shift 2 ;;
        --height) HEIGHT=$2; shift 2 ;;
        *) die "unknown argument $1 (see the usage at the top of $0)" ;;
    esac
done
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || die "chromium is not installed (apt-get install -y chromium)"
if [ -z "$HTML" ]; then
    cargo build --release --bins
    HTML=$tmp/selftest.html
    ./target/release/agent-tck selftest --seed 1 --html "$HTML" >/dev/null || true
fi
[ -f "$HTML" ] || die "$HTML: no such report"
URL="file://$(cd "$(dirname "$HTML")" && pwd)/$(basename "$HTML")"
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
