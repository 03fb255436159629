#!/bin/bash
# priority_boost: xtcd's event loop (and the kernel's io_uring workers it
# starts, which take their nice from it) drain at nice -10 by default,
# while the worker thread (fdatasync, page touches) keeps the nice xtcd
# was started with; --priority-boost 0 leaves every thread as started;
# without CAP_SYS_NICE xtcd says so in one line and records as before.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

base=$(nice)
nice -n -11 true 2>/dev/null || { echo "SKIP: this shell may not lower a nice value (no CAP_SYS_NICE)"; exit 77; }
want=$(( base < -10 ? base : -10 ))

# thread_nices PID: "comm nice" for every thread of PID.
thread_nices() {
	for t in /proc/"$1"/task/*; do
		echo "$(cat "$t/comm") $(cut -d' ' -f19 "$t/stat") $(basename "$t")"
	done
}

# check_threads PID MAIN WORKER: the event loop (tid = pid) at MAIN, the
# other thread named xtcd (the worker) at WORKER, io_uring workers at MAIN.
check_threads() {
	local pid=$1 main=$2 worker=$3 comm nice tid seen_worker=0
	while read -r comm nice tid; do
		if [ "$tid" = "$pid" ]; then
			[ "$nice" = "$main" ] || fail "the event loop runs at nice $nice, want $main"
		elif [ "$comm" = xtcd ]; then
			[ "$nice" = "$worker" ] || fail "the worker thread runs at nice $nice, want $worker"
			seen_worker=1
		elif [ "${comm#iou-wrk}" != "$comm" ]; then
			[ "$nice" = "$main" ] || fail "io_uring worker $comm runs at nice $nice, want $main"
		fi
	done < <(thread_nices "$pid")
	[ $seen_worker = 1 ] || fail "no worker thread found: $(thread_nices "$pid" | tr '\n' ';')"
}

start_xtcd
# Records written, so io_uring has started the workers it needs.
"$LOADGEN" 1 200000 0 300 >"$T/lg.out" || fail "loadgen failed"
check_threads "$XTCD_PID" "$want" "$base"
wait_log "ended: detached"
grep -q "cannot raise" "$T/xtcd.log" && fail "a privileged xtcd warned about its priority"
stop_xtcd
echo "ok: the drain at nice $want, the worker thread at $base"

: >"$T/xtcd.log"
start_xtcd --priority-boost 0
"$LOADGEN" 1 200000 0 300 >"$T/lg.out" || fail "loadgen failed"
check_threads "$XTCD_PID" "$base" "$base"
stop_xtcd
echo "ok: --priority-boost 0 leaves every thread at nice $base"

# Not allowed: one warning naming what to do, then recording as usual.
if [ "$(id -u)" = 0 ] && setpriv --bounding-set=-sys_nice true 2>/dev/null && [ "$base" -gt -10 ]; then
	: >"$T/xtcd.log"
	rm -rf "$DIR" && mkdir -p "$DIR"
	XTCD_REAL=$XTCD
	printf '#!/bin/sh\nexec setpriv --bounding-set=-sys_nice --inh-caps=-sys_nice %s "$@"\n' \
		"$(cd "$(dirname "$XTCD_REAL")" && pwd)/$(basename "$XTCD_REAL")" >"$T/xtcd-nocap"
	chmod +x "$T/xtcd-nocap"
	XTCD=$T/xtcd-nocap
	start_xtcd
	XTCD=$XTCD_REAL
	"$LOADGEN" 2 50000 >"$T/lg.out" || fail "loadgen failed"
	wait_log "ended: detached"
	[ "$(grep -c "cannot raise the drain's priority to nice -10" "$T/xtcd.log")" = 1 ] ||
		fail "want one line saying the priority could not be raised"
	grep -q "CAP_SYS_NICE" "$T/xtcd.log" || fail "the warning does not say what to do"
	check_threads "$XTCD_PID" "$base" "$base"
	stop_xtcd
	cat_json
	python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" complete 2 50000 ||
		fail "an unboosted xtcd lost records"
	echo "ok: without CAP_SYS_NICE one warning, every record written"
else
	echo "note: the unprivileged case needs root and setpriv; not run"
fi

# Out of range: refused with the range, like every setting.
printf 'priority_boost = 21\n' >"$T/bad.conf"
"$XTCD" --check-config "$T/bad.conf" >"$T/cc.out" 2>&1 && fail "priority_boost = 21 was accepted"
grep -q "0 to 20" "$T/cc.out" || fail "the refusal does not give the range: $(cat "$T/cc.out")"
echo "ok: priority_boost = 21 refused"
