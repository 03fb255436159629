#!/bin/bash
# kill -9 of xtcd at random points of a steady write load, 20 times in a
# row, the producer re-attaching by itself each time.  After every
# restart the segment the dead daemon was writing reads cleanly (recovery
# cut its torn tail) and holds at least the event records it held before
# the restart: no complete block is lost.  Twice the kill is made to look
# as if it came while xtcd created its next segment (an empty file, a cut
# file header): recovery must leave that file alone (nothing tells it from
# one someone else put there), say so, and close the sessions of the
# segment before it.  At the end every segment reads with exit 0,
# every session has an end (daemon_crashed for those a crash orphaned), no
# session id was handed out twice, and no record of the producer's loops
# is missing.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

rounds=${XTC_CRASH_ROUNDS:-20}
seed=${XTC_TEST_SEED:-$$}
RANDOM=$seed
echo "seed $seed (XTC_TEST_SEED=$seed reruns these kill points), $rounds rounds"
flags=(--drain-ms 10 --segment-bytes 1M --max-bytes 1G)

# events SEGMENT: the event records in that one segment, alone in a
# directory; its problems (a torn tail) go to $T/one.err.
events() {
	rm -rf "$T/one" && mkdir "$T/one" && ln -s "$1" "$T/one/"
	"$XTCD" --cat "$T/one" --json 2>"$T/one.err" | grep -c '^{"type":"event"'
}

start_xtcd "${flags[@]}"
XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 1000000000 50000 >"$T/lg.out" 2>&1 &
lg=$!
trap 'kill -9 "$lg" 2>/dev/null; cleanup' EXIT
orphans=0
planted=()
for r in $(seq 1 "$rounds"); do
	wait_log "(xtc-loadgen) uid [0-9]* attached" 5
	sleep "0.$((RANDOM % 5 + 1))$((RANDOM % 10))"
	kill -9 "$XTCD_PID"
	wait "$XTCD_PID" 2>/dev/null
	XTCD_PID=
	last=$(ls "$DIR"/xtc-*.seg | tail -n 1)
	before=$(events "$last")
	created=
	if [ "$r" -eq 3 ] || [ "$r" -eq 6 ]; then
		n=$(basename "$last" .seg)
		created=$DIR/xtc-$(printf '%06d' $((10#${n#xtc-} + 1))).seg
		head -c $(( r == 3 ? 0 : 57 )) "$last" >"$created"
	fi
	cat "$T/xtcd.log" >>"$T/xtcd.log.all"
	: >"$T/xtcd.log"
	start_xtcd "${flags[@]}"
	if [ ! -e "$last" ]; then
		fail "round $r: $(basename "$last") ($before event records) is gone after the restart"
	elif [ "$(stat -c %s "$last")" -lt 100 ] && grep -q "$(basename "$last") is not a segment: " "$T/xtcd.log"; then
		# killed while creating it: shorter than a header, left alone
		after="0 (it has no file header: left alone)"
	else
		after=$(events "$last")
		[ "$after" -ge "$before" ] ||
			fail "round $r: $(basename "$last") held $before event records before the restart, $after after"
		[ ! -s "$T/one.err" ] ||
			fail "round $r: $(basename "$last") still has a bad tail: $(cat "$T/one.err")"
	fi
	n=$(grep -c "left open by a crash: closed as incomplete" "$T/xtcd.log")
	orphans=$((orphans + n))
	if [ -n "$created" ]; then
		[ "$(stat -c %s "$created")" -eq $(( r == 3 ? 0 : 57 )) ] &&
			grep -q "$(basename "$created") is not a segment: [0-9]* bytes, shorter than a segment's file header" "$T/xtcd.log" ||
			fail "round $r: recovery did not leave $(basename "$created") alone with one line: $(grep "$(basename "$created")" "$T/xtcd.log")"
		[ "$n" -ge 1 ] || fail "round $r: the sessions before $(basename "$created") were not closed"
		planted+=("$created")
	fi
	echo "  round $r: $(basename "$last") $before -> $after event records; $n session(s) closed as incomplete"
done
wait_log "(xtc-loadgen) uid [0-9]* attached" 5
kill -9 "$lg"
wait "$lg" 2>/dev/null
wait_log "ended: producer died" 5
stop_xtcd
[ "$orphans" -ge $((rounds / 2)) ] || fail "only $orphans sessions were closed as daemon_crashed in $rounds crashes"
# The planted files are no segments (a reader says so, exit 1): removed,
# as their log lines advise.
rm -f "${planted[@]}"
cat_json
python3 - "$T/all.json" <<'EOF' || fail "crash loop"
import re, sys
from collections import defaultdict

ev = re.compile(rb'^\{"type":"event","session":(\d+),.*"loop_id":(\d+),.*"detail":(\d+)\}$')
seen = defaultdict(set)
starts, ends, dropped, bad = set(), {}, 0, []
import json
for line in open(sys.argv[1], "rb"):
    m = ev.match(line)
    if m:
        seen[int(m.group(2))].add(int(m.group(3)))
        continue
    r = json.loads(line)
    if r["type"] == "session_start":
        if r["session"] in starts and not r["restated"]:
            bad.append("session id %d was handed out twice" % r["session"])
        starts.add(r["session"])
    elif r["type"] == "session_end":
        ends[r["session"]] = r
    elif r["type"] == "drop":
        dropped += r["count"]
for s in sorted(starts):
    e = ends.get(s)
    if e is None:
        bad.append("session %d has no end" % s)
    elif e["reason"] not in ("daemon_crashed", "producer_died") or e["complete"]:
        bad.append("session %d ended %r" % (s, e))
crashed = sum(1 for e in ends.values() if e["reason"] == "daemon_crashed")
if sorted(seen) != [0, 1]:
    bad.append("loops %r, expected 0 and 1" % sorted(seen))
for loop, d in sorted(seen.items()):
    missing = max(d) + 1 - len(d)
    if missing > dropped:
        bad.append("loop %d: %d of %d records missing (%d dropped)" % (loop, missing, max(d) + 1, dropped))
for b in bad:
    print("  " + b)
if not bad:
    print("ok: %d sessions, %d closed as daemon_crashed; loops 0 and 1 hold %s records, "
          "none missing beyond %d dropped" % (len(starts), crashed,
          " and ".join(str(max(d) + 1) for d in seen.values()), dropped))
sys.exit(1 if bad else 0)
EOF
echo PASS
