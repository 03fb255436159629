#!/bin/bash
# tests/install_check.sh BUILD_DIR - install into a staging root and build
# a program against the installed copy through pkg-config, as a user of
# the package would; run it in-process and check what it recorded.
set -eu
build=${1:-.}
stage=$(mktemp -d "${TMPDIR:-/tmp}/xtc-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT
make -C "$build" -s install DESTDIR="$stage" >/dev/null
prefix=$(sed -n 's/^prefix=//p' "$build/xtctail.pc")
libdir=$(sed -n 's/^libdir=//p' "$build/xtctail.pc" | sed "s|\${exec_prefix}|$prefix|")
export PKG_CONFIG_PATH="$stage$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
cat >"$stage/user.c" <<'C'
#include <stdio.h>
#include <xtc_tail.h>

static int count_cb(const xtc_tail_rec_t *r, void *u) { (void)r; ++*(int *)u; return 0; }

int main(void)
{
	int n = 0;

	if (xtc_tail_configure(2, 64) != XTC_OK || xtc_tail_enable(XTC_TAIL_ALL) != 0)
		return 1;
	if (xtc_tail_loop_bind(7) != XTC_OK)
		return 1;
	for (int i = 0; i < 100; i++)
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_RUN, ((xtc_pid_t){ 7, 1, (uint64_t)i }), (uint64_t)i);
	xtc_tail_read(count_cb, &n);
	printf("read %d, count %zu, dropped %llu, on %d\n", n, xtc_tail_count(),
	       (unsigned long long)xtc_tail_dropped(), xtc_tail_on(XTC_TAIL_SCHED));
	return !(n == 64 && xtc_tail_count() == 64 && xtc_tail_dropped() == 36);
}
C
cc -std=c99 -Wall -Werror -pedantic -o "$stage/user" "$stage/user.c" $(pkg-config --cflags --libs xtctail)
out=$(LD_LIBRARY_PATH="$stage$libdir" "$stage/user")
echo "installed copy: $out"
[ "$out" = "read 64, count 64, dropped 36, on 1" ]
# Nothing private is exported from the installed library.
extra=$(nm -D --defined-only "$stage$libdir/libxtctail.so" | awk '{print $3}' | grep -v -e '^xtc_tail_' -e '^XTCTAIL_' || true)
[ -z "$extra" ] || { echo "exported beyond the API: $extra"; exit 1; }
for m in xtc_tail.3 xtcd.8 xtc-segment.5 xtcd.conf.5 xtcd.conf.example; do
	find "$stage" -name "$m" | grep -q . || { echo "man page $m not installed"; exit 1; }
done
[ -x "$stage$prefix/bin/xtcd" ] || { echo "xtcd not installed"; exit 1; }
# The units, where configure found a unit directory, naming the installed xtcd.
unitdir=$(sed -n 's/^systemdsystemunitdir = //p' "$build/Makefile")
if [ -n "$unitdir" ]; then
	[ -f "$stage$unitdir/xtcd.socket" ] || { echo "xtcd.socket not installed in $unitdir"; exit 1; }
	grep -q "^ExecStart=$prefix/bin/xtcd " "$stage$unitdir/xtcd.service" ||
		{ echo "xtcd.service not installed in $unitdir, or not naming $prefix/bin/xtcd"; exit 1; }
fi
# The adapters, when built: they export the names they interpose and
# nothing else, with a pkg-config file each and their man page.
for a in ev:'^ev_' uring:'^(__)?io_uring_|^LIBURING_'; do
	lib=$stage$libdir/libxtctail-${a%%:*}.so
	[ -f "$lib" ] || continue
	extra=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v -E "${a#*:}" || true)
	[ -z "$extra" ] || { echo "libxtctail-${a%%:*} exports beyond what it interposes: $extra"; exit 1; }
	pkg-config --libs "xtctail-${a%%:*}" | grep -q -- "-lxtctail-${a%%:*}" ||
		{ echo "xtctail-${a%%:*}.pc does not link -lxtctail-${a%%:*}"; exit 1; }
	find "$stage" -name "xtc_tail_${a%%:*}.3" | grep -q . || { echo "man page xtc_tail_${a%%:*}.3 not installed"; exit 1; }
done
echo "ok: install, pkg-config, link, exports and man pages"

# ---- `sudo make install` into /usr/local, for real: the program runs with
# no LD_LIBRARY_PATH, the dynamic linker finding the library through the
# cache the install refreshed.  In a private mount namespace, so the host
# is untouched: /usr/local a tmpfs, /etc an overlay (ldconfig writes its
# cache there), the units into the staging root.
if [ "$prefix" != /usr/local ]; then
	echo "note: $build is configured for $prefix, not /usr/local: the real install was not checked"
	exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! unshare --mount true 2>/dev/null; then
	echo "note: not root, or no mount namespaces: the real install into /usr/local was not checked"
	exit 0
fi
mkdir -p "$stage/etc-upper" "$stage/etc-work" "$stage/units"
unshare --mount --propagation private bash -eu -c '
	build=$1 stage=$2
	mount -t tmpfs tmpfs /usr/local
	mount -t overlay overlay -o "lowerdir=/etc,upperdir=$stage/etc-upper,workdir=$stage/etc-work" /etc ||
		{ echo "note: no overlay file system for /etc: the real install was not checked"; exit 0; }
	make -C "$build" -s install systemdsystemunitdir="$stage/units" >/dev/null
	cc -std=c99 -Wall -Werror -pedantic -o /usr/local/bin/xtc-user "$stage/user.c" \
		$(PKG_CONFIG_PATH=/usr/local/lib/pkgconfig pkg-config --cflags --libs xtctail)
	out=$(env -u LD_LIBRARY_PATH /usr/local/bin/xtc-user 2>&1) ||
		{ echo "FAIL: after make install into /usr/local, the installed program does not run: $out"; exit 1; }
	echo "installed into /usr/local: $out"
	ldd /usr/local/bin/xtc-user | grep libxtctail
	echo "ok: make install into /usr/local: the dynamic linker finds libxtctail without LD_LIBRARY_PATH"
' install-check "$build" "$stage"
