#!/bin/bash
# Disk full: the segment directory on a 3 MiB tmpfs, a filler file taking
# most of it, and a byte budget (64M) far larger than the filesystem.
# xtcd must keep running, delete its own oldest segments to make room
# when writes fail for lack of space, count what it still could not
# write as lost, end the session that lost records as io_error, and
# write normally again once the filler is gone; every session's counts
# reconcile (produced == written + dropped + lost) and --cat reads the
# directory with exit 0.  A second round, with 64 KiB segments and only
# 170 KiB free, has writes fail at the start of new segments, where the
# file header is: every segment must still begin with one.  Needs root
# (or CAP_SYS_ADMIN) to mount.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

FS=$T/fs
mkdir -p "$FS"
if ! mount -t tmpfs -o size=3M,mode=0755 xtc-e2e "$FS" 2>"$T/mount.err"; then
	echo "SKIP: cannot mount a tmpfs here ($(cat "$T/mount.err")); needs root or CAP_SYS_ADMIN"
	exit 77
fi
trap '[ -n "$XTCD_PID" ] && kill -9 "$XTCD_PID" 2>/dev/null; umount -l "$FS"; cleanup' EXIT
echo "a 3 MiB filesystem, 1.2 MiB free, 512 KiB segments:"
DIR=$FS/segments
mkdir -p "$DIR"

start_xtcd --max-bytes 64M --segment-bytes 512K --drain-ms 10
# leave about 1.2 MiB: two segments fit, then writes fail
head -c $((1800 * 1024)) /dev/zero >"$FS/filler"

# A: writes into the full filesystem and stays attached (HOLD_MS) until
# the space has come back, so its SESSION_END can be written.
XTC_TAIL_RING_RECORDS=262144 "$LOADGEN" 2 400000 200000 6000 >"$T/a.out" 2>&1 &
a=$!
wait_log "failed: No space left on device" 10
wait_log "to make room: the filesystem is full" 10
for _ in $(seq 1 250); do
	grep -q "^emitted" "$T/a.out" && break
	sleep 0.02
done
kill -0 "$XTCD_PID" 2>/dev/null || fail "xtcd died on a full disk"
rm -f "$FS/filler"
wait "$a" || fail "xtc-loadgen A exited $?"
wait_log "(pid $a, xtc-loadgen) ended" 5

# B: with room again, everything is written
"$LOADGEN" 2 50000 100000 >"$T/b.out" 2>&1 || fail "xtc-loadgen B exited $?"
wait_log "ended: detached, produced 100000, written 100000, dropped 0, lost 0, complete" 5
stop_xtcd
cat_json
python3 - "$T/all.json" <<'EOF' || fail "disk full"
import json, sys
starts, ends, evicted = {}, {}, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] == "session_start" and r["session"] not in starts:
        starts[r["session"]] = r
    elif r["type"] == "session_end":
        ends[r["session"]] = r
    elif r["type"] == "evicted":
        evicted.append(r)
bad = []
if len(starts) != 2:
    bad.append("expected sessions A and B, found %r" % sorted(starts))
for s in starts:
    e = ends.get(s)
    if e is None:
        bad.append("session %d has no end" % s)
    elif e["produced"] != e["written"] + e["dropped"] + e["lost"]:
        bad.append("session %d does not reconcile: %r" % (s, e))
a, b = (ends.get(s) for s in sorted(starts)[:2]) if len(starts) >= 2 else (None, None)
if a and not (a["lost"] > 0 and a["reason"] == "io_error" and not a["complete"]
              and a["produced"] == 800000):
    bad.append("A (on the full disk) should end io_error with lost > 0: %r" % a)
if b and not (b["reason"] == "detached" and b["complete"] and b["written"] == 100000):
    bad.append("B (after the space came back) should be complete: %r" % b)
if not evicted:
    bad.append("no EVICTED record: xtcd did not delete old segments to make room")
for x in bad:
    print("  " + x)
if not bad:
    print("ok: A produced %d = written %d + dropped %d + lost %d (io_error); B complete; "
          "%d EVICTED records" % (a["produced"], a["written"], a["dropped"], a["lost"], len(evicted)))
sys.exit(1 if bad else 0)
EOF

echo "again with 64 KiB segments and 170 KiB free:"
umount "$FS" && mount -t tmpfs -o size=3M,mode=0755 xtc-e2e "$FS" || fail "remounting the tmpfs"
mkdir -p "$DIR"
: >"$T/xtcd.log"
start_xtcd --max-bytes 64M --segment-bytes 64K --drain-ms 10
head -c $((2900 * 1024)) /dev/zero >"$FS/filler" 2>/dev/null
"$LOADGEN" 2 100000 100000 3000 >"$T/a2.out" 2>&1 &
a=$!
wait_log "failed: No space left on device" 10
sleep 1
rm -f "$FS/filler"
wait "$a" || fail "xtc-loadgen A2 exited $?"
wait_log "(pid $a, xtc-loadgen) ended" 5
stop_xtcd
"$XTCD" --cat "$DIR" >/dev/null 2>"$T/cat.err" || fail "xtcd --cat exited $?: $(head -n 5 "$T/cat.err")"
line=$(grep "(pid $a, xtc-loadgen) ended" "$T/xtcd.log")
echo "  $line; $(ls "$DIR" | wc -l) segments, all readable"
python3 - "$line" <<'EOF' || fail "A2 does not reconcile: $line"
import re, sys
m = re.search(r"produced (\d+), written (\d+), dropped (\d+), lost (\d+)", sys.argv[1])
p, w, d, l = map(int, m.groups())
sys.exit(0 if p == w + d + l and l > 0 else 1)
EOF
echo PASS
