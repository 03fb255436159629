#!/bin/bash
# tests/e2e_hostile_heads.sh - a client that writes no record but keeps its
# rings' heads a whole ring ahead of the tail, as if it emitted flat out:
# it costs nothing, while xtcd reads and encodes every slot.  Its rings'
# memory is written once first (heads ... fill), as libxtctail prefaults a
# ring it binds, so that xtcd does read it (over holes it would not:
# tests/e2e_hostile_shm.sh).  A
# well-behaved app attached before it (the order that starved it: xtcd
# drained the newest sessions first, every round) must get its share of
# every drain round and of the write buffers, and lose nothing; and what
# the attacker makes xtcd write counts against its uid's quota, so it
# cannot delete the app's records under the budget either.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
chmod 755 "$T" # nobody must reach the socket
if ! { [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; }; then
	echo "SKIP: the attacker must run as another uid (root and setpriv are needed)"
	exit 77
fi
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

cat >"$T/xtcd.conf" <<CONF
quota.65534 = 16M
CONF
start_xtcd --config "$T/xtcd.conf" --max-bytes 64M --segment-bytes 4M
XTC_TAIL_RING_RECORDS=8192 "$LOADGEN" 1 240000 60000 0 >"$T/lg.out" 2>&1 &
lg=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 10
$NOBODY "$BADCLIENT" "$SOCK" heads 5000 8 262144 fill >"$T/heads.out" 2>&1 &
heads=$!
wait "$lg" || fail "xtc-loadgen exited $?"
wait "$heads" || fail "xtc-badclient heads: $(cat "$T/heads.out")"
echo "  $(cat "$T/heads.out")"
echo "  xtc-loadgen: $(tr '\n' ' ' <"$T/lg.out")"
stop_xtcd
grep -q 'uid 65534 holds [0-9]* bytes of events, its quota is 16M' "$T/xtcd.log" ||
	fail "the attacker never reached its quota"
lgpid=$(sed -n 's/.*session [0-9]*: pid \([0-9]*\) (xtc-loadgen).*/\1/p' "$T/xtcd.log" | head -n 1)
"$XTCD" --cat "$DIR" --json --pid "$lgpid" >"$T/all.json" 2>"$T/cat.err" || fail "--cat: $(cat "$T/cat.err")"
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" victim 1 240000 || fail "the app attached before the attacker"
echo "PASS"
