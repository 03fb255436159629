#!/bin/bash
# bench/adapter_nghttpd.sh - what libxtctail-ev costs a real libev server.
#
# nghttpd (Debian's nghttp2-server, --no-tls, 2 worker loops) serves a 1 KiB
# file to h2load (8 connections, 10 streams each, REQUESTS requests) on
# loopback, in three modes, interleaved, ROUNDS rounds:
#   plain       no adapter
#   loops       LD_PRELOAD=libxtctail-ev.so XTC_TAIL_EV_CALLBACKS=0, attached
#               to a running xtcd (loop records only)
#   callbacks   LD_PRELOAD=libxtctail-ev.so, the default (loop and callback
#               records), attached
# The server's CPU time (every thread's /proc schedstat run time, ns) over
# the h2load run, divided by the requests, is the figure: the median of the
# rounds per mode, and the overhead against plain in us and percent.  The
# load average before and after is printed: on a shared machine, compare
# only runs taken under similar load.
#
# usage: bench/adapter_nghttpd.sh [ROUNDS [REQUESTS]]   (defaults 5, 200000)
#        make bench-adapters BENCH_ADAPTER_ARGS="5 200000"
set -eu
ROUNDS=${1:-5}
REQUESTS=${2:-200000}
top_builddir=${top_builddir:-.}
XTCD=$top_builddir/xtcd/xtcd
EVLIB=$(cd "$top_builddir" && pwd)/lib/ev/.libs/libxtctail-ev.so
NGHTTPD=$(command -v nghttpd || echo /usr/sbin/nghttpd)
H2LOAD=$(command -v h2load || echo /usr/bin/h2load)
for f in "$XTCD" "$EVLIB" "$NGHTTPD" "$H2LOAD"; do
	[ -e "$f" ] || { echo "adapter_nghttpd: $f is missing (build first; apt-get install nghttp2-server nghttp2-client)" >&2; exit 2; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/xtc-bench-ng.XXXXXX")
XPID=
NG=
trap '[ -n "$NG" ] && kill -9 $NG 2>/dev/null; [ -n "$XPID" ] && kill $XPID 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/seg" "$T/htdocs"
head -c 1024 /dev/zero | tr '\0' x >"$T/htdocs/index.html"
"$XTCD" --dir "$T/seg" --socket "$T/xtcd.sock" --max-bytes 268435456 >"$T/xtcd.log" 2>&1 &
XPID=$!
for _ in $(seq 1 250); do [ -S "$T/xtcd.sock" ] && break; sleep 0.02; done

cpu_ns() { # every thread of $1: run time in ns
	local sum=0 t
	for t in /proc/"$1"/task/*/schedstat; do
		read -r run _ <"$t" && sum=$((sum + run))
	done
	echo $sum
}

one() { # mode -> "mode requests cpu_ns"
	local mode=$1 port env=()
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	case $mode in
	plain)     env=(XTC_TAIL_SHM=) ;;
	loops)     env=(LD_PRELOAD="$EVLIB" XTC_TAIL_SHM="$T/xtcd.sock" XTC_TAIL_EV_CALLBACKS=0) ;;
	callbacks) env=(LD_PRELOAD="$EVLIB" XTC_TAIL_SHM="$T/xtcd.sock") ;;
	esac
	env "${env[@]}" "$NGHTTPD" --no-tls -n 2 -a 127.0.0.1 -d "$T/htdocs" "$port" >/dev/null 2>&1 &
	NG=$!
	for _ in $(seq 1 250); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
		sleep 0.02
	done
	sleep 0.2
	local c0 c1 ok
	c0=$(cpu_ns $NG)
	"$H2LOAD" -n "$REQUESTS" -c 8 -m 10 -t 1 "http://127.0.0.1:$port/index.html" >"$T/h2.out" 2>&1
	c1=$(cpu_ns $NG)
	ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$T/h2.out")
	kill -9 $NG; wait $NG 2>/dev/null || true
	NG=
	echo "$mode $ok $((c1 - c0))"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
for r in $(seq 1 "$ROUNDS"); do
	for m in plain loops callbacks; do
		one $m >>"$T/runs"
	done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$T/runs" "$ROUNDS" "$REQUESTS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m, ok, ns = line.split()
    runs.setdefault(m, []).append((int(ns) / 1e3 / max(int(ok), 1), int(ok)))
print("nghttpd, %s rounds x %s requests (h2load -c 8 -m 10), server CPU per request:" % (sys.argv[2], sys.argv[3]))
base = statistics.median(v for v, _ in runs["plain"])
for m in ("plain", "loops", "callbacks"):
    vals = [v for v, _ in runs[m]]
    med = statistics.median(vals)
    extra = "" if m == "plain" else "   %+.3f us  %+.1f%%" % (med - base, (med - base) * 100 / base)
    print("  %-10s %7.3f us/request (min %.3f, max %.3f)%s" % (m, med, min(vals), max(vals), extra))
PY
