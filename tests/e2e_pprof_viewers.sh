#!/bin/bash
# xtcd --report --export pprof read by pprof's own tools, on a record of
# the demo (3 loops, 8 procs each): every proc's loop label survives,
# loop 0's too (pprof treats a numeric label of 0 as absent):
#  - go tool pprof (Debian golang-go), where installed: -tags lists loops
#    0, 1 and 2, and -tagfocus=loop=0 keeps exactly loop 0's procs;
#  - the npm pprof-format decoder (installed into the build tree): every
#    sample has loop as a string label and as a number with a unit, equal
#    to the loop of its stack.
# Skips (77) when xtcd was built --without-pprof, or when neither go nor
# npm can run.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
. "${top_srcdir:-.}/tests/viewers/npm.sh"
DEMO=${DEMO:-$top_builddir/examples/xtc-demo}
V=${top_srcdir:-.}/tests/viewers

start_xtcd --drain-ms 20
"$DEMO" --loops 3 --events 3000 >/dev/null || fail "xtc-demo failed"
wait_log 'ended: detached'
stop_xtcd
"$XTCD" --report "$DIR" --export pprof >"$T/p.pb.gz" 2>"$T/pprof.err"
rc=$?
if [ $rc = 2 ] && grep -q "without pprof" "$T/pprof.err"; then
	echo "SKIP: this xtcd was built --without-pprof: $(cat "$T/pprof.err")"
	exit 77
fi
[ $rc = 0 ] || fail "--report --export pprof exited $rc: $(cat "$T/pprof.err")"
"$XTCD" --report "$DIR" --json >"$T/report.json" || fail "--report --json exited $?"
python3 - "$T" >"$T/want" <<'PY' || fail "the off-CPU table"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/report.json")]
rows = [r for r in rows if r["type"] == "offcpu"]
if not rows or sorted({r["loop"] for r in rows}) != [0, 1, 2]:
    sys.exit("FAIL: off-CPU rows: %r" % rows[:3])
print(" ".join("%s:%d" % (r["proc"], r["loop"]) for r in rows))
PY
ran=

if command -v go >/dev/null 2>&1; then
	export HOME=$T/home GOCACHE=$T/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local
	mkdir -p "$HOME"
	go tool pprof -tags "$T/p.pb.gz" >"$T/tags" 2>"$T/tags.err" || fail "go tool pprof -tags: $(cat "$T/tags.err")"
	go tool pprof -tagfocus=loop=0 -traces "$T/p.pb.gz" >"$T/focus" 2>"$T/focus.err" ||
		fail "go tool pprof -tagfocus=loop=0: $(cat "$T/focus.err")"
	python3 - "$T" <<'PY' || fail "go tool pprof"
import re, sys
T = sys.argv[1]
want = dict(x.split(":") for x in open(T + "/want").read().split())
tags, sec = {}, None
for l in open(T + "/tags"):
    m = re.match(r"^ (\w+): Total", l)
    if m:
        sec = m.group(1)
        continue
    m = re.match(r"^\s+\S+(?: \(\s*[\d.]+%\))?: (\S+)$", l)
    if sec and m:
        tags.setdefault(sec, set()).add(m.group(1))
if tags.get("loop") != {"0", "1", "2"}:
    sys.exit("FAIL: go tool pprof -tags lists loops %r, want 0 1 2:\n%s" % (tags.get("loop"), open(T + "/tags").read()))
procs = re.findall(r"^\s+\S+\s+proc (\S+)$", open(T + "/focus").read(), re.M)
mine = sorted(p for p, l in want.items() if l == "0")
if sorted(procs) != mine:
    sys.exit("FAIL: -tagfocus=loop=0 keeps %r, want loop 0's %r" % (sorted(procs), mine))
print("ok: go tool pprof: -tags lists loops 0 1 2; -tagfocus=loop=0 keeps loop 0's %d procs" % len(procs))
PY
	ran=1
else
	echo "note: go is not installed (Debian golang-go): go tool pprof not run"
fi

if command -v npm >/dev/null 2>&1 || [ -z "$ran" ]; then
	viewers_npm pprof-format@2.3.2
	node "$V/pprof_labels.mjs" "$NODE_MODULES" "$T/p.pb.gz" >"$T/decoded.json" 2>"$T/decoded.err" ||
		fail "pprof-format could not decode the profile: $(cat "$T/decoded.err")"
	python3 - "$T" <<'PY' || fail "pprof-format"
import json, sys
T = sys.argv[1]
want = dict(x.split(":") for x in open(T + "/want").read().split())
got = json.load(open(T + "/decoded.json"))["samples"]
if len(got) != len(want):
    sys.exit("FAIL: %d samples for %d procs" % (len(got), len(want)))
for s in got:
    proc = s["stack"][0].split()[-1]
    loop = s["stack"][1].split()[-1]
    if (s["labels"].get("loop") != want.get(proc) or loop != want[proc] or
            s["numeric"].get("loop") != [int(loop), "loop"] or s["labels"].get("task") != proc):
        sys.exit("FAIL: sample %r: labels %r %r, want loop %s" % (s["stack"], s["labels"], s["numeric"], want.get(proc)))
n0 = sum(1 for s in got if s["labels"]["loop"] == "0")
print("ok: pprof-format: %d samples, each with its loop as a string and a numbered label (loop 0: %d)" % (len(got), n0))
PY
fi
