#!/bin/bash
# tests/e2e_hostile_fast.sh - a head may not run further ahead than a
# producer could really have written.  xtc-badclient fast moves each of
# its heads 2^30 records a millisecond over rings whose memory it wrote
# once: within the ring-size checks (a head more than a ring ahead reads
# as records overwritten), but a thousand times faster than one record a
# nanosecond on xtcd's clock.  Its rings are taken out of draining as
# corrupt ("head_too_fast"), which --cat and --report say; a well-behaved
# app beside it loses nothing.  Then xtcd is stopped (SIGSTOP) while the
# app keeps writing: what it wrote meanwhile is not too fast.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done

start_xtcd
XTC_TAIL_RING_RECORDS=262144 "$LOADGEN" 1 300000 100000 0 >"$T/lg.out" 2>&1 &
lg=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 10
"$BADCLIENT" "$SOCK" fast 1500 2 65536 >"$T/fast.out" 2>&1 &
fast=$!
wait "$fast" || fail "xtc-badclient fast: $(cat "$T/fast.out")"
echo "  $(cat "$T/fast.out")"
# xtcd paused for 1.5 s while the app writes ~150k records into its ring
kill -STOP "$XTCD_PID"
sleep 1.5
kill -CONT "$XTCD_PID"
wait "$lg" || fail "xtc-loadgen exited $?"
stop_xtcd
grep -q 'ring 0 broke an invariant (head moved faster than a producer can write' "$T/xtcd.log" ||
	fail "xtcd did not take the fast ring out of draining"
grep 'broke an invariant' "$T/xtcd.log" | grep -v '(xtc-loadgen)' | head -n 2 | sed 's/^/  /'

cat_json
sid=$(sed -n 's/.*session \([0-9]*\): pid [0-9]* (xtc-badclient).*/\1/p' "$T/xtcd.log" | head -n 1)
n=$(grep -c "\"type\":\"corrupt\",\"session\":$sid,.*\"reason\":\"head_too_fast\"" "$T/all.json")
[ "$n" = 2 ] || fail "--cat --json: expected both attacker rings corrupt as head_too_fast, found $n"
"$XTCD" --cat "$DIR" >"$T/all.txt" 2>"$T/cat.err" || fail "--cat: $(cat "$T/cat.err")"
grep -q "CORRUPT ring=0 reason=head_too_fast" "$T/all.txt" || fail "--cat text does not name the reason"
lgpid=$(sed -n 's/.*session [0-9]*: pid \([0-9]*\) (xtc-loadgen).*/\1/p' "$T/xtcd.log" | head -n 1)
"$XTCD" --cat "$DIR" --json --pid "$lgpid" >"$T/lg.json" 2>"$T/cat.err" || fail "--cat: $(cat "$T/cat.err")"
python3 "$top_srcdir/tests/e2e_check.py" "$T/lg.json" victim 1 300000 || fail "the app beside the fast heads"
"$XTCD" --report "$DIR" >"$T/report.txt" 2>"$T/report.err"
grep -q "2 rings taken out of draining as corrupt (head moved faster than a producer can write)" "$T/report.txt" ||
	fail "--report does not give the reason: $(grep -i corrupt "$T/report.txt")"
"$XTCD" --report "$DIR" --json >"$T/report.json" 2>>"$T/report.err"
grep -q '"corrupt_rings":2,"corrupt_reason":"head_too_fast"' "$T/report.json" ||
	fail "--report --json does not give the reason"
echo "PASS"
