#!/bin/bash
# xtcd --metrics-file: the node-exporter textfile.
#  1. While apps of two uids are attached (root and nobody, when the
#     machine lets this test switch uid), and again after they detached,
#     the file's values equal what xtcd --status --json says: sessions,
#     produced, written, dropped, lost (total and per uid), segments,
#     bytes on disk, budget; the write latency histogram counted writes.
#  2. With Debian's prometheus-node-exporter installed (the CI stage
#     scripts/ci_ship.sh installs it), a real node-exporter started here
#     on a loopback port reads the directory (--collector.textfile
#     .directory), parses the file without error and serves the same
#     values; without it, the file alone is checked, and this says so.
#  3. A bad --metrics-file is one line and exit 2.
. "${top_srcdir:-.}/tests/e2e_lib.sh"
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
TF=$T/textfile
mkdir -p "$TF"
chmod 755 "$T" "$DIR"
NE_PID=
APPS=()
metrics_cleanup() {
	local p
	for p in "${APPS[@]}" $NE_PID; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	cleanup
}
trap metrics_cleanup EXIT

# node-exporter reads *.prom only: another name is refused, not written unseen
rc=0; out=$("$XTCD" --dir "$DIR" --metrics-file "$TF/xtcd.metrics" 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "a --metrics-file not ending in .prom: exit $rc, not 2: $out"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "a bad --metrics-file printed more than one line: $out"
case $out in
*"--metrics-file $TF/xtcd.metrics: expected a file name ending in .prom, or none"*) ;;
*) fail "a bad --metrics-file did not say what it takes: $out" ;;
esac
echo "ok: bad --metrics-file: one line, exit 2"

start_xtcd --metrics-file "$TF/xtcd.prom" --segment-bytes 256K --max-bytes 1M
chmod 777 "$SOCK"
"$LOADGEN" 2 30000 20000 60000 >"$T/load0.out" 2>&1 &
APPS+=($!)
uids=1
if command -v setpriv >/dev/null 2>&1 &&
   setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	XTC_TAIL_SHM=$SOCK setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$LOADGEN" 1 20000 20000 60000 >"$T/load1.out" 2>&1 &
	APPS+=($!)
	uids=2
fi
for _ in $(seq 1 300); do
	n=$(grep -c emitted "$T"/load*.out 2>/dev/null | awk -F: '{s += $2} END {print s}')
	[ "$n" -ge "$uids" ] && break
	sleep 0.1
done
[ "$n" -ge "$uids" ] || fail "the apps did not finish emitting"

# wait_rewrite: until the file is rewritten after now (every 5 s).
wait_rewrite() {
	local before
	before=$(stat -c %Y.%N "$TF/xtcd.prom" 2>/dev/null | cut -d. -f1)
	sleep 1.1
	for _ in $(seq 1 100); do
		[ "$(stat -c %Y "$TF/xtcd.prom")" -gt "${before:-0}" ] && return 0
		sleep 0.1
	done
	fail "the metrics file was not rewritten within 10 s"
}

# scrape: the metrics, from node-exporter if there is one, else the file.
NE_PORT=
if [ -x "$NODE_EXPORTER" ]; then
	for _ in $(seq 1 20); do
		NE_PORT=$(( 20000 + RANDOM % 30000 ))
		"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" --collector.disable-defaults \
			--collector.textfile --collector.textfile.directory="$TF" >"$T/ne.log" 2>&1 &
		NE_PID=$!
		for _ in $(seq 1 100); do
			curl -sf "http://127.0.0.1:$NE_PORT/metrics" >/dev/null 2>&1 && break 2
			kill -0 "$NE_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$NE_PID" 2>/dev/null; wait "$NE_PID" 2>/dev/null; NE_PID=
	done
	[ -n "$NE_PID" ] || fail "prometheus-node-exporter did not start: $(tail -n 3 "$T/ne.log")"
fi
scrape() {
	if [ -n "$NE_PID" ]; then
		curl -sf "http://127.0.0.1:$NE_PORT/metrics" >"$T/scrape" || fail "scraping node-exporter failed"
	else
		cp "$TF/xtcd.prom" "$T/scrape"
	fi
}

