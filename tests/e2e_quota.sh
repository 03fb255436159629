#!/bin/bash
# The per-uid quota (xtcd.conf(5)): a uid at its quota gets its new events
# dropped as DROP cause quota, counted exactly, while another uid's
# session (run as nobody) is untouched and complete; segments deleted
# under the budget give a uid its bytes back, and it writes again.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

chmod 755 "$T" # nobody must reach the socket
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
else
	NOBODY=
	echo "note: cannot run as nobody (not root, or no setpriv): the other-uid half is skipped"
fi

# --- root over a 1M quota, nobody with room
cat >"$T/xtcd.conf" <<EOF
quota = 1M
quota.65534 = 64M
EOF
start_xtcd --config "$T/xtcd.conf"
"$LOADGEN" 2 300000 150000 800 >"$T/root.out" &
root=$!
if [ -n "$NOBODY" ]; then
	$NOBODY env XTC_TAIL_SHM="$SOCK" "$LOADGEN" 2 100000 50000 800 >"$T/nobody.out" &
	nob=$!
fi
wait_log "uid 0 holds [0-9]* bytes of events, its quota is 1M: its new events are dropped (cause quota)"
sleep 0.3
"$XTCD" --status --socket "$SOCK" >"$T/status.txt" || fail "--status failed"
grep -q ' 0 .*\[over quota: [0-9]* dropped\]$' "$T/status.txt" || fail "--status does not flag the session over quota: $(cat "$T/status.txt")"
"$XTCD" --status --socket "$SOCK" --json >"$T/status.json"
used=$(grep -o '"uid_bytes":[0-9]*' "$T/status.json" | cut -d: -f2)
# The check is per block: at most one block (2048 records) per ring past it.
[ "$used" -ge 1048576 ] && [ "$used" -le $((1048576 + 2 * 40 * 1024)) ] ||
	fail "uid 0 holds $used bytes of events with a 1M quota"
wait $root || fail "root's app failed"
[ -z "$NOBODY" ] || wait $nob || fail "nobody's app failed"
for _ in $(seq 1 250); do
	[ "$(grep -c 'ended: ' "$T/xtcd.log")" -ge $([ -n "$NOBODY" ] && echo 2 || echo 1) ] && break
	sleep 0.02
done
stop_xtcd
cat_json
python3 - "$T/all.json" "${NOBODY:+yes}" <<'PY' || fail "the record"
import json, sys
from collections import defaultdict
recs = [json.loads(l) for l in open(sys.argv[1])]
start = {r["session"]: r for r in recs if r["type"] == "session_start"}
end = {r["session"]: r for r in recs if r["type"] == "session_end"}
def fail(m):
    print("FAIL: " + m); sys.exit(1)
for sid, st in start.items():
    e = end.get(sid) or fail("session %d has no end" % sid)
    ev = defaultdict(list)
    drops = defaultdict(int)
    for r in recs:
        if r.get("session") != sid: continue
        if r["type"] == "event": ev[r["loop_id"]].append(r["detail"])
        if r["type"] == "drop": drops[r["loop_id"]] += r["count"]
    causes = {r["cause"] for r in recs if r["type"] == "drop" and r["session"] == sid}
    if e["produced"] != e["written"] + e["dropped"] + e["lost"]:
        fail("session %d does not reconcile: %s" % (sid, e))
    per_loop = 300000 if st["uid"] == 0 else 100000
    for loop in (0, 1):
        d = ev[loop]
        if d != sorted(d) or len(set(d)) != len(d):
            fail("session %d loop %d: events out of order or repeated" % (sid, loop))
        if len(d) + drops[loop] != per_loop:
            fail("session %d loop %d: %d written + %d dropped != %d" % (sid, loop, len(d), drops[loop], per_loop))
    if st["uid"] == 0:
        if e["dropped"] == 0 or causes != {"quota"} or e["complete"]:
            fail("root's session: dropped %d, causes %s, complete %s" % (e["dropped"], causes, e["complete"]))
        print("ok: uid 0 (quota 1M): %d written, %d dropped, all cause quota; loops complete in order up to the quota" % (e["written"], e["dropped"]))
    else:
        if not e["complete"] or e["written"] != 200000 or causes:
            fail("nobody's session was touched: %s, drops %s" % (e, causes))
        print("ok: uid %d (quota 64M): complete, %d written, untouched" % (st["uid"], e["written"]))
if sys.argv[2] == "yes" and len(start) != 2:
    fail("expected two sessions, found %d" % len(start))
PY
"$XTCD" --cat "$DIR" | grep -q 'DROP count=[0-9]* ring=[0-9]* cause=quota' || fail "--cat does not name the cause quota"

# --- deleting old segments gives the bytes back
[ -n "$NOBODY" ] || exit 0
rm -f "$DIR"/*
: >"$T/xtcd.log"
printf 'quota.0 = 300K\nquota = none\n' >"$T/xtcd.conf"
start_xtcd --config "$T/xtcd.conf" --segment-bytes 128K --max-bytes 1M --drain-ms 10
"$LOADGEN" 1 200000 16000 >"$T/root.out" & # up to 12 s: stopped below
root=$!
wait_log "uid 0 holds"
# About 1.2M of nobody's events: the oldest segments, root's, must go.
$NOBODY env XTC_TAIL_SHM="$SOCK" "$LOADGEN" 1 150000 0 >"$T/nobody.out" || fail "nobody's burst failed"
wait_log "uid 0 is under its quota again"
written() {
	"$XTCD" --status --socket "$SOCK" --json | grep -o '"uid":0,"gid":0,"comm":"xtc-loadgen","uptime_ns":[0-9]*,"events_per_s":[0-9]*,"produced":[0-9]*,"written":[0-9]*' |
		sed 's/.*"written"://'
}
w1=$(written)
sleep 0.5
w2=$(written)
[ -n "$w1" ] && [ -n "$w2" ] && [ "$w2" -gt "$w1" ] || fail "uid 0 did not write again once under its quota ($w1, then $w2 written)"
kill $root
wait $root
wait_log "session [0-9]* (pid $root, xtc-loadgen) ended"
stop_xtcd
grep -q 'deleted .* to stay within the budget' "$T/xtcd.log" || fail "nothing was deleted under the budget"
echo "ok: deleting old segments gave uid 0 its bytes back: it wrote again ($w1, then $w2 written)"
grep -m1 'under its quota again' "$T/xtcd.log"
