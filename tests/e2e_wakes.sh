#!/bin/bash
# What xtcd's loop must still hear of while io_uring does not wake it at
# every completion (store_write.c, "Completion wakes"):
#  1. records written by a round's write are counted as written (and
#     their ring tail published) by the next drain round, even when the
#     producer has gone quiet and nothing else happens: within a drain
#     period, not at the next record or the detach;
#  2. a drain starved of write buffers goes on as soon as a write
#     completes, not at the next timer, which here is a minute away: a
#     burst larger than the buffers, then a quiet producer, is written
#     (but for its last write) long before that.
# Both hold with --pwrite as well, where no completion is waited for.
# The metrics file's xtcd_drain_starved_total says whether the drain did
# starve: with --pwrite it always does here (a drain fills every buffer
# before the round's writes); io_uring's writes into the page cache
# complete while the drain goes on, so io_uring's starving is tested on
# a disk slow for real:
#  3. (root) a loop device throttled to 8 MiB/s, written O_DIRECT
#     (--direct), where every write waits for the device: the drain
#     starves and goes on at each completion, not once all are done.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

# written_now: the live session's written count, from --status.
written_now() {
	"$XTCD" --status --socket "$SOCK" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(s["written"] for s in d["sessions"]))' 2>/dev/null || echo 0
}

# starved_total: xtcd_drain_starved_total from the metrics file of the
# last xtcd, written at its stop.
starved_total() {
	awk '$1 == "xtcd_drain_starved_total" { print $2; f = 1 } END { if (!f) print "missing" }' "$T/xtcd.prom"
}

# starved_burst WHAT SECONDS: with xtcd just started, 3M records (about
# 21 MB of blocks, far more than the 8 MiB of write buffers) wait in the
# ring while xtcd is stopped, so that one drain sees them all; then the
# producer is quiet, so only completions carry the drain on (without
# them it would stop at about 1.1M records).  All but the last write's
# records must be written within SECONDS (a write completing with
# nothing waiting is read at the next drain round); xtcd is stopped, the
# session ended complete.  Sets n (written by then) and starved.
starved_burst() {
	XTC_TAIL_RING_RECORDS=4194304 "$LOADGEN" 1 3000000 0 60000 >"$T/burst.out" &
	lg=$!
	wait_log "attached"
	kill -STOP "$XTCD_PID"
	for _ in $(seq 1 300); do
		grep -q "^emitted" "$T/burst.out" && break
		sleep 0.1
	done
	kill -CONT "$XTCD_PID"
	grep -q "^emitted 3000000" "$T/burst.out" || fail "$1: the producer did not emit its burst"
	for _ in $(seq 1 $(( $2 * 10 ))); do
		n=$(written_now)
		[ "$n" -ge 2500000 ] && break
		sleep 0.1
	done
	[ "$n" -ge 2500000 ] || fail "$1: the starved drain stopped at $n of 3000000 records"
	stop_xtcd
	kill "$lg" 2>/dev/null
	wait "$lg" 2>/dev/null
	grep -q "ended: daemon shutdown, produced 3000000, written 3000000, dropped 0, lost 0" "$T/xtcd.log" ||
		fail "$1: the session did not end with every record written"
	starved=$(starved_total)
}

# wait_written N SECONDS WHAT: until the live session has N written.
wait_written() {
	local n
	for _ in $(seq 1 $(( $2 * 10 ))); do
		n=$(written_now)
		[ "$n" = "$1" ] && return 0
		sleep 0.1
	done
	fail "$3: $n of $1 records written after $2 s"
}

for io in io_uring pwrite; do
	flags=()
	[ "$io" = pwrite ] && flags=(--pwrite)

	# 1: a quiet producer's last records, a drain period of 100 ms.
	start_xtcd --drain-ms 100 "${flags[@]}"
	"$LOADGEN" 1 1000 10000 15000 >"$T/lg1.out" &
	lg=$!
	wait_written 1000 10 "$io: the last write of a quiet producer"
	kill "$lg" 2>/dev/null
	wait "$lg" 2>/dev/null
	wait_log "ended:"
	stop_xtcd
	echo "ok: $io: a quiet producer's records are written while it is still attached"
	: >"$T/xtcd.log"

	# 2: a drain that starves (see starved_burst), the timer a minute away.
	start_xtcd --drain-ms 60000 --metrics-file "$T/xtcd.prom" "${flags[@]}"
	starved_burst "$io" 30
	[ "$io" = io_uring ] || [ "$starved" -ge 1 ] || fail "$io: the drain never starved ($starved)"
	echo "ok: $io: a drain went on at its writes' completion ($n written before the next timer, starved $starved times)"
	: >"$T/xtcd.log"
done

# 3: io_uring on a slow disk: 3M records (about 21 MB, well over the 8
# MiB of buffers) wait in the ring, then one drain meets writes that
# each wait about 1/8 s for the device (O_DIRECT ones go one at a time).
slow_disk $((8 << 20)) || { echo "skip: io_uring on a slow disk: $SLOW_WHY"; exit 0; }
DIR=$SLOW_MNT/segments
mkdir -p "$DIR"
start_xtcd --drain-ms 60000 --metrics-file "$T/xtcd.prom" --direct --sync never
grep -q "listening on .*, io_uring .*O_DIRECT)$" "$T/xtcd.log" ||
	{ echo "skip: io_uring on a slow disk: xtcd writes without io_uring or O_DIRECT here: $(grep listening "$T/xtcd.log")"; exit 0; }
starved_burst "slow disk" 60
# Each completion frees one buffer, which the resumed drain fills before
# it starves again: about one starving a write past the first eight.  A
# drain that waited for every write instead (the idle resume of store_flush,
# as with pwrite) starves about once for every eight, three times here.
[ "$starved" -ge 10 ] || fail "slow disk: the drain starved $starved times: not resumed at each completion"
echo "ok: io_uring, slow disk: a starved drain went on at its writes' completion ($n written before the next timer, starved $starved times)"
