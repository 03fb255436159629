#!/bin/bash
# xtcd --report against fixtures recorded by a real xtcd: xtc-anomaly
# plants one known problem per run (tests/anomaly.c), all runs at once
# into one segment directory.  The report must find exactly the planted
# problems, class each one, say "cannot tell" (naming the loss) where
# dropped records or a record cut short hide the answer, and find nothing
# in the clean run.  The pprof export must decode (gzip + protobuf wire
# format, decoded here by hand), the collapsed stacks must add up, the SVG
# must parse as XML, and --diff must rank the change planted between two
# windows.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
ANOMALY=${ANOMALY:-$top_builddir/tests/xtc-anomaly}

SCENARIOS="clean no-submit no-reap reap-drop wake-no-run loop-stall submit-fail lifecycle degrade"
start_xtcd --drain-ms 500
# Every run waits for $T/go, made once xtcd has taken them all on: their
# clocks then start together, whatever attaching took on a busy machine.
# They attach one at a time, so no burst of attaches strains xtcd.
export XTC_ANOMALY_GO=$T/go
attached() {
	local p
	for _ in $(seq 1 1000); do
		p=$(awk 'NR == 1 { print $2 }' "$T/$1.out" 2>/dev/null)
		[ -n "$p" ] && grep -q "pid $p (xtc-anomaly) .* attached" "$T/xtcd.log" && return 0
		sleep 0.02
	done
	fail "xtc-anomaly $1 never attached"
}
pids=()
for s in $SCENARIOS; do
	"$ANOMALY" "$s" >"$T/$s.out" 2>"$T/$s.err" &
	pids+=($!)
	attached "$s"
done
XTC_TAIL_RING_RECORDS=64 "$ANOMALY" drops >"$T/drops.out" 2>"$T/drops.err" &
pids+=($!)
attached drops
# (in a subshell whose stderr is quiet: bash reports a child killed by a signal)
( "$ANOMALY" no-submit --die >"$T/die.out" 2>"$T/die.err"; echo $? >"$T/die.rc" ) 2>/dev/null &
die_pid=$!
attached die
touch "$T/go"
for p in "${pids[@]}"; do
	wait "$p" || fail "xtc-anomaly (pid $p) exited $?"
done
wait "$die_pid"
[ "$(cat "$T/die.rc")" = 137 ] || fail "xtc-anomaly no-submit --die was not killed"
for _ in $(seq 1 750); do
	[ "$(grep -c ' ended: ' "$T/xtcd.log")" -ge 11 ] && break
	sleep 0.02
done
[ "$(grep -c ' ended: ' "$T/xtcd.log")" -ge 11 ] || fail "not every session ended"
stop_xtcd

python3 - "$XTCD" "$DIR" "$T" <<'EOF' || fail "report"
import gzip, json, os, subprocess, sys
import xml.etree.ElementTree as ET

xtcd, d, t = sys.argv[1:4]
checks = 0

def fail(msg):
    sys.exit("FAIL: " + msg)

def ok(msg):
    global checks
    checks += 1
    print("ok: " + msg)

def scen(name):
    lines = open(os.path.join(t, name + ".out")).read().splitlines()
    return {l.split()[0] + ("" if l.startswith("pid") else " " + l.split()[1]):
            l.split()[-1] for l in lines}

def run(*args, want=0, text=True):
    p = subprocess.run([xtcd, *args], capture_output=True, text=text)
    if p.returncode != want:
        fail("xtcd %s exited %d (want %d): %s" % (" ".join(args), p.returncode, want,
                                                  p.stderr if text else p.stderr.decode()))
    return p

# --stall 1500ms: the planted stalls last 2.2 s or more, and a loop thread
# starved of CPU for a whole second on a loaded machine is then still not
# taken for a stuck one in the clean run.  The default (1 s) is checked on
# its own below.
def report(pid, *extra):
    out = run("--report", d, "--pid", str(pid), "--json", "--stall", "1500ms", *extra).stdout
    objs = [json.loads(l) for l in out.splitlines()]
    if not objs or objs[0]["type"] != "summary":
        fail("--report --json does not start with a summary")
    return objs

def findings(objs):
    return [o for o in objs if o["type"] == "finding"]

def one(fs, what, **want):
    """The one finding matching want, else fail."""
    m = [f for f in fs if all(f.get(k) == v for k, v in want.items())]
    if len(m) != 1:
        fail("%s: %d findings match %r in %s" % (what, len(m), want, json.dumps(fs, indent=1)))
    return m[0]

pid = {s: int(scen(s)["pid"]) for s in
       ["clean", "no-submit", "no-reap", "reap-drop", "wake-no-run", "loop-stall",
        "submit-fail", "lifecycle", "degrade", "drops", "die"]}

