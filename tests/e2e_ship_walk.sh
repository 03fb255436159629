#!/bin/bash
# xtcd --ship through the segment shapes xtcd leaves in its rare cases,
# written by hand (tests/segwrite.c) so that nothing races:
#  1. A segment cut back after a failed write, after the shipper had read
#     past the cut, with new blocks already appended after the cut (xtcd
#     writes the buffers behind a failed one again from the cut at once):
#     the shipper says so and ships the new blocks too.
#  2. A FIFO under the next segment's number, which xtcd skips, after a
#     segment that has no SEGMENT_END (xtcd was killed): the segment is
#     finished once the one after the FIFO has begun, that one is shipped
#     whole, and no 'unshipped' row is recorded for the FIFO.
# Exit 77 only when clickhouse-server is missing or cannot start here
# (the CI stage scripts/ci_ship.sh installs it).
. "${top_srcdir:-.}/tests/e2e_lib.sh"
. "${top_srcdir:-.}/tests/ch_lib.sh"
SEGWRITE=${SEGWRITE:-$top_builddir/tests/xtc-segwrite}
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is needed to talk to ClickHouse"; exit 77; }
command -v mkfifo >/dev/null 2>&1 || { echo "SKIP: mkfifo is needed"; exit 77; }
SHIP=
trap 'kill -9 $SHIP 2>/dev/null; ch_kill; cleanup' EXIT
if ! ch_start; then
	echo "SKIP: ClickHouse cannot start on this machine"
	exit 77
fi
ch_q "CREATE DATABASE xtc" >/dev/null
URL="http://127.0.0.1:$CH_HTTP/?database=xtc"

# blocks L1 L7: a session's start, L1 blocks of 64 events of loop 1, then
# L7 blocks of 64 events of loop 7.
blocks() {
	echo "start 1 4242"
	for i in $(seq 1 "$1"); do echo "events 1 0 1 $((1000000 + i * 64000)) 64"; done
	for i in $(seq 1 "$2"); do echo "events 1 1 7 $((900000000 + i * 64000)) 64"; done
}
events() { ch_q "SELECT count() FROM xtc.events FINAL WHERE host = 'host-w' $1"; }
# wait_events WHERE N: until ClickHouse holds N such events (60 s at most).
wait_events() {
	local got
	for _ in $(seq 1 300); do
		got=$(events "$1")
		[ "$got" = "$2" ] && return 0
		sleep 0.2
	done
	fail "ClickHouse holds $got events ($1), not $2: $(tail -n 3 "$T/ship.log")"
}

D=$T/d
mkdir -p "$D" "$T/cut" "$T/new"
blocks 10 0 | "$SEGWRITE" --no-end "$D" || fail "xtc-segwrite failed"
"$XTCD" --ship "$URL" "$D" --ship-create --ship-host host-w --ship-batch 64 --ship-batch-ms 50 \
	>"$T/ship.log" 2>&1 &
SHIP=$!
wait_events "AND loop = 1" 640

# ---- 1: cut back to the end of the fifth block, three new blocks after it
blocks 5 0 | "$SEGWRITE" --no-end "$T/cut" || fail "xtc-segwrite failed"
blocks 5 3 | "$SEGWRITE" --no-end "$T/new" || fail "xtc-segwrite failed"
cut=$(stat -c %s "$T/cut/xtc-000001.seg")
cmp -s -n "$cut" "$D/xtc-000001.seg" "$T/new/xtc-000001.seg" || fail "the crafted segments differ before the cut"
[ "$(stat -c %s "$T/new/xtc-000001.seg")" -lt "$(stat -c %s "$D/xtc-000001.seg")" ] ||
	fail "the segment after the cut is not shorter than what was shipped"
truncate -s "$cut" "$D/xtc-000001.seg"
tail -c +$((cut + 1)) "$T/new/xtc-000001.seg" >>"$D/xtc-000001.seg"
cmp -s "$D/xtc-000001.seg" "$T/new/xtc-000001.seg" || fail "the cut back segment is not as crafted"
wait_events "AND loop = 7" 192
grep -q "xtc-000001.seg is shorter than byte [0-9]*, where shipping had got to" "$T/ship.log" ||
	fail "the shipper did not say the segment was cut back: $(cat "$T/ship.log")"
echo "ok: segment cut back under the shipper: the 192 events appended after the cut are shipped"

# ---- 2: a FIFO under number 2, the next segment under 3
mkfifo "$D/xtc-000002.seg"
{ echo "start 2 4343"; for i in $(seq 1 4); do echo "events 2 0 3 $((5000000 + i * 64000)) 64"; done; echo "end 2"; } |
	"$SEGWRITE" --seq 3 "$D" || fail "xtc-segwrite failed"
wait_events "AND seg = 3" 256
events "AND seg = 1 AND loop = 7" | grep -qx 192 || fail "segment 1's new blocks are not all in ClickHouse"
kill -TERM "$SHIP"; wait "$SHIP" || fail "the shipper exited $? after SIGTERM"
SHIP=
row=$(ch_q "SELECT count() FROM xtc.drops FINAL WHERE host = 'host-w' AND what = 'unshipped'")
[ "$row" = 0 ] || fail "the FIFO under segment 2's name was recorded as $row 'unshipped' row(s)"
[ -p "$D/xtc-000002.seg" ] || fail "the FIFO was replaced"
grep -q "unshipped\|deleted under the byte budget" "$T/ship.log" &&
	fail "the shipper called the FIFO a deleted segment: $(cat "$T/ship.log")"
cursor=$(cat "$D/.xtcd-ship.cursor")
echo "ok: past a FIFO under segment 2's name: segment 3's 256 events shipped, no 'unshipped' row (cursor: $cursor)"
echo PASS
