#!/bin/bash
# xtcd --direct: the whole 4 KiB blocks of large writes go O_DIRECT (past
# the page cache), the rest of each write through it.
#  1. On the test's own filesystem, where it takes O_DIRECT: flat-out
#     load, both writers (io_uring, pwrite).  The segments are mostly not
#     in the page cache afterwards (fincore), --cat reads them cleanly,
#     no loop misses a record beyond those dropped, and the counts
#     reconcile with nothing lost.
#  2. The same with a follower running and segments rotating: the
#     follower prints what --cat prints.
#  3. xtcd killed (SIGKILL) three times under a steady load whose drains
#     are large enough to go O_DIRECT (600k events/s, --drain-ms 100),
#     started again each time: recovery leaves segments that read
#     cleanly, and no record of the producer's loops is missing beyond
#     those dropped.
#  4. On a ramfs, which refuses O_DIRECT: said once in the log (however
#     many segments), everything written through the page cache.
#     Needs root (or CAP_SYS_ADMIN) to mount; that part alone is skipped
#     without.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

# loops_ok FILE: the loops of xtc-loadgen in --cat --json FILE miss no
# record beyond the drops recorded (DROP records, and what a re-attaching
# producer dropped while no xtcd ran: its session's dropped_before, which
# counts from the process's start); prints a summary.
loops_ok() {
	python3 - "$1" <<'EOF'
import json, re, sys
from collections import defaultdict
ev = re.compile(rb'^\{"type":"event","session":(\d+),.*"loop_id":(\d+),.*"detail":(\d+)\}$')
seen, dropped, before = defaultdict(set), 0, 0
for line in open(sys.argv[1], "rb"):
    m = ev.match(line)
    if m:
        seen[int(m.group(2))].add(int(m.group(3)))
        continue
    r = json.loads(line)
    if r["type"] == "drop":
        dropped += r["count"]
    elif r["type"] == "session_start" and not r.get("restated"):
        before = max(before, r["dropped_before"])
dropped += before
bad = []
if sorted(seen) != [0, 1]:
    bad.append("loops %r, expected 0 and 1" % sorted(seen))
for loop, d in sorted(seen.items()):
    missing = max(d) + 1 - len(d)
    if missing > dropped:
        bad.append("loop %d: %d of %d records missing (%d dropped)" % (loop, missing, max(d) + 1, dropped))
for b in bad:
    print("  " + b)
if not bad:
    print("  loops 0 and 1: %s records, none missing beyond %d dropped" %
          (" and ".join(str(max(d) + 1) for d in seen.values()), dropped))
sys.exit(1 if bad else 0)
EOF
}

# reconciles: the first session's end line says produced == written +
# dropped, and lost 0.
reconciles() {
	local line
	line=$(grep -m1 "ended:" "$T/xtcd.log")
	python3 - "$line" <<'EOF'
import re, sys
m = re.search(r"produced (\d+), written (\d+), dropped (\d+), lost (\d+)", sys.argv[1])
if not m:
    sys.exit("no counts in: " + sys.argv[1])
p, w, d, l = map(int, m.groups())
if p != w + d or l != 0 or w == 0:
    sys.exit("produced %d, written %d, dropped %d, lost %d" % (p, w, d, l))
print("  produced %d = written %d + dropped %d, lost 0" % (p, w, d))
EOF
}

# resident: percent of the segments' bytes in the page cache.
resident() {
	fincore -b -n -o RES,SIZE "$DIR"/xtc-*.seg |
		awk '{ r += $1; s += $2 } END { printf "%d\n", s ? 100 * r / s : 100 }'
}

fs=$(stat -f -c %T "$DIR")
probe=$DIR/.direct-probe
if ! dd if=/dev/zero of="$probe" bs=4096 count=1 oflag=direct 2>/dev/null; then
	rm -f "$probe"
	echo "SKIP: $DIR ($fs) takes no O_DIRECT write; part 4 covers such a filesystem"
	exit 77
fi
rm -f "$probe"

# ---- 1: both writers, flat out, no reader
for io in io_uring pwrite; do
	rm -rf "$DIR"; mkdir -p "$DIR"; : >"$T/xtcd.log"
	flags=(--direct)
	[ "$io" = pwrite ] && flags+=(--pwrite)
	start_xtcd "${flags[@]}" --segment-bytes 16M
	grep -q "listening on .*$io.*, O_DIRECT)" "$T/xtcd.log" || fail "$io: the startup line does not say O_DIRECT"
	XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 1500000 0 >"$T/lg.out" 2>&1 || fail "$io: xtc-loadgen exited $?"
	wait_log "ended:" 20
	stop_xtcd
	grep -q "O_DIRECT refused\|O_DIRECT write" "$T/xtcd.log" && fail "$io: xtcd said: $(grep O_DIRECT "$T/xtcd.log")"
	res=$(resident)
	if command -v fincore >/dev/null 2>&1 && [ "$fs" != tmpfs ]; then
		[ "$res" -lt 50 ] || fail "$io: $res% of the segments are in the page cache: not written O_DIRECT"
	fi
	cat_json
	[ -s "$T/cat.err" ] && fail "$io: --cat said: $(head -n 3 "$T/cat.err")"
	loops_ok "$T/all.json" || fail "$io: records missing"
	reconciles || fail "$io: the counts do not reconcile"
	echo "ok 1 ($io): $res% of the segments in the page cache after writing ($fs)"
