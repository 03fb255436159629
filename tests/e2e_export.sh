#!/bin/bash
# xtcd --export chrome|dial9|xtcl against a recorded fixture (loadgen, the
# demo's realistic mix, and an overloaded session with drops):
#  - chrome: valid JSON; every event has name/ph/ts/pid/tid; names for
#    every process and track; RUN slices on a track never overlap; every
#    record's time is exact; drops and session ends are named markers (how
#    viewers' double arithmetic sees the slices, and the viewers
#    themselves: tests/e2e_chrome_viewers.sh);
#  - dial9: parsed frame by frame against the spec's framing (TRC\0,
#    version 1, schema before use, exact timestamps through resets);
#  - xtcl: the seed-000 header and every varint record;
#  - filters apply; binary output to a terminal and bad formats are
#    refused with one line and exit 2.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
DEMO=${DEMO:-$top_builddir/examples/xtc-demo}

start_xtcd --drain-ms 20
"$LOADGEN" 3 1000 >/dev/null || fail "loadgen failed"
"$DEMO" --loops 3 --events 3000 >/dev/null || fail "xtc-demo failed"
# the smallest ring (64 records), so that the drain cannot keep pace even
# on a quiet machine with the drain boosted: the fixture needs its drops
XTC_TAIL_RING_RECORDS=64 "$LOADGEN" 2 100000 >/dev/null || fail "loadgen (overload) failed"
for _ in $(seq 1 300); do
	[ "$(grep -c 'ended: detached' "$T/xtcd.log")" -ge 3 ] && break
	sleep 0.02
done
stop_xtcd
cat_json

"$XTCD" --export chrome "$DIR" >"$T/trace.json" 2>"$T/chrome.err" || fail "--export chrome exited $?"
"$XTCD" --export dial9 "$DIR" >"$T/trace.d9" 2>"$T/d9.err" || fail "--export dial9 exited $?"
sid=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "session_start" and r["comm"] == "xtc-demo": print(r["session"]); break' "$T/all.json")
"$XTCD" --export xtcl "$DIR" --session "$sid" >"$T/dump.xtcl" || fail "--export xtcl exited $?"
"$XTCD" --export chrome "$DIR" --session "$sid" --kind RUN,park >"$T/run.json" || fail "--export chrome with filters exited $?"

python3 - "$T" "$sid" <<'EOF' || fail "export formats"
import json, struct, sys
from collections import Counter, defaultdict
from decimal import Decimal

T, sid = sys.argv[1], int(sys.argv[2])
def fail(msg):
    sys.exit("FAIL: " + msg)

# ---- what --cat says
recs = [json.loads(l) for l in open(T + "/all.json")]
anchor = {}
for r in recs:
    if r["type"] == "session_start":
        anchor.setdefault(r["session"], (r["anchor_real_ns"], r["anchor_mono_ns"]))
def wall(r):
    a = anchor[r["session"]]
    return a[0] + r["ts_ns"] - a[1]
events = [r for r in recs if r["type"] == "event"]
drops = [r for r in recs if r["type"] == "drop"]
ends = [r for r in recs if r["type"] == "session_end"]
if not drops:
    fail("the fixture has no drops: the overloaded session did not overload")
# one thread per loop here: its records are stamped in the order it wrote them
last = {}
for r in events:
    k = (r["session"], r["loop_id"])
    if r["ts_ns"] < last.get(k, 0):
        fail("session %d loop %d goes back in time: %d after %d" % (k + (r["ts_ns"], last[k])))
    last[k] = r["ts_ns"]

# ---- chrome
def load_chrome(path):
    d = json.load(open(path), parse_float=Decimal)
    if set(d) - {"traceEvents", "displayTimeUnit", "otherData"} or d.get("displayTimeUnit") != "ns":
        fail("top level: %r" % sorted(d))
    return d
d = load_chrome(T + "/trace.json")
origin = d["otherData"]["origin_real_ns"]
ev = d["traceEvents"]
for e in ev:
    for k in ("name", "ph", "ts", "pid", "tid"):
        if k not in e:
            fail("event without %s: %r" % (k, e))
    if e["ph"] not in "MXistf":
        fail("unexpected phase: %r" % e)
    if e["ph"] == "i" and e.get("s") not in ("t", "p", "g"):
        fail("instant without a scope: %r" % e)
