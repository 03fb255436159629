#!/bin/bash
# tests/e2e_hostile_recover.sh - one local user churns short sessions; xtcd
# is killed; its successor recovers the newest segment, and xtcd --stats
# reads the directory.  Both must be linear in the number of sessions:
# the instructions each takes (valgrind, so that the figure does not
# depend on the machine's load) for 4x the sessions must grow about 4x,
# not 16x.  And the recovery must still close, as the crashed xtcd's, the
# session that was left open (a well-behaved app, killed along).
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
need_valgrind

# churned N: a directory in $T/dN whose newest segment holds N sessions,
# and the crash of the xtcd that wrote it, with xtc-loadgen attached.
churned() {
	local d=$T/d$1 lg
	mkdir -p "$d"
	"$XTCD" --dir "$d" --socket "$SOCK" >"$T/gen$1.log" 2>&1 &
	XTCD_PID=$!
	for _ in $(seq 1 500); do [ -S "$SOCK" ] && grep -q listening "$T/gen$1.log" && break; sleep 0.02; done
	"$LOADGEN" 1 1000 0 60000 >"$T/lg$1.out" 2>&1 &
	lg=$!
	"$BADCLIENT" "$SOCK" churn "$1" >"$T/churn$1.out" 2>&1 || fail "churn $1: $(cat "$T/churn$1.out")"
	for _ in $(seq 1 500); do
		[ "$(grep -c 'xtc-badclient) ended' "$T/gen$1.log")" -ge "$1" ] && break
		sleep 0.02
	done
	kill -9 "$XTCD_PID" "$lg"
	wait "$XTCD_PID" "$lg" 2>/dev/null
	XTCD_PID=
	rm -f "$SOCK"
	echo "  $(cat "$T/churn$1.out"); xtcd and xtc-loadgen killed"
}

# instructions FUNCTION ARGS...: what valgrind counts inside FUNCTION
# while xtcd ARGS runs (a daemon is stopped once it listens).
instructions() {
	local fn=$1 out=$T/cg.out
	shift
	rm -f "$out"
	valgrind --tool=callgrind --toggle-collect="$fn" --callgrind-out-file="$out" \
		"$XTCD" "$@" >"$T/vg.log" 2>&1 &
	local p=$!
	if [ "$1" = --dir ]; then
		for _ in $(seq 1 3000); do grep -q listening "$T/vg.log" && break; sleep 0.05; done
		grep -q listening "$T/vg.log" || { kill -9 $p; fail "xtcd under valgrind did not start: $(tail -5 "$T/vg.log")"; }
		kill -TERM $p
	fi
	wait $p || fail "xtcd $* under valgrind exited $?: $(tail -5 "$T/vg.log")"
	sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
}

churned 4000
churned 16000

for n in 4000 16000; do
	cp -r "$T/d$n" "$T/r$n"
	rec[$n]=$(instructions store_init --dir "$T/r$n" --socket "$SOCK" --pwrite)
	rm -f "$SOCK"
	grep -q "session [0-9]* was left open by a crash: closed as incomplete" "$T/vg.log" ||
		fail "recovery of $n sessions closed no session left open: $(tail -5 "$T/vg.log")"
	sta[$n]=$(instructions xtcd_stats --stats "$T/d$n")
	echo "  $n sessions: recovery ${rec[$n]} instructions, --stats ${sta[$n]}"
done
python3 - "${rec[4000]}" "${rec[16000]}" "${sta[4000]}" "${sta[16000]}" <<'PY' || fail "not linear"
import sys
r4, r16, s4, s16 = map(int, sys.argv[1:])
for what, a, b in (("recovery", r4, r16), ("--stats", s4, s16)):
    if a <= 0:
        print("FAIL: no instruction count for %s" % what); sys.exit(1)
    print("  %s: 4x the sessions, %.1fx the instructions" % (what, b / a))
    if b / a > 7:
        print("FAIL: %s grows faster than linearly in sessions (%.1fx for 4x)" % (what, b / a)); sys.exit(1)
PY
cat_json_dir() { "$XTCD" --cat "$1" --json >"$T/all.json" 2>"$T/cat.err" || fail "--cat: $(cat "$T/cat.err")"; }
cat_json_dir "$T/r16000"
python3 - "$T/all.json" <<'PY' || fail "the crashed session"
import json, sys
ends, lg = {}, None
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] == "session_end":
        ends[r["session"]] = r
    elif r["type"] == "session_start" and r.get("comm") == "xtc-loadgen":
        lg = r["session"]
e = ends.get(lg)
if len(ends) != 16001 or e is None or e["reason"] != "daemon_crashed":
    print("FAIL: %d sessions ended (expected 16001); xtc-loadgen's: %r" % (len(ends), e)); sys.exit(1)
if e["written"] != 1000 or e["produced"] != e["written"] + e["dropped"] + e["lost"]:
    print("FAIL: the crashed session: %r" % e); sys.exit(1)
print("ok: 16001 sessions ended, xtc-loadgen's as daemon_crashed with its 1000 records written")
PY
echo "PASS"