done

# ---- 2: a follower while segments rotate
rm -rf "$DIR"; mkdir -p "$DIR"; : >"$T/xtcd.log"
start_xtcd --direct --segment-bytes 2M
"$XTCD" --follow "$DIR" -n all --json >"$T/f.json" 2>"$T/f.err" &
f=$!
XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 1500000 0 >"$T/lg.out" 2>&1 || fail "xtc-loadgen exited $?"
wait_log "ended:" 20
stop_xtcd
cat_json
n=$(wc -l <"$T/all.json")
for _ in $(seq 1 500); do
	[ "$(wc -l <"$T/f.json")" -ge "$n" ] && break
	sleep 0.02
done
kill -INT "$f"
wait "$f" || fail "the follower exited $? on SIGINT"
diff "$T/all.json" "$T/f.json" >"$T/diff" || { head -n 5 "$T/diff"; fail "the follower's lines differ from --cat's"; }
segs=$(ls "$DIR"/xtc-*.seg | wc -l)
[ "$segs" -ge 3 ] || fail "only $segs segments: no rotation to follow"
loops_ok "$T/all.json" || fail "records missing (follower)"
echo "ok 2: the follower saw the same $n lines as --cat across $segs segments"

# ---- 3: SIGKILL under load, recovery
rm -rf "$DIR"; mkdir -p "$DIR"; : >"$T/xtcd.log"
start_xtcd --direct --segment-bytes 4M --drain-ms 100
XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 1000000000 300000 >"$T/lg.out" 2>&1 &
lg=$!
trap 'kill -9 "$lg" 2>/dev/null; cleanup' EXIT
for r in 1 2 3; do
	wait_log "(xtc-loadgen) uid [0-9]* attached" 5
	sleep "0.$((RANDOM % 4 + 4))"
	# before the first restart, whose recovery reads the newest segment
	# (into the page cache): the writes go O_DIRECT
	[ "$r" -eq 1 ] && res=$(resident)
	kill -9 "$XTCD_PID"
	wait "$XTCD_PID" 2>/dev/null
	XTCD_PID=
	cat "$T/xtcd.log" >>"$T/xtcd.log.all"
	: >"$T/xtcd.log"
	start_xtcd --direct --segment-bytes 4M --drain-ms 100
done
if command -v fincore >/dev/null 2>&1 && [ "$fs" != tmpfs ]; then
	[ "$res" -lt 50 ] || fail "crashes: $res% of the segments were in the page cache: not written O_DIRECT"
fi
wait_log "(xtc-loadgen) uid [0-9]* attached" 5
sleep 0.3
kill -9 "$lg"
wait "$lg" 2>/dev/null
wait_log "ended: producer died" 5
stop_xtcd
cat_json
[ -s "$T/cat.err" ] && fail "after the crashes --cat said: $(head -n 3 "$T/cat.err")"
loops_ok "$T/all.json" || fail "records missing after the crashes"
echo "ok 3: three SIGKILLs under load ($res% of the segments in the page cache before the first), every segment reads cleanly"

# ---- 4: a filesystem without O_DIRECT
FS=$T/ramfs
mkdir -p "$FS"
if ! mount -t ramfs -o mode=0755 xtc-e2e "$FS" 2>"$T/mount.err"; then
	echo "part 4 skipped: cannot mount a ramfs here ($(cat "$T/mount.err")); needs root or CAP_SYS_ADMIN"
	echo PASS
	exit 0
fi
trap '[ -n "$XTCD_PID" ] && kill -9 "$XTCD_PID" 2>/dev/null; umount -l "$FS"; cleanup' EXIT
DIR=$FS/segments
mkdir -p "$DIR"; : >"$T/xtcd.log"
start_xtcd --direct --segment-bytes 1M
XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 1000000 0 >"$T/lg.out" 2>&1 || fail "ramfs: xtc-loadgen exited $?"
wait_log "ended:" 20
stop_xtcd
grep "listening on" "$T/xtcd.log" | grep -q "O_DIRECT" && fail "ramfs: the startup line says O_DIRECT"
said=$(grep -c "O_DIRECT refused" "$T/xtcd.log")
segs=$(ls "$DIR"/xtc-*.seg | wc -l)
[ "$said" -eq 1 ] || fail "ramfs: the refusal was said $said times, not once ($segs segments)"
[ "$segs" -ge 2 ] || fail "ramfs: $segs segment: no second refusal to keep quiet"
cat_json
[ -s "$T/cat.err" ] && fail "ramfs: --cat said: $(head -n 3 "$T/cat.err")"
loops_ok "$T/all.json" || fail "ramfs: records missing"
reconciles || fail "ramfs: the counts do not reconcile"
echo "ok 4: ramfs: '$(grep -o "O_DIRECT refused.*" "$T/xtcd.log")' once over $segs segments"
echo PASS
