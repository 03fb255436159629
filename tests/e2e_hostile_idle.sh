#!/bin/bash
# tests/e2e_hostile_idle.sh - one process holds 1000 idle sessions.  Each
# segment restates every live session; that must never fill the segment
# by itself (rotation after rotation would delete everyone's data under
# the budget): a well-behaved app recording beside them must be recorded
# completely within a budget that easily holds it.  And one uid may hold
# at most max_sessions_per_uid sessions: the rest are refused with a
# reason, said once each in the log, while another uid still attaches.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done

# --- restatement: 1000 idle sessions, 256K segments, a 4M budget
# this test counts the attach and refusal lines: every one is printed
start_xtcd --segment-bytes 256K --max-bytes 4M --log-rate-burst 0
"$BADCLIENT" "$SOCK" idle 1000 14000 >"$T/idle.out" 2>&1 &
idle=$!
for _ in $(seq 1 1500); do
	[ "$(grep -c '(xtc-badclient) uid [0-9]* attached' "$T/xtcd.log")" -ge 1000 ] && break
	sleep 0.02
done
[ "$(grep -c '(xtc-badclient) uid [0-9]* attached' "$T/xtcd.log")" -ge 1000 ] || fail "the 1000 idle sessions did not attach"
first=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | tail -n 1)
t0=$(date +%s%N)
"$LOADGEN" 1 200000 20000 0 >"$T/lg.out" 2>&1 || fail "xtc-loadgen exited $?"
t1=$(date +%s%N)
last=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | tail -n 1)
wait "$idle" || fail "xtc-badclient idle: $(cat "$T/idle.out")"
echo "  $(cat "$T/idle.out")"
stop_xtcd
ms=$(( (t1 - t0) / 1000000 ))
echo "  while xtc-loadgen ran ($ms ms): $((last - first)) rotations, $(grep -c '^xtcd: deleted' "$T/xtcd.log") deletions in all"
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" victim 1 200000 || fail "the victim beside 1000 idle sessions"

# --- max_sessions_per_uid: 100 for everyone; another uid still attaches
rm -rf "$DIR"; mkdir -p "$DIR"
chmod 755 "$T"
NOBODY=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
start_xtcd --max-sessions-per-uid 100 --log-rate-burst 0
"$BADCLIENT" "$SOCK" idle 150 3000 >"$T/idle2.out" 2>&1 &
idle=$!
for _ in $(seq 1 500); do grep -c 'refused pid' "$T/xtcd.log" | grep -q '^50$' && break; sleep 0.02; done
if [ -n "$NOBODY" ]; then
	$NOBODY env XTC_TAIL_SHM="$SOCK" "$LOADGEN" 1 1000 0 0 >"$T/nobody.out" 2>&1 || fail "nobody's app"
	wait_log "uid 65534 attached" 5
fi
wait "$idle" || fail "xtc-badclient idle: $(cat "$T/idle2.out")"
echo "  $(cat "$T/idle2.out")"
grep -q '^100 of 150 idle sessions accepted, 50 refused ("uid [0-9]* has 100 sessions attached, the most max_sessions_per_uid allows; end one, or raise it")' "$T/idle2.out" ||
	fail "expected 100 accepted and 50 refused for max_sessions_per_uid: $(cat "$T/idle2.out")"
n=$(grep -c 'refused pid [0-9]* uid [0-9]*: uid [0-9]* has 100 sessions attached, the most max_sessions_per_uid allows' "$T/xtcd.log")
[ "$n" -eq 50 ] || fail "expected 50 refusal lines, found $n"
[ -n "$NOBODY" ] || echo "note: cannot run as nobody (not root, or no setpriv): the other-uid half is skipped"
stop_xtcd
echo "PASS"
