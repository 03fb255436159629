#!/bin/bash
# The filters of --cat (shared with --follow, --export and --stats) against
# a recorded fixture with known answers: loadgen 3 loops x 1000 events, the
# demo's event mix, and an overloaded session with drops.  Each filter's
# output must be exactly the lines of the unfiltered --cat that the rules
# in xtcd/read/filter.h select, in order; the loadgen session's counts are known
# outright.  Bad filter values are one line on stderr and exit 2.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
DEMO=${DEMO:-$top_builddir/examples/xtc-demo}

start_xtcd --drain-ms 20
"$LOADGEN" 3 1000 >/dev/null || fail "loadgen failed"
"$DEMO" --loops 3 --events 6000 --rate 30000 >/dev/null || fail "xtc-demo failed"
# the smallest ring (64 records), so that the drain cannot keep pace even on
# a quiet machine with the drain boosted: the fixture needs its drops
XTC_TAIL_RING_RECORDS=64 "$LOADGEN" 2 100000 >/dev/null || fail "loadgen (overload) failed"
for _ in $(seq 1 300); do
	[ "$(grep -c 'ended: detached' "$T/xtcd.log")" -ge 3 ] && break
	sleep 0.02
done
stop_xtcd
cat_json

python3 - "$XTCD" "$DIR" "$T/all.json" <<'EOF' || fail "filters"
import json, subprocess, sys, time
from datetime import datetime

xtcd, d, allf = sys.argv[1:4]
lines = open(allf).read().splitlines()
recs = [json.loads(l) for l in lines]
checks = 0

def fail(msg):
    sys.exit("FAIL: " + msg)

def run(*args, mode="--cat"):
    p = subprocess.run([xtcd, mode, d, "--json", *args], capture_output=True, text=True)
    if p.returncode != 0:
        fail("xtcd %s %s exited %d: %s" % (mode, " ".join(args), p.returncode, p.stderr))
    return p.stdout.splitlines()

# The sessions of the fixture.
starts = {}
for r in recs:
    if r["type"] == "session_start":
        starts.setdefault(r["session"], r)
by_comm = {}
for s in starts.values():
    by_comm.setdefault(s["comm"], []).append(s)
lg, over = sorted(by_comm["xtc-loadgen"], key=lambda s: s["session"])
demo = by_comm["xtc-demo"][0]
pid_of = {sid: s["pid"] for sid, s in starts.items()}

def wall(sid, ts):
    s = starts[sid]
    return s["anchor_real_ns"] + ts - s["anchor_mono_ns"]

def t_of(r):
    """The wall-clock time(s) of an item, as xtcd gives them."""
    t = r["type"]
    if t == "event":
        return wall(r["session"], r["ts_ns"])
    if t == "session_start":
        return wall(r["session"], r["start_ts_ns"])
    if t == "session_end":
        return wall(r["session"], r["end_ts_ns"])
    if t == "drop":
        a = wall(r["session"], r["from_ts_ns"] or r["to_ts_ns"])
        b = wall(r["session"], r["to_ts_ns"]) if r["to_ts_ns"] >= r["from_ts_ns"] else a
        return (a, b)
    return None

last_t = max(max(t) if isinstance(t, tuple) else t for t in map(t_of, recs) if t is not None)

# The rules of xtcd/read/filter.h, written out independently.
def select(session=None, pid=None, loop=None, kinds=None, since=None, until=None):
    def sess_ok(sid):
        return (session is None or sid == session) and (pid is None or pid_of.get(sid) == pid)
    def in_win(t):
        return (since is None or t >= since) and (until is None or t < until)
    out = []
    for line, r in zip(lines, recs):
        t = r["type"]
        if t == "event":
            ok = (sess_ok(r["session"]) and (loop is None or r["loop_id"] == loop) and
                  (kinds is None or r["kind"] in kinds) and in_win(t_of(r)))
        elif t == "drop":
            a, b = t_of(r)
            ok = (sess_ok(r["session"]) and (loop is None or r["loop_id"] == loop) and
                  (until is None or a < until) and (since is None or b >= since))
        elif t in ("session_start", "session_end"):
            ok = sess_ok(r["session"]) and in_win(t_of(r))
        elif t == "segment_end":
            # written at shutdown, after every record (its time is not in the JSON)
            ok = (session is None and pid is None and loop is None and kinds is None and
                  in_win(last_t + 1))
        else:
            fail("unexpected item in the fixture: %r" % r)
        if ok:
            out.append(line)
    return out

def check(args, want, what, known=None):
    global checks
    got = run(*args)
    if got != want:
        fail("%s (%s): %d lines, want %d" % (what, " ".join(args), len(got), len(want)))
    if known is not None and len(got) != known:
        fail("%s: %d lines, the known answer is %d" % (what, len(got), known))
    checks += 1
    print("ok: %-58s %6d lines" % (" ".join(args), len(got)))

ev = lambda **k: sum(1 for r in recs if r["type"] == "event" and all(r[a] == v for a, v in k.items()))
if ev(session=lg["session"]) != 3000 or any(ev(session=lg["session"], loop_id=l) != 1000 for l in range(3)):
    fail("the loadgen session is not 3 x 1000 events")
