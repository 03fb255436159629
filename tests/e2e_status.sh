#!/bin/bash
# xtcd --status against a daemon with two attached apps (paced, then
# holding their sessions open): both listed with their loops, plausible
# rates and counts, in text and in JSON that parses; the totals add up
# once they detach; a non-root asker sees only its own uid's sessions; no
# daemon: exit 1 and one line.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

start_xtcd
# A: 2 loops x 200000 at 50000/s each; B: 3 loops x 100000 at 25000/s:
# 4 s of events, then the sessions stay open 1 s more.
"$LOADGEN" 2 200000 50000 1000 >"$T/a.out" &
a=$!
"$LOADGEN" 3 100000 25000 1000 >"$T/b.out" &
b=$!
for _ in $(seq 1 250); do
	[ "$(grep -c ' attached: ' "$T/xtcd.log")" -eq 2 ] && break
	sleep 0.02
done
sleep 1.2 # a once-a-second sample of each
"$XTCD" --status --socket "$SOCK" >"$T/status.txt" || fail "--status exited $?"
"$XTCD" --status --socket "$SOCK" --json >"$T/status.json" || fail "--status --json exited $?"
# Another uid sees only its own sessions (asked now, while both live).
asked_as_nobody=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$T"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$XTCD" --status --socket "$SOCK" >"$T/nobody.txt" ||
		fail "--status as nobody exited $?"
	asked_as_nobody=yes
fi
cat "$T/status.txt"
[ "$(grep -c ' xtc-loadgen ' "$T/status.txt")" -eq 2 ] || fail "the text does not list both apps"
grep -q "^xtcd .*, pid $XTCD_PID, up " "$T/status.txt" || fail "no daemon line"
grep -q '^ *ID *PID COMM .*EV/S .*DROPPED .*BYTES  LOOP:FILL$' "$T/status.txt" || fail "no column header"
python3 - "$T/status.json" "$a" "$b" <<'PY' || fail "--status --json"
import json, sys
d = json.load(open(sys.argv[1]))
apps = {int(sys.argv[2]): (2, 50000), int(sys.argv[3]): (3, 25000)}
def check(ok, what):
    if not ok:
        print("FAIL: %s: %s" % (what, json.dumps(d)))
        sys.exit(1)
check(d["sessions_live"] == 2 and len(d["sessions"]) == 2, "two live sessions")
check(d["segments"] >= 1 and 0 < d["bytes_used"] <= d["max_bytes"], "segments and bytes")
check(d["io"] in ("pwrite", "io_uring", "io_uring (registered buffers)"), "io backend")
check(d["uptime_ns"] > 10**9, "daemon uptime")
check(d["events_per_s"] > 0 and d["produced"] > 0, "daemon rate and count")
for s in d["sessions"]:
    loops, rate = apps[s["pid"]]
    check(s["comm"] == "xtc-loadgen" and s["uid"] == 0, "who")
    check(s["loops_bound"] == loops and len(s["rings"]) == loops, "pid %d: %d loops" % (s["pid"], loops))
    check(sorted(r["loop_id"] for r in s["rings"]) == list(range(loops)), "loop ids")
    check(all(0 <= r["fill"] <= 1 and not r["corrupt"] for r in s["rings"]), "ring fill")
    check(0 < s["events_per_s"] <= 1.5 * loops * rate, "pid %d: events/s %d for %d/s" % (s["pid"], s["events_per_s"], loops * rate))
    check(0 < s["written"] <= s["produced"] <= loops * 200000, "counts")
    check(s["dropped"] == 0 and s["lost"] == 0, "no loss")
    check(s["bytes"] > 0 and 0.5e9 < s["uptime_ns"] < 60e9, "bytes and uptime")
    print("ok: pid %d: %d loops, %d events/s, %d produced, %d written, %d bytes, fill %s" % (
        s["pid"], loops, s["events_per_s"], s["produced"], s["written"], s["bytes"],
        [r["fill"] for r in s["rings"]]))
PY

if [ -n "$asked_as_nobody" ]; then
	grep -q "sessions  2 live, 0 of uid 65534 shown" "$T/nobody.txt" || fail "nobody: $(cat "$T/nobody.txt")"
	grep -q 'xtc-loadgen' "$T/nobody.txt" && fail "nobody sees root's sessions"
	echo "ok: uid 65534 sees none of root's sessions"
else
	echo "note: not root: the per-uid view was not checked"
fi
wait $a || fail "app A failed"
wait $b || fail "app B failed"
for _ in $(seq 1 250); do
	[ "$(grep -c 'ended: detached' "$T/xtcd.log")" -eq 2 ] && break
	sleep 0.02
done
"$XTCD" --status --socket "$SOCK" --json >"$T/after.json" || fail "--status after the apps"
grep -q '"sessions_live":0,.*"produced":700000,"written":700000,"dropped":0,"lost":0,.*"sessions":\[\]}$' "$T/after.json" ||
	fail "the totals do not add up after both detached: $(cat "$T/after.json")"
echo "ok: after both detached: 700000 produced, 700000 written, 0 dropped, 0 lost"
"$XTCD" --status --socket "$SOCK" --session 1 >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q -- '--session does not apply to --status' "$T/err" || fail "a filter with --status: $(cat "$T/err")"
stop_xtcd

"$XTCD" --status --socket "$SOCK" >"$T/none.out" 2>"$T/none.err"
rc=$?
[ $rc -eq 1 ] || fail "--status with no daemon exited $rc"
[ "$(wc -l <"$T/none.err")" -eq 1 ] && [ ! -s "$T/none.out" ] || fail "not one line: $(cat "$T/none.err")"
grep -q "^xtcd: --status: no xtcd answers at $SOCK: " "$T/none.err" || fail "$(cat "$T/none.err")"
echo "ok: $(cat "$T/none.err")"