# ---- the clean run: nothing ----
objs = report(pid["clean"])
if findings(objs):
    fail("the clean run has findings: %s" % findings(objs))
sess = [o for o in objs if o["type"] == "session"]
if len(sess) != 1 or sess[0]["end"]["reason"] != "detached" or sess[0]["chains_completed"] < 100:
    fail("the clean run's session: %s" % sess)
lat = [o for o in objs if o["type"] == "latency" and o["loop"] == "all"][0]
if lat["count"] < 100 or not 2000 <= lat["p50_ns"] <= 5100 or lat["max_ns"] > 5000:
    fail("clean latency %s" % lat)
offcpu = [o for o in objs if o["type"] == "offcpu"]
if len(offcpu) != 8 or any(o["polls"] < 5 or o["idle_ns"] <= 0 or o["busy_ns"] <= 0 for o in offcpu):
    fail("clean off-CPU table %s" % offcpu)
text = run("--report", d, "--pid", str(pid["clean"]), "--stall", "1500ms").stdout
if "FINDINGS: none" not in text:
    fail("the clean run's text report does not say FINDINGS: none")
ok("clean run: no findings, %d chains completed, p50 %dns" % (sess[0]["chains_completed"], lat["p50_ns"]))

# ---- one planted problem each, proven ----
def alive(f):
    if not f["loop_after"]["alive"] or f["loop_stopped"]:
        fail("%s: its loop should have kept working: %s" % (f["class"], f))

fs = findings(report(pid["no-submit"]))
f = one(fs, "no-submit", **{"class": "never_submitted", "verdict": "proven", "proc": "0.9.1", "loop": 0})
alive(f)
if len(fs) != 1 or f["loss"] is not None or f["waiting_ns"] < 2e9:
    fail("no-submit: %s" % fs)
text = run("--report", d, "--pid", str(pid["no-submit"])).stdout
if "NEVER SUBMITTED" not in text:
    fail("no-submit: the text report with the default --stall")
ok("parked, never submitted: proven, the loop kept polling")

fs = findings(report(pid["no-reap"]))
f = one(fs, "no-reap", **{"class": "never_reaped", "verdict": "proven", "proc": "0.9.1"})
if len(fs) != 1 or [p["kind"] for p in f["proof"]] != ["PARK_TASK", "PARK", "SUBMIT"]:
    fail("no-reap: %s" % fs)
ok("submitted, never reaped: proven by PARK_TASK, PARK, SUBMIT")

fs = findings(report(pid["reap-drop"]))
a = one(fs, "reap-drop", **{"class": "not_handed_on", "form": "plain", "proc": "0.9.1", "verdict": "proven"})
b = one(fs, "reap-drop", **{"class": "not_handed_on", "form": "untagged_reap", "proc": "1.9.1", "verdict": "proven"})
if len(fs) != 2 or a["proof"][-1]["kind"] != "REAP" or b["proof"][-1] != {**b["proof"][-1], "kind": "REAP", "detail": 0}:
    fail("reap-drop: %s" % fs)
ok("reaped, not handed on: REAP with no WAKE, and an untagged REAP answering no untagged SUBMIT")

fs = findings(report(pid["wake-no-run"]))
f = one(fs, "wake-no-run", **{"class": "never_run", "verdict": "proven", "proc": "0.9.1"})
alive(f)
if len(fs) != 1 or f["loop_after"]["idle_polls"] < 5:
    fail("wake-no-run: %s" % fs)
ok("woken, never run: proven, the loop kept polling (%d idle polls) and skipped it" % f["loop_after"]["idle_polls"])

fs = findings(report(pid["loop-stall"]))
gap = one(fs, "loop-stall", **{"class": "loop_gap", "verdict": "proven", "loop": 0})
stop = one(fs, "loop-stall", **{"class": "loop_stopped", "verdict": "proven", "loop": 2})
if not 2.0e9 <= gap["silent_ns"] <= 3.2e9 or stop["silent_ns"] < 1.5e9 or gap["other_loops_active"] < 1:
    fail("loop-stall: %s %s" % (gap, stop))
rest = [f for f in fs if f not in (gap, stop)]
if (not rest or stop["explains"] != len(rest) or
        any(f["loop"] != 2 or f.get("explained_by") != stop["n"] or not f["loop_stopped"] for f in rest)):
    fail("loop-stall: the tasks stranded on loop 2 should name the stopped loop: %s" % rest)
ok("loop 0 silent %.2fs and resumed (gap), loop 2 stopped; %d tasks stranded with it" %
   (gap["silent_ns"] / 1e9, len(rest)))

