#!/bin/bash
# tests/e2e_hostile_heads_noquota.sh - the head-only attacker of
# e2e_hostile_heads.sh with no quota anywhere: nothing stops what it makes
# xtcd encode but xtcd's own fairness (each session an equal share of
# every drain round and of the write buffers, the round beginning one
# session further on each time).  A well-behaved app attached before it
# must lose nothing: every record on disk, in order, no DROP.  The
# attacker writes its rings once first (fill), as libxtctail prefaults
# them, so that xtcd reads real pages, not holes it refuses.  Run as
# root, the attacker is another uid; else the same uid as the app, which
# without a quota changes nothing.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
AS=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	chmod 755 "$T" # nobody must reach the socket
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi

# What the attacker makes xtcd write grows with the machine's speed (some
# 400 MB here); a budget ten times that keeps eviction out of the verdict.
avail=$(df -Pk "$DIR" | awk 'NR == 2 { print $4 }')
[ "${avail:-0}" -gt $((5 * 1024 * 1024)) ] || { echo "SKIP: fewer than 5 GiB free under $DIR"; exit 77; }
start_xtcd --max-bytes 4G --segment-bytes 16M
XTC_TAIL_RING_RECORDS=8192 "$LOADGEN" 1 240000 60000 0 >"$T/lg.out" 2>&1 &
lg=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 10
$AS "$BADCLIENT" "$SOCK" heads 5000 8 262144 fill >"$T/heads.out" 2>&1 &
heads=$!
wait "$lg" || fail "xtc-loadgen exited $?"
wait "$heads" || fail "xtc-badclient heads: $(cat "$T/heads.out")"
echo "  attacker${AS:+ (uid 65534)}: $(cat "$T/heads.out")"
echo "  xtc-loadgen: $(tr '\n' ' ' <"$T/lg.out")"
stop_xtcd
echo "  on disk: $(du -sh "$DIR" | cut -f1)"
! grep -q '^xtcd: deleted ' "$T/xtcd.log" ||
	fail "the attacker filled even a 4G budget: eviction, not fairness, decided this run"
lgpid=$(sed -n 's/.*session [0-9]*: pid \([0-9]*\) (xtc-loadgen).*/\1/p' "$T/xtcd.log" | head -n 1)
"$XTCD" --cat "$DIR" --json --pid "$lgpid" >"$T/all.json" 2>"$T/cat.err" || fail "--cat: $(cat "$T/cat.err")"
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" victim 1 240000 || fail "the app attached before the attacker"
echo "PASS"
