#!/bin/bash
# tests/e2e_full_output.sh - a reading mode whose output cannot be written
# (stdout or --svg on a full disk, /dev/full) says so in one line naming
# the cause, and exits 2: not 0, and not a bare "Input/output error".
. "${top_srcdir:-.}/tests/e2e_lib.sh"
[ -w /dev/full ] || { echo "SKIP: no writable /dev/full"; exit 77; }

start_xtcd
"$top_builddir/examples/xtc-demo" --loops 2 --events 2000 >/dev/null || fail "xtc-demo failed"
stop_xtcd

# full MODE ARGS...: stdout on /dev/full: exit 2, one line, ENOSPC named
full() {
	local rc=0
	"$XTCD" "$@" >/dev/full 2>"$T/err" || rc=$?
	[ "$rc" -eq 2 ] || fail "xtcd $* >/dev/full exited $rc, not 2: $(cat "$T/err")"
	grep -q "No space left on device" "$T/err" || fail "xtcd $* >/dev/full did not say the disk is full: $(cat "$T/err")"
	[ "$(wc -l <"$T/err")" -eq 1 ] || fail "xtcd $* >/dev/full: more than one line: $(cat "$T/err")"
}
full --cat "$DIR"
full --cat "$DIR" --json
full --stats "$DIR"
full --report "$DIR"
full --export chrome "$DIR"
full --export xtcl "$DIR"
full --export dial9 "$DIR"
echo "ok: --cat, --stats, --report and --export on a full stdout exit 2 naming ENOSPC"

rc=0
"$XTCD" --report "$DIR" --svg /dev/full >/dev/null 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] || fail "--svg /dev/full exited $rc, not 2: $(cat "$T/err")"
grep -qx "xtcd: --svg /dev/full: No space left on device" "$T/err" ||
	fail "--svg /dev/full did not say the disk is full: $(cat "$T/err")"
echo "ok: --svg on a full disk exits 2 naming ENOSPC"