fs = findings(report(pid["submit-fail"]))
e = one(fs, "submit-fail", **{"class": "submit_fail", "loop": 0, "error": "-EAGAIN", "errno": 11})
s = one(fs, "submit-fail", **{"class": "submit_fail", "loop": 1, "short_submit_left": 2})
n0 = one(fs, "submit-fail", **{"class": "never_submitted", "proc": "0.9.1", "explained_by": e["n"]})
for p in ("1.9.1", "1.10.1"):
    one(fs, "submit-fail", **{"class": "never_submitted", "proc": p, "explained_by": s["n"]})
if len(fs) != 5 or e["explains"] != 1 or s["explains"] != 2:
    fail("submit-fail: %s" % fs)
ok("SUBMIT_FAIL -EAGAIN and a short submit (2 left), each explaining its stranded tasks")

fs = findings(report(pid["lifecycle"]))
one(fs, "lifecycle", **{"class": "lifecycle_drop", "proc": "0.3.1", "error": -105, "verdict": "proven"})
if len(fs) != 1:
    fail("lifecycle: %s" % fs)
ok("LIFECYCLE_DROP found by its presence")

# ---- honesty: the same absence, where it cannot be believed ----
objs = report(pid["drops"])
fs = findings(objs)
sess = [o for o in objs if o["type"] == "session"][0]
if sess["dropped_records"] < 1000:
    fail("the drops run dropped only %d records: %s" % (sess["dropped_records"], sess))
f = one(fs, "drops", **{"class": "never_submitted", "proc": "0.9.1"})
if f["verdict"] != "cannot_tell" or f["loss"]["kind"] != "drop" or f["loss"]["records"] < 1000:
    fail("drops: the parked task's verdict should be cannot_tell naming the drop: %s" % f)
if any(x["verdict"] == "proven" for x in fs):
    fail("drops: a proven verdict over dropped records: %s" % fs)
if "CANNOT TELL" not in run("--report", d, "--pid", str(pid["drops"]), "--stall", "1500ms").stdout:
    fail("drops: the text report does not say CANNOT TELL")
ok("a burst of %d dropped records over a parked task: cannot tell (%s)" %
   (sess["dropped_records"], f["loss"]["text"][:60]))

fs = findings(report(pid["die"]))
f = one(fs, "die", **{"class": "never_submitted", "proc": "0.9.1"})
if len(fs) != 1 or f["verdict"] != "cannot_tell" or f["loss"]["kind"] != "cut_short" or \
        f["loss"].get("reason") != "producer_died":
    fail("die: a record cut short must not prove an absence: %s" % fs)
ok("the same park in a producer that died: cannot tell (cut short, producer_died)")

# ---- the whole directory: the sum of the parts ----
allf = findings([json.loads(l) for l in
                 run("--report", d, "--json", "--stall", "1500ms").stdout.splitlines()])
per = sum(len(findings(report(p))) for p in pid.values())
if len(allf) != per:
    fail("the whole directory has %d findings, the sessions %d" % (len(allf), per))
ok("whole directory: %d findings, as the sessions one by one" % len(allf))

# ---- --diff: the degraded window ----
w = scen("degrade")
fs = findings(report(pid["degrade"]))
one(fs, "degrade", **{"class": "never_run", "proc": "1.9.1", "loop": 1, "verdict": "proven"})
rows = [o for o in report(pid["degrade"], "--diff", w["window A"], w["window B"]) if o["type"] == "diff"]
if not rows or rows[0]["metric"] != "finding" or rows[0]["change"] != "NEW" or "never_run" not in rows[0]["key"]:
    fail("--diff: the new finding should rank first: %s" % rows[:3])
p50 = [r for r in rows if r["key"] == "wake-to-run latency p50"][0]
send = [r for r in rows if r["key"] == "rate of SEND"][0]
if not p50["b"] > 30 * p50["a"] or not send["b"] > 3 * send["a"] or p50["rank"] > 10 or send["rank"] > 10:
    fail("--diff: latency and SEND rate changes: %s %s" % (p50, send))
ok("--diff ranks the new finding first, p50 x%.0f (rank %d), SEND rate x%.1f (rank %d)" %
   (p50["b"] / p50["a"], p50["rank"], send["b"] / send["a"], send["rank"]))

# ---- --export pprof: decode the protobuf wire format by hand ----
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i

