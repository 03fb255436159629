#!/bin/bash
# The opt-in lossless mode: with XTC_TAIL_BLOCKING_TIMEOUT_US a full ring
# makes the producer wait for xtcd instead of dropping.  Rings far too
# small for producers flat out, which drop without it (tests/e2e_overload.sh):
# every record on disk, in order, the session complete.  Then a daemon
# that stops draining (SIGSTOP): the producer waits one timeout, then
# drops and finishes instead of waiting once per emit.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

start_xtcd
XTC_TAIL_RING_RECORDS=4096 XTC_TAIL_BLOCKING_TIMEOUT_US=5000000 "$LOADGEN" 2 300000 >"$T/lg.out" ||
	fail "loadgen failed"
grep -q "^dropped 0$" "$T/lg.out" || fail "the library dropped in blocking mode: $(cat "$T/lg.out")"
wait_log "ended: detached"
stop_xtcd
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" complete 2 300000 || fail "blocking mode lost records"

# A stopped daemon: 200000 emits into a 4096-record ring would wait 200 ms
# each, 11 hours in all, if every one waited.
rm -rf "$DIR" && mkdir -p "$DIR" && : >"$T/xtcd.log"
start_xtcd
kill -STOP "$XTCD_PID"
XTC_TAIL_RING_RECORDS=4096 XTC_TAIL_BLOCKING_TIMEOUT_US=200000 timeout 120 "$LOADGEN" 1 200000 \
	>"$T/lg2.out"
rc=$?
kill -CONT "$XTCD_PID"
[ $rc = 0 ] || fail "the producer did not finish against a stopped daemon (rc $rc)"
dropped=$(sed -n 's/^dropped //p' "$T/lg2.out")
[ "${dropped:-0}" -gt 0 ] || fail "expected drops once the wait timed out: $(cat "$T/lg2.out")"
echo "ok: against a stopped daemon the producer dropped $dropped after one timeout and finished"
stop_xtcd
