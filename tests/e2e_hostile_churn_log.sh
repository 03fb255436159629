#!/bin/bash
# tests/e2e_hostile_churn_log.sh - a client churning short sessions (some
# ten thousand a second) costs xtcd an attach and an end line each: it
# must not flood the log.  Per uid, at most log_rate_burst lines each
# log_rate_interval_ms, then one line saying how many were suppressed;
# every line is either printed or counted.  A well-behaved app of another
# uid attaching meanwhile still has its attach line (run as root, the
# churner is uid 65534; else both are this uid and only the bound and the
# count are checked).
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
AS=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	chmod 755 "$T" # nobody must reach the socket
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
churner=$( [ -n "$AS" ] && echo 65534 || id -u )
BURST=40

start_xtcd --log-rate-burst $BURST --log-rate-interval-ms 1000 --max-bytes 256M
t0=$(date +%s%N)
$AS "$BADCLIENT" "$SOCK" churn 20000 >"$T/churn.out" 2>&1 &
churn=$!
sleep 0.5
[ -n "$AS" ] && { XTC_TAIL_RING_RECORDS=1024 "$LOADGEN" 1 1000 0 0 >"$T/lg.out" 2>&1 || fail "xtc-loadgen exited $?"; }
wait "$churn" || fail "xtc-badclient churn: $(cat "$T/churn.out")"
t1=$(date +%s%N)
sleep 1.5 # the last interval ends, and its count is said
stop_xtcd
echo "  xtc-badclient: $(cat "$T/churn.out")"
sessions=$(sed -n 's/^\([0-9]*\) of .*accepted.*/\1/p' "$T/churn.out")
secs=$(( (t1 - t0) / 1000000000 + 1 ))
mine=$(grep -c "uid $churner attached\|xtc-badclient) ended" "$T/xtcd.log")
said=$(sed -n "s/^xtcd: uid $churner: \([0-9]*\) more session and refusal lines suppressed.*/\1/p" "$T/xtcd.log" |
	awk '{ n += $1 } END { print n + 0 }')
total=$(wc -l <"$T/xtcd.log")
echo "  $sessions sessions in ~$secs s: $total log lines; uid $churner: $mine printed, $said suppressed and counted"
[ $(( mine + said )) -eq $(( 2 * sessions )) ] ||
	fail "printed $mine + suppressed $said lines, but $sessions sessions make $((2 * sessions))"
# per interval (1 s) at most BURST lines and one summary, and the edges
[ "$mine" -le $(( (secs + 2) * BURST )) ] || fail "$mine lines of uid $churner in $secs s"
[ "$total" -le $(( (secs + 2) * (BURST + 1) + 20 )) ] || fail "$total log lines in $secs s"
grep -q "^xtcd: uid $churner: [0-9]* more session and refusal lines suppressed in the last" "$T/xtcd.log" ||
	fail "no line says what was suppressed"
if [ -n "$AS" ]; then
	grep -q '(xtc-loadgen) uid 0 attached' "$T/xtcd.log" || fail "the other uid's attach line was suppressed"
	grep -q 'xtc-loadgen) ended: detached' "$T/xtcd.log" || fail "the other uid's end line was suppressed"
fi
echo "PASS"
