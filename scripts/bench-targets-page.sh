#!/usr/bin/env bash
# The merged HTML page of many targets (src/report/targets_page.rs) in a browser: for each N, a
# page of N synthetic targets (examples/targets_page_figures.rs: 40 cases each, shaped like a
# conforming agent's `probe roundtable` report; one target in 20 failing) is written, then loaded
# in headless Chromium (Debian's `chromium`) twice — as opened, and with `#p-7` (a failing
# target's cases opened) — with `--dump-dom`, under /usr/bin/time -v. Printed per N:
#   - the writer: page size, time to write it, its peak RSS (flat in N: rows only);
#   - the browser: the page's own clock at the ready marker (`data-ready-ms`: the matrix drawn,
#     before the targets' data is parsed) and at DOMContentLoaded (`data-loaded-ms`: the whole
#     file parsed), the elements in the DOM after load and after opening one target (counted in
#     the dumped DOM), Chromium's wall time (its start included) and the peak RSS of its largest
#     process (GNU time's "Maximum resident set size": the renderer).
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

# measure HTML URL NAME: loads URL with --dump-dom under time -v; prints the figures.
measure() {
    local url=$1 name=$2
    local flags=(--headless --no-sandbox --disable-gpu --no-first-run
                 --user-data-dir="$tmp/profile-$name" --window-size=1280,900)
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -v -o "$tmp/$name.time" timeout 300 "$CHROMIUM" "${flags[@]}" --dump-dom "$url" \
        >"$tmp/$name.dom" 2>"$tmp/$name.log" || die "chromium failed on $url: $(tail -3 "$tmp/$name.log")"
    t1=$(date +%s.%N)
    python3 - "$tmp/$name.dom" "$tmp/$name.time" "$t0" "$t1" <<'PY'
import html.parser, re, sys
dom, timing, t0, t1 = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2]).read(), float(sys.argv[3]), float(sys.argv[4])
class Count(html.parser.HTMLParser):
    elements = 0
    def handle_starttag(self, tag, attrs):
        self.elements += 1
    handle_startendtag = handle_starttag
c = Count(); c.feed(dom)
root = re.search(r"<html[^>]*>", dom).group(0)
attr = lambda a: (re.search(a + r'="(\d+)"', root) or [None, "?"])[1]
if 'data-filters="ready"' not in root:
    sys.exit("the page's script did not mark the page ready: " + root)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing).group(1)) / 1024
print(f"ready at {attr('data-ready-ms')} ms, loaded at {attr('data-loaded-ms')} ms, "
      f"{c.elements} elements, chromium {t1 - t0:.1f} s, peak RSS {rss:.0f} MB")
PY
}

for n in $NS; do
    page=$tmp/targets-$n.html
    echo "N=$n"
    echo "  writer:  $($GEN "$n" "$page")"
    url="file://$page"
    echo "  as opened:          $(measure "$url" "plain-$n")"
    echo "  one target opened:  $(measure "$url#p-7" "open-$n")"
    grep -q 'summary><span class="w FAIL">FAIL' "$tmp/open-$n.dom" ||
        die "N=$n: the opened target's failing case is not in the DOM"
    rm -f "$page"
done

if [ "${SHOT:-1}" = 1 ]; then
    $GEN 200 "$tmp/targets-200.html" >/dev/null
    scripts/html-screenshot.sh --html "$tmp/targets-200.html" --fragment p-7 \
        --png docs/html-targets.png --height 1600 >/dev/null
    echo "wrote docs/html-targets.png"
fi
