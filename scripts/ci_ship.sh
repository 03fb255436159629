#!/bin/bash
# scripts/ci_ship.sh - the CI stage for what leaves the host: xtcd --ship
# into a real ClickHouse and xtcd's metrics scraped by a real
# node-exporter.  Installs Debian's clickhouse-server, clickhouse-client
# and prometheus-node-exporter (their services are not started: each test
# starts its own server on loopback, in its own directory), builds, and
# runs the tests, which are too slow for make check.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/deps.sh"
xtc_install_deps clickhouse-server clickhouse-client prometheus-node-exporter curl
xtc_build "$top"
make -C "$top" -j2 check TESTS= >/dev/null
cd "$top"
rc=0
for t in tests/e2e_clickhouse.sh tests/e2e_ship_walk.sh tests/e2e_metrics.sh; do
	[ -f "$t" ] || continue
	echo "==== $t"
	s=$SECONDS
	top_builddir=$top top_srcdir=$top bash "$t" || { r=$?; [ $r -eq 77 ] && echo "SKIP: $t" || rc=1; }
	echo "==== $t: $((SECONDS - s)) s"
done
exit $rc
