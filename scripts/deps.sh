#!/bin/bash
# scripts/deps.sh - install what building and testing xtc-tail needs on
# Debian 12, if it is missing.  Sourced by quickstart.sh and test.sh.
XTC_DEPS="build-essential autoconf automake libtool pkg-config liburing-dev libev-dev check python3 libprotobuf-c-dev protobuf-c-compiler zlib1g-dev babeltrace2 golang-go nodejs nghttp2-server nghttp2-client libcurl4-openssl-dev"
# The viewers' tests (tests/e2e_*_viewers.sh) run babeltrace2, go tool pprof
# and, installed by npm into the build tree, the DevTools trace engine and
# pprof-format.  Debian's npm is its own package; NodeSource's nodejs has it.
# nghttpd and h2load (nghttp2-server, nghttp2-client): a real libev program
# under libxtctail-ev (tests/e2e_nghttpd.sh).

xtc_install_deps() {
	local missing=() p
	for p in $XTC_DEPS "$@"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	command -v npm >/dev/null 2>&1 || dpkg -s npm >/dev/null 2>&1 || missing+=(npm)
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "installing: ${missing[*]}"
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -q >/dev/null || { echo "apt-get update failed" >&2; return 1; }
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >/dev/null ||
		{ echo "apt-get install ${missing[*]} failed" >&2; return 1; }
}

# Configure directory $1 (once) with configure flags $2...  The source
# tree itself is built in place.  Another directory (build-san/,
# build-fuzz/) of a git checkout gets a copy of the sources, built in
# place too: a VPATH build cannot share a source tree already configured
# in place (configure refuses, and make would take the in-tree objects).
# The copy is refreshed on every call: files whose contents changed are
# copied anew (so they are newer than what was built from them), the rest
# are left alone, so make redoes only what changed.  Elsewhere (a release
# tarball) it is a VPATH build.
xtc_configure() {
	local dir=$1; shift
	local top src f; top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	src=$top
	if [ "$dir" != "$top" ] && git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		while IFS= read -r -d '' f; do
			[ -f "$top/$f" ] && ! cmp -s "$top/$f" "$dir/$f" || continue
			mkdir -p "$dir/$(dirname "$f")" && cp "$top/$f" "$dir/$f" ||
				{ echo "copying the sources to $dir failed" >&2; return 1; }
		done < <(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		         grep -z -v -e '^build-')
		src=$dir
	fi
	[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >/dev/null 2>&1) || { echo "autoreconf failed" >&2; return 1; }
	if [ ! -f "$dir/Makefile" ]; then
		(cd "$dir" && "$src/configure" -q "$@") || { echo "configure failed" >&2; return 1; }
	fi
}

# Configure (once) and build in directory $1 with configure flags $2...
xtc_build() {
	local dir=$1
	xtc_configure "$@" || return 1
	make -C "$dir" -j"$(nproc)" -s >/dev/null || make -C "$dir" -j1
}
