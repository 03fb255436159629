# tests/e2e_lib.sh - helpers for end-to-end tests: a real xtcd in a
# temporary directory, real producers, real files.  Source it.
set -u

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
XTCD=${XTCD:-$top_builddir/xtcd/xtcd}
LOADGEN=${LOADGEN:-$top_builddir/tests/xtc-loadgen}
BADCLIENT=${BADCLIENT:-$top_builddir/tests/xtc-badclient}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed to check JSON output"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/xtc-e2e.XXXXXX")
DIR=$T/segments
SOCK=$T/xtcd.sock
mkdir -p "$DIR"
XTCD_PID=
export XTC_TAIL_SHM=$SOCK

cleanup() {
	[ -n "$XTCD_PID" ] && kill -9 "$XTCD_PID" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	[ -f "$T/xtcd.log" ] && { echo "--- xtcd log"; tail -n 30 "$T/xtcd.log"; }
	exit 1
}

# start_xtcd [extra xtcd flags...]: start xtcd and wait until it listens.
start_xtcd() {
	# Wait for this xtcd's own "listening" line, not an earlier one's.
	local before
	before=$(grep -c listening "$T/xtcd.log" 2>/dev/null || true)
	"$XTCD" --dir "$DIR" --socket "$SOCK" "$@" >>"$T/xtcd.log" 2>&1 &
	XTCD_PID=$!
	for _ in $(seq 1 500); do
		[ -S "$SOCK" ] && [ "$(grep -c listening "$T/xtcd.log")" -gt "${before:-0}" ] && return 0
		kill -0 "$XTCD_PID" 2>/dev/null || fail "xtcd exited at start"
		sleep 0.02
	done
	fail "xtcd did not start listening"
}

# stop_xtcd: SIGTERM and wait; fails unless it exits 0.
stop_xtcd() {
	kill -TERM "$XTCD_PID"
	wait "$XTCD_PID" || fail "xtcd exited with $? after SIGTERM"
	XTCD_PID=
}

# wait_log PATTERN [seconds]: wait until the xtcd log matches.
wait_log() {
	for _ in $(seq 1 $(( ${2:-10} * 50 ))); do
		grep -q -- "$1" "$T/xtcd.log" && return 0
		sleep 0.02
	done
	fail "xtcd never logged '$1'"
}

# cat_json: every record as JSON lines into $T/all.json
cat_json() {
	"$XTCD" --cat "$DIR" --json >"$T/all.json" 2>"$T/cat.err" || fail "xtcd --cat exited $?: $(cat "$T/cat.err")"
}

# adapter_preload LIB: an LD_PRELOAD value for an adapter library; in a
# sanitizer build the sanitizer runtimes it needs come first, as ASan
# requires of every process it runs in.
adapter_preload() {
	local rt
	rt=$(ldd "$1" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ { printf "%s ", $3 }')
	echo "$rt$1"
}
