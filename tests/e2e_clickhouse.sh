#!/bin/bash
# xtcd --ship into a real ClickHouse (Debian's clickhouse-server, started
# here on loopback): nothing lost, nothing doubled, through faults.
#
#  1. Two xtcds stand for two hosts (host-a, host-b); apps record into
#     both (xtc-loadgen on each, xtc-anomaly's planted lost wakeups and
#     drops on host-b); one shipper per host sends to one ClickHouse, the
#     first with --ship-create.
#  2. Faults, mid-stream: host-a's shipper is killed with SIGKILL at 10
#     random points and restarted each time; then ClickHouse itself is
#     killed and kept down for 5 s.  Both shippers must say so (once) and
#     carry on.
#  3. Afterwards (tests/e2e_ship_check.py): per host and kind, ClickHouse
#     (FINAL) holds exactly what xtcd --cat prints, with the same sums of
#     detail and ts_ns; no key twice; sessions = --stats; drops = --cat's
#     DROP records; and every query of contrib/clickhouse/queries.sql
#     returns what --stats and --report say of the same record.
#  4. host-c: segments the byte budget deleted before its shipper sent
#     them are one drops row (what = 'unshipped', exactly those segments),
#     and everything still on disk is shipped.
# Exit 77 only when clickhouse-server is missing or cannot start here
# (the CI stage scripts/ci_ship.sh installs it).
. "${top_srcdir:-.}/tests/e2e_lib.sh"
. "${top_srcdir:-.}/tests/ch_lib.sh"
ANOMALY=${ANOMALY:-$top_builddir/tests/xtc-anomaly}
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is needed to talk to ClickHouse"; exit 77; }

PIDS=()
ship_cleanup() {
	local p
	for p in "${PIDS[@]}" ${SHIP_A:-} ${SHIP_B:-} ${SHIP_C:-}; do kill -9 "$p" 2>/dev/null; done
	ch_kill
	cleanup
}
trap ship_cleanup EXIT

if ! ch_start; then
	echo "SKIP: ClickHouse cannot start on this machine"
	exit 77
fi
ch_q "CREATE DATABASE xtc" >/dev/null
URL="http://127.0.0.1:$CH_HTTP/?database=xtc"

# start_host NAME: an xtcd writing $T/NAME, listening on $T/NAME.sock.
start_host() {
	mkdir -p "$T/$1"
	"$XTCD" --dir "$T/$1" --socket "$T/$1.sock" --segment-bytes 256K --drain-ms 10 \
		>>"$T/$1.log" 2>&1 &
	eval "XTCD_$1=$!"
	PIDS+=($!)
	for _ in $(seq 1 500); do
		grep -q listening "$T/$1.log" 2>/dev/null && return 0
		sleep 0.02
	done
	fail "xtcd for $1 did not start listening"
}

# start_shipper a|b [flags...]: xtcd --ship for host-NAME.
start_shipper() {
	local h=$1; shift
	"$XTCD" --ship "$URL" "$T/$h" --ship-host "host-$h" --ship-batch 5000 --ship-batch-ms 200 \
		"$@" >>"$T/ship-$h.log" 2>&1 &
	eval "SHIP_${h^^}=$!"
}

start_host a
start_host b
start_shipper a --ship-create
start_shipper b --ship-create --ship-metrics "$T/xtcd-ship.prom"

# ---- 1: apps recording on both hosts
XTC_TAIL_SHM=$T/a.sock "$LOADGEN" 4 90000 6000 >"$T/load-a.out" 2>&1 &
LOAD_A=$!; PIDS+=($LOAD_A)
XTC_TAIL_SHM=$T/b.sock "$LOADGEN" 2 80000 5000 >"$T/load-b.out" 2>&1 &
LOAD_B=$!; PIDS+=($LOAD_B)
APPS=()
for s in clean no-submit reap-drop; do
	XTC_TAIL_SHM=$T/b.sock "$ANOMALY" $s >"$T/anomaly-$s.out" 2>&1 &
	APPS+=($!)
done
XTC_TAIL_SHM=$T/b.sock XTC_TAIL_RING_RECORDS=64 "$ANOMALY" drops >"$T/anomaly-drops.out" 2>&1 &
APPS+=($!)
PIDS+=("${APPS[@]}")

