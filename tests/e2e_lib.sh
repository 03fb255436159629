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
	slow_disk_undo
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

# need_valgrind: skip (77) unless valgrind is installed and $XTCD is a
# plain build: valgrind cannot run an AddressSanitizer one (both own the
# address space); the plain build of the same suite runs the test.
need_valgrind() {
	command -v valgrind >/dev/null || { echo "SKIP: valgrind is needed (scripts/deps.sh installs it)"; exit 77; }
	if nm "$XTCD" 2>/dev/null | grep -q '__asan_init'; then
		echo "SKIP: $XTCD is an ASan build, which valgrind cannot run; the plain build runs this test"
		exit 77
	fi
}

# callgrind_count FUNCTION OUT ARGS...: the instructions valgrind counts
# inside FUNCTION while xtcd ARGS runs, its stdout into OUT (the count
# does not depend on the machine's load); the test fails if xtcd does.
callgrind_count() {
	local fn=$1 out=$2
	shift 2
	valgrind --tool=callgrind --toggle-collect="$fn" --callgrind-out-file="$out.cg" \
		"$XTCD" "$@" >"$out" 2>"$out.vg" || fail "xtcd $* under valgrind exited $?: $(tail -5 "$out.vg")"
	sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out.cg"
}

# churned_sessions N: a directory $T/dN of N short sessions of one
# process (tests/badclient churn), written by an xtcd of its own.
churned_sessions() {
	mkdir -p "$T/d$1"
	"$XTCD" --dir "$T/d$1" --socket "$SOCK" --log-rate-burst 10 >"$T/gen$1.log" 2>&1 &
	XTCD_PID=$!
	for _ in $(seq 1 500); do [ -S "$SOCK" ] && grep -q listening "$T/gen$1.log" && break; sleep 0.02; done
	"$BADCLIENT" "$SOCK" churn "$1" >"$T/churn$1.out" 2>&1 || fail "churn $1: $(cat "$T/churn$1.out")"
	stop_xtcd
	rm -f "$SOCK"
}

# slow_disk BYTES_PER_S: a fresh ext4 at $SLOW_MNT on a loop device whose
# writes the block layer throttles to BYTES_PER_S (the cgroup v1 blkio
# throttle), so that writes reaching the device (O_DIRECT ones, or
# write-back) wait for it as on a slow disk; $SLOW_BDI is its
# /sys/class/bdi directory.  Undone at exit.  Root only: where it cannot
# be made, returns 1 with $SLOW_WHY saying why.
SLOW_MNT= SLOW_DEV= SLOW_MAJMIN= SLOW_BDI= SLOW_WHY=
SLOW_THROTTLE=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
slow_disk() {
	SLOW_WHY=
	[ "$(id -u)" = 0 ] || { SLOW_WHY="not root (a loop device and the blkio throttle)"; return 1; }
	[ -w "$SLOW_THROTTLE" ] || { SLOW_WHY="no cgroup v1 blkio throttle at $SLOW_THROTTLE"; return 1; }
	command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null ||
		{ SLOW_WHY="no losetup or mkfs.ext4"; return 1; }
	SLOW_MNT=$T/mnt
	mkdir -p "$SLOW_MNT"
	truncate -s 128M "$T/disk.img"
	mkfs.ext4 -q -F "$T/disk.img" >/dev/null 2>&1 || { SLOW_WHY="mkfs.ext4 failed"; return 1; }
	SLOW_DEV=$(losetup -f --show "$T/disk.img" 2>/dev/null) || { SLOW_DEV=; SLOW_WHY="no loop device free"; return 1; }
	mount "$SLOW_DEV" "$SLOW_MNT" 2>/dev/null || { SLOW_WHY="cannot mount $SLOW_DEV"; return 1; }
	SLOW_MAJMIN=$(cat "/sys/block/${SLOW_DEV#/dev/}/dev")
	SLOW_BDI=/sys/class/bdi/$SLOW_MAJMIN
	echo "$SLOW_MAJMIN $1" >"$SLOW_THROTTLE" 2>/dev/null ||
		{ SLOW_WHY="the blkio throttle refused $SLOW_MAJMIN"; return 1; }
}

# slow_disk_undo: xtcd stopped, the throttle, the mount and the loop
# device gone.
slow_disk_undo() {
	[ -n "$SLOW_DEV" ] || return 0
	[ -n "$XTCD_PID" ] && kill -9 "$XTCD_PID" 2>/dev/null && wait "$XTCD_PID" 2>/dev/null
	XTCD_PID=
	[ -n "$SLOW_MAJMIN" ] && echo "$SLOW_MAJMIN 0" >"$SLOW_THROTTLE" 2>/dev/null
	mountpoint -q "$SLOW_MNT" 2>/dev/null && umount -l "$SLOW_MNT"
	losetup -d "$SLOW_DEV" 2>/dev/null
	SLOW_DEV= SLOW_MAJMIN=
}
