#!/bin/bash
# kill -9 of the producer mid-burst: what was in its rings is drained and
# written, the session ends producer_died, incomplete, and reconciles.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

start_xtcd
XTC_TAIL_RING_RECORDS=65536 "$LOADGEN" 2 100000000 2000000 >"$T/lg.out" &
lg=$!
wait_log "attached"
sleep 0.5
kill -9 $lg
wait $lg 2>/dev/null
wait_log "ended: producer died"
stop_xtcd
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" died || fail "producer killed"
