#!/bin/bash
# xtcd --export ctf DIR OUT read by babeltrace2 (Debian babeltrace2), on a
# record of the demo's mix (3 loops) and an overloaded session with drops,
# and on a crafted record with a DROP in every awkward place:
#  - babeltrace2 OUT prints every event record --cat prints, each with its
#    fields (session, ring, loop; proc and detail) and its exact wall-clock
#    time, in time order;
#  - every DROP is a discarded-events count babeltrace2 reports as it does
#    for LTTng ("Tracer discarded N events between ...", or "1 event"),
#    adding up to the records dropped, in the stream of the ring that lost
#    them, and babeltrace2 says nothing else on stderr;
#  - the clock is CLOCK_MONOTONIC with the sessions' real offset;
#  - OUT must be new or empty; a missing OUT is one line, exit 2.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
DEMO=${DEMO:-$top_builddir/examples/xtc-demo}
SEGWRITE=${SEGWRITE:-$top_builddir/tests/xtc-segwrite}
command -v babeltrace2 >/dev/null 2>&1 ||
	{ echo "SKIP: babeltrace2 is not installed (Debian babeltrace2; scripts/deps.sh installs it)"; exit 77; }

# check_ctf SEGS NAME: --export ctf SEGS into $T/NAME, read by babeltrace2,
# against --cat's records of SEGS.
check_ctf() {
	"$XTCD" --cat "$1" --json >"$T/$2.json" 2>"$T/$2.cat.err" ||
		fail "xtcd --cat exited $?: $(cat "$T/$2.cat.err")"
	"$XTCD" --export ctf "$1" "$T/$2" 2>"$T/$2.err" || fail "--export ctf exited $?: $(cat "$T/$2.err")"
	[ "$(wc -l <"$T/$2.err")" = 1 ] && grep -q "events in .* streams" "$T/$2.err" ||
		fail "--export ctf should say in one line what it wrote: $(cat "$T/$2.err")"
	echo "ok: $(cat "$T/$2.err")"
	babeltrace2 --clock-seconds "$T/$2" >"$T/$2.bt.txt" 2>"$T/$2.bt.err" ||
		fail "babeltrace2 exited $?: $(tail -n 5 "$T/$2.bt.err")"
	python3 - "$T" "$2" <<'PY' || fail "babeltrace2's reading of $2"
import json, os, re, sys
from collections import Counter, defaultdict

T, NAME = sys.argv[1], sys.argv[2]
def fail(msg):
    sys.exit("FAIL: " + msg)
recs = [json.loads(l) for l in open(T + "/" + NAME + ".json")]
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
for l in open(T + "/" + NAME + ".bt.txt"):
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

# babeltrace2 (text.pretty) says "1 event", "N events"; every line it
# writes to stderr must be one of these, so that no count goes unread.
warn = re.compile(r"Tracer discarded (\d+) events? between \[[^]]+\] and \[[^]]+\] in trace .* within stream \"([^\"]+)\"")
disc = defaultdict(int)
for l in open(T + "/" + NAME + ".bt.err"):
    m = warn.search(l)
    if not m:
        fail("babeltrace2 said what is not a discarded-events count: %r" % l)
    disc[os.path.basename(m.group(2))] += int(m.group(1))
lost = defaultdict(int)
for r in drops:
    loop = "noloop" if r["loop_id"] in (None, -1, 4294967295) else "loop%d" % r["loop_id"]
    lost["session%d-%s-ring%d" % (r["session"], loop, r["ring"])] += r["count"]
if dict(disc) != dict(lost):
    fail("discarded events per stream %r, DROP records say %r" % (dict(disc), dict(lost)))
print("ok: %d DROP records (%d records) reported by babeltrace2 as discarded events in %d streams"
      % (len(drops), sum(lost.values()), len(lost)))

meta = open(T + "/" + NAME + "/metadata").read()
off = int(re.search(r"offset_s = (-?\d+);", meta).group(1)) * 10**9 + int(re.search(r"\toffset = (\d+);", meta).group(1))
if off != min(a[0] - a[1] for a in anchor.values()) or "map = clock.monotonic.value" not in meta:
    fail("the clock's offset %d is not the sessions' wall-clock anchor %r" % (off, anchor))
print("ok: the clock is CLOCK_MONOTONIC, offset by the sessions' wall-clock anchor")
PY
}