if not any(r["type"] == "drop" for r in recs):
    fail("the overloaded session has no drops")

check(["--session", str(lg["session"])], select(session=lg["session"]), "session", known=3002)
check(["--session", str(demo["session"])], select(session=demo["session"]), "session")
check(["--pid", str(demo["pid"])], select(pid=demo["pid"]), "pid")
check(["--pid", str(lg["pid"]), "--loop", "2"], select(pid=lg["pid"], loop=2), "pid+loop", known=1002)
check(["--loop", "1"], select(loop=1), "loop",
      known=1000 + ev(session=demo["session"], loop_id=1) + ev(session=over["session"], loop_id=1) +
      sum(1 for r in recs if r["type"] == "drop" and r["loop_id"] == 1) + 6)
check(["--kind", "RUN"], select(kinds={"RUN"}), "kind (drops and sessions stay)")
check(["--kind", "run,Wake", "--session", str(demo["session"])],
      select(kinds={"RUN", "WAKE"}, session=demo["session"]), "kinds, any case")
check(["--kind", "PARK_TASK", "--loop", "2", "--pid", str(demo["pid"])],
      select(kinds={"PARK_TASK"}, loop=2, pid=demo["pid"]), "kind+loop+pid",
      known=ev(session=demo["session"], loop_id=2, kind="PARK_TASK") + 2)
check(["--kind", "SUBMIT_FAIL"], select(kinds={"SUBMIT_FAIL"}), "a kind with no records")

# A window over the middle of the demo session, to the microsecond.
dts = sorted(t_of(r) for r in recs if r["type"] == "event" and r["session"] == demo["session"])
lo, hi = dts[len(dts) // 4] // 1000 * 1000, dts[3 * len(dts) // 4] // 1000 * 1000
def local(ns, sep=" "):
    return datetime.fromtimestamp(ns // 10**9).strftime("%Y-%m-%d" + sep + "%H:%M:%S") + ".%06d" % (ns % 10**9 // 1000)
win = select(since=lo, until=hi)
check(["--since", local(lo), "--until", local(hi)], win, "since/until (local time)")
check(["--since=" + local(lo, "T"), "--until=" + local(hi, "T")], win, "since/until (ISO 8601)")
check(["--since", "@%d.%09d" % (lo // 10**9, lo % 10**9), "--until", "@%d.%09d" % (hi // 10**9, hi % 10**9)],
      win, "since/until (@epoch)")
utc = lambda ns: datetime.utcfromtimestamp(ns // 10**9).strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (ns % 10**9 // 1000)
check(["--since", utc(lo), "--until", utc(hi), "--kind", "RUN"], select(since=lo, until=hi, kinds={"RUN"}),
      "since/until (UTC) + kind")
check(["--since", "-1h"], lines, "relative: the last hour")
check(["--until", "-1h"], [], "relative: before an hour ago")
check(["--since", "-1d", "--until", "now"], lines, "relative: the last day, until now")

# --stats and --export take the same filters.
st = [json.loads(l) for l in run("--session", str(lg["session"]), mode="--stats")]
s = [x for x in st if x["type"] == "session"]
if len(s) != 1 or s[0]["events"] != 3000 or [l["events"] for l in s[0]["loops"]] != [1000] * 3 \
   or s[0]["kinds"] != {"RUN": 3000} or s[0]["record"] != "complete":
    fail("--stats --session: %r" % st)
st = [json.loads(l) for l in run("--kind", "RUN", "--loop", "0", mode="--stats")]
want = {sid: ev(session=sid, loop_id=0, kind="RUN") for sid in starts}
got = {x["session"]: x["events"] for x in st if x["type"] == "session"}
if got != want:
    fail("--stats --kind RUN --loop 0: %r, want %r" % (got, want))
print("ok: --stats with filters: %r" % got)
print("ok: %d filter checks against the fixture" % checks)
EOF

# Bad values: one line naming the option, nothing on stdout, exit 2.
bad() {
	"$XTCD" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && [ ! -s "$T/out" ] ||
		{ cat "$T/err"; fail "xtcd $*: exit $rc, $(wc -l <"$T/err") lines on stderr"; }
	echo "ok: xtcd $*: $(cat "$T/err")"
}
bad --cat "$DIR" --session abc
bad --cat "$DIR" --session 0
bad --cat "$DIR" --pid -5
bad --follow "$DIR" --loop x
bad --cat "$DIR" --kind RUN,NOPE
grep -q "SPAWN,EXIT,WAKE,RUN" "$T/err" || fail "an unknown kind's error does not list the kinds"
bad --stats "$DIR" --kind ""
bad --cat "$DIR" --since yesterday
bad --cat "$DIR" --until "2026-13-01 00:00:00"
bad --cat "$DIR" --since -5x
bad --cat "$DIR" --since -1h --until -2h
bad --cat "$DIR" --color=sometimes
bad --cat "$DIR" -n 5
bad --follow "$DIR" -n -3
bad --kind RUN
bad --cat "$DIR" --stats "$DIR"