def fields(b):
    """(field number, wire type, value) of one message; value is bytes for
    length-delimited fields, an int for varints."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]; i += n
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little"); i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little"); i += 4
        else:
            fail("pprof: wire type %d" % wt)
        out.append((fn, wt, v))
    if i != len(b):
        fail("pprof: a message overruns its bytes")
    return out

def packed(f):
    """A repeated scalar: packed bytes or one varint."""
    fn, wt, v = f
    if wt == 0:
        return [v]
    i, vals = 0, []
    while i < len(v):
        x, i = varint(v, i)
        vals.append(x)
    return vals

def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v

raw = run("--report", d, "--pid", str(pid["clean"]), "--export", "pprof", text=False).stdout
if raw[:2] != b"\x1f\x8b":
    fail("pprof: not gzip")
prof = fields(gzip.decompress(raw))
strings = [v.decode() for fn, wt, v in prof if fn == 6]
if not strings or strings[0] != "":
    fail("pprof: string_table[0] must be empty")
st = [dict((fn, v) for fn, wt, v in fields(v)) for fn, wt, v in prof if fn == 1]
types = [(strings[x.get(1, 0)], strings[x.get(2, 0)]) for x in st]
if types != [("idle", "nanoseconds"), ("busy", "nanoseconds"), ("scheduled", "nanoseconds"),
             ("polls", "count"), ("wakes", "count")]:
    fail("pprof sample types: %s" % types)
dst = [v for fn, wt, v in prof if fn == 14]
if dst != [strings.index("idle")]:
    fail("pprof: the default sample type is not idle")
funcs = {}
for fn, wt, v in prof:
    if fn == 5:
        m = dict((a, b) for a, _, b in fields(v))
        funcs[m[1]] = strings[m[2]]
locs = {}
for fn, wt, v in prof:
    if fn == 4:
        m = fields(v)
        lid = [b for a, _, b in m if a == 1][0]
        line = [dict((a, b) for a, _, b in fields(b)) for a, _, b in m if a == 4][0]
        locs[lid] = funcs[line[1]]
want = {o["proc"]: o for o in offcpu}
samples = [fields(v) for fn, wt, v in prof if fn == 2]
if len(samples) != len(want):
    fail("pprof: %d samples for %d procs" % (len(samples), len(want)))
for sm in samples:
    stack = [locs[x] for f in sm if f[0] == 1 for x in packed(f)]
    vals = [s64(x) for f in sm if f[0] == 2 for x in packed(f)]
    proc = stack[0].split()[-1]
    o = want.get(proc)
    if (o is None or len(stack) != 3 or not stack[2].startswith("xtc-anomaly pid ") or
            stack[1] != "loop %d" % o["loop"] or
            vals != [o["idle_ns"], o["busy_ns"], o["scheduled_ns"], o["polls"], o["wakes"]]):
        fail("pprof sample %s %s does not match the off-CPU table %s" % (stack, vals, o))
ok("pprof: gzip + profile.proto decode: 5 sample types, idle default, %d samples = the off-CPU table"
   % len(samples))

col = run("--report", d, "--pid", str(pid["clean"]), "--export", "collapsed").stdout.splitlines()
tot = 0
for l in col:
    stack, n = l.rsplit(" ", 1)
    if len(stack.split(";")) != 3:
        fail("collapsed: %r" % l)
    tot += int(n)
if len(col) != len(want) or tot != sum(o["idle_ns"] for o in offcpu):
    fail("collapsed stacks do not add up to the idle time")
ok("collapsed: %d stacks weighted by idle time" % len(col))

p = run("--report", d, "--loop", "99", "--export", "pprof", want=3)
if "no data" not in p.stderr or p.stdout:
    fail("--export with nothing to profile must say no data and write nothing")
ok("--export with no task data: 'no data' on stderr, exit 3, nothing drawn")

# ---- --svg ----
for name in ("loop-stall", "drops"):
    svg = os.path.join(t, name + ".svg")
    run("--report", d, "--pid", str(pid[name]), "--stall", "1500ms", "--svg", svg)
    root = ET.parse(svg).getroot()
    if root.tag != "{http://www.w3.org/2000/svg}svg":
        fail("--svg: the root is %s" % root.tag)
    titles = [e.text or "" for e in root.iter("{http://www.w3.org/2000/svg}title")]
    marks = [x for x in titles if x.startswith("#")]
    drops = [x for x in titles if x.startswith("DROP")]
    nf = len(findings(report(pid[name])))
    if len(marks) != nf or (name == "drops") != bool(drops):
        fail("--svg %s: %d finding marks for %d findings, %d drop bands" % (name, len(marks), nf, len(drops)))
    if "Wake-to-run latency" not in "".join(root.itertext()):
        fail("--svg: no latency histogram")
ok("--svg parses as XML, marks every finding and the drops, has the latency histogram")

# ---- usage ----
for args in (["--report"], ["--report", "/nonexistent/dir"], ["--diff", "-1m..now", "-2m..-1m"],
             ["--report", d, "--diff", "-1m..-2m", "-1m..now"], ["--report", d, "--export", "pprof", "--json"]):
    p = subprocess.run([xtcd, *args], capture_output=True, text=True)
    if p.returncode != 2 or len(p.stderr.splitlines()) != 1:
        fail("xtcd %s: exit %d, stderr %r" % (" ".join(args), p.returncode, p.stderr))
ok("bad --report usage: one line, exit 2")
print("%d checks passed" % checks)
EOF
echo PASS
