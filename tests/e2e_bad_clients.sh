#!/bin/bash
# tests/e2e_bad_clients.sh - misbehaving attach clients against a real xtcd
# while a well-behaved producer records through it.
#
# Every refused case must get a REFUSE with a reason and leave exactly one
# "refused pid P ..." log line naming the problem; clients that turn
# hostile after being accepted must have their ring (or session) marked
# corrupt; xtcd must survive every case and leak no descriptors, and the
# well-behaved producer's session must still be complete and exact.  A
# second xtcd checks the refusals decided before the hello is read
# (--allow-uid, --max-clients).  Failures are collected, so one run shows
# them all; xtcd dying stops the test at once.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done

X2_PID=
trap '[ -n "$X2_PID" ] && kill -9 "$X2_PID" 2>/dev/null; cleanup' EXIT

failures=0

# problem MESSAGE: note a failure and go on.
problem() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

alive() {
	kill -0 "$XTCD_PID" 2>/dev/null || fail "xtcd died after case $1"
}

# fd_count PID: how many descriptors PID holds.
fd_count() {
	find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}

# log_wait PATTERN FILE SECONDS: whether FILE comes to match PATTERN.
log_wait() {
	local deadline=$(($(date +%s) + $3))
	until grep -q -- "$1" "$2"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# run_client NAME CASE [ARG...]: run xtc-badclient CASE against $SOCK,
# with its line in $out, its pid in $pid and its status in $rc.
run_client() {
	local name=$1
	shift
	"$BADCLIENT" "$SOCK" "$@" >"$T/bc.out" 2>&1 &
	pid=$!
	wait "$pid"
	rc=$?
	out=$(cat "$T/bc.out")
	echo "  $name: $out"
	[ "$rc" -eq 0 ] || problem "xtc-badclient $name exited $rc: $out"
	alive "$name"
}

# bad CASE PATTERN [ARG...]: run CASE, which must exit 0; check_logs later
# requires one refusal log line for its pid matching PATTERN (later, so
# that the cases all run while xtc-loadgen does).
bad() {
	local name=$1 pattern=$2
	shift 2
	run_client "$name" "$name" "$@"
	[ -z "$pattern" ] || printf '%s\t%s\t%s\n' "$name" "$pid" \
		"refused pid $pid uid [0-9]*: .*$pattern" >>"$T/loglines"
}

# attacker CASE PATTERN: an accepted client that breaks its segment; its
# session id goes to $T/attackers as "CASE ID" for the segment checks.
attacker() {
	local name=$1 pattern=$2 id
	run_client "$name" "$name"
	id=$(sed -n 's/^accepted session \([0-9]*\),.*/\1/p' "$T/bc.out")
	if [ -z "$id" ]; then
		problem "$name: no session id in: $out"
		return
	fi
	echo "$name $id" >>"$T/attackers"
	[ -z "$pattern" ] || printf '%s\t%s\t%s\n' "$name" "$pid" \
		"session $id (pid $pid): .*$pattern" >>"$T/loglines"
}

# check_logs: every log line bad() and attacker() asked for; a refused
# client gets exactly one refusal line.
check_logs() {
	local name pid pattern
	while IFS="$(printf '\t')" read -r name pid pattern; do
		if ! log_wait "$pattern" "$T/xtcd.log" 2; then
			problem "$name: no log line matching '$pattern':" \
				"$(grep "pid ${pid}[ ,)]" "$T/xtcd.log")"
		elif [ "$(grep -c "refused pid $pid " "$T/xtcd.log")" -gt 1 ]; then
			problem "$name: more than one refusal line for pid $pid"
		fi
	done <"$T/loglines"
}

# every bad client must have its line: no rate limit here
start_xtcd --hello-timeout-ms 500 --log-rate-burst 0
fd_base=$(fd_count "$XTCD_PID")

"$LOADGEN" 2 300000 100000 0 >"$T/loadgen.out" 2>&1 &
LG_PID=$!
wait_log "(xtc-loadgen) uid [0-9]* attached" 5
t0=$(date +%s%N)

echo "bad clients against $SOCK while xtc-loadgen (pid $LG_PID) runs:"
: >"$T/attackers"
: >"$T/loglines"
"$BADCLIENT" "$SOCK" silent 500 >"$T/silent.out" 2>&1 &
silent_pid=$!
bad many "" 1000 700
grep -q "^opened 1000 of 1000 connections, held them 700 ms (1000 closed by the daemon" "$T/bc.out" ||
	problem "many: xtcd did not close all 1000 silent connections after its hello timeout"
