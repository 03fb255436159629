#!/bin/bash
# libxtctail-ev on a libev program of our own with known behaviour
# (tests/evapp.c), preloaded, attached to a real xtcd: the program's own
# callbacks do exactly what they do without the adapter, and the record
# says what the program did: a 40 ms callback, a timer restarted 5 times
# from its own callback, ev_set_cb, a nested ev_run of another loop, the
# program's own invoke-pending and release/acquire hooks (one LOOP_WAIT
# per call of its release hook), two loops on two threads, a loop idle in
# its wait for 600 ms, and a forked child recorded as its own session.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

EVAPP=${EVAPP:-$top_builddir/tests/xtc-evapp}
EVLIB=${EVLIB:-$top_builddir/lib/ev/.libs/libxtctail-ev.so}
[ -x "$EVAPP" ] || { echo "SKIP: $EVAPP is not built"; exit 77; }
[ -f "$EVLIB" ] || { echo "SKIP: $EVLIB is not built"; exit 77; }

XTC_TAIL_SHM= "$EVAPP" >"$T/plain.out" 2>"$T/plain.err" || fail "xtc-evapp alone exited $?: $(cat "$T/plain.err")"
start_xtcd --drain-ms 10
LD_PRELOAD=$(adapter_preload "$EVLIB") "$EVAPP" >"$T/ev.out" 2>"$T/ev.err" ||
	fail "xtc-evapp under the adapter exited $?: $(cat "$T/ev.err")"
diff <(grep '^app ' "$T/plain.out") <(grep '^app ' "$T/ev.out") >"$T/diff" ||
	fail "the program's callbacks did not run as without the adapter: $(cat "$T/diff")"
# Watcher start/stop records are off by default; this run turns them on.
XTC_TAIL_EV_WATCHERS=1 LD_PRELOAD=$(adapter_preload "$EVLIB") "$EVAPP" >"$T/watch.out" 2>"$T/watch.err" ||
	fail "xtc-evapp with XTC_TAIL_EV_WATCHERS=1 exited $?: $(cat "$T/watch.err")"
for _ in $(seq 1 250); do
	[ "$(grep -c "ended: detached" "$T/xtcd.log")" -ge 4 ] && break
	sleep 0.02
done
stop_xtcd
cat_json
python3 - "$T/all.json" "$T/ev.out" "$top_srcdir/tests" "$T/watch.out" <<'EOF' || fail "ev adapter record"
import sys
from collections import defaultdict
sys.path.insert(0, sys.argv[3])
from e2e_check import load, sessions, reconcile

TIMER, ASYNC = 2, 13
recs = list(load(sys.argv[1]))
seen = {}
for line in open(sys.argv[2]):
    w = line.split()
    if w[:1] == ["seen"]:
        seen[w[1]] = w[2:]
fns = dict(zip(seen["fn"][0::2], (int(x, 16) for x in seen["fn"][1::2])))
child_pid = int(seen["child"][1])
releases = int(seen["hooks"][1])

watch_pid = watch_child = None
for line in open(sys.argv[4]):
    w = line.split()
    if w[:2] == ["seen", "pid"]:
        watch_pid = int(w[2])
    elif w[:2] == ["seen", "child"]:
        watch_child = int(w[3])
ss = sessions(recs)
by_pid = {s["start"]["pid"]: sid for sid, s in ss.items() if s["start"]}
bad = []
if child_pid not in by_pid or len(ss) != 4 or watch_pid not in by_pid:
    bad.append("want 4 sessions (two runs, each with a forked child), have %r" % sorted(by_pid))
kinds_of = defaultdict(lambda: defaultdict(int))
for r in recs:
    if r["type"] == "event":
        kinds_of[r["session"]][r["kind"]] += 1
for pid in (int(seen["pid"][0]), child_pid):
    k = kinds_of[by_pid.get(pid)]
    if k["WATCH_START"] or k["WATCH_STOP"]:
        bad.append("watcher records in a default run (pid %d): %r" % (pid, dict(k)))
