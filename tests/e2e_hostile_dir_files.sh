#!/bin/bash
# tests/e2e_hostile_dir_files.sh - regular files planted in the segment
# directory under segment names that are not segments: one shorter than a
# segment's file header under the name after the newest segment (what an
# xtcd killed while creating a segment would leave, but nothing tells the
# two apart), one of 3 MiB of text under the name after that.  Neither is
# xtcd's: it says so once each at start, never deletes, changes or counts
# them (the budget is the segments' alone, so the app's records are not
# evicted to make room for a planted file), and its next segment takes a
# number after both.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
name() { printf 'xtc-%06d.seg' "$1"; }

start_xtcd --segment-bytes 64K
"$LOADGEN" 1 20000 0 0 >"$T/lg0.out" 2>&1 || fail "xtc-loadgen exited $?"
stop_xtcd
newest=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | tail -n 1)
[ -n "$newest" ] || fail "the first run left no segment"
short=$(name $((newest + 1)))
big=$(name $((newest + 2)))
printf 'not a segment\n' >"$DIR/$short"
yes 'planted, not a segment' | head -c $((3 << 20)) >"$DIR/$big"
(cd "$DIR" && md5sum "$short" "$big") >"$T/planted.md5"

start_xtcd --segment-bytes 64K --max-bytes 4M
XTC_TAIL_RING_RECORDS=65536 "$LOADGEN" 2 1000000 250000 0 >"$T/lg1.out" 2>&1 || fail "xtc-loadgen exited $?"
wait_log "xtc-loadgen) ended" 10
stop_xtcd

(cd "$DIR" && md5sum -c --quiet "$T/planted.md5") >"$T/md5.out" 2>&1 ||
	fail "a planted file was changed or deleted: $(cat "$T/md5.out")"
for what in "$short is not a segment: 14 bytes, shorter than a segment's file header" \
            "$big is not a segment: it does not begin with a segment's file header"; do
	n=$(grep -c -- "$what" "$T/xtcd.log")
	[ "$n" -eq 1 ] || fail "expected one log line '$what', found $n"
done
grep -q "exists but was not created by this xtcd" "$T/xtcd.log" &&
	fail "xtcd tried to create a segment under a planted name: $(grep 'exists but' "$T/xtcd.log")"
grep -q '^xtcd: deleted ' "$T/xtcd.log" || fail "the budget never deleted a segment: the test wrote too little"
first=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | awk -v b=$((newest + 2)) '$1 > b' | head -n 1)
[ -n "$first" ] || fail "no segment after the planted names"
# The segments alone fill the budget: had the 3 MiB file counted, they
# would hold less than 1 MiB.
ours=$(cd "$DIR" && for f in xtc-*.seg; do [ "$f" = "$short" ] || [ "$f" = "$big" ] || stat -c %s "$f"; done |
	awk '{ n += $1 } END { print n + 0 }')
echo "  planted $short (14 bytes) and $big (3 MiB); the segments hold $ours bytes of the 4M budget"
[ "$ours" -le $((4 << 20)) ] || fail "the segments hold $ours bytes, more than the budget"
[ "$ours" -gt $((3 << 20)) ] || fail "the segments hold only $ours bytes: the planted file was counted"

# --- xtcd killed mid-segment, a short file under the next name (as one
# killed while creating it leaves): its successor numbers past it, and
# --follow must go on past both to the new segment, as --cat does
rm -rf "$DIR" && mkdir -p "$DIR"
start_xtcd
"$LOADGEN" 1 1000 0 60000 >"$T/lg2.out" 2>&1 &
lg=$!
wait_log "xtc-loadgen) uid" 10
sleep 0.3
kill -9 "$XTCD_PID"; wait "$XTCD_PID" 2>/dev/null; XTCD_PID=
kill -9 "$lg"; wait "$lg" 2>/dev/null
newest=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | tail -n 1)
printf 'abc' >"$DIR/$(name $((newest + 1)))"
start_xtcd
"$LOADGEN" 1 500 0 0 >"$T/lg3.out" 2>&1 || fail "xtc-loadgen after the restart exited $?"
wait_log "produced 500, written 500" 10
"$XTCD" --follow "$DIR" -n all >"$T/follow.out" 2>"$T/follow.err" &
f=$!
for _ in $(seq 1 250); do grep -q "SESSION .* END reason=detached produced=500" "$T/follow.out" && break; sleep 0.02; done
kill -INT $f; wait $f
grep -q "SESSION .* END reason=detached produced=500" "$T/follow.out" ||
	fail "--follow stayed on segment $newest (torn by the crash, a short file after it): $(tail -n 2 "$T/follow.out")"