bad flood "" 200
attacker valid ""
attacker jump "head ran past the ring"
attacker backwards "head went backwards"
attacker dropback "drop counter went backwards"
attacker rewrite "rewrote its segment header"
bad garbage "attach magic"
bad truncated "truncated"
bad huge "larger than any valid message"
bad empty "."
bad badmagic "attach magic"
bad badversion "attach protocol version"
bad badshm "ABI major version"
bad nofd "no memfd"
bad twofds "more than one file descriptor"
bad manyfds "more than one file descriptor"
bad pipe "is a pipe"
bad dir "is a directory"
bad unsealed "not sealed"
bad wrongsize "size differs"
bad liar "size does not match its geometry"
wait "$silent_pid" || problem "xtc-badclient silent: $(cat "$T/silent.out")"
echo "  silent: $(cat "$T/silent.out")"
printf '%s\t%s\t%s\n' silent "$silent_pid" \
	"pid $silent_pid uid [0-9]* connected but sent no hello within 500 ms" >>"$T/loglines"
t1=$(date +%s%N)
kill -0 "$LG_PID" 2>/dev/null || echo "note: xtc-loadgen finished before the bad clients did"
echo "bad clients took $(( (t1 - t0) / 1000000 )) ms"
check_logs
n=$(grep -c "connected but sent no hello within 500 ms" "$T/xtcd.log")
[ "$n" -eq 1001 ] || problem "expected 1001 'no hello' log lines (many + silent), got $n"

wait "$LG_PID" || problem "xtc-loadgen exited $?: $(cat "$T/loadgen.out")"
grep -q "^dropped 0$" "$T/loadgen.out" || problem "xtc-loadgen dropped records: $(cat "$T/loadgen.out")"
wait_log "(pid $LG_PID, xtc-loadgen) ended" 5
alive "the producer's detach"

# Every connection and session is gone: xtcd holds what it held at start.
for _ in $(seq 1 100); do
	[ "$(fd_count "$XTCD_PID")" -le $((fd_base + 2)) ] && break
	sleep 0.02
done
[ "$(fd_count "$XTCD_PID")" -le $((fd_base + 2)) ] ||
	problem "xtcd holds $(fd_count "$XTCD_PID") descriptors after every client left, $fd_base at start"

stop_xtcd
cat_json

python3 - "$T/all.json" "$T/attackers" <<'EOF' || problem "segment contents (see above)"
import json, sys

starts, ends, corrupt, events = {}, {}, [], {}
with open(sys.argv[1]) as f:
    for line in f:
        if line.startswith('{"type":"event"'):
            r = json.loads(line)
            events.setdefault((r["session"], r["loop_id"]), []).append(r["detail"])
            continue
        r = json.loads(line)
        t = r["type"]
        if t == "session_start" and not r["restated"]:
            starts[r["session"]] = r
        elif t == "session_end":
            if r["session"] in ends:
                sys.exit("session %d ended twice" % r["session"])
            ends[r["session"]] = r
        elif t == "corrupt":
            corrupt.append(r)

bad = []
lg = [s for s, r in starts.items() if r["comm"] == "xtc-loadgen"]
if len(lg) != 1:
    sys.exit("expected one xtc-loadgen session, found %r" % lg)
sid = lg[0]
e = ends.get(sid)
if e is None:
    bad.append("the xtc-loadgen session %d has no session_end" % sid)
elif not (e["reason"] == "detached" and e["complete"] and e["produced"] == 600000
          and e["written"] == 600000 and e["dropped"] == 0 and e["lost"] == 0):
    bad.append("xtc-loadgen session: %r" % e)
for loop in (0, 1):
    d = events.get((sid, loop), [])
    if d != list(range(300000)):
        first = next((i for i, (a, b) in enumerate(zip(d, range(300000))) if a != b), min(len(d), 300000))
        bad.append("xtc-loadgen loop %d: %d records, first wrong at index %d" % (loop, len(d), first))

for s, r in starts.items():
    e = ends.get(s)
    if e is None:
        bad.append("session %d (%s) has no session_end" % (s, r["comm"]))
    elif e["reason"] == "daemon_shutdown":
        bad.append("session %d (%s) was still open at shutdown" % (s, r["comm"]))
    elif e["produced"] != e["written"] + e["dropped"] + e["lost"]:
        bad.append("session %d accounting: %r" % (s, e))

want = {"jump": "head_jumped", "backwards": "head_backwards", "dropback": "dropped_backwards"}
for line in open(sys.argv[2]):
    case, s = line.split()
    s = int(s)
    e = ends.get(s)
    if e is None:
        bad.append("%s: session %d has no session_end" % (case, s))
        continue
    if events.get((s, 7), []) != list(range(10)) or e["written"] != 10:
        bad.append("%s: session %d: its 10 records before the attack: %r, %r"
                   % (case, s, events.get((s, 7)), e))
    c = [x for x in corrupt if x["session"] == s]
    if case == "valid":
        if not (e["reason"] == "detached" and e["complete"]) or c:
            bad.append("valid: session %d: %r %r" % (s, e, c))
        continue
    if e["complete"]:
        bad.append("%s: session %d ended complete: %r" % (case, s, e))
    if case == "rewrite":
        if e["reason"] != "corrupt":
            bad.append("rewrite: session %d ended %r, not corrupt" % (s, e["reason"]))
    elif not any(x["ring"] == 0 and x["reason"] == want[case] for x in c):
        bad.append("%s: session %d: no corrupt record for ring 0 with reason %s: %r"
                   % (case, s, want[case], c))