# ---- 2: faults while the records stream
for i in $(seq 1 10); do
	sleep "0.$(( RANDOM % 6 + 1 ))$(( RANDOM % 10 ))"
	kill -9 "$SHIP_A"
	wait "$SHIP_A" 2>/dev/null
	[ "$i" -ge 3 ] && [ ! -s "$T/old.cursor" ] && [ -s "$T/a/.xtcd-ship.cursor" ] &&
		cp "$T/a/.xtcd-ship.cursor" "$T/old.cursor"
	start_shipper a
done
[ -s "$T/old.cursor" ] || fail "host-a's shipper wrote no cursor in 10 runs"
kill -0 "$LOAD_A" 2>/dev/null || fail "host-a's load ended before the ClickHouse outage: not mid-stream"
ch_kill
sleep 5
ch_start || fail "ClickHouse did not come back"
echo "ok: shipper of host-a killed 10 times, ClickHouse down 5 s, all mid-stream"

wait "$LOAD_A" || fail "xtc-loadgen on host-a failed: $(cat "$T/load-a.out")"
wait "$LOAD_B" || fail "xtc-loadgen on host-b failed: $(cat "$T/load-b.out")"
for p in "${APPS[@]}"; do wait "$p" || fail "xtc-anomaly (pid $p) failed"; done
for h in a b; do
	eval "p=\$XTCD_$h"
	kill -TERM "$p"
	wait "$p" || fail "xtcd for host-$h exited $? after SIGTERM"
done

# Wait (bounded) until each host's rows in ClickHouse match its records.
for h in a b; do
	want=$("$XTCD" --cat "$T/$h" --json 2>/dev/null | grep -c '"type":"event"')
	for _ in $(seq 1 600); do
		got=$(ch_q "SELECT count() FROM xtc.events FINAL WHERE host = 'host-$h'")
		[ "$got" = "$want" ] && break
		sleep 0.2
	done
	[ "$got" = "$want" ] || fail "host-$h: ClickHouse holds $got events after 120 s, disk $want"
done
for h in a b; do
	eval "p=\$SHIP_${h^^}"
	kill -TERM "$p"
	wait "$p" || fail "the shipper of host-$h exited $? after SIGTERM"
done
SHIP_A= SHIP_B=

for h in a b; do
	grep -q "did not take a batch" "$T/ship-$h.log" ||
		fail "the shipper of host-$h never said ClickHouse was down: $(cat "$T/ship-$h.log")"
	grep -q "takes batches again" "$T/ship-$h.log" ||
		fail "the shipper of host-$h never said ClickHouse was back"
	n=$(grep -c "did not take a batch" "$T/ship-$h.log")
	[ "$n" -eq 1 ] || fail "the shipper of host-$h said the outage began $n times, not once"
done
echo "ok: both shippers said ClickHouse was down and back, once each"

# A shipper that died after ClickHouse took its batches but before its
# cursor write resends them: put back a cursor from mid-stream, with merges
# stopped so that the copies stay visible, and ship again to the end.
ch_q "SYSTEM STOP MERGES" >/dev/null
raw0=$(ch_q "SELECT count() FROM xtc.events WHERE host = 'host-a'")
cp "$T/a/.xtcd-ship.cursor" "$T/final.cursor"
cp "$T/old.cursor" "$T/a/.xtcd-ship.cursor"
start_shipper a
for _ in $(seq 1 600); do
	cmp -s "$T/a/.xtcd-ship.cursor" "$T/final.cursor" && break
	sleep 0.2
done
cmp -s "$T/a/.xtcd-ship.cursor" "$T/final.cursor" ||
	fail "host-a's shipper did not get from the old cursor back to the end in 120 s"
kill -TERM "$SHIP_A"; wait "$SHIP_A" || fail "host-a's shipper exited $? after SIGTERM"
SHIP_A=
raw1=$(ch_q "SELECT count() FROM xtc.events WHERE host = 'host-a'")
[ "$raw1" -gt "$raw0" ] || fail "shipping again from an old cursor sent nothing ($raw0 -> $raw1 rows)"
echo "ok: from a mid-stream cursor, $((raw1 - raw0)) event rows were sent again (merges stopped)"

# The shipper's own textfile, written at its exit: nothing pending, the
# events it sent, when it last succeeded.
want_b=$("$XTCD" --cat "$T/b" --json 2>/dev/null | grep -c '"type":"event"')
grep -q "^xtcd_ship_events_total $want_b\$" "$T/xtcd-ship.prom" ||
	fail "host-b's xtcd-ship.prom does not count $want_b events: $(grep -v '^#' "$T/xtcd-ship.prom")"