ns = lambda us: int(us * 1000)
procs = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
threads = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
for e in ev:
    if e["ph"] != "M" and e["pid"] not in procs:
        fail("no process_name for pid %d" % e["pid"])
    if (e["ph"] in "Xstf" or e.get("s") == "t") and (e["pid"], e["tid"]) not in threads:
        fail("no thread_name for %r" % ((e["pid"], e["tid"]),))
tracks = defaultdict(list)
for e in ev:
    if e["ph"] == "X":
        if e["dur"] < 0 or abs(e["dur"] * 1000 - e["args"]["dur_ns"]) > Decimal("0.001"):
            fail("dur is not the slice's length in args.dur_ns: %r" % e)
        tracks[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + e["args"]["dur_ns"]))
for t, sl in tracks.items():
    sl.sort()
    for (a0, a1), (b0, b1) in zip(sl, sl[1:]):
        if b0 < a1:
            fail("slices overlap on track %r: [%d,%d) and [%d,%d)" % (t, a0, a1, b0, b1))
runs = sorted(wall(r) for r in events if r["kind"] == "RUN")
xs = sorted(origin + s for sl in tracks.values() for s, _ in sl)
if runs != xs:
    fail("%d RUN slices, %d RUN records, or their times differ" % (len(xs), len(runs)))
others = sorted(wall(r) for r in events if r["kind"] != "RUN")
inst = sorted(origin + ns(e["ts"]) for e in ev if e["ph"] == "i" and e["s"] == "t")
if others != inst:
    fail("%d thread instants for %d other records, or their times differ" % (len(inst), len(others)))
dm = [e for e in ev if e["name"].startswith("DROP ")]
if len(dm) != len(drops) or sum(e["args"]["count"] for e in dm) != sum(r["count"] for r in drops):
    fail("%d DROP markers for %d drops" % (len(dm), len(drops)))
em = [e for e in ev if e["name"].startswith("SESSION END")]
if len(em) != len(ends) or any(e["s"] not in "pg" for e in dm + em):
    fail("session end markers: %r" % em)
if not any("INCOMPLETE" in e["name"] for e in em) or not any("complete" in e["name"] for e in em):
    fail("session end markers do not say complete / INCOMPLETE: %r" % [e["name"] for e in em])
print("ok: chrome: %d events, %d tracks, %d slices without overlap, %d instants, %d drop and "
      "%d end markers, every time exact" % (len(ev), len(threads), len(xs), len(inst), len(dm), len(em)))

f = load_chrome(T + "/run.json")["traceEvents"]
names = Counter(e["name"].split(" ")[0] for e in f if e["ph"] != "M")
want_runs = sum(1 for r in events if r["session"] == sid and r["kind"] == "RUN")
want_parks = sum(1 for r in events if r["session"] == sid and r["kind"] == "PARK")
if names["RUN"] != want_runs or names["PARK"] != want_parks or set(names) - {"RUN", "PARK", "SESSION"}:
    fail("--session %d --kind RUN,park: %r" % (sid, names))
print("ok: chrome with --session --kind: %d slices, %d PARK instants, session markers" % (want_runs, want_parks))

# ---- dial9, from the framing of dial9-trace-format/SPEC.md version 1
b = open(T + "/trace.d9", "rb").read()
if b[:5] != b"TRC\x00\x01":
    fail("dial9 magic/version: %r" % b[:5])
p, base, schemas, d9ts, kinds = 5, 0, {}, [], Counter()
def take(n):
    global p
    if p + n > len(b):
        fail("dial9: frame runs past the end at %d" % p)
    v = b[p:p + n]
    p += n
    return v
u = lambda n: int.from_bytes(take(n), "little")
def leb():
    v, s = 0, 0
    while True:
        c = u(1)
        v |= (c & 0x7f) << s
        s += 7
        if not c & 0x80:
            return v
        if s >= 70:
            fail("dial9: LEB128 too long")