for b in bad:
    print("  " + b)
print("  %d sessions, %d corrupt records, %d event streams checked"
      % (len(starts), len(corrupt), len(events)))
sys.exit(1 if bad else 0)
EOF

# ---- refusals decided before the hello: --allow-uid and --max-clients ----
# A second xtcd.  The client must be able to send its hello and then read
# the REFUSE, as libxtctail does (one send, one recvmsg): not EPIPE, nor a
# reset because xtcd closed the connection with the hello unread.  The
# checks also run with the hello already queued when xtcd accepts (xtcd
# stopped meanwhile), as happens under load.
other=()
if [ "$(id -u)" -ne 0 ]; then
	[ "$(id -u)" -eq 4242 ] || other=(env)
elif setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	other=(setpriv --reuid=65534 --regid=65534 --clear-groups)
elif runuser -u nobody -- true 2>/dev/null; then
	other=(runuser -u nobody --)
fi
U=$T/uid
mkdir -p "$U/segments"
chmod 711 "$T"
chmod 755 "$U"
cp "$BADCLIENT" "$U/xtc-badclient"
chmod 755 "$U/xtc-badclient"
"$XTCD" --dir "$U/segments" --socket "$U/xtcd.sock" --allow-uid 4242 --max-clients 1 \
	--hello-timeout-ms 1500 >"$T/xtcd2.log" 2>&1 &
X2_PID=$!
log_wait listening "$T/xtcd2.log" 4 || fail "the second xtcd did not start: $(cat "$T/xtcd2.log")"

# unwelcome HOW WHY [RUNNER...]: a correct client that must be refused
# cleanly with WHY; HOW "queued" stops xtcd until the hello is queued.
unwelcome() {
	local how=$1 why=$2 bc rc
	shift 2
	[ "$how" = queued ] && kill -STOP "$X2_PID"
	"$@" "$U/xtc-badclient" "$U/xtcd.sock" unwelcome >"$T/bc.out" 2>&1 &
	bc=$!
	if [ "$how" = queued ]; then
		sleep 0.3
		kill -CONT "$X2_PID"
	fi
	wait "$bc"
	rc=$?
	echo "  $how: $(cat "$T/bc.out")"
	if [ "$rc" -ne 0 ] || ! grep -q "^refused: .*$why" "$T/bc.out"; then
		problem "a correct client ($how) did not get a clean '$why' refusal (exit $rc)"
	fi
	log_wait "refused pid [0-9]* uid [0-9]*: .*$why" "$T/xtcd2.log" 3 ||
		problem "no '$why' refusal in the second xtcd's log"
	kill -0 "$X2_PID" 2>/dev/null || fail "the second xtcd died: $(cat "$T/xtcd2.log")"
}

echo "a second xtcd, --allow-uid 4242 --max-clients 1:"
if [ "${#other[@]}" -eq 0 ]; then
	echo "  SKIP the --allow-uid check: cannot run as a uid other than 0 (always" \
	     "allowed) and 4242: setpriv and runuser failed"
else
	other_uid=$("${other[@]}" id -u)
	echo " a correct client as uid $other_uid:"
	unwelcome "as it comes" "not allowed" "${other[@]}"
	unwelcome queued "not allowed" "${other[@]}"
	n=$(grep -c "refused pid [0-9]* uid $other_uid: .*not allowed" "$T/xtcd2.log")
	[ "$n" -eq 2 ] || problem "expected two 'not allowed' log lines for uid $other_uid, got $n"
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "  SKIP the --max-clients check: it needs an allowed uid (root)"
else
	echo " a correct client while a silent one holds the only slot:"
	"$BADCLIENT" "$U/xtcd.sock" silent 1500 >"$T/silent.out" 2>&1 &
	sp=$!
	sleep 0.2
	unwelcome queued "maximum number of clients"
	wait "$sp" || problem "the silent client on the second xtcd: $(cat "$T/silent.out")"
fi
kill -TERM "$X2_PID"
wait "$X2_PID" || problem "the second xtcd exited $? after SIGTERM"
X2_PID=

if [ "$failures" -ne 0 ]; then
	echo "--- xtcd log, without the 'no hello' lines"
	grep -v "sent no hello" "$T/xtcd.log" | tail -n 40
	echo "--- second xtcd log"
	cat "$T/xtcd2.log"
	echo "$failures failure(s)"
	exit 1
fi
echo "PASS"
exit 0
