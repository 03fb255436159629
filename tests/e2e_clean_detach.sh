#!/bin/bash
# A clean detach: 4 loops x 1M events with rings big enough.  Every event
# is on disk, in order per loop, and the session is complete.  Run once
# through io_uring and once through the pwrite fallback.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for io in uring pwrite; do
	rm -rf "$DIR" && mkdir -p "$DIR" && : >"$T/xtcd.log"
	if [ $io = pwrite ]; then start_xtcd --pwrite; else start_xtcd; fi
	grep -q "io_uring" "$T/xtcd.log" || [ $io = pwrite ] || echo "note: io_uring unavailable here; both runs use pwrite"
	[ $io = pwrite ] && { grep -q ", pwrite)" "$T/xtcd.log" || fail "--pwrite did not select pwrite"; }
	XTC_TAIL_RINGS=8 XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 4 1000000 >"$T/lg.out" || fail "loadgen failed"
	wait_log "ended: detached"
	stop_xtcd
	cat_json
	python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" complete 4 1000000 || fail "$io run"
	echo "ok: $io path"
done
