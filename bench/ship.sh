#!/bin/bash
# bench/ship.sh - what xtcd --ship costs and how fast records reach
# ClickHouse, against a real clickhouse-server started here on loopback
# (as tests/e2e_clickhouse.sh does).  Prints figures; asserts nothing.
#
#   bench/ship.sh [RECORDS] [RATE]
#
#  1. Throughput: RECORDS (default 2000000) recorded first, then one
#     shipper from an empty database to the last row: records/s into
#     ClickHouse, and the shipper's CPU (user + system) per million.
#  2. Lag: an app emitting RATE events/s (default 100000, four loops) for
#     20 s with a shipper running at the default batches (64k rows or 1 s);
#     every 0.5 s, now minus the newest emit time ClickHouse can return.
# Run it from a built tree: top_builddir=. bash bench/ship.sh
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
. "$top_srcdir/tests/e2e_lib.sh"
. "$top_srcdir/tests/ch_lib.sh"
RECORDS=${1:-2000000}
RATE=${2:-100000}
PIDS=()
bench_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	ch_kill
	cleanup
}
trap bench_cleanup EXIT
ch_start || exit 1
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"

# cpu_s PID: user + system seconds the process has used.
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}

now_ns() { date +%s%N; }

# ---- 1: throughput from a directory already written
ch_q "CREATE DATABASE tp" >/dev/null
start_xtcd --segment-bytes 64M --max-bytes 4G
per=$(( RECORDS / 4 ))
"$LOADGEN" 4 "$per" 200000 >/dev/null || fail "loadgen failed"
stop_xtcd
n=$("$XTCD" --cat "$DIR" --json | grep -c '"type":"event"')
t0=$(now_ns)
"$XTCD" --ship --ship-create "http://127.0.0.1:$CH_HTTP/?database=tp" "$DIR" --ship-host tp \
	--ship-cursor "$T/tp.cursor" 2>"$T/tp.err" &
sp=$!; PIDS+=($sp)
for _ in $(seq 1 3000); do
	got=$(ch_q "SELECT count() FROM tp.events")
	[ "$got" -ge "$n" ] && break
	sleep 0.1
done
t1=$(now_ns)
cpu=$(cpu_s "$sp")
kill -TERM "$sp"; wait "$sp"
[ "$got" -ge "$n" ] || fail "only $got of $n rows arrived"
awk -v n="$n" -v t="$(( t1 - t0 ))" -v c="$cpu" 'BEGIN {
	printf "throughput: %d records in %.2f s: %.0f records/s into ClickHouse; shipper CPU %.2f s = %.2f s per million records\n",
	       n, t / 1e9, n / (t / 1e9), c, c / (n / 1e6) }'
echo "load after 1: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 2: lag at RATE events/s
ch_q "CREATE DATABASE lag" >/dev/null
rm -rf "$DIR"; mkdir -p "$DIR"
start_xtcd --segment-bytes 64M --max-bytes 4G
"$XTCD" --ship --ship-create "http://127.0.0.1:$CH_HTTP/?database=lag" "$DIR" --ship-host lag \
	--ship-cursor "$T/lag.cursor" 2>"$T/lag.err" &
sp=$!; PIDS+=($sp)
"$LOADGEN" 4 $(( RATE / 4 * 20 )) $(( RATE / 4 )) >"$T/lag.out" &
lp=$!; PIDS+=($lp)
sleep 2
: >"$T/lags"
for _ in $(seq 1 34); do
	newest=$(ch_q "SELECT max(wall_ns) FROM lag.events")
	now=$(now_ns)
	[ "$newest" -gt 0 ] && echo $(( (now - newest) / 1000000 )) >>"$T/lags"
	sleep 0.5
done
wait "$lp"
emitted=$(grep -o 'emitted [0-9]*' "$T/lag.out")
sort -n "$T/lags" | awk -v rate="$RATE" -v e="$emitted" '{a[NR] = $1} END {
	printf "lag at %d events/s (%s): emit to visible in ClickHouse, %d samples: median %d ms, p90 %d ms, max %d ms\n",
	       rate, e, NR, a[int(NR / 2) + 1], a[int(NR * 0.9) + 1], a[NR] }'
stop_xtcd
kill -TERM "$sp"; wait "$sp"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