k = kinds_of[by_pid.get(watch_pid)]
if k["WATCH_START"] < 15 or k["WATCH_STOP"] < 5:
    bad.append("XTC_TAIL_EV_WATCHERS=1: want >= 15 WATCH_START and >= 5 WATCH_STOP, have %r" % dict(k))
ss = {sid: s for sid, s in ss.items() if s["start"]["pid"] not in (watch_pid, watch_child)}
recs = [r for r in recs if r.get("session") in ss]
for sid, s in sessions(recs).items():
    reconcile(s, sid)
    if s["end"]["reason"] != "detached" or s["end"]["dropped"] or s["end"]["lost"]:
        bad.append("session %s did not end clean: %r" % (sid, s["end"]))

def ev(sid):
    return [r for r in recs if r["type"] == "event" and r["session"] == sid]

def cbs(events):
    """cb number -> function address, from CB_FUNC."""
    return {r["local_id"]: r["detail"] for r in events if r["kind"] == "CB_FUNC"}

def runs(events, fn):
    """(loop, begin, end) of each run of callback fn."""
    m = cbs(events)
    out, open_ = [], {}
    for r in events:
        if r["kind"] not in ("CB_BEGIN", "CB_END"):
            continue
        no = (r["gen"] >> 44) & 0xFFF
        if m.get(no) != fn:
            continue
        key = (r["loop_id"], r["gen"])
        if r["kind"] == "CB_BEGIN":
            open_[key] = r
        else:
            b = open_.pop(key)
            out.append((r["loop_id"], b, r))
    return out


parent = ev(by_pid[int(seen["pid"][0])])

slow = runs(parent, fns["slow"])
if len(slow) != 1 or slow[0][2]["detail"] < 35_000_000 or (slow[0][1]["gen"] >> 56) != TIMER:
    bad.append("slow: want one timer callback of >= 35 ms, have %r" % [(l, e["detail"]) for l, b, e in slow])
again = runs(parent, fns["again"])
if len(again) != 5:
    bad.append("again: want 5 runs of the restarted timer, have %d" % len(again))
a, b = runs(parent, fns["cb_a"]), runs(parent, fns["cb_b"])
if len(a) != 2 or len(b) != 3:
    bad.append("setcb: want cb_a twice and cb_b 3 times (after its restart), have %d, %d" % (len(a), len(b)))
nested, inner = runs(parent, fns["nested"]), runs(parent, fns["inner"])
if len(nested) != 1 or len(inner) != 3:
    bad.append("nested: want 1 outer and 3 inner runs, have %d, %d" % (len(nested), len(inner)))
else:
    ol, ob, oe = nested[0]
    if any(l == ol or not (ob["ts_ns"] <= b_["ts_ns"] <= e["ts_ns"] <= oe["ts_ns"]) for l, b_, e in inner):
        bad.append("nested: the inner loop's callbacks are not on their own loop inside the outer one")
    if not any(r["loop_id"] == ol and r["kind"] == "LOOP_WAIT" and r["ts_ns"] > oe["ts_ns"] for r in parent):
        bad.append("nested: the outer loop was not recorded after the nested run")
hook = runs(parent, fns["hook"])
hook_loops = {l for l, _, _ in hook}
if len(hook) != 10 or len(hook_loops) != 1:
    bad.append("hooks: want 10 runs on one loop, have %d on %r" % (len(hook), hook_loops))
else:
    waits = sum(1 for r in parent if r["kind"] == "LOOP_WAIT" and r["loop_id"] in hook_loops)
    if waits != releases:
        bad.append("hooks: the program's release hook ran %d times but %d LOOP_WAIT" % (releases, waits))
worker = runs(parent, fns["worker"])
per_loop = defaultdict(int)
for l, _, _ in worker:
    per_loop[l] += 1
if sorted(per_loop.values()) != [20, 20]:
    bad.append("threads: want 20 runs on each of two loops, have %r" % dict(per_loop))
