#!/usr/bin/env bash
# The merged HTML page of many targets (src/report/targets_page.rs) in a browser: for each N, a
# page of N synthetic targets (examples/targets_page_figures.rs: 40 cases each, shaped like a
# conforming agent's `probe roundtable` report; one target in 20 failing) is written, then loaded
# in headless Chromium (Debian's `chromium`) three times: a screenshot with `#p-7` (a failing
# target's cases opened) under /usr/bin/time -v, and `--dump-dom` as opened and with `#p-7`.
# Printed per N:
#   - the writer: page size, time to write it, its peak RSS (flat in N: a small row per target);
#   - the browser: Chromium's wall time to the screenshot (its own start included) and the peak
#     RSS of its largest process (GNU time's "Maximum resident set size": the renderer); the
#     page's own clock at the ready marker (`data-ready-ms`: the matrix drawn, before the targets'
#     data is parsed) and at DOMContentLoaded (`data-loaded-ms`: the whole file parsed); the
#     elements in the DOM after load and after opening one target, counted in the dumped DOM
#     (the inert data blocks, one per target, counted apart). `--dump-dom`'s own time is not a
#     figure: serializing a 144 MB DOM takes Chromium a minute, a reader never does it.
# Then docs/html-targets.png: a 200-target page, matrix first, one failing target opened (through
# scripts/html-screenshot.sh).
#
# Usage: scripts/bench-targets-page.sh    (NS="200 1000 10000" sets the Ns; SHOT=0 skips the picture)
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=bench-targets-page.sh
source scripts/common.sh
NS=${NS:-200 1000 10000}
need chromium:chromium python3:python3 time:/usr/bin/time
CHROMIUM=$(command -v chromium || command -v chromium-browser)
cargo build --release --example targets_page_figures
GEN=./target/release/examples/targets_page_figures

FLAGS=(--headless --no-sandbox --disable-gpu --no-first-run --window-size=1280,900)

# shot URL NAME: a screenshot of URL under time -v; prints the wall time and the peak RSS.
shot() {
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -v -o "$tmp/$2.time" timeout 300 "$CHROMIUM" "${FLAGS[@]}" \
        --user-data-dir="$tmp/profile-$2" --screenshot="$tmp/$2.png" "$1" >"$tmp/$2.log" 2>&1 ||
        die "chromium failed on $1: $(tail -3 "$tmp/$2.log")"
    t1=$(date +%s.%N)
    [ -s "$tmp/$2.png" ] || die "chromium wrote no screenshot of $1"
    local rss
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/$2.time")
    awk -v a="$t0" -v b="$t1" -v r="$rss" 'BEGIN { printf "screenshot in %.1f s, peak RSS %.0f MB", b - a, r / 1024 }'
}

# dom URL NAME: the DOM after the page's script ran; prints the page's clock and the elements.
dom() {
    timeout 300 "$CHROMIUM" "${FLAGS[@]}" --user-data-dir="$tmp/profile-$2" --dump-dom "$1" \
        >"$tmp/$2.dom" 2>"$tmp/$2.log" || die "chromium failed on $1: $(tail -3 "$tmp/$2.log")"
    python3 - "$tmp/$2.dom" <<'PY'
import html.parser, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
class Count(html.parser.HTMLParser):
    elements = blocks = 0
    def handle_starttag(self, tag, attrs):
        self.elements += 1
        if tag == "script" and ("type", "application/json") in attrs:
            self.blocks += 1
    handle_startendtag = handle_starttag
c = Count(); c.feed(dom)
root = re.search(r"<html[^>]*>", dom).group(0)
if 'data-filters="ready"' not in root:
    sys.exit("the page's script did not mark the page ready: " + root)
attr = lambda a: re.search(a + r'="(\d+)"', root).group(1)
print(f"ready at {attr('data-ready-ms')} ms, loaded at {attr('data-loaded-ms')} ms, "
      f"{c.elements - c.blocks} elements + {c.blocks} data blocks")
PY
}

for n in $NS; do
    page=$tmp/targets-$n.html
    url="file://$page"
    echo "N=$n"
    echo "  writer:              $($GEN "$n" "$page")"
    echo "  browser:             $(shot "$url#p-7" "shot-$n")"
    echo "  as opened:           $(dom "$url" "plain-$n")"
    echo "  one target opened:   $(dom "$url#p-7" "open-$n")"
    grep -q '<summary><span class="w FAIL">FAIL</span>' "$tmp/open-$n.dom" ||
        die "N=$n: the opened target's failing case is not in the DOM"
    rm -rf "$page" "$tmp"/*.dom "$tmp"/profile-*
done

if [ "${SHOT:-1}" = 1 ]; then
    $GEN 200 "$tmp/targets-200.html" >/dev/null
    scripts/html-screenshot.sh --html "$tmp/targets-200.html" --fragment p-7 \
        --png docs/html-targets.png --height 2000 >/dev/null
    echo "wrote docs/html-targets.png"
fi
