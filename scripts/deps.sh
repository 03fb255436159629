#!/bin/bash
# scripts/deps.sh - install what building and testing xtc-tail needs on
# Debian 12, if it is missing.  Sourced by quickstart.sh and test.sh.
XTC_DEPS="build-essential autoconf automake libtool pkg-config liburing-dev libev-dev check python3"

xtc_install_deps() {
	local missing=() p
	for p in $XTC_DEPS "$@"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "installing: ${missing[*]}"
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -q >/dev/null || { echo "apt-get update failed" >&2; return 1; }
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >/dev/null ||
		{ echo "apt-get install ${missing[*]} failed" >&2; return 1; }
}

# Configure (once) and build in directory $1 with configure flags $2...
xtc_build() {
	local dir=$1; shift
	local top; top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi >/dev/null 2>&1) || { echo "autoreconf failed" >&2; return 1; }
	mkdir -p "$dir"
	if [ ! -f "$dir/Makefile" ]; then
		(cd "$dir" && "$top/configure" -q "$@") || { echo "configure failed" >&2; return 1; }
	fi
	make -C "$dir" -j"$(nproc)" -s >/dev/null || make -C "$dir" -j1
}