other = runs(parent, fns["other"])
if len(other) != 10 or len({l for l, _, _ in other}) != 1 or any(b["detail"] == 0 for _, b, _ in other):
    bad.append("other: want 10 runs on one loop, each inside a dispatch (head-of-line delay > 0), have %r"
               % [(l, b["detail"]) for l, b, _ in other])
idle = runs(parent, fns["idle"])
if len(idle) != 1 or (idle[0][1]["gen"] >> 56) != ASYNC:
    bad.append("idle: want one async callback, have %d" % len(idle))
else:
    il = idle[0][0]
    wakes = [r["detail"] for r in parent if r["loop_id"] == il and r["kind"] == "LOOP_WAKE"]
    if not wakes or max(wakes) < 400_000_000:
        bad.append("idle: want a wait of >= 400 ms on loop %d, have %r" % (il, wakes))
loops = {r["loop_id"] for r in parent if r["kind"] == "LOOP_WAIT"}
if len(loops) < 7:
    bad.append("want >= 7 loops with LOOP_WAIT in the parent, have %r" % sorted(loops))
if child_pid in by_pid:
    child = ev(by_pid[child_pid])
    cr = runs(child, fns["child"])
    if len(cr) != 4:
        bad.append("fork: want 4 child timer runs in the child's session, have %d" % len(cr))
    if runs(child, fns["slow"]):
        bad.append("fork: the child's session holds the parent's records")
for m in bad:
    print("FAIL: " + m)
if bad:
    sys.exit(1)
print("ok: %d sessions, %d loops, slow %.1f ms, idle wait %.0f ms" %
      (len(ss), len(loops), slow[0][2]["detail"] / 1e6, max(wakes) / 1e6))
EOF
"$XTCD" --cat "$DIR" >"$T/cat.txt" 2>&1 || fail "--cat exited $?"
# Every export names the adapter kinds: dial9 schemas, CTF event classes.
"$XTCD" --export dial9 "$DIR" >"$T/trace.d9" 2>/dev/null || fail "--export dial9 exited $?"
grep -q XtcCallbackBeginEvent "$T/trace.d9" || fail "the dial9 export does not name CB_BEGIN"
if command -v babeltrace2 >/dev/null 2>&1; then
	"$XTCD" --export ctf "$DIR" "$T/ctf" 2>/dev/null || fail "--export ctf exited $?"
	babeltrace2 "$T/ctf" >"$T/bt.txt" 2>&1 || fail "babeltrace2 failed: $(tail -3 "$T/bt.txt")"
	grep -q '^\[.*\] (.*) CB_BEGIN: ' "$T/bt.txt" && ! grep -q ' OTHER: ' "$T/bt.txt" ||
		fail "the CTF export does not name the adapter kinds: $(grep -m2 -e CB_ -e OTHER "$T/bt.txt")"
fi
# A program with its own static copy of libev bypasses the adapter: it runs
# as without it, and XTC_DEBUG says, in one line, that nothing went through.
if [ -x "$EVAPP-static" ]; then
	XTC_TAIL_SHM= XTC_DEBUG=1 LD_PRELOAD=$(adapter_preload "$EVLIB") "$EVAPP-static" \
		>"$T/static.out" 2>"$T/static.err" || fail "xtc-evapp-static exited $?: $(cat "$T/static.err")"
	diff <(grep '^app ' "$T/plain.out") <(grep '^app ' "$T/static.out") >"$T/diff" ||
		fail "the static program did not run as without the adapter: $(cat "$T/diff")"
	[ "$(grep -c 'libxtctail-ev: no ' "$T/static.err")" -eq 1 ] ||
		fail "the bypass was not reported in one line: $(cat "$T/static.err")"
fi
grep -q 'KIND_' "$T/cat.txt" && fail "--cat printed a kind by number: $(grep -m1 KIND_ "$T/cat.txt")"
grep -q 'CB_BEGIN .* 0\.timer\.cb' "$T/cat.txt" || fail "--cat does not name the watcher of a CB_BEGIN: $(grep -m1 CB_BEGIN "$T/cat.txt")"
echo "ok: libev program recorded through libxtctail-ev"
