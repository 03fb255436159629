#!/bin/bash
# tests/e2e_hostile_report_loops.sh - a session may name any number of
# loops (a loop id is whatever its records say), so --report must be
# linear in them: the instructions it takes (valgrind, so that the figure
# does not depend on the machine's load) for 4x the loops must grow about
# 4x, not 16x.  Each loop records once and then falls silent while loop 0
# goes on, so every one of them is a "loop stopped" finding that counts
# the other loops still recording.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

SEGWRITE=${SEGWRITE:-$top_builddir/tests/xtc-segwrite}
for prog in "$XTCD" "$SEGWRITE"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
need_valgrind

# loops N: a directory $T/dN of one session whose loops 1..N record once,
# 1 us apart, while loop 0 records on for 10 s
loops() {
	mkdir -p "$T/d$1"
	{
		echo "start 1 4242"
		for i in $(seq 1 "$1"); do echo "events 1 1 $i $((i * 1000)) 1"; done
		for s in $(seq 1 10); do echo "events 1 0 0 ${s}000000000 1"; done
		echo "end 1"
	} | "$SEGWRITE" "$T/d$1" || fail "xtc-segwrite for $1 loops"
}

loops 2000
loops 8000
i1=$(callgrind_count xtcd_report "$T/report2000.json" --report "$T/d2000" --json)
i4=$(callgrind_count xtcd_report "$T/report8000.json" --report "$T/d8000" --json)
echo "  --report: 2000 loops $i1 instructions, 8000 loops $i4"
python3 - "$i1" "$i4" "$T/report8000.json" <<'PY' || fail "--report"
import json, sys
a, b = int(sys.argv[1] or 0), int(sys.argv[2] or 0)
if a <= 0:
    print("FAIL: no instruction count"); sys.exit(1)
print("  4x the loops, %.1fx the instructions" % (b / a))
# the counts are exact: linear is 4.0x here; a search of every loop of
# the session for each record, and a sum over every loop for each loop's
# share or each silent one's count, made it 6.1x (5.2x at 1000 and 4000 loops)
if b / a > 4.6:
    print("FAIL: --report grows faster than linearly in loops (%.1fx for 4x)" % (b / a)); sys.exit(1)
rows = [json.loads(l) for l in open(sys.argv[3])]
sess = [r for r in rows if r["type"] == "session" and r["session"] == 1]
if not sess or sess[0]["loops"] != 8001:
    print("FAIL: the session should have 8001 loops: %s" % (sess[0]["loops"] if sess else "no session 1")); sys.exit(1)
stopped = {r["loop"]: r for r in rows if r["type"] == "finding" and r["class"] == "loop_stopped"}
if sorted(stopped) != list(range(1, 8001)):
    print("FAIL: %d loop_stopped findings, want one for each of loops 1-8000" % len(stopped)); sys.exit(1)
# loop k fell silent after its one record; loops k+1..8000 and loop 0 recorded after it
bad = [k for k, r in stopped.items() if r["other_loops_active"] != 8001 - k]
if bad:
    k = bad[0]
    print("FAIL: loop %d stopped with %d other loops active, want %d" % (k, stopped[k]["other_loops_active"], 8001 - k)); sys.exit(1)
print("ok: 8000 loops stopped, each counting the %s loops that recorded after it" % "8001 - k")
PY
echo "ok: --report is linear in the number of loops of a session"
