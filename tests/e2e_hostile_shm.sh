#!/bin/bash
# tests/e2e_hostile_shm.sh - the memory xtcd touches on a client's behalf.
# Every byte of a client's segment can become a page xtcd allocates
# itself: a read fault on a hole of a shmem file allocates one, charged
# to the process that faults.  So xtcd counts, per uid, the bytes of
# client segments it maps, and refuses an attach that would take a uid
# over max_shm_per_uid; and it never reads a hole: a client that moves
# its heads over memory it never wrote (xtc-badclient heads) loses those
# rings as corrupt ("unwritten") instead of costing xtcd its memory.  A
# well-behaved app beside it loses nothing.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
[ -r /proc/self/status ] || { echo "SKIP: no /proc to read xtcd's RssShmem from"; exit 77; }
me=$(id -u)
# 8 rings x 262144 records: 4096 + 8 * (320 + 262144 * 40) bytes
ATTACKER=83892736

rss_shmem_kb() {
	sed -n 's/^RssShmem:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$XTCD_PID/status"
}

start_xtcd --max-shm-per-uid 100M --metrics-file "$T/xtcd.prom"
rss0=$(rss_shmem_kb)
XTC_TAIL_RINGS=2 XTC_TAIL_RING_RECORDS=65536 "$LOADGEN" 1 200000 40000 0 >"$T/lg.out" 2>&1 &
lg=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 10
"$BADCLIENT" "$SOCK" heads 6000 8 262144 >"$T/heads.out" 2>&1 &
heads=$!
wait_log "(xtc-badclient) uid [0-9]* attached: 8 rings x 262144" 10

# --- the limit: a second attacker would pass 100M, and is told so
"$BADCLIENT" "$SOCK" heads 1000 8 262144 >"$T/heads2.out" 2>&1 &&
	fail "a second 80M segment was accepted under --max-shm-per-uid 100M: $(cat "$T/heads2.out")"
grep -q "refused.*uid $me has [0-9]* bytes of segments mapped; $ATTACKER more would pass max_shm_per_uid (100M): end a session, use smaller rings, or raise it" "$T/heads2.out" ||
	fail "the refusal does not say why: $(cat "$T/heads2.out")"
[ "$(grep -c "refused pid [0-9]* uid $me: uid $me has [0-9]* bytes of segments mapped; .*max_shm_per_uid" "$T/xtcd.log")" = 1 ] ||
	fail "no single log line for the refusal"
echo "  second attacker: $(cat "$T/heads2.out")"

# --- the per-uid figures: --status and the metrics file
"$XTCD" --status --socket "$SOCK" --json >"$T/status.json" || fail "--status --json failed"
"$XTCD" --status --socket "$SOCK" >"$T/status.txt" || fail "--status failed"
python3 - "$T/status.json" "$ATTACKER" <<'PY' || fail "--status per-uid shm figures: $(cat "$T/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
att = int(sys.argv[2])
lg = 4096 + 2 * (320 + 65536 * 40)
ok = d["uid_shm_mapped"] == att + lg and d["uid_shm_max"] == 100 << 20 and \
     0 < d["uid_shm_touched"] <= d["uid_shm_mapped"]
print("  --status: uid %d: %d bytes mapped, %d touched, at most %d"
      % (d["uid"], d["uid_shm_mapped"], d["uid_shm_touched"], d["uid_shm_max"]))
sys.exit(0 if ok else 1)
PY
grep -q "^  shm       uid $me: .* of segments mapped (.* touched), at most 100.0M$" "$T/status.txt" ||
	fail "--status has no shm line: $(cat "$T/status.txt")"
grep '^  shm' "$T/status.txt"
for _ in $(seq 1 600); do
	grep -q "^xtcd_uid_shm_mapped_bytes{uid=\"$me\"} $((ATTACKER + 4096 + 2 * (320 + 65536 * 40)))\$" "$T/xtcd.prom" 2>/dev/null && break
	sleep 0.02
done
grep -q "^xtcd_uid_shm_mapped_bytes{uid=\"$me\"} $((ATTACKER + 4096 + 2 * (320 + 65536 * 40)))\$" "$T/xtcd.prom" ||
	fail "the metrics file has no per-uid mapped bytes: $(grep shm "$T/xtcd.prom" 2>/dev/null)"
grep -q "^# TYPE xtcd_uid_shm_touched_bytes gauge" "$T/xtcd.prom" || fail "no touched-bytes gauge"

# --- the faults: xtcd must not have allocated the attacker's 80M
rss=$(rss_shmem_kb)
echo "  xtcd RssShmem: ${rss0} kB at start, ${rss} kB with the attacker attached"
[ "$rss" -lt 16384 ] || fail "xtcd holds $rss kB of shared memory under the heads attacker"

wait "$lg" || fail "xtc-loadgen exited $?"
wait "$heads" || fail "xtc-badclient heads: $(cat "$T/heads.out")"
stop_xtcd
cat_json
lgpid=$(sed -n 's/.*session [0-9]*: pid \([0-9]*\) (xtc-loadgen).*/\1/p' "$T/xtcd.log" | head -n 1)
"$XTCD" --cat "$DIR" --json --pid "$lgpid" >"$T/lg.json" 2>"$T/cat.err" || fail "--cat: $(cat "$T/cat.err")"
python3 "$top_srcdir/tests/e2e_check.py" "$T/lg.json" victim 1 200000 || fail "the app beside the attacker"
n=$(grep -c '"type":"corrupt".*"reason":"unwritten"' "$T/all.json")
[ "$n" = 8 ] || fail "expected the attacker's 8 rings corrupt as unwritten, found $n"
echo "PASS"
