#!/bin/bash
# xtcd --export ctf DIR OUT read by babeltrace2 (Debian babeltrace2), on a
# record of the demo's mix (3 loops) and an overloaded session with drops:
#  - babeltrace2 OUT prints every event record --cat prints, each with its
#    fields (session, ring, loop; proc and detail) and its exact wall-clock
#    time, in time order;
#  - every DROP is a discarded-events count babeltrace2 reports as it does
#    for LTTng ("Tracer discarded N events between ..."), adding up to the
#    records dropped, in the stream of the ring that lost them;
#  - the clock is CLOCK_MONOTONIC with the sessions' real offset;
#  - OUT must be new or empty; a missing OUT is one line, exit 2.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
DEMO=${DEMO:-$top_builddir/examples/xtc-demo}
command -v babeltrace2 >/dev/null 2>&1 ||
	{ echo "SKIP: babeltrace2 is not installed (Debian babeltrace2; scripts/deps.sh installs it)"; exit 77; }

start_xtcd --drain-ms 20
"$DEMO" --loops 3 --events 3000 >/dev/null || fail "xtc-demo failed"
XTC_TAIL_RING_RECORDS=1024 "$LOADGEN" 2 100000 >/dev/null || fail "loadgen (overload) failed"
for _ in $(seq 1 500); do
	[ "$(grep -c 'ended: detached' "$T/xtcd.log")" -ge 2 ] && break
	sleep 0.02
done
stop_xtcd
cat_json
"$XTCD" --export ctf "$DIR" "$T/ctf" 2>"$T/ctf.err" || fail "--export ctf exited $?: $(cat "$T/ctf.err")"
[ "$(wc -l <"$T/ctf.err")" = 1 ] && grep -q "events in .* streams" "$T/ctf.err" ||
	fail "--export ctf should say in one line what it wrote: $(cat "$T/ctf.err")"
echo "ok: $(cat "$T/ctf.err")"
babeltrace2 --clock-seconds "$T/ctf" >"$T/bt.txt" 2>"$T/bt.err" ||
	fail "babeltrace2 exited $?: $(tail -n 5 "$T/bt.err")"

python3 - "$T" <<'PY' || fail "babeltrace2's reading"
import json, os, re, sys
from collections import Counter, defaultdict

T = sys.argv[1]
def fail(msg):
    sys.exit("FAIL: " + msg)
recs = [json.loads(l) for l in open(T + "/all.json")]
anchor = {r["session"]: (r["anchor_real_ns"], r["anchor_mono_ns"]) for r in recs if r["type"] == "session_start"}
def wall(r):
    a = anchor[r["session"]]
    return a[0] + r["ts_ns"] - a[1]
events = [r for r in recs if r["type"] == "event"]
drops = [r for r in recs if r["type"] == "drop"]
if not drops:
    fail("the fixture has no drops: the overloaded session did not overload")

line = re.compile(r"^\[(\d+)\.(\d{9})\] \(\S+\) (\w+): \{ session = (\d+), os_pid = (\d+), ring = (\d+), "
                  r"loop = (\d+) \}, \{ loop_id = (\d+), local_id = (\d+), gen = (\d+), detail = (\d+) \}$")
got, last = [], 0
for l in open(T + "/bt.txt"):
    m = line.match(l.rstrip("\n"))
    if not m:
        fail("babeltrace2 printed a line without every field: %r" % l)
    g = m.groups()
    t = int(g[0]) * 10**9 + int(g[1])
    if t < last:
        fail("babeltrace2's events go back in time at %r" % l)
    last = t
    got.append((t, g[2], int(g[3])) + tuple(int(x) for x in g[5:]))
def key(r):
    return (wall(r), r["kind"], r["session"], r["loop_id"], r["local_id"], r["gen"], r["detail"])
want = Counter(key(r) for r in events)
have = Counter((t, k, s, a, b, c, d) for t, k, s, ring, loop, a, b, c, d in got)
if len(got) != len(events):
    fail("babeltrace2 printed %d events, --cat %d" % (len(got), len(events)))
if have != want:
    diff = list((want - have).items())[:3]
    fail("events differ from --cat's: missing %r" % diff)
print("ok: babeltrace2: %d events = --cat's %d, every field and exact wall-clock time, in order"
      % (len(got), len(events)))

warn = re.compile(r"Tracer discarded (\d+) events between \[[^]]+\] and \[[^]]+\] in trace .* within stream \"([^\"]+)\"")
disc = defaultdict(int)
for l in open(T + "/bt.err"):
    m = warn.search(l)
    if m:
        disc[os.path.basename(m.group(2))] += int(m.group(1))
lost = defaultdict(int)
for r in drops:
    loop = "noloop" if r["loop_id"] in (None, -1, 4294967295) else "loop%d" % r["loop_id"]
    lost["session%d-%s-ring%d" % (r["session"], loop, r["ring"])] += r["count"]
if dict(disc) != dict(lost):
    fail("discarded events per stream %r, DROP records say %r" % (dict(disc), dict(lost)))
print("ok: %d DROP records (%d records) reported by babeltrace2 as discarded events in %d streams"
      % (len(drops), sum(lost.values()), len(lost)))

meta = open(T + "/ctf/metadata").read()
off = int(re.search(r"offset_s = (-?\d+);", meta).group(1)) * 10**9 + int(re.search(r"\toffset = (\d+);", meta).group(1))
if off != min(a[0] - a[1] for a in anchor.values()) or "map = clock.monotonic.value" not in meta:
    fail("the clock's offset %d is not the sessions' wall-clock anchor %r" % (off, anchor))
print("ok: the clock is CLOCK_MONOTONIC, offset by the sessions' wall-clock anchor")
PY

# OUT must be new or empty, and given.
for args in "--export ctf $DIR $T/ctf" "--export ctf $DIR"; do
	"$XTCD" $args >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] || { cat "$T/err"; fail "xtcd $args: exit $rc"; }
	echo "ok: xtcd $args: $(cat "$T/err")"
done
