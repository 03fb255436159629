#!/bin/bash
# tests/e2e_hostile_pending.sh - connections that never send a hello cost
# their client nothing but a slot of max_clients each, for
# hello_timeout_ms: one uid holding all of them locked every other user
# out ("xtcd serves its maximum number of clients").  Connections waiting
# for their hello now count as sessions of their uid, within
# max_sessions_per_uid (auto: half of max_clients): a well-behaved app of
# another uid still attaches while they are held.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
if ! { [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; }; then
	echo "SKIP: the attacker must run as another uid (root and setpriv are needed)"
	exit 77
fi
chmod 755 "$T"
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

start_xtcd --max-clients 64 --hello-timeout-ms 5000
$NOBODY "$BADCLIENT" "$SOCK" many 64 4000 >"$T/many.out" 2>&1 &
many=$!
for _ in $(seq 1 250); do
	[ "$(grep -c 'refused pid [0-9]* uid 65534: this uid has as many sessions and connections waiting' "$T/xtcd.log")" -ge 32 ] && break
	sleep 0.02
done
XTC_TAIL_RING_RECORDS=1024 "$LOADGEN" 1 1000 0 0 >"$T/lg.out" 2>&1 || fail "xtc-loadgen exited $?"
wait "$many"
echo "  xtc-badclient (uid 65534): $(cat "$T/many.out")"
wait_log "xtc-loadgen) ended" 5
stop_xtcd
n=$(grep -c 'refused pid [0-9]* uid 65534: this uid has as many sessions and connections waiting' "$T/xtcd.log")
[ "$n" -ge 32 ] || fail "expected 32 of the 64 silent connections refused (max_sessions_per_uid 32), $n were"
grep -q '(xtc-loadgen) uid 0 attached' "$T/xtcd.log" ||
	fail "the app of another uid was not let in: $(tr '\n' ' ' <"$T/lg.out")"
grep -q 'refused pid [0-9]* uid 0' "$T/xtcd.log" && fail "the app of another uid was refused: $(grep 'uid 0' "$T/xtcd.log")"
echo "  32 silent connections held, 32 refused; uid 0's app attached meanwhile"
echo "PASS"
