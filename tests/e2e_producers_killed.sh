#!/bin/bash
# kill -9 of several producers at random points, some mid-burst, one
# before it could attach, while others keep running: every session ends
# producer_died (or detached for the survivors), loses nothing xtcd could
# read (lost 0), and reconciles: produced == written + dropped, with the
# records and DROP counts on disk adding up, each loop's details in order.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

seed=${XTC_TEST_SEED:-$$}
RANDOM=$seed
echo "seed $seed (XTC_TEST_SEED=$seed reruns these kill points)"
start_xtcd --drain-ms 50

pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null; cleanup' EXIT
# flat out into small rings: drops, killed mid-burst
XTC_TAIL_RING_RECORDS=1024 "$LOADGEN" 1 100000000 0 >/dev/null 2>&1 &
pids+=($!)
# small rings, drained every 50 ms
for i in 2 3; do
	XTC_TAIL_RING_RECORDS=4096 "$LOADGEN" "$i" 100000000 120000 >/dev/null 2>&1 &
	pids+=($!)
done
# rate-limited, big rings: nothing dropped, killed with records unread
for i in 1 2; do
	XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 100000000 50000 >/dev/null 2>&1 &
	pids+=($!)
done
# a survivor that detaches cleanly while the others die
"$LOADGEN" 2 50000 50000 >"$T/survivor.out" 2>&1 &
survivor=$!
# each attached before its kill (on a loaded machine one may take a while,
# and one killed before it attached would have no session to end)
for p in "${pids[@]}"; do
	wait_log "pid $p (xtc-loadgen) uid [0-9]* attached" 20
done
for p in "${pids[@]}"; do
	sleep "0.$((RANDOM % 4 + 1))"
	kill -9 "$p"
done
# one killed right after it starts: before or while it attaches
XTC_TAIL_RING_RECORDS=4096 "$LOADGEN" 1 100000000 0 >/dev/null 2>&1 &
kill -9 $!
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
wait "$survivor" || fail "the surviving xtc-loadgen exited $?"
for _ in $(seq 1 250); do
	[ "$(grep -c "ended: producer died" "$T/xtcd.log")" -ge ${#pids[@]} ] &&
		grep -q "ended: detached" "$T/xtcd.log" && break
	sleep 0.02
done
kill -0 "$XTCD_PID" 2>/dev/null || fail "xtcd died"
stop_xtcd
cat_json
python3 - "$top_srcdir/tests" "$T/all.json" "${#pids[@]}" <<'EOF' || fail "producers killed"
import sys
sys.path.insert(0, sys.argv[1])
import e2e_check as c

ss = c.sessions(c.load(sys.argv[2]))
died = [s for s in ss.values() if s["end"] and s["end"]["reason"] == "producer_died"]
for sid, s in ss.items():
    c.reconcile(s, sid)
    c.increasing(s, sid)
    e = s["end"]
    if e["reason"] not in ("producer_died", "detached") or e["lost"] != 0:
        c.fail("session %s: %r" % (sid, e))
    if e["reason"] == "detached" and not e["complete"]:
        c.fail("the survivor's session %s is not complete: %r" % (sid, e))
if len(died) < int(sys.argv[3]):
    c.fail("%d sessions ended producer_died, expected at least %s" % (len(died), sys.argv[3]))
print("ok: %d sessions (%d killed) reconcile: %s" % (len(ss), len(died), ", ".join(
    "%d=%d+%d" % (s["end"]["produced"], s["end"]["written"], s["end"]["dropped"])
    for s in ss.values())))
EOF
echo PASS
