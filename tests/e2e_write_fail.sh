#!/bin/bash
# A write that fails part way, with writes queued and in flight behind it:
# xtcd runs under a 512 KiB file size limit (ulimit -f, SIGXFSZ ignored), so
# the write that crosses it comes back short and its rest, and every write
# behind it, fail with EFBIG.  Each segment must be cut back to its last
# whole block (xtcd --cat reads the directory with exit 0 and says nothing:
# no hole, no torn block, not even a torn tail), the failure said in a line, and the counts reconcile (produced ==
# written + dropped + lost, with lost > 0, the session ending io_error).
# Both writers: io_uring (several writes in flight) and --pwrite, each
# also with --direct (the O_DIRECT write of a buffer's whole blocks comes
# back short at the limit, its linked tail cancelled, the rest sent again
# through the page cache and failing there).
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for mode in io_uring pwrite io_uring+direct pwrite+direct; do
	io=${mode%+direct}
	rm -rf "$DIR"
	mkdir -p "$DIR"
	: >"$T/xtcd.log"
	flags=()
	[ "$io" = pwrite ] && flags=(--pwrite)
	[ "$mode" != "$io" ] && flags+=(--direct)
	( trap '' XFSZ; ulimit -f 512; exec "$XTCD" --dir "$DIR" --socket "$SOCK" "${flags[@]}" \
		>>"$T/xtcd.log" 2>&1 ) &
	XTCD_PID=$!
	wait_log listening 10
	grep -q "listening.*$( [ "$io" = pwrite ] && echo pwrite || echo io_uring)" "$T/xtcd.log" ||
		{ [ "$io" = io_uring ] && grep -q "io_uring is unavailable" "$T/xtcd.log" &&
		  { echo "  io_uring unavailable here: the pwrite writer only"; stop_xtcd; continue; }; } ||
		fail "xtcd does not say it writes with $io"
	# flat out: blocks come faster than the disk takes them
	"$LOADGEN" 1 3000000 0 >"$T/load.out" 2>&1 || fail "xtc-loadgen exited $?"
	wait_log "ended:" 20
	kill -0 "$XTCD_PID" 2>/dev/null || fail "$mode: xtcd died at the file size limit"
	stop_xtcd
	grep -q "failed: File too large; [0-9]* records lost" "$T/xtcd.log" ||
		fail "$mode: the failed writes were not said"
	"$XTCD" --cat "$DIR" >/dev/null 2>"$T/cat.err" ||
		fail "$mode: xtcd --cat exited $?: $(head -n 3 "$T/cat.err")"
	# not even a torn tail, which a reader forgives the newest segment
	[ -s "$T/cat.err" ] && fail "$mode: the segment was not cut back to a whole block: $(head -n 3 "$T/cat.err")"
	line=$(grep -m1 "ended:" "$T/xtcd.log")
	python3 - "$line" <<'PY' || fail "$mode: does not reconcile: $line"
import re, sys
m = re.search(r"ended: ([\w ]+), produced (\d+), written (\d+), dropped (\d+), lost (\d+)", sys.argv[1])
why, p, w, d, l = m.group(1), *map(int, m.groups()[1:])
sys.exit(0 if p == w + d + l and l > 0 and w > 0 and why == "io error" else 1)
PY
	echo "  $mode: $line; $(ls "$DIR" | wc -l) segment(s), all readable"
done
echo PASS
