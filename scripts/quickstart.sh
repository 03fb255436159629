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

echo "== xtcd is listening on $work/xtcd.sock; running the example runtime attached to it"
XTC_TAIL_SHM="$work/xtcd.sock" "$top/examples/xtc-demo" --loops 4 --events 50000 --rate 200000
sleep 0.2
kill -TERM $xtcd_pid; wait $xtcd_pid || true
trap - EXIT
echo
echo "== what xtcd logged"
cat "$work/xtcd.log"
echo
echo "== the record (xtcd --cat $work/segments), first 25 and last 8 lines"
"$top/xtcd/xtcd" --cat "$work/segments" >"$work/cat.txt"
head -n 25 "$work/cat.txt"
echo "..."
tail -n 8 "$work/cat.txt"
echo
echo "segments are in $work/segments ($(du -sh "$work/segments" | cut -f1)); try: $top/xtcd/xtcd --cat $work/segments --json | less"