grep -q '^xtcd_ship_lag_records 0$' "$T/xtcd-ship.prom" || fail "host-b's shipper ended with rows pending"
grep -q '^xtcd_ship_failures_total [1-9]' "$T/xtcd-ship.prom" || fail "host-b's failed sends were not counted"
last=$(awk '/^xtcd_ship_last_success_timestamp_seconds/ {print int($2)}' "$T/xtcd-ship.prom")
[ "$last" -ge "$(( $(date +%s) - 300 ))" ] || fail "xtcd_ship_last_success_timestamp_seconds is $last"
echo "ok: host-b's xtcd-ship.prom: $want_b events shipped, none pending, failures counted"

# ---- 3: ClickHouse against the record on disk
python3 "$top_srcdir/tests/e2e_ship_check.py" "$XTCD" "http://127.0.0.1:$CH_HTTP/?database=xtc" \
	"$top_srcdir/contrib/clickhouse/queries.sql" host-a="$T/a" host-b="$T/b" ||
	fail "ClickHouse does not hold what the segments hold"

# ---- 4: segments the byte budget deleted before they were shipped
# host-c ships a first app, its shipper stops, a second app's records make
# xtcd delete what the cursor points at and more; the shipper restarts,
# says so, ships what is left and records the gap as drops.what =
# 'unshipped', first_seq..last_seq exactly the segments it never sent.
mkdir -p "$T/c"
"$XTCD" --dir "$T/c" --socket "$T/c.sock" --segment-bytes 64K --max-bytes 512K --drain-ms 10 \
	>>"$T/c.log" 2>&1 &
XTCD_c=$!; PIDS+=($!)
for _ in $(seq 1 500); do grep -q listening "$T/c.log" 2>/dev/null && break; sleep 0.02; done
start_shipper c
XTC_TAIL_SHM=$T/c.sock "$LOADGEN" 1 20000 20000 >/dev/null || fail "loadgen on host-c failed"
disk_c() { "$XTCD" --cat "$T/c" --json 2>/dev/null | grep -c '"type":"event"'; }
want=$(disk_c)
for _ in $(seq 1 300); do
	[ "$(ch_q "SELECT count() FROM xtc.events FINAL WHERE host = 'host-c'")" = "$want" ] && break
	sleep 0.2
done
kill -TERM "$SHIP_C"; wait "$SHIP_C" || fail "host-c's shipper exited $? after SIGTERM"
SHIP_C=
read -r _ _ cseq _ cdone _ <"$T/c/.xtcd-ship.cursor"
XTC_TAIL_SHM=$T/c.sock "$LOADGEN" 1 300000 100000 >/dev/null || fail "loadgen on host-c failed"
oldest=$(ls "$T/c" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | head -n 1)
first=$cseq; [ "$cdone" = 1 ] && first=$((cseq + 1))
[ "$oldest" -gt "$first" ] || fail "the budget deleted nothing unshipped (oldest $oldest, cursor $cseq)"
start_shipper c
want=$("$XTCD" --cat "$T/c" --json 2>/dev/null | grep -c '"type":"event"')
for _ in $(seq 1 300); do
	got=$(ch_q "SELECT count() FROM xtc.events FINAL WHERE host = 'host-c' AND seg >= $oldest")
	[ "$got" = "$want" ] && break
	sleep 0.2
done
[ "$got" = "$want" ] || fail "host-c: $got events of segments $oldest.. in ClickHouse, $want on disk"
row=$(ch_q "SELECT first_seq, last_seq, count FROM xtc.drops FINAL WHERE host = 'host-c' AND what = 'unshipped'")
[ "$row" = "$first	$((oldest - 1))	$((oldest - first))" ] ||
	fail "host-c: unshipped rows '$row', expected segments $first..$((oldest - 1))"
grep -q "deleted under the byte budget before" "$T/ship-c.log" || fail "host-c's shipper did not say what it lost"
kill -TERM "$SHIP_C"; wait "$SHIP_C" || fail "host-c's shipper exited $? after SIGTERM"
SHIP_C=
echo "ok: host-c: segments $first..$((oldest - 1)) deleted before they were shipped are one 'unshipped' row; the $want records left are all in ClickHouse"
