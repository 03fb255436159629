#!/bin/bash
# xtcd --follow.
#  1. Followers started before xtcd writes anything (one on inotify, one
#     polling), kept running across several rotations, print exactly the
#     lines --cat --json prints afterwards, in the same order.
#  2. -n N shows the last N lines --cat shows (with and without a filter);
#     SIGTERM and a closed output pipe end it with 0, even while idle.
#  3. A follower stopped while the byte budget deletes the segment it was
#     reading reports the gap in one line and carries on: no record twice,
#     every loop in order, and everything still on disk afterwards.
#  4. xtcd killed mid-write (a torn tail) and restarted: the follower waits
#     at the torn block, moves on to the new segment once recovery has cut
#     it back, and again prints exactly what --cat does.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
DEMO=${DEMO:-$top_builddir/examples/xtc-demo}

# wait_lines FILE N: wait until FILE has N lines (a follower caught up).
wait_lines() {
	for _ in $(seq 1 300); do
		[ "$(wc -l <"$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "$1 has $(wc -l <"$1") lines, expected $2"
}

# wait_ended N: wait until xtcd has logged N detached sessions.
wait_ended() {
	for _ in $(seq 1 500); do
		[ "$(grep -c 'ended: detached' "$T/xtcd.log")" -ge "$1" ] && return 0
		sleep 0.02
	done
	fail "xtcd never logged $1 detached sessions"
}

# ---- 1: followers across rotations see what --cat sees
"$XTCD" --follow "$DIR" -n all --json >"$T/f1.json" 2>"$T/f1.err" &
f1=$!
XTCD_FOLLOW_POLL_MS=50 "$XTCD" --follow "$DIR" -n all --json >"$T/f2.json" 2>"$T/f2.err" &
f2=$!
sleep 0.3
[ -s "$T/f1.json" ] && fail "the follower printed something before there was anything"
start_xtcd --segment-bytes 256K --drain-ms 10
"$LOADGEN" 4 60000 60000 >/dev/null || fail "loadgen failed"
"$DEMO" --loops 2 --events 20000 --rate 40000 >/dev/null || fail "xtc-demo failed"
wait_ended 2
stop_xtcd
segs=$(ls "$DIR" | wc -l)
[ "$segs" -ge 4 ] || fail "only $segs segments: fewer than three rotations"
cat_json
n=$(wc -l <"$T/all.json")
wait_lines "$T/f1.json" "$n"
wait_lines "$T/f2.json" "$n"
kill -INT $f1
wait $f1 || fail "the follower exited $? on SIGINT"
kill -TERM $f2
wait $f2 || fail "the polling follower exited $? on SIGTERM"
diff "$T/all.json" "$T/f1.json" >"$T/diff1" || { head -n 20 "$T/diff1"; fail "the follower's lines differ from --cat's"; }
diff "$T/all.json" "$T/f2.json" >"$T/diff2" || { head -n 20 "$T/diff2"; fail "the polling follower's lines differ from --cat's"; }
# Started on an empty directory, each says once what it waits for, and
# nothing else.
waiting="xtcd: waiting for segments in $DIR: there are none yet"
for e in "$T/f1.err" "$T/f2.err"; do
	[ "$(cat "$e")" = "$waiting" ] || { cat "$e"; fail "a follower of an empty directory did not say '$waiting' once, and only that"; }
done
echo "ok: two followers saw the same $n lines as --cat across $segs segments"
echo "ok: each said once: $waiting"

# ---- 2: -n, filters, SIGTERM and a closed pipe
"$XTCD" --cat "$DIR" >"$T/all.txt" || fail "--cat failed"
"$XTCD" --follow "$DIR" -n 7 >"$T/n7.txt" &
f=$!
wait_lines "$T/n7.txt" 7
sleep 0.2
kill -TERM $f
wait $f || fail "--follow -n 7 exited $? on SIGTERM"
tail -n 7 "$T/all.txt" | diff - "$T/n7.txt" >/dev/null || fail "-n 7 is not the last 7 lines of --cat"
sid=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "session_start": print(r["session"]); break' "$T/all.json")
"$XTCD" --cat "$DIR" --session "$sid" --kind run >"$T/s.txt"
"$XTCD" --follow "$DIR" -n 3 --session "$sid" --kind RUN >"$T/n3.txt" &
f=$!
wait_lines "$T/n3.txt" 3
sleep 0.2
kill -INT $f
wait $f || fail "--follow -n 3 --session exited $?"
tail -n 3 "$T/s.txt" | diff - "$T/n3.txt" >/dev/null || fail "-n 3 with filters is not the last 3 lines of --cat with them"
"$XTCD" --follow "$DIR" -n 0 >"$T/n0.txt" &
f=$!
sleep 0.3
kill -INT $f
wait $f || fail "--follow -n 0 exited $?"
[ -s "$T/n0.txt" ] && fail "-n 0 printed old records"
# A closed pipe ends an idle follower (POLLERR on its output), exit 0.
rm -f "$T/pipe.rc"
( "$XTCD" --follow "$DIR" -n 20 --color=always; echo $? >"$T/pipe.rc" ) | head -n 2 >/dev/null
for _ in $(seq 1 100); do [ -s "$T/pipe.rc" ] && break; sleep 0.05; done
[ "$(cat "$T/pipe.rc" 2>/dev/null)" = 0 ] || fail "a follower whose pipe closed did not exit 0 (rc '$(cat "$T/pipe.rc" 2>/dev/null)')"
"$XTCD" --cat "$DIR" --color=always --session "$sid" | grep -q $'^\e\[1;32m.*SESSION .* END .*\e\[0m$' ||
	fail "--color=always does not colour a session end line, reset before the newline"
"$XTCD" --cat "$DIR" --session "$sid" | grep -q $'\e' && fail "colour without a terminal"
echo "ok: -n N (with filters) shows the last N lines; SIGTERM, SIGINT and a closed pipe exit 0"

# ---- 3: a lagging follower whose segment is deleted under the budget
stop_follow() { kill -CONT "$1" 2>/dev/null; kill -INT "$1"; wait "$1"; }
DIR=$T/seg2
SOCK=$T/xtcd2.sock
export XTC_TAIL_SHM=$SOCK
mkdir -p "$DIR"
: >"$T/xtcd.log"
start_xtcd --segment-bytes 256K --max-bytes 1M --drain-ms 10
"$XTCD" --follow "$DIR" -n all --json >"$T/lag.json" 2>"$T/lag.err" &
lag=$!
"$LOADGEN" 2 20000 40000 >/dev/null || fail "loadgen failed"
wait_ended 1
sleep 0.3
kill -STOP $lag
at=$(ls "$DIR" | tail -n 1)
"$LOADGEN" 2 400000 >/dev/null || fail "loadgen failed"
wait_ended 2
first=$(ls "$DIR" | head -n 1)
[[ "$first" > "$at" ]] || { stop_follow $lag; fail "the budget did not delete $at (oldest left: $first)"; }
kill -CONT $lag
"$LOADGEN" 2 20000 40000 >/dev/null || fail "loadgen failed"
wait_ended 3
stop_xtcd
cat_json
for _ in $(seq 1 200); do
	python3 - "$T/all.json" "$T/lag.json" <<'EOF' && break
import sys
cat = [l for l in open(sys.argv[1]) if '"type":"session_start"' not in l]
fol = [l for l in open(sys.argv[2]) if '"type":"session_start"' not in l]
sys.exit(0 if len(fol) >= len(cat) and fol[-len(cat):] == cat else 1)
EOF
	sleep 0.05
done
stop_follow $lag || fail "the lagging follower exited $? on SIGINT"
grep -c 'deleted under the byte budget' "$T/lag.err" | grep -qx 1 || { cat "$T/lag.err"; fail "expected one line about the gap"; }
[ "$(wc -l <"$T/lag.err")" = 1 ] || { cat "$T/lag.err"; fail "expected nothing else on stderr"; }
python3 - "$T/all.json" "$T/lag.json" <<'EOF' || fail "lagging follower"
import json, sys
seen, last, n = set(), {}, 0
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r["type"] != "event":
        continue
    n += 1
    key = (r["session"], r["loop_id"], r["detail"])
    if key in seen:
        sys.exit("FAIL: %r printed twice" % (key,))
    seen.add(key)
    loop = key[:2]
    if loop in last and r["detail"] <= last[loop]:
        sys.exit("FAIL: session %d loop %d: detail %d after %d" % (loop + (r["detail"], last[loop])))
    last[loop] = r["detail"]
cat = [l for l in open(sys.argv[1]) if '"type":"session_start"' not in l]
fol = [l for l in open(sys.argv[2]) if '"type":"session_start"' not in l]
if fol[-len(cat):] != cat:
    sys.exit("FAIL: the follower does not end with what is still on disk")
total = 2 * 20000 + 2 * 400000 + 2 * 20000
print("ok: the lagging follower printed %d of %d events, none twice, every loop in order, "
      "and all %d lines still on disk" % (n, total, len(cat)))
EOF
echo "ok: gap reported as: $(cat "$T/lag.err")"

# ---- 4: xtcd killed (torn tail) and restarted under a follower
DIR=$T/seg3
SOCK=$T/xtcd3.sock
export XTC_TAIL_SHM=$SOCK
mkdir -p "$DIR"
: >"$T/xtcd.log"
start_xtcd --drain-ms 10
"$XTCD" --follow "$DIR" -n all --json >"$T/crash.json" 2>"$T/crash.err" &
f=$!
XTC_TAIL_RING_RECORDS=1048576 "$LOADGEN" 2 200000 100000 1000 >/dev/null &
lg=$!
wait_log "attached"
sleep 0.7
kill -9 "$XTCD_PID"; wait "$XTCD_PID" 2>/dev/null; XTCD_PID=
head -c 777 /dev/urandom >>"$(ls "$DIR"/xtc-*.seg | tail -n 1)"
sleep 0.3
start_xtcd --drain-ms 10
wait $lg || fail "loadgen failed"
stop_xtcd
[ "$(ls "$DIR" | wc -l)" -ge 2 ] || fail "the restarted xtcd did not start a new segment"
cat_json
wait_lines "$T/crash.json" "$(wc -l <"$T/all.json")"
kill -INT $f
wait $f || fail "the follower exited $? on SIGINT"
diff "$T/all.json" "$T/crash.json" >/dev/null || fail "after a crash and restart the follower's lines differ from --cat's"
[ -s "$T/crash.err" ] && { cat "$T/crash.err"; fail "the follower complained about a tail recovery cut back"; }
echo "ok: across a crash, a torn tail and a restart the follower printed the same $(wc -l <"$T/all.json") lines as --cat"
