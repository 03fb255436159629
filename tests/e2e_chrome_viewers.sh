#!/bin/bash
# xtcd --export chrome as real viewers read it, on a record of the demo's
# realistic mix (3 loops), a run with a chain that never completes
# (xtc-anomaly no-reap) and an overloaded session with drops:
#  - parsed as a viewer parses it (JSON numbers as IEEE doubles, a slice
#    ending at ts + dur): on every track every slice ends at or before the
#    next begins and children lie inside parents (viewers/chrome_nesting.py);
#  - loaded into the DevTools performance panel's trace engine (npm
#    @paulirish/trace_engine, installed into the build tree): every slice
#    is a top-level entry of its loop's thread, every wakeup chain is a
#    resolved flow PARK_TASK -> SUBMIT -> REAP -> WAKE -> RUN of the parked
#    proc, with the ids of the file;
#  - the chain the report finds never completed carries the report's
#    verdict in the args of its PARK_TASK and PARK.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
. "${top_srcdir:-.}/tests/viewers/npm.sh"
DEMO=${DEMO:-$top_builddir/examples/xtc-demo}
ANOMALY=${ANOMALY:-$top_builddir/tests/xtc-anomaly}
V=${top_srcdir:-.}/tests/viewers

viewers_npm @paulirish/trace_engine@0.0.65
start_xtcd --drain-ms 20
"$DEMO" --loops 3 --events 3000 >/dev/null || fail "xtc-demo failed"
"$ANOMALY" no-reap >/dev/null || fail "xtc-anomaly no-reap failed"
# the smallest ring (64 records), so that the drain cannot keep pace even
# on a quiet machine with the drain boosted: the fixture needs its drops
XTC_TAIL_RING_RECORDS=64 "$LOADGEN" 2 100000 >/dev/null || fail "loadgen (overload) failed"
for _ in $(seq 1 500); do
	[ "$(grep -c 'ended: detached' "$T/xtcd.log")" -ge 3 ] && break
	sleep 0.02
done
stop_xtcd
cat_json
"$XTCD" --export chrome "$DIR" >"$T/trace.json" 2>"$T/chrome.err" || fail "--export chrome exited $?"
[ "$(wc -l <"$T/chrome.err")" = 1 ] && grep -q "flows" "$T/chrome.err" ||
	fail "--export chrome should say in one line what it wrote: $(cat "$T/chrome.err")"
echo "ok: $(cat "$T/chrome.err")"
python3 "$V/chrome_nesting.py" "$T/trace.json" || fail "slices mis-nest in double arithmetic"
"$XTCD" --report "$DIR" --json >"$T/report.json" || fail "--report exited $?"
node "$V/chrome_engine.mjs" "$NODE_MODULES" "$T/trace.json" >"$T/engine.json" 2>"$T/engine.err" ||
	fail "the DevTools trace engine failed: $(tail -n 5 "$T/engine.err")"

python3 - "$T" <<'PY' || fail "the DevTools trace engine's reading"
import json, sys
from collections import Counter, defaultdict

T = sys.argv[1]
def fail(msg):
    sys.exit("FAIL: " + msg)
ev = json.load(open(T + "/trace.json"))["traceEvents"]
eng = json.load(open(T + "/engine.json"))
err = open(T + "/engine.err").read()
if "mismatch" in err:
    fail("the engine complained: " + err[:300])

# every slice is a top-level entry of its thread
xs = Counter((e["pid"], e["tid"]) for e in ev if e["ph"] == "X")
for th in eng["threads"]:
    k = (th["pid"], th["tid"])
    if th["entries"] != xs.get(k, 0) or th["roots"] != th["entries"]:
        fail("thread %r: %d slices in the file, the engine has %d entries, %d top level"
             % (k, xs.get(k, 0), th["entries"], th["roots"]))
if sum(th["roots"] for th in eng["threads"]) != sum(xs.values()):
    fail("the engine lost threads: %r" % eng["threads"])

# flows: ids matched, each bound to its records, in chain order
steps = defaultdict(list)
for e in ev:
    if e["ph"] in "stf":
        if e.get("cat") != "task" or e.get("name") != "wakeup":
            fail("flow event: %r" % e)
        steps[e["id"]].append(e)
starts = [i for i, s in steps.items() if s[0]["ph"] == "s"]
if sorted(starts) != sorted(steps) or any(sum(x["ph"] == "s" for x in s) != 1 for s in steps.values()):
    fail("a flow id has no start, or two")
want = {(s[0]["ts"], s[0]["pid"], s[0]["tid"]): len(s) for s in steps.values() if len(s) > 1}
cat = [json.loads(l) for l in open(T + "/all.json")]
parks = sum(1 for r in cat if r["type"] == "event" and r["kind"] == "PARK_TASK" and r["detail"])
if len(steps) != parks:
    fail("%d flows for %d PARK_TASK records" % (len(steps), parks))
got = eng["flows"]
if len(got) != len(want):
    fail("the engine resolved %d flows, the file has %d" % (len(got), len(want)))
ended = 0
for f in got:
    names = [x[0] for x in f]
    k = (f[0][2], f[0][3], f[0][4])
    if want.get(k) != len(f):
        fail("flow at %r: %d events bound, the file has %s steps" % (k, len(f), want.get(k)))
    if names[0] != "PARK_TASK" or any(n not in ("SUBMIT", "REAP", "WAKE") for n in names[1:-1]):
        fail("flow %r is not PARK_TASK -> SUBMIT/REAP/WAKE -> RUN" % names)
    if names[-1].startswith("RUN "):
        ended += 1
        if f[-1][1] != "X" or f[-1][4] != f[0][4]:
            fail("flow %r ends on %r, not on the parked proc's loop's slice" % (names, f[-1]))
    elif names[-1] not in ("SUBMIT", "REAP", "WAKE"):
        fail("flow %r" % names)
if ended < len(got) * 9 // 10:
    fail("only %d of %d flows reach the RUN that resumed the task" % (ended, len(got)))
print("ok: DevTools trace engine: %d slices all top level on %d threads; %d flows resolved "
      "(ids matched, %d reach the resuming RUN)" % (sum(xs.values()), len(eng["threads"]), len(got), ended))

# the report's verdict on the chain that never completed
finds = [json.loads(l) for l in open(T + "/report.json")]
finds = [f for f in finds if f["type"] == "finding" and f["class"] in
         ("never_submitted", "never_reaped", "not_handed_on", "never_run")]
if not finds:
    fail("the report finds no unfinished chain in the no-reap run")
for f in finds:
    park = [p for p in f["proof"] if p["kind"] in ("PARK_TASK", "PARK")]
    for p in park:
        hit = [e for e in ev if e["ph"] == "i" and e["name"] == p["kind"] and
               e["args"].get("pid") == f["proc"] and e["args"].get("chain_class") == f["class"]]
        if len(hit) != 1:
            fail("%s of finding %s: %d events carry its verdict" % (p["kind"], f["text"], len(hit)))
print("ok: %d unfinished chains carry the report's verdict in their PARK_TASK/PARK args: %s"
      % (len(finds), ", ".join(f["class"] for f in finds)))
PY