stop_xtcd
echo "ok: --follow goes on past a crashed xtcd's segment and the short file after it"

# --- xtcd killed mid-segment, and nothing under the next name (the
# successor's first segment deleted by hand), while a later segment
# exists: --follow must notice the later one (it lists the directory
# while the torn segment does not grow) and go on to it, saying the
# missing number is a gap
rm -rf "$DIR" && mkdir -p "$DIR"
start_xtcd
"$LOADGEN" 1 1000 0 60000 >"$T/lg4.out" 2>&1 &
lg=$!
wait_log "xtc-loadgen) uid" 10
sleep 0.3
kill -9 "$XTCD_PID"; wait "$XTCD_PID" 2>/dev/null; XTCD_PID=
kill -9 "$lg"; wait "$lg" 2>/dev/null
torn=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | tail -n 1)
start_xtcd
stop_xtcd
[ -f "$DIR/$(name $((torn + 1)))" ] || fail "the restarted xtcd wrote no segment $((torn + 1))"
start_xtcd
"$LOADGEN" 1 500 0 0 >"$T/lg5.out" 2>&1 || fail "xtc-loadgen after the second restart exited $?"
wait_log "produced 500, written 500" 10
[ -f "$DIR/$(name $((torn + 2)))" ] || fail "the second restart wrote no segment $((torn + 2))"
rm -f "$DIR/$(name $((torn + 1)))"
"$XTCD" --follow "$DIR" -n all >"$T/follow2.out" 2>"$T/follow2.err" &
f=$!
for _ in $(seq 1 500); do grep -q "SESSION .* END reason=detached produced=500" "$T/follow2.out" && break; sleep 0.02; done
kill -INT $f; wait $f
grep -q "SESSION .* END reason=detached produced=500" "$T/follow2.out" ||
	fail "--follow stayed on segment $torn (torn by the crash, nothing under the next name, segment $((torn + 2)) after): $(tail -n 2 "$T/follow2.out")"
grep -q "segment $((torn + 1)) was deleted .*continuing with segment $((torn + 2))" "$T/follow2.err" ||
	fail "--follow did not tell the missing segment $((torn + 1)) as a gap: $(cat "$T/follow2.err")"
stop_xtcd
echo "ok: --follow goes on past a crashed xtcd's segment with nothing under the next name"

# --- a short file under the next name while xtcd still writes the
# current segment: --follow lists the directory to look past it at most
# once a second, and only while the segment does not grow, not at every
# write it reads (strace counts its getdents64 calls)
if command -v strace >/dev/null 2>&1; then
	rm -rf "$DIR" && mkdir -p "$DIR"
	start_xtcd --drain-ms 10
	"$LOADGEN" 1 60000 20000 0 >"$T/lg5.out" 2>&1 &
	lg=$!
	wait_log "xtc-loadgen) uid" 10
	cur=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | tail -n 1)
	printf 'abc' >"$DIR/$(name $((cur + 1)))"
	strace -f -c -e trace=getdents64 -o "$T/strace.out" "$XTCD" --follow "$DIR" -n all >"$T/follow5.out" 2>&1 &
	f=$!
	wait "$lg" || fail "xtc-loadgen exited $?"
	sleep 1
	# SIGINT to xtcd --follow itself, strace's child (strace only passes
	# it on to a child it attached to)
	kill -INT "$(pgrep -P $f)"; wait $f
	stop_xtcd
	lines=$(grep -c ' RUN ' "$T/follow5.out")
	calls=$(awk '$NF == "getdents64" { print $4 }' "$T/strace.out")
	[ "$lines" -ge 1000 ] || fail "--follow printed $lines records of the live segment: $(tail -n 2 "$T/follow5.out")"
	# the start's listing (2 calls a listing), then at most one a second
	# of the ~4 s; at every write it read it was hundreds
	[ "${calls:-0}" -ge 1 ] || fail "strace counted no getdents64 call of --follow (its first listing makes some): $(cat "$T/strace.out")"
	[ "$calls" -le 20 ] || fail "--follow listed the directory with $calls getdents64 calls in ~4 s"
	echo "ok: a short file after the live segment: --follow read $lines records with $calls getdents64 calls"
fi
echo PASS
