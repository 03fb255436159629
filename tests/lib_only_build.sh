#!/bin/bash
# tests/lib_only_build.sh [SRCDIR] - prove that libxtctail builds, passes
# its tests and links nothing but libc with none of the daemon's
# dependencies present.
#
# In a private mount namespace, the headers, pkg-config files and the
# protoc-c compiler of liburing, libev, protobuf-c and zlib are hidden
# (empty files and directories bound over them), as on a machine where
# the -dev packages were never installed.  There, in a fresh copy of the
# sources:
#   1. plain ./configure must fail, naming a missing package (the hiding
#      works);
#   2. ./configure --disable-xtcd && make && make check must pass;
#   3. libxtctail.so must need no library beyond libc (and the loader).
# Exits 77 where the machine cannot make a mount namespace.
set -u
top=$(cd "${1:-$(dirname "$0")/..}" && pwd)

if [ "${XTC_LIBONLY_INNER:-}" != 1 ]; then
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "SKIP: cannot make a private mount namespace (unshare -m needs root or user namespaces)"; exit 77; }
	XTC_LIBONLY_INNER=1 exec unshare -m --propagation private bash "$0" "$top"
fi

fail() { echo "FAIL: $*"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xtc-libonly.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/empty" "$work/pc" "$work/src"

# Hide every trace of the daemon's dependencies.
hidden=0
for f in /usr/include/liburing.h /usr/include/ev.h /usr/include/ev++.h /usr/include/event.h \
         /usr/include/zlib.h /usr/include/zconf.h /usr/include/protobuf-c/protobuf-c.h \
         /usr/bin/protoc-c /usr/bin/protoc-gen-c; do
	[ -e "$f" ] || continue
	mount --bind /dev/null "$f" || fail "cannot hide $f"
	hidden=$((hidden + 1))
done
for d in /usr/include/liburing /usr/include/protobuf-c; do
	[ -d "$d" ] || continue
	mount --bind "$work/empty" "$d" || fail "cannot hide $d"
	hidden=$((hidden + 1))
done
# pkg-config sees Check (and libsubunit, which check.pc requires) and
# nothing else.
for pc in /usr/lib/x86_64-linux-gnu/pkgconfig/check.pc /usr/lib/x86_64-linux-gnu/pkgconfig/libsubunit.pc \
          /usr/lib/pkgconfig/check.pc /usr/share/pkgconfig/check.pc; do
	[ -f "$pc" ] && cp "$pc" "$work/pc/"
done
export PKG_CONFIG_LIBDIR=$work/pc PKG_CONFIG_PATH=
echo "hid $hidden files and directories of liburing, libev, protobuf-c and zlib"

# A fresh copy of the sources (the checkout itself may be configured).
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard | grep -z -v -e '^build-' |
		xargs -0 -I{} sh -c '[ -e "{}" ] && printf "%s\0" "{}"' | tar cf - --null -T -) |
		tar xf - -C "$work/src" || fail "copying the sources"
else
	cp -a "$top/." "$work/src/" || fail "copying the sources"
	(cd "$work/src" && { [ ! -f Makefile ] || make -s distclean >/dev/null 2>&1; })
fi
cd "$work/src" || fail "no source copy"
[ -x configure ] || autoreconf -fi >/dev/null 2>&1 || fail "autoreconf failed"

# 1. The full build must notice what is missing, and say what to install.
if out=$(./configure -q 2>&1); then
	fail "configure succeeded with liburing, libev and protobuf-c hidden: the test hides nothing"
fi
echo "$out" | grep -q 'install the Debian package' ||
	fail "configure failed without naming the package to install: $(echo "$out" | tail -n 1)"
echo "full build refused, as it should: $(echo "$out" | grep 'error:' | tail -n 1)"
make -s distclean >/dev/null 2>&1 || rm -f config.status config.h Makefile

# 2. The library alone.
./configure -q --disable-xtcd || fail "configure --disable-xtcd failed with the daemon's dependencies absent"
make -j2 -s >"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log"; fail "make failed"; }
make -j2 check >"$work/check.log" 2>&1 || { tail -n 60 "$work/check.log"; fail "make check failed"; }
grep -E '^# (TOTAL|PASS|FAIL)' "$work/check.log"
grep -q '^# PASS: *[3-9]' "$work/check.log" ||
	fail "make check did not run the library's Check suites (is the Debian package check installed?)"

# 3. What the library needs at run time.
so=$(ls lib/.libs/libxtctail.so.* 2>/dev/null | head -n 1)
[ -n "$so" ] || fail "no lib/.libs/libxtctail.so built"
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
for lib in $needed; do
	case "$lib" in
	libc.so.*|libpthread.so.*|ld-linux*) ;;
	*) fail "libxtctail needs $lib: only libc and pthreads are allowed" ;;
	esac
done
echo "ok: libxtctail built and tested with libc and pthreads alone (needs: $needed)"
