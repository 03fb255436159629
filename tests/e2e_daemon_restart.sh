#!/bin/bash
# xtcd killed and restarted mid-session: the app re-attaches by itself, no
# record that was in its rings is lost, the old session is closed as
# incomplete, and the torn tail of the last segment is recovered.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

start_xtcd --drain-ms 10
# HOLD_MS keeps the app alive (and its rings with it) until it re-attaches
# even when a loaded machine makes the restart slow.
XTC_DEBUG=1 XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 300000 100000 8000 >"$T/lg.out" 2>"$T/lg.err" &
lg=$!
wait_log "attached"
sleep 1
kill -9 "$XTCD_PID"; wait "$XTCD_PID" 2>/dev/null; XTCD_PID=
last=$(ls "$DIR"/xtc-*.seg | tail -n 1)
head -c 777 /dev/urandom >>"$last"   # what a write cut short leaves behind
sleep 0.3
start_xtcd --drain-ms 10
wait_log "recovered a torn tail"
wait_log "re-attaching" 30
wait $lg || fail "loadgen failed"
wait_log "ended: detached"
stop_xtcd
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" restart 2 300000 || fail "restart"
