#!/bin/bash
# Overload: small rings, producers flat out.  produced == written +
# dropped exactly, and DROP records add up to dropped.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

start_xtcd --drain-ms 50
XTC_TAIL_RING_RECORDS=1024 "$LOADGEN" 4 1000000 >"$T/lg.out" || fail "loadgen failed"
wait_log "ended: detached"
stop_xtcd
cat_json
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" overload || fail "overload"
lib_dropped=$(sed -n 's/^dropped //p' "$T/lg.out")
# Drops before the attach completed are stated in the session start.
disk_dropped=$(python3 -c '
import json, sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    n += r.get("dropped", 0) if r["type"] == "session_end" else 0
    n += r.get("dropped_before", 0) if r["type"] == "session_start" else 0
print(n)' "$T/all.json")
[ "$lib_dropped" = "$disk_dropped" ] || fail "the library counted $lib_dropped drops, the record says $disk_dropped"
echo "ok: library and record agree on $disk_dropped drops"
