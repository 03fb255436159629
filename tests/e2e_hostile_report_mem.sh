#!/bin/bash
# tests/e2e_hostile_report_mem.sh - one local user churns short sessions,
# each with one record; the modes built on the report model (--report,
# --report --json, --diff, --svg, --export pprof, --export chrome) must
# hold memory in proportion to what the sessions recorded, not a fixed
# timeline and histograms per session and loop.  Their peak RSS must grow
# by at most RSS_PER_BYTE bytes per byte of segment read from 4000 to
# 16000 sessions (about 12 now; 200, 1.36 GB at 16000, when each session
# and loop held 2048-bin timelines and dense histograms), and not faster
# than the input (4x the sessions, at most about 4x the RSS).
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$BADCLIENT"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
# An AddressSanitizer build's RSS is its shadow memory and quarantine, not
# what the code holds: there the modes still run on the same input (for
# what ASan checks), but the RSS bounds are the plain build's to assert.
asan=0
nm "$XTCD" 2>/dev/null | grep -q '__asan_init' && asan=1

churned_sessions 4000
churned_sessions 16000
python3 - "$XTCD" "$T" "$asan" <<'PY' || fail "the report model's memory"
import datetime, json, os, subprocess, sys

xtcd, t, asan = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
RSS_PER_BYTE = 40

def iso(ns):
    return datetime.datetime.fromtimestamp(ns // 1000 / 1e6, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")

def summary(d):
    out = subprocess.run([xtcd, "--stats", d, "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[0])

def modes(d):
    s = summary(d)
    f, l = s["first_real_ns"], s["last_real_ns"]
    m = (f + l) // 2
    a, b = "%s..%s" % (iso(f), iso(m)), "%s..%s" % (iso(m), iso(l + 1000000))
    return {
        "--report": ["--report", d],
        "--report --json": ["--report", d, "--json"],
        "--diff": ["--report", d, "--diff", a, b],
        "--svg": ["--report", d, "--svg", d + ".svg"],
        "--export pprof": ["--export", "pprof", d],
        "--export chrome": ["--export", "chrome", d],
    }

def run(name, args, n):
    """Peak RSS in bytes of xtcd ARGS; its output must be whole."""
    out, err = open(t + "/mode.out", "wb"), open(t + "/mode.err", "wb")
    p = subprocess.Popen([xtcd] + args, stdout=out, stderr=err)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    out.close(); err.close()
    if p.returncode != 0:
        sys.exit("FAIL: xtcd %s on %d sessions exited %d: %s" % (
            name, n, p.returncode, open(t + "/mode.err").read()[:400]))
    if name == "--report --json":
        head = json.loads(open(t + "/mode.out").readline())
        if head.get("sessions") != n:
            sys.exit("FAIL: --report --json counts %s sessions of %d" % (head.get("sessions"), n))
    if name == "--svg" and "</svg>" not in open(args[3]).read():
        sys.exit("FAIL: --svg wrote no whole SVG")
    return ru.ru_maxrss * 1024

size = {n: sum(os.path.getsize(os.path.join(t + "/d%d" % n, f)) for f in os.listdir(t + "/d%d" % n))
        for n in (4000, 16000)}
rss = {n: {k: run(k, v, n) for k, v in modes(t + "/d%d" % n).items()} for n in (4000, 16000)}
print("  segments: 4000 sessions %.1f MB, 16000 sessions %.1f MB" % (size[4000] / 1e6, size[16000] / 1e6))
bad = []
for k in rss[4000]:
    r4, r16 = rss[4000][k], rss[16000][k]
    per_byte = (r16 - r4) / (size[16000] - size[4000])
    print("  %-16s RSS 4000 sessions %6.1f MB, 16000 sessions %6.1f MB: %5.1f bytes per byte read, %.1fx"
          % (k, r4 / 1e6, r16 / 1e6, per_byte, r16 / r4))
    if asan:
        continue
    if per_byte > RSS_PER_BYTE:
        bad.append("%s holds %.0f bytes per byte of segment (at most %d)" % (k, per_byte, RSS_PER_BYTE))
    if r16 > 4.5 * r4:
        bad.append("%s: 4x the sessions take %.1fx the memory" % (k, r16 / r4))
if asan:
    print("  (an ASan build: the modes ran; the RSS bounds are the plain build's)")
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
PY
echo "ok: the report model's memory is proportional to what the sessions recorded"
