#!/bin/sh
# bench/run.sh - `make bench`: run bench/run.py (both sides, one table).
# Arguments pass through (make bench BENCH_FLAGS='--sustain-seconds 30').
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
if ! command -v python3 >/dev/null 2>&1; then
	echo "bench: python3 is needed to run the benchmarks" >&2
	exit 1
fi
exec python3 "$top_srcdir/bench/run.py" --builddir "$top_builddir" --srcdir "$top_srcdir" "$@"