check() {
	wait_rewrite
	"$XTCD" --status --socket "$SOCK" --json >"$T/status.json" || fail "xtcd --status failed"
	scrape
	python3 - "$T/status.json" "$T/scrape" "$1" "${NE_PID:+node-exporter}" <<'EOF' || fail "metrics differ from --status"
import json, sys
st = json.load(open(sys.argv[1]))
m, types = {}, {}
for line in open(sys.argv[2]):
    if line.startswith("# TYPE "):
        _, _, name, t = line.split()
        types[name] = t
    elif line.strip() and not line.startswith("#"):
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
def fail(msg):
    print("FAIL: " + msg); sys.exit(1)
if sys.argv[4] and m.get("node_textfile_scrape_error") != 0:
    fail("node-exporter could not parse the file: node_textfile_scrape_error %s" % m.get("node_textfile_scrape_error"))
want = {
    "xtcd_sessions": st["sessions_live"], "xtcd_events_produced_total": st["produced"],
    "xtcd_events_written_total": st["written"], "xtcd_events_dropped_total": st["dropped"],
    "xtcd_events_lost_total": st["lost"], "xtcd_segments": st["segments"],
    "xtcd_disk_bytes": st["bytes_used"], "xtcd_disk_budget_bytes": st["max_bytes"],
}
for k, v in want.items():
    if m.get(k) != v:
        fail("%s is %s, --status says %s" % (k, m.get(k), v))
for s in st["sessions"]:
    uid = s["uid"]
    live = [x for x in st["sessions"] if x["uid"] == uid]
    w = sum(x["written"] for x in live)
    if m.get('xtcd_uid_events_written_total{uid="%d"}' % uid, -1) < w:
        fail("uid %d: written %s < the live sessions' %d" % (uid, m.get('xtcd_uid_events_written_total{uid="%d"}' % uid), w))
per_uid = sum(v for k, v in m.items() if k.startswith("xtcd_uid_events_written_total{"))
if per_uid != st["written"]:
    fail("per-uid written sums to %s, total %s" % (per_uid, st["written"]))
if m.get("xtcd_write_latency_seconds_count", 0) <= 0 or \
   m.get('xtcd_write_latency_seconds_bucket{le="+Inf"}') != m["xtcd_write_latency_seconds_count"]:
    fail("write latency histogram: %s" % {k: v for k, v in m.items() if "latency" in k})
for name, t in types.items():
    if name.startswith("xtcd_") and t == "counter" and not name.endswith("_total"):
        fail("counter %s does not end in _total" % name)
if types.get("xtcd_write_latency_seconds") != "histogram":
    fail("xtcd_write_latency_seconds is not a histogram")
print("ok: %s: %d xtcd series%s equal --status (sessions %d, written %d, %d uids)" % (
    sys.argv[3], sum(1 for k in m if k.startswith("xtcd_")),
    " served by node-exporter" if sys.argv[4] else " in the file", st["sessions_live"], st["written"],
    sum(1 for k in m if k.startswith("xtcd_uid_sessions_total{"))))
EOF
}
check "attached"
for p in "${APPS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
APPS=()
for _ in $(seq 1 250); do
	[ "$(grep -c 'ended:' "$T/xtcd.log")" -ge "$uids" ] && break
	sleep 0.02
done
check "detached"
grep -q '^xtcd_sessions_total '"$uids"'$' "$T/scrape" ||
	fail "xtcd_sessions_total is not $uids: $(grep sessions_total "$T/scrape")"
[ "$uids" = 2 ] || echo "note: setpriv could not switch to uid 65534 here: one uid checked"
[ -n "$NE_PID" ] || echo "note: prometheus-node-exporter is not installed: the file was checked directly (scripts/ci_ship.sh runs this with it)"
kill -9 "$NE_PID" 2>/dev/null; wait "$NE_PID" 2>/dev/null; NE_PID=
stop_xtcd
grep -q '^xtcd_sessions 0$' "$TF/xtcd.prom" || fail "the file written at shutdown still counts live sessions"
ls "$TF" | grep -v '\.prom$' && fail "a temporary file was left in the textfile directory"
echo "ok: written once more at shutdown; nothing but .prom files in the directory"
