#!/bin/bash
# The byte budget: --segment-bytes 1M --max-bytes 4M under a long burst.
# The directory never holds more than 4M (sampled while it runs),
# segments rotate, evictions are recorded, deleted segments are not held
# open, and --cat reads the survivors.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

budget=$((4 * 1024 * 1024))
start_xtcd --segment-bytes 1M --max-bytes 4M --drain-ms 10
XTC_TAIL_RING_RECORDS=262144 "$LOADGEN" 4 1500000 1500000 >"$T/lg.out" &
lg=$!
max=0
while kill -0 $lg 2>/dev/null; do
	used=$(find "$DIR" -name 'xtc-*.seg' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
	[ "$used" -gt "$max" ] && max=$used
	[ "$used" -le "$budget" ] || fail "the directory holds $used bytes, over the $budget budget"
	sleep 0.05
done
wait $lg || fail "loadgen failed"
wait_log "ended: detached"
# A deleted segment's last descriptor is closed on xtcd's worker thread
# (which frees the file there, not on the event loop): soon after the
# deletions none may stay open, or its blocks would stay taken.
for _ in $(seq 1 250); do
	held=$(find /proc/"$XTCD_PID"/fd -lname '*xtc-*.seg (deleted)' 2>/dev/null | wc -l)
	[ "$held" = 0 ] && break
	sleep 0.02
done
[ "$held" = 0 ] || fail "xtcd still holds $held deleted segments open"
stop_xtcd
segs=$(ls "$DIR" | wc -l)
first=$(ls "$DIR" | head -n 1)
[ "$first" != "xtc-000001.seg" ] || fail "no segment was ever deleted"
[ "$segs" -le 4 ] || fail "$segs segments left"
echo "ok: at most $max of $budget bytes used while running; $segs segments left, oldest $first"
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" budget || fail "budget"
head -n 3 "$T/all.json" | grep -q '"restated":true' || fail "the oldest survivor does not restate its session"
