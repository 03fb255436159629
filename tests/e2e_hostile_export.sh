#!/bin/bash
# tests/e2e_hostile_export.sh - one local user churns short sessions, each
# with a record or two; xtcd --export chrome of the directory must be
# linear in the number of sessions: the instructions it takes (valgrind,
# so that the figure does not depend on the machine's load) for 4x the
# sessions must grow about 4x, not 16x.  Each session is a trace process
# with its own pid, and each session's end closes its slices.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
need_valgrind

churned_sessions 2000
churned_sessions 8000
i1=$(callgrind_count xtcd_export "$T/trace2000.json" --export chrome "$T/d2000")
i4=$(callgrind_count xtcd_export "$T/trace8000.json" --export chrome "$T/d8000")
echo "  --export chrome: 2000 sessions $i1 instructions, 8000 sessions $i4"
python3 - "$i1" "$i4" "$T/trace8000.json" <<'PY' || fail "--export chrome"
import json, sys
a, b = int(sys.argv[1] or 0), int(sys.argv[2] or 0)
if a <= 0:
    print("FAIL: no instruction count"); sys.exit(1)
print("  4x the sessions, %.1fx the instructions" % (b / a))
# the counts are exact (a linear export is 4.0x here); a scan of every
# session's for each session comes out at 6.8x
if b / a > 5.5:
    print("FAIL: --export chrome grows faster than linearly in sessions (%.1fx for 4x)" % (b / a)); sys.exit(1)
ev = json.load(open(sys.argv[3]))["traceEvents"]
names = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name" and e["pid"] != 0}
sessions = {e["args"]["session"] for e in ev if e.get("name", "").startswith("SESSION END")}
if len(names) != 8000 or len(sessions) != 8000:
    print("FAIL: %d trace processes and %d session ends for 8000 sessions" % (len(names), len(sessions))); sys.exit(1)
print("ok: 8000 sessions, 8000 trace processes with pids of their own, each ended")
PY
echo "ok: --export chrome is linear in the number of sessions"