start_xtcd --drain-ms 20
"$DEMO" --loops 3 --events 3000 >/dev/null || fail "xtc-demo failed"
# the smallest ring (64 records), so that the drain cannot keep pace even
# on a quiet machine with the drain boosted: the fixture needs its drops
XTC_TAIL_RING_RECORDS=64 "$LOADGEN" 2 100000 >/dev/null || fail "loadgen (overload) failed"
for _ in $(seq 1 500); do
	[ "$(grep -c 'ended: detached' "$T/xtcd.log")" -ge 2 ] && break
	sleep 0.02
done
stop_xtcd
check_ctf "$DIR" ctf

# The same on a record written block by block (tests/segwrite.c), with a
# DROP in each place a packet boundary can go wrong: first in its stream,
# of one record (babeltrace2 says "1 event"), two in a row, after a
# stream's last event, on a packet that just filled (PACKET_BYTES holds
# 1927 events), and in no ring.  An overloaded producer makes some of
# these only now and then.
mkdir "$T/crafted.segs"
t=100000
{
	echo "start 1 4242"
	echo "drop 1 0 0 3 5000"
	echo "events 1 0 0 10000 4"
	echo "drop 1 0 0 1 20000"
	echo "events 1 0 0 30000 4"
	echo "drop 1 0 0 2 40000"
	echo "drop 1 0 0 5 40001"
	echo "events 1 0 0 50000 4"
	echo "drop 1 0 0 7 60000"
	echo "events 1 1 1 10000 4"
	echo "drop 1 1 1 1 60000"
	echo "drop 1 none 4294967295 4 70000"
	for _ in $(seq 1 30); do
		echo "events 1 2 2 $t 64"
		t=$((t + 64000))
	done
	echo "events 1 2 2 $t 7"
	echo "drop 1 2 2 1 $((t + 7000))"
	echo "events 1 2 2 $((t + 8000)) 1"
	echo "drop 1 2 2 1 $((t + 9000))"
	echo "end 1"
} | "$SEGWRITE" "$T/crafted.segs" || fail "xtc-segwrite failed"
check_ctf "$T/crafted.segs" crafted
grep -q "Tracer discarded 1 event between" "$T/crafted.bt.err" ||
	fail "the crafted record should have made babeltrace2 say \"1 event\""

# A filter that matches nothing: a trace babeltrace2 reads, and one line
# saying it holds no events.
"$XTCD" --export ctf "$DIR" "$T/none" --pid 1 2>"$T/none.err" || fail "--export ctf --pid 1 exited $?: $(cat "$T/none.err")"
[ "$(cat "$T/none.err")" = "xtcd: no event records matched: the ctf trace in $T/none holds its metadata and no events" ] ||
	fail "--export ctf matching nothing said: $(cat "$T/none.err")"
babeltrace2 "$T/none" >"$T/none.bt" 2>&1 || fail "babeltrace2 on the empty trace: $(tail -n 3 "$T/none.bt")"
[ -s "$T/none.bt" ] && fail "babeltrace2 printed events of an empty trace: $(head -n 3 "$T/none.bt")"
echo "ok: $(cat "$T/none.err")"

# OUT must be new or empty, and given.
for args in "--export ctf $DIR $T/ctf" "--export ctf $DIR"; do
	"$XTCD" $args >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] || { cat "$T/err"; fail "xtcd $args: exit $rc"; }
	echo "ok: xtcd $args: $(cat "$T/err")"
done
