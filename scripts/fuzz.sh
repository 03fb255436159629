#!/bin/bash
# scripts/fuzz.sh - build the libFuzzer harnesses (fuzz/) with clang, ASan
# and UBSan in build-fuzz/ and run each one for a bounded time.
#
#   scripts/fuzz.sh               each harness $FUZZ_SECONDS (default 60) s
#   scripts/fuzz.sh 3600          each harness an hour
#   scripts/fuzz.sh 600 shm       only fuzz_shm, ten minutes
#
# Harnesses: segread (any bytes as a segment file, read whole and as a
# growing file), attach (the hello parser and memfd check), shm (a hostile
# producer's segment under xtcd's own session code).  Each starts from the
# seeds in fuzz/corpus/<harness>/ plus what earlier runs kept in
# build-fuzz/corpus/<harness>/.  Any crash, leak, timeout or sanitizer
# report fails the script; the input that caused it is saved as
# build-fuzz/artifacts/<harness>-crash-<sha1> (rerun it with
# build-fuzz/fuzz/fuzz_<harness> FILE).  The last lines print the
# executions each harness ran.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/deps.sh"

secs=${1:-${FUZZ_SECONDS:-60}}
shift || true
harnesses=${*:-segread attach shm}
build=$top/build-fuzz
case $secs in ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [HARNESS...]" >&2; exit 2;; esac

xtc_install_deps clang libclang-rt-14-dev
xtc_configure "$build" CC=clang --enable-fuzzing ||
	{ echo "fuzz.sh: configuring build-fuzz failed" >&2; exit 1; }
progs=()
for h in $harnesses; do
	[ -f "$top/fuzz/fuzz_$h.c" ] || { echo "fuzz.sh: no harness fuzz/fuzz_$h.c" >&2; exit 2; }
	progs+=("fuzz/fuzz_$h")
done
make -C "$build" -j"$(nproc)" -s "${progs[@]}" >/dev/null || make -C "$build" -j1 "${progs[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/artifacts"
summary=()
failed=0
t0=$(date +%s)
for h in $harnesses; do
	work=$build/corpus/$h
	log=$build/fuzz-$h.log
	mkdir -p "$work"
	echo "fuzz_$h: $secs s from $(ls "$top/fuzz/corpus/$h" | wc -l) seeds" \
	     "and $(ls "$work" | wc -l) kept inputs"
	rc=0
	"$build/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-max_len=131072 -print_final_stats=1 -artifact_prefix="$build/artifacts/$h-" \
		"$work" "$top/fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
	if [ "$rc" -ne 0 ] || grep -q -e '^==[0-9]*==ERROR' -e 'runtime error:' "$log"; then
		echo "FAIL: fuzz_$h exited $rc; the end of $log:"
		tail -n 60 "$log"
		ls "$build/artifacts/$h-"* 2>/dev/null | sed 's/^/  input: /'
		failed=1
	fi
	summary+=("$(printf '  %-8s %8s s %12s executions %8s exec/s  %s  corpus %s' \
		"$h" "$secs" "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}" "$(ls "$work" | wc -l)")")
done
echo "fuzzing done in $(( $(date +%s) - t0 )) s:"
printf '%s\n' "${summary[@]}"
exit "$failed"
