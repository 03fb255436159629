#!/bin/bash
# tests/e2e_hostile_report.sh - a producer may stamp its records with any
# time (MONO_NS): two records 1.8e19 ns apart beside a well-behaved app.
# Every reading mode must finish, on this input as on any, within a bound
# far above what a linear pass over it takes, and the app's session must
# be complete.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
command -v timeout >/dev/null || { echo "SKIP: timeout(1) is needed"; exit 77; }

start_xtcd
"$LOADGEN" 1 20000 20000 0 >"$T/loadgen.out" 2>&1 &
LG_PID=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 5
"$BADCLIENT" "$SOCK" farapart >"$T/bc.out" 2>&1 || fail "xtc-badclient farapart: $(cat "$T/bc.out")"
echo "  $(cat "$T/bc.out")"
wait "$LG_PID" || fail "xtc-loadgen exited $?"
wait_log "(pid $LG_PID, xtc-loadgen) ended" 10
stop_xtcd

# mode ARGS...: xtcd ARGS must exit 0 within 60 s.
mode() {
	local t0 rc
	t0=$(date +%s%N)
	timeout 60 "$XTCD" "$@" >"$T/mode.out" 2>"$T/mode.err"
	rc=$?
	[ "$rc" -eq 124 ] && fail "xtcd $* did not finish within 60 s"
	[ "$rc" -eq 0 ] || fail "xtcd $* exited $rc: $(head -c 400 "$T/mode.err")"
	echo "  xtcd $*: done in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
mode --cat "$DIR"
mode --cat "$DIR" --json
mode --stats "$DIR"
mode --stats "$DIR" --json
mode --export chrome "$DIR"
mode --export dial9 "$DIR"
mode --export xtcl "$DIR"
mode --report "$DIR"
mode --report "$DIR" --json
mode --report "$DIR" --svg "$T/report.svg"
grep -q '</svg>' "$T/report.svg" || fail "--svg wrote no whole SVG"

cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" victim 1 20000 || fail "the victim's session"
echo "PASS"
