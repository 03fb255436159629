#!/bin/bash
# xtcd as systemd runs it (tests/e2e_sd.py plays systemd): socket
# activation (LISTEN_FDS with a SOCK_SEQPACKET socket the test bound),
# READY=1, STATUS= with live counts, WATCHDOG=1 every half WATCHDOG_USEC
# (and none when WATCHDOG_PID names another process), STOPPING=1; an app
# attaches through the passed socket; a passed socket of the wrong type is
# refused.  Then systemd-analyze verify on both units.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

SD="python3 $top_srcdir/tests/e2e_sd.py"
NLOG=$T/notify.log

# wait_notify PATTERN [seconds]: wait until systemd would have heard it.
wait_notify() {
	for _ in $(seq 1 $(( ${2:-10} * 50 ))); do
		grep -q -- "$1" "$NLOG" 2>/dev/null && return 0
		sleep 0.02
	done
	echo "--- notify log"; cat "$NLOG" 2>/dev/null
	fail "systemd never heard '$1'"
}

# --- socket activation, notify, watchdog
$SD "$NLOG" "$SOCK" -- "$XTCD" --dir "$DIR" --socket "$T/not-bound.sock" >>"$T/xtcd.log" 2>&1 &
sd=$!
wait_notify READY=1
[ -e "$T/not-bound.sock" ] && fail "xtcd bound --socket instead of using the socket it was passed"
grep -q "the socket systemd passed is $SOCK" "$T/xtcd.log" || fail "xtcd did not say which socket it was passed"
XTC_TAIL_SHM=$SOCK "$LOADGEN" 2 50000 25000 2500 >"$T/lg.out" &
lg=$!
wait_log "attached"
wait_notify "STATUS=1 session, "
sleep 1.2
wd=$(grep -c '^WATCHDOG=1$' "$NLOG")
[ "$wd" -ge 8 ] || fail "only $wd WATCHDOG=1 in $(wc -l <"$NLOG") messages over about 2 s (one every 100 ms expected)"
grep '^STATUS=1 session, ' "$NLOG" | tail -n 1 | grep -Eq 'STATUS=1 session, [0-9.]+[kM]? events/s, 0 dropped, [0-9.]+[KMG]?B? of 1.00G used$' ||
	fail "STATUS does not give sessions, events/s, drops and bytes used: $(grep STATUS= "$NLOG" | tail -n 1)"
"$XTCD" --status --socket "$SOCK" >"$T/status.txt" || fail "--status through the passed socket failed"
grep -q 'xtc-loadgen' "$T/status.txt" || fail "--status does not list the app: $(cat "$T/status.txt")"
wait $lg || fail "loadgen failed"
wait_log "ended: detached"
kill -TERM $sd
wait $sd || fail "xtcd exited with $? after SIGTERM"
grep -q '^STOPPING=1' "$NLOG" || fail "no STOPPING=1"
[ -S "$SOCK" ] || fail "xtcd removed the socket systemd owns"
first=$(grep -n -m1 '^READY=1' "$NLOG" | cut -d: -f1)
stat=$(grep -n -m1 '^STATUS=1 session' "$NLOG" | cut -d: -f1)
[ "$first" -lt "$stat" ] || fail "READY=1 came after the first STATUS"
echo "ok: READY, $(grep -c '^STATUS=' "$NLOG") STATUS, $wd WATCHDOG in the first 2 s, STOPPING; the app attached through fd 3"
{ grep '^STATUS=1 session, [0-9.]*k events/s' "$NLOG" || grep '^STATUS=1 session' "$NLOG"; } | tail -n 1
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" complete 2 50000 || fail "the session through the passed socket is not complete"

# --- WATCHDOG_PID naming another process: no keep-alives
rm -f "$SOCK" "$NLOG"
$SD --watchdog-pid other "$NLOG" "$SOCK" -- "$XTCD" --dir "$DIR" --socket "$SOCK" >>"$T/xtcd.log" 2>&1 &
sd=$!
wait_notify READY=1
sleep 0.5
kill -TERM $sd
wait $sd || fail "xtcd exited with $? after SIGTERM"
! grep -q WATCHDOG=1 "$NLOG" || fail "WATCHDOG=1 sent although WATCHDOG_PID is another process"
echo "ok: no WATCHDOG=1 when WATCHDOG_PID is not xtcd"

# --- a passed socket of the wrong type
rm -f "$SOCK" "$NLOG"
$SD --stream "$NLOG" "$SOCK" -- "$XTCD" --dir "$DIR" --socket "$SOCK" >"$T/stream.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "xtcd given a SOCK_STREAM socket exited $rc, not 1"
grep -q 'not a unix SOCK_SEQPACKET socket' "$T/stream.log" || fail "no clear error for a SOCK_STREAM socket: $(cat "$T/stream.log")"
! grep -q READY=1 "$NLOG" || fail "READY=1 with an unusable socket"
echo "ok: $(tail -n 1 "$T/stream.log")"

# --- the units
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "SKIP: systemd-analyze is missing: the units were not verified"
	exit 77
fi
mkdir -p "$T/units"
bindir=$(cd "$(dirname "$XTCD")" && pwd)
sed "s|@bindir@|$bindir|g" "$top_srcdir/contrib/systemd/xtcd.service.in" >"$T/units/xtcd.service"
cp "$top_srcdir/contrib/systemd/xtcd.socket" "$T/units/xtcd.socket"
grep -q '@[a-z_]*@' "$T/units/xtcd.service" && fail "xtcd.service.in has an unsubstituted @variable@"
out=$(systemd-analyze verify --man=no "$T/units/xtcd.socket" "$T/units/xtcd.service" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || fail "systemd-analyze verify (exit $rc): $out"
echo "ok: systemd-analyze verify passes on xtcd.service and xtcd.socket"
