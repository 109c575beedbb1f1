#!/usr/bin/env bash
# Findings per rule of `agent-tck lint agents` for a folder of definitions, in each dialect:
#   scripts/lint-calibration.sh DIR [lint flags…]      (AGENT_TCK=path/to/agent-tck to choose the binary)
# Prints, per dialect, the summary line, the time taken, and a count per level and rule.
set -euo pipefail
export LC_ALL=C # one order everywhere: by count, then by level and rule
if [ $# -lt 1 ]; then
    echo "usage: scripts/lint-calibration.sh DIR [lint flags…]" >&2
    exit 2
fi
dir=$1
shift
tck=${AGENT_TCK:-agent-tck}
for dialect in standard claude-code; do
    start=$(date +%s%N)
    rc=0
    out=$("$tck" lint agents "$dir" --dialect "$dialect" "$@") || rc=$?
    # 1 is "findings"; anything else is the linter's own failure (a bad path, a bad flag).
    if [ "$rc" -gt 1 ]; then
        exit "$rc"
    fi
    ms=$((($(date +%s%N) - start) / 1000000))
    echo "== dialect $dialect: $(grep -E '^[0-9]+ files?:' <<<"$out") in ${ms} ms"
    grep -oE '^.+:[0-9]+:[0-9]+: (error|warning|note)\[[a-z-]+\]' <<<"$out" |
        grep -oE '(error|warning|note)\[[a-z-]+\]' | sort | uniq -c | sort -k1,1nr -k2,2 || true
done
