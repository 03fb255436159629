#!/bin/bash
# A real program from Debian under libxtctail-ev: nghttpd (nghttp2-server,
# a libev HTTP/2 server with a loop per worker thread) driven by h2load
# (nghttp2-client) on loopback for a few seconds.  Every h2load request
# succeeds, the session reconciles (produced = written + dropped + lost),
# every loop (the acceptor and each worker) appears with its waits and
# callbacks, --cat names every kind, and --report shows per-loop busy
# shares and callback latencies.  scripts/deps.sh installs both packages.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

EVLIB=${EVLIB:-$top_builddir/lib/ev/.libs/libxtctail-ev.so}
NGHTTPD=${NGHTTPD:-$(command -v nghttpd || echo /usr/sbin/nghttpd)}
H2LOAD=${H2LOAD:-$(command -v h2load || echo /usr/bin/h2load)}
[ -f "$EVLIB" ] || { echo "SKIP: $EVLIB is not built"; exit 77; }
[ -x "$NGHTTPD" ] && [ -x "$H2LOAD" ] ||
	{ echo "SKIP: nghttpd and h2load are needed: apt-get install nghttp2-server nghttp2-client (scripts/deps.sh)"; exit 77; }
WORKERS=2
SECONDS_LOAD=${SECONDS_LOAD:-3}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/htdocs"
head -c 1024 /dev/zero | tr '\0' x >"$T/htdocs/index.html"
start_xtcd --drain-ms 10
LD_PRELOAD=$(adapter_preload "$EVLIB") "$NGHTTPD" --no-tls -n "$WORKERS" -a 127.0.0.1 -d "$T/htdocs" "$port" \
	>"$T/nghttpd.out" 2>&1 &
NG=$!
trap 'kill -9 $NG 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 250); do
	python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
	kill -0 $NG 2>/dev/null || fail "nghttpd exited at start: $(cat "$T/nghttpd.out")"
	sleep 0.02
done
"$H2LOAD" -D "$SECONDS_LOAD" -c 8 -m 10 -t 2 "http://127.0.0.1:$port/index.html" >"$T/h2load.out" 2>&1 ||
	fail "h2load exited $?: $(tail -5 "$T/h2load.out")"
grep -E '^requests:' "$T/h2load.out"
python3 - "$T/h2load.out" <<'PY' || fail "h2load: $(grep -E '^requests:|^status' "$T/h2load.out")"
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", t)
sys.exit(0 if m and int(m.group(3)) > 1000 and m.group(4) == "0" and m.group(5) == "0" else 1)
PY
sleep 0.3   # one more idle wait of each loop, then stop it as an operator would
kill -TERM $NG
wait $NG 2>/dev/null
wait_log "ended:"
stop_xtcd
cat_json
python3 - "$T/all.json" "$top_srcdir/tests" "$WORKERS" <<'PY' || fail "nghttpd record"
import sys
from collections import defaultdict
sys.path.insert(0, sys.argv[2])
from e2e_check import load, sessions, reconcile

recs = list(load(sys.argv[1]))
ss = sessions(recs)
bad = []
if len(ss) != 1:
    bad.append("want one session, have %d" % len(ss))
for sid, s in ss.items():
    reconcile(s, sid)
waits, cbs, funcs = defaultdict(int), defaultdict(int), set()
for r in recs:
    if r["type"] != "event":
        continue
    if r["kind"] == "LOOP_WAIT":
        waits[r["loop_id"]] += 1
    elif r["kind"] == "CB_END":
        cbs[r["loop_id"]] += 1
    elif r["kind"] == "CB_FUNC":
        funcs.add(r["detail"])
workers = int(sys.argv[3])
if len(waits) != workers + 1:
    bad.append("want %d loops (acceptor + workers) with waits, have %r" % (workers + 1, dict(waits)))
busy = [l for l, n in cbs.items() if n >= 100]
if len(busy) < 1:
    bad.append("want worker loops with >= 100 callbacks, have %r" % dict(cbs))
if not funcs:
    bad.append("no CB_FUNC names a callback")
for m in bad:
    print("FAIL: " + m)
print("ok: %d loops, callbacks per loop %r, %d distinct callbacks" % (len(waits), dict(cbs), len(funcs)))
sys.exit(1 if bad else 0)
PY
"$XTCD" --cat "$DIR" >"$T/cat.txt" 2>&1 || fail "--cat exited $?"
grep -q KIND_ "$T/cat.txt" && fail "--cat printed a kind by number"
"$XTCD" --stats "$DIR" >"$T/stats.txt" 2>&1 || fail "--stats exited $?"
"$XTCD" --report "$DIR" >"$T/report.txt" 2>&1 || fail "--report exited $?: $(tail -3 "$T/report.txt")"
sed -n '/^ADAPTERS/,/slowest/p' "$T/report.txt"
python3 - "$T/report.txt" "$WORKERS" <<'PY' || fail "--report: $(sed -n '/^ADAPTERS/,$p' "$T/report.txt")"
import re, sys
t = open(sys.argv[1]).read()
sec = t[t.index("ADAPTERS"):] if "ADAPTERS" in t else ""
rows = re.findall(r"^\s+(\d+)\s+\d+\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%\s+(\d+)", sec, re.M)
ok = len(rows) == int(sys.argv[2]) + 1
ok = ok and any(float(b) > 0 and int(n) > 0 for _, b, _, _, n in rows)
ok = ok and re.search(r"^\s+io:\d+ cb\d+\s+\d+\s+\S+s\s+\S+s", sec, re.M) is not None
ok = ok and "head-of-line delay" in sec and "idle in its wait" in sec
sys.exit(0 if ok else 1)
PY
# The chrome export draws the callbacks and waits as slices that nest.
"$XTCD" --export chrome "$DIR" >"$T/trace.json" 2>"$T/export.err" || fail "--export chrome exited $?: $(cat "$T/export.err")"
python3 "$top_srcdir/tests/viewers/chrome_nesting.py" "$T/trace.json" || fail "the chrome export's slices do not nest"
grep -q '"name":"CB [0-9]*\.io:' "$T/trace.json" || fail "the chrome export has no callback slices"
echo "ok: nghttpd recorded through libxtctail-ev"
