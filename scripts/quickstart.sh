#!/bin/bash
# scripts/quickstart.sh - build everything, start xtcd in a temporary
# directory, attach the example runtime to it, and show what was recorded.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/deps.sh"
xtc_install_deps
xtc_build "$top"

work=$(mktemp -d "${TMPDIR:-/tmp}/xtc-quickstart.XXXXXX")
mkdir "$work/segments"
"$top/xtcd/xtcd" --dir "$work/segments" --socket "$work/xtcd.sock" 2>"$work/xtcd.log" &
xtcd_pid=$!
trap 'kill $xtcd_pid 2>/dev/null; wait $xtcd_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$work/xtcd.sock" ] && break; sleep 0.05; done

echo "== xtcd is listening on $work/xtcd.sock; following it and running the example runtime attached to it"
"$top/xtcd/xtcd" --follow "$work/segments" -n all --color=never >"$work/follow.txt" 2>&1 &
follow_pid=$!
XTC_TAIL_SHM="$work/xtcd.sock" "$top/examples/xtc-demo" --loops 4 --events 50000 --rate 200000
sleep 0.3
kill -TERM $xtcd_pid; wait $xtcd_pid || true
trap - EXIT
sleep 0.5
kill -INT $follow_pid 2>/dev/null; wait $follow_pid 2>/dev/null || true
echo
echo "== what xtcd logged"
cat "$work/xtcd.log"
echo
echo "== xtcd --follow $work/segments, as it printed the records live: first 20 and last 6 lines"
head -n 20 "$work/follow.txt"
echo "..."
tail -n 6 "$work/follow.txt"
echo
echo "== xtcd --stats $work/segments"
"$top/xtcd/xtcd" --stats "$work/segments"
echo
echo "segments are in $work/segments ($(du -sh "$work/segments" | cut -f1)); try:"
echo "  $top/xtcd/xtcd --report $work/segments"
echo "  $top/xtcd/xtcd --export chrome $work/segments > trace.json   # open in ui.perfetto.dev"