while p < len(b):
    tag = u(1)
    if tag == 1:
        tid, name = u(2), take(u(2)).decode()
        has_ts, fields = u(1), [(take(u(2)).decode(), u(1)) for _ in range(u(2))]
        if tid in schemas:
            fail("dial9: schema %d twice" % tid)
        schemas[tid] = (name, has_ts, fields)
    elif tag == 2:
        tid = u(2)
        if tid not in schemas:
            fail("dial9: event of type %d before its schema" % tid)
        name, has_ts, fields = schemas[tid]
        if has_ts:
            base += u(3)
            d9ts.append(base)
        for fname, ft in fields:
            if ft in (3, 11): u(1)
            elif ft == 7: u(4)
            elif ft == 9: leb()
            else: fail("dial9: field type %d" % ft)
        kinds[name] += 1
    elif tag == 3:
        for _ in range(u(4)):
            u(4); take(u(4))
    elif tag == 5:
        base = u(8)
    elif tag == 6:
        leb()
        for _ in range(u(2)):
            u(2); take(u(2)); take(u(4))
    else:
        fail("dial9: unknown frame tag %d at %d" % (tag, p - 1))
if sorted(r["ts_ns"] for r in events) != d9ts or d9ts != sorted(d9ts):
    fail("dial9: %d events; their timestamps are not the records' in time order" % len(d9ts))
if kinds["PollStartEvent"] != len(runs):
    fail("dial9: %d PollStartEvent for %d RUN" % (kinds["PollStartEvent"], len(runs)))
print("ok: dial9: %d frames of %d schemas, %d events, timestamps exact and in order" % (
      sum(kinds.values()), len(schemas), len(d9ts)))

# ---- xtcl (seed 000): "XTCL" version 3 flags 1 count base_ts_ns
x = open(T + "/dump.xtcl", "rb").read()
magic, ver, flags, count, base = struct.unpack_from("<4sIIIQ", x)
mine = sorted((r for r in events if r["session"] == sid), key=lambda r: r["ts_ns"])
if (magic, ver, flags, count) != (b"XTCL", 3, 1, len(mine)) or base != mine[0]["ts_ns"]:
    fail("xtcl header: %r" % ((magic, ver, flags, count, base),))
b, p, cur = x, 24, base
names = ["SPAWN", "EXIT", "WAKE", "RUN", "PARK", "SEND", "RECV", "MBOX_HWM", "LOOP_POLL",
         "PARK_TASK", "REAP", "SUBMIT", "SUBMIT_FAIL", "POLL_FULL", "LIFECYCLE_DROP",
         "LOOP_WAIT", "LOOP_WAKE", "LOOP_DISPATCH", "CB_BEGIN", "CB_END", "CB_FUNC",
         "WATCH_START", "WATCH_STOP"]
for r in mine:
    kind, src = u(1), u(1)
    cur += leb()
    got = (names[kind], cur, leb(), leb(), leb(), leb())
    want = (r["kind"], r["ts_ns"], r["loop_id"], r["local_id"], r["gen"], r["detail"])
    if got != want:
        fail("xtcl record %r, want %r" % (got, want))
if p != len(x):
    fail("xtcl: %d bytes after the last record" % (len(x) - p))
print("ok: xtcl: header and all %d records of session %d" % (len(mine), sid))
EOF

# Binary is not written to a terminal; bad formats and missing DIRs are one line, exit 2.
python3 - "$XTCD" "$DIR" <<'EOF' || fail "binary to a terminal"
import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.run([sys.argv[1], "--export", "dial9", sys.argv[2]], stdout=s, stderr=subprocess.PIPE)
os.close(s)
os.set_blocking(m, False)
try:
    out = os.read(m, 100)
except OSError:
    out = b""
err = p.stderr.decode()
if p.returncode != 2 or out or err.count("\n") != 1 or "redirect" not in err:
    sys.exit("FAIL: dial9 to a terminal: rc %d, %d bytes out, stderr %r" % (p.returncode, len(out), err))
print("ok: binary output to a terminal refused: " + err.strip())
EOF
for args in "--export bogus $DIR" "--export chrome" "--export chrome $DIR --json" \
            "--export xtcl $T/nonexistent"; do
	"$XTCD" $args >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] || { cat "$T/err"; fail "xtcd $args: exit $rc"; }
	[ -s "$T/out" ] && fail "xtcd $args wrote to stdout"
	echo "ok: xtcd $args: $(cat "$T/err")"
done
