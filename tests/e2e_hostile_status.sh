#!/bin/bash
# tests/e2e_hostile_status.sh - sixteen status requests whose clients never
# read the answer (it does not fit the socket buffer: there are enough
# sessions) must not lock xtcd --status out: every --status asked meanwhile
# is answered, and the app recording beside them loses nothing.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done

start_xtcd
"$BADCLIENT" "$SOCK" idle 300 12000 >"$T/idle.out" 2>&1 &
idle=$!
for _ in $(seq 1 1500); do
	[ "$(grep -c '(xtc-badclient) uid [0-9]* attached' "$T/xtcd.log")" -ge 300 ] && break
	sleep 0.02
done
"$LOADGEN" 1 100000 20000 0 >"$T/lg.out" 2>&1 &
lg=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 10
"$BADCLIENT" "$SOCK" statushog 16 7000 >"$T/hog.out" 2>&1 &
hog=$!
for _ in $(seq 1 250); do grep -q 'never read' "$T/hog.out" && break; sleep 0.02; done
grep -q '^16 status requests sent' "$T/hog.out" || fail "the 16 status clients: $(cat "$T/hog.out")"
answered=0
for i in 1 2 3 4 5; do
	if timeout 10 "$XTCD" --status --socket "$SOCK" >"$T/status$i.out" 2>"$T/status$i.err" &&
		grep -q 'xtc-loadgen' "$T/status$i.out"; then
		answered=$((answered + 1))
	else
		echo "  --status $i: $(head -c 300 "$T/status$i.err") $(head -c 300 "$T/status$i.out")"
	fi
	sleep 0.3
done
echo "  under 16 status clients that never read: $answered of 5 --status answered"
wait "$hog" || fail "xtc-badclient statushog: $(cat "$T/hog.out")"
wait "$lg" || fail "xtc-loadgen exited $?"
wait "$idle" || fail "xtc-badclient idle: $(cat "$T/idle.out")"
[ "$answered" -eq 5 ] || fail "only $answered of 5 --status were answered"
stop_xtcd
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" victim 1 100000 || fail "the app recording beside"
echo "PASS"
