#!/bin/bash
# xtcd --export chrome nests an adapter's slices even when their durations
# disagree with their records' times.  libxtctail-ev measures a callback or
# a wait with its own clock calibration and xtcd converts the records'
# ticks with its own, so a CB_END's or LOOP_WAKE's detail may exceed the
# time since its CB_BEGIN or LOOP_WAIT (on nghttpd, a 163 ms wait came
# out 1 us longer than its records, and its slice, drawn as its detail
# before the wake, crossed the callback slice before it).  xtc-skewapp
# writes such records with a 50 ms disagreement: a wait after a callback,
# and a callback after its sibling inside a nested run of its loop; and a
# CB_END whose CB_BEGIN is not in the record, its detail reaching back
# into the callback before it.
#  - parsed as a viewer parses it, every slice nests (viewers/chrome_nesting.py);
#  - each adapter slice begins at its CB_BEGIN's or LOOP_WAIT's time (the
#    instant of that record on the same track) and ends at its END's;
#    args.dur_ns is its length, args.detail_ns the detail the producer
#    wrote;
#  - the END with no BEGIN begins where the slice before it ends.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
SKEWAPP=${SKEWAPP:-$top_builddir/tests/xtc-skewapp}

start_xtcd --drain-ms 10
"$SKEWAPP" >"$T/skewapp.out" 2>&1 || fail "xtc-skewapp exited $?: $(cat "$T/skewapp.out")"
wait_log "ended: detached"
stop_xtcd
"$XTCD" --export chrome "$DIR" >"$T/trace.json" 2>"$T/export.err" ||
	fail "--export chrome exited $?: $(cat "$T/export.err")"
python3 "$top_srcdir/tests/viewers/chrome_nesting.py" "$T/trace.json" ||
	fail "the chrome export's adapter slices do not nest"
python3 - "$T/trace.json" <<'PY' || fail "adapter slices do not span their records"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
bad = []
# per track: the adapter slices and the CB_BEGIN / LOOP_WAIT instants
tracks = {}
for e in ev:
    k = (e.get("pid"), e.get("tid"))
    if e.get("ph") == "i" and e["name"] in ("CB_BEGIN", "LOOP_WAIT"):
        tracks.setdefault(k, {"begin": [], "slices": []})["begin"].append(e)
    elif e.get("ph") == "X" and e.get("cat") == "loop":
        tracks.setdefault(k, {"begin": [], "slices": []})["slices"].append(e)
got = {}
ORPHAN = "CB 2.io:41.cb1"
for (pid, tid), t in tracks.items():
    got[tid] = len(t["slices"])
    orphan = [s for s in t["slices"] if s["name"] == ORPHAN]
    t["slices"] = [s for s in t["slices"] if s["name"] != ORPHAN]
    if orphan:
        prev = max(t["slices"], key=lambda s: s["ts"])
        if orphan[0]["ts"] != prev["ts"] + prev["dur"]:
            bad.append("the CB_END with no CB_BEGIN begins at %r, the callback before it ends at %r"
                       % (orphan[0]["ts"], prev["ts"] + prev["dur"]))
    begins = sorted(b["ts"] for b in t["begin"])
    starts = sorted(s["ts"] for s in t["slices"])
    if begins != starts:
        bad.append("loop %d: slices begin at %r, its CB_BEGIN/LOOP_WAIT records at %r" % (tid, starts, begins))
    for s in t["slices"]:
        if s["args"]["detail_ns"] < 1000000:
            bad.append("loop %d: %s has detail_ns %r, not the detail" % (tid, s["name"], s["args"]["detail_ns"]))
        if abs(s["dur"] * 1000 - s["args"]["dur_ns"]) > 0.001:
            bad.append("loop %d: %s: dur %r is not its length in dur_ns %r" % (tid, s["name"], s["dur"], s["args"]["dur_ns"]))
# the two skewed slices: their detail is 50 ms more than their records' span
skewed = [s for t in tracks.values() for s in t["slices"]
          if s["args"]["detail_ns"] - s["args"]["dur_ns"] > 45000000]
if sorted((s["tid"], s["name"]) for s in skewed) != [(0, "wait"), (1, "CB 1.io:32.cb1")]:
    bad.append("want the skewed wait of loop 0 and callback io:32 of loop 1 with their "
               "detail in detail_ns, have %r" % [(s["tid"], s["name"], s["args"]["dur_ns"], s["args"]["detail_ns"]) for s in skewed])
if got != {0: 3, 1: 4, 2: 2}:
    bad.append("want 3 slices on loop 0, 4 on loop 1 and 2 on loop 2, have %r" % got)
for m in bad:
    print("FAIL: " + m)
sys.exit(1 if bad else 0)
PY
echo "ok: skewed adapter durations still nest"
