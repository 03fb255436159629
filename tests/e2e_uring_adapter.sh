#!/bin/bash
# libxtctail-uring on a liburing program of our own (tests/uringapp.c),
# preloaded, attached to a real xtcd: the program's calls return what they
# return without the adapter, and the record has a SUBMIT with the right
# tag for every SQE the kernel took, a REAP for every completion, one
# SUBMIT_FAIL (EOPNOTSUPP) for the refused submit and none else, a wait
# that blocked about 300 ms, three rings as three loops (one of them
# SQE128|CQE32), and --report names the one tag submitted and never seen.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

URAPP=${URAPP:-$top_builddir/tests/xtc-uringapp}
URLIB=${URLIB:-$top_builddir/lib/uring/.libs/libxtctail-uring.so}
[ -x "$URAPP" ] || { echo "SKIP: $URAPP is not built"; exit 77; }
[ -f "$URLIB" ] || { echo "SKIP: $URLIB is not built"; exit 77; }

XTC_TAIL_SHM= "$URAPP" >"$T/plain.out" 2>"$T/plain.err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'io_uring_queue_init' "$T/plain.err"; then
	echo "SKIP: io_uring is not available here: $(cat "$T/plain.err")"
	exit 77
fi
[ $rc -eq 0 ] || fail "xtc-uringapp alone exited $rc: $(cat "$T/plain.err")"
start_xtcd --drain-ms 10
LD_PRELOAD=$(adapter_preload "$URLIB") "$URAPP" >"$T/ur.out" 2>"$T/ur.err" ||
	fail "xtc-uringapp under the adapter exited $?: $(cat "$T/ur.err")"
diff <(grep '^app ' "$T/plain.out") <(grep '^app ' "$T/ur.out") >"$T/diff" ||
	fail "the program's calls did not return as without the adapter: $(cat "$T/diff")"
wait_log "ended: detached"
stop_xtcd
cat_json
python3 - "$T/all.json" "$top_srcdir/tests" <<'PY' || fail "uring adapter record"
import sys
from collections import defaultdict
sys.path.insert(0, sys.argv[2])
from e2e_check import load, sessions, reconcile

recs = list(load(sys.argv[1]))
ss = sessions(recs)
bad = []
if len(ss) != 1:
    bad.append("want one session, have %d" % len(ss))
for sid, s in ss.items():
    reconcile(s, sid)
    if s["end"]["reason"] != "detached" or s["end"]["dropped"]:
        bad.append("session %s did not end clean: %r" % (sid, s["end"]))
ev = [r for r in recs if r["type"] == "event"]
sub, reap, fails = defaultdict(list), defaultdict(list), []
for r in ev:
    if r["kind"] == "SUBMIT":
        sub[r["loop_id"]].append(r["detail"])
    elif r["kind"] == "REAP":
        reap[r["loop_id"]].append(r["detail"])
    elif r["kind"] == "SUBMIT_FAIL":
        fails.append(r)
a = [0xA000 + i for i in range(8)] + [0xA100, 0xA101, 0xA200, 0xA300]
want_sub = {"A": a, "B": [0xB000 + i for i in range(4)], "C": [0xC000 + i for i in range(3)]}
loops = {}
for l, tags in sub.items():
    for name, w in want_sub.items():
        if tags and tags[0] == w[0]:
            loops[name] = l
if sorted(loops) != ["A", "B", "C"] or len(set(loops.values())) != 3:
    bad.append("want three rings as three loops, have %r" % dict(sub))
else:
    for name, w in want_sub.items():
        if sub[loops[name]] != w:
            bad.append("ring %s: SUBMIT tags %r, want %r" % (name, [hex(x) for x in sub[loops[name]]], [hex(x) for x in w]))
        want_reap = [t for t in w if t != 0xA300]
        if sorted(reap[loops[name]]) != sorted(want_reap):
            bad.append("ring %s: REAP tags %r, want %r" % (name, [hex(x) for x in reap[loops[name]]], [hex(x) for x in want_reap]))
    if len(fails) != 1 or fails[0]["detail"] != 95 or fails[0]["loop_id"] != loops["A"]:
        bad.append("want one SUBMIT_FAIL EOPNOTSUPP (95) on ring A, have %r" % fails)
    else:
        # the refused SQEs reach the kernel on the next submit, after the failure
        t_fail = fails[0]["ts_ns"]
        later = [r for r in ev if r["kind"] == "SUBMIT" and r["detail"] in (0xA100, 0xA101)]
        if len(later) != 2 or any(r["ts_ns"] < t_fail for r in later):
            bad.append("the refused SQEs were not SUBMITted after the SUBMIT_FAIL")
    wakes = [r["detail"] for r in ev if r["kind"] == "LOOP_WAKE" and r["loop_id"] == loops["A"]]
    if not any(250_000_000 <= w < 5_000_000_000 for w in wakes):
        bad.append("want a wait of about 300 ms on ring A, have %r" % wakes)
    etime = [r for r in ev if r["kind"] == "REAP" and r["detail"] == 0xA200]
    if len(etime) != 1 or etime[0]["local_id"] != (2**32 - 62):
        bad.append("want the timeout's REAP with res -ETIME in local_id, have %r" % etime)
for m in bad:
    print("FAIL: " + m)
sys.exit(1 if bad else 0)
PY
"$XTCD" --report "$DIR" >"$T/report.txt" 2>&1 || fail "--report exited $?: $(tail -3 "$T/report.txt")"
grep -q 'submitted and never seen 1 .*0xa300' "$T/report.txt" ||
	fail "--report does not name the tag never seen: $(grep -A4 'liburing rings' "$T/report.txt")"
echo "ok: liburing program recorded through libxtctail-uring"
