#!/bin/bash
# scripts/test.sh - build and run the whole test suite (Check unit tests
# and end-to-end tests against a real xtcd).
#   scripts/test.sh               the normal build, in the source tree
#   scripts/test.sh --sanitizers  a separate ASan+UBSan build in build-san/
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/deps.sh"
xtc_install_deps

# show_failures BUILDDIR: the whole log of every test that did not pass,
# so that CI's output says why.
show_failures() {
	local trs
	for trs in "$1"/tests/*.trs; do
		grep -qE '^:test-result: (FAIL|ERROR)' "$trs" || continue
		echo "==== ${trs%.trs}.log"
		tail -n 200 "${trs%.trs}.log"
	done
}
if [ "${1:-}" = "--sanitizers" ]; then
	xtc_build "$top/build-san" --enable-sanitizers
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	make -C "$top/build-san" -j2 check || { show_failures "$top/build-san"; exit 1; }
else
	xtc_build "$top"
	make -C "$top" -j2 check || { show_failures "$top"; exit 1; }
	bash "$top/tests/install_check.sh" "$top"
fi
