#!/bin/bash
# The segment directory removed, then made unwritable, under a running
# xtcd.  It must log one clear line per kind of failure (not one per
# attempt), never crash, keep accepting and serving producers, end the
# sessions whose records it could not write with those records counted
# as lost (produced == written + dropped + lost, reason io_error), write
# again once the directory is back, and stop cleanly on SIGTERM.
# Unwritable: chmod has no effect on root, so that part runs a second
# xtcd as an unprivileged uid (skipped when none can be used).
. "${top_srcdir:-.}/tests/e2e_lib.sh"

# ended_lost PID: the "ended" line of PID's session must say io error and
# reconcile with lost > 0.
ended_lost() {
	local line
	line=$(grep "(pid $1, xtc-loadgen) ended" "$2") || fail "no end for pid $1 in $2"
	echo "  $line"
	python3 - "$line" <<'EOF' || fail "pid $1: $line"
import re, sys
m = re.search(r"ended: io error, produced (\d+), written (\d+), dropped (\d+), lost (\d+)", sys.argv[1])
p, w, d, l = map(int, m.groups()) if m else (0, 0, 0, 0)
sys.exit(0 if m and l > 0 and p == w + d + l else 1)
EOF
}

# count PATTERN FILE: lines of FILE matching PATTERN.
count() {
	grep -c -- "$1" "$2"
}

echo "--dir removed:"
start_xtcd --segment-bytes 256K --max-bytes 64M --drain-ms 10
"$LOADGEN" 2 150000 50000 2500 >"$T/a.out" 2>&1 &
a=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 5
sleep 0.5
# xtcd may create the next segment between rm's readdir and its rmdir
for _ in $(seq 1 50); do rm -rf "$DIR" 2>/dev/null; [ -e "$DIR" ] || break; done
[ -e "$DIR" ] && fail "could not remove $DIR"
# noticed at the next rotation or the once-a-second check, whichever first
wait_log "cannot create .*No such file or directory" 5
# a producer that comes and goes while there is nowhere to write
"$LOADGEN" 1 2000 >"$T/c.out" 2>&1 || fail "xtc-loadgen C exited $?"
c=$(sed -n 's/.*session [0-9]*: pid \([0-9]*\) (xtc-loadgen).*/\1/p' "$T/xtcd.log" | tail -n 1)
wait "$a" || fail "xtc-loadgen A exited $?"
wait_log "(pid $a, xtc-loadgen) ended" 5
wait_log "(pid $c, xtc-loadgen) ended" 5
kill -0 "$XTCD_PID" 2>/dev/null || fail "xtcd died without its directory"
ended_lost "$a" "$T/xtcd.log"
ended_lost "$c" "$T/xtcd.log"
mkdir -p "$DIR"
wait_log "writing again" 5   # tried once a second, producers or not
"$LOADGEN" 2 20000 100000 >"$T/b.out" 2>&1 || fail "xtc-loadgen B exited $?"
wait_log "ended: detached, produced 40000, written 40000, dropped 0, lost 0, complete" 5
[ "$(count "was removed under xtcd" "$T/xtcd.log")" -le 1 ] &&
[ "$(count "cannot create" "$T/xtcd.log")" -eq 1 ] ||
	fail "expected one line for the failed creation (and at most one for the removal)"
stop_xtcd
cat_json
python3 - "$T/all.json" <<'EOF' || fail "--dir removed: the new directory's contents"
import json, sys
ends = [json.loads(l) for l in open(sys.argv[1]) if '"type":"session_end"' in l]
ok = [e for e in ends if e["complete"] and e["written"] == 40000]
sys.exit(0 if ok else "no complete session of 40000 records in the new directory: %r" % ends)
EOF
grep -E "removed|cannot create|writing again" "$T/xtcd.log" | sed 's/^/  /'

echo "--dir unwritable:"
runas=()
if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	runas=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if [ "$(id -u)" -ne 0 ] || [ ${#runas[@]} -eq 0 ]; then
	echo "  SKIP: needs root and setpriv to run an xtcd that chmod can stop"
	echo PASS
	exit 0
fi
U=$T/unwritable
mkdir -p "$U/segments"
chmod 711 "$T"
chown -R 65534:65534 "$U"
"${runas[@]}" "$XTCD" --dir "$U/segments" --socket "$U/xtcd.sock" --segment-bytes 256K \
	--max-bytes 64M --drain-ms 10 >"$T/xtcd2.log" 2>&1 &
XTCD_PID=$!
for _ in $(seq 1 200); do grep -q listening "$T/xtcd2.log" && break; sleep 0.02; done
grep -q listening "$T/xtcd2.log" || fail "the unprivileged xtcd did not start: $(cat "$T/xtcd2.log")"
XTC_TAIL_SHM=$U/xtcd.sock "$LOADGEN" 2 150000 50000 1500 >"$T/d.out" 2>&1 &
d=$!
sleep 0.5
chmod 555 "$U/segments"
for _ in $(seq 1 250); do grep -q "Permission denied" "$T/xtcd2.log" && break; sleep 0.02; done
wait "$d" || fail "xtc-loadgen D exited $?"
for _ in $(seq 1 250); do grep -q "(pid $d, xtc-loadgen) ended" "$T/xtcd2.log" && break; sleep 0.02; done
kill -0 "$XTCD_PID" 2>/dev/null || fail "the unprivileged xtcd died: $(cat "$T/xtcd2.log")"
ended_lost "$d" "$T/xtcd2.log"
chmod 755 "$U/segments"
for _ in $(seq 1 250); do grep -q "writing again" "$T/xtcd2.log" && break; sleep 0.02; done
XTC_TAIL_SHM=$U/xtcd.sock "$LOADGEN" 2 20000 100000 >"$T/e.out" 2>&1 || fail "xtc-loadgen E exited $?"
for _ in $(seq 1 250); do grep -q "ended: detached, produced 40000, written 40000, dropped 0, lost 0, complete" "$T/xtcd2.log" && break; sleep 0.02; done
grep -q "writing again" "$T/xtcd2.log" && grep -q "produced 40000, written 40000, dropped 0, lost 0, complete" "$T/xtcd2.log" ||
	fail "the unprivileged xtcd did not write again: $(cat "$T/xtcd2.log")"
[ "$(count "cannot create" "$T/xtcd2.log")" -eq 1 ] ||
	fail "expected one line for the failed creation: $(cat "$T/xtcd2.log")"
kill -TERM "$XTCD_PID"
wait "$XTCD_PID" || fail "the unprivileged xtcd exited $? after SIGTERM"
XTCD_PID=
"$XTCD" --cat "$U/segments" >/dev/null 2>"$T/cat2.err" || fail "xtcd --cat exited $?: $(cat "$T/cat2.err")"
grep -E "Permission|writing again" "$T/xtcd2.log" | sed 's/^/  /'
echo PASS
