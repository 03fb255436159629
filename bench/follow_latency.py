#!/usr/bin/env python3
"""Follow latency: from xtc_tail_emit() to the line `xtcd --follow --json` prints.

usage: bench/follow_latency.py [--rate EVENTS_PER_S] [--loops N] [--seconds S]
                               [--drain-ms MS] [--builddir DIR] [--pipe]

Starts a private xtcd and `xtcd --follow DIR -n 0 --json` on it, and runs
tests/xtc-loadgen at the given total rate.  The follower writes to a file,
whose size is sampled every 0.5 ms; a line was printed when the file first
grew past its end.  (With --pipe the follower writes into a pipe read by
this script, which stamps each chunk as it arrives: the same answer while
the script keeps up, which Python does not at a million lines a second on
two cores.)  An event's latency is that time minus its emit time: the
record's CLOCK_MONOTONIC stamp turned into wall-clock time with its
session's anchors, as --cat does.  Prints the median, p99 and max.
"""
import argparse, bisect, json, os, select, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--rate", type=int, default=1000, help="events per second in all")
ap.add_argument("--loops", type=int, default=1)
ap.add_argument("--seconds", type=float, default=5.0)
ap.add_argument("--drain-ms", type=int, default=20)
ap.add_argument("--pipe", action="store_true")
ap.add_argument("--builddir", default=os.path.join(os.path.dirname(__file__), ".."))
a = ap.parse_args()

xtcd = os.path.join(a.builddir, "xtcd/xtcd")
loadgen = os.path.join(a.builddir, "tests/xtc-loadgen")
tmp = tempfile.mkdtemp(prefix="xtc-lat.")
seg, sock, outp = (os.path.join(tmp, n) for n in ("seg", "xtcd.sock", "follow.json"))
os.mkdir(seg)
d = subprocess.Popen([xtcd, "--dir", seg, "--socket", sock, "--drain-ms", str(a.drain_ms)],
                     stderr=subprocess.DEVNULL)
while not os.path.exists(sock):
    time.sleep(0.01)
out = open(outp, "wb")
f = subprocess.Popen([xtcd, "--follow", seg, "-n", "0", "--json"],
                     stdout=subprocess.PIPE if a.pipe else out)
time.sleep(0.2)
per_loop = a.rate // a.loops
events = int(per_loop * a.seconds)
lg = subprocess.Popen([loadgen, str(a.loops), str(events), str(per_loop), "300"],
                      env=dict(os.environ, XTC_TAIL_SHM=sock), stdout=subprocess.DEVNULL)

marks, size, deadline = [], 0, None   # (time, bytes printed by then)
while deadline is None or time.monotonic() < deadline:
    if deadline is None and lg.poll() is not None:
        deadline = time.monotonic() + 1.0
    if a.pipe:
        if select.select([f.stdout], [], [], 0.1)[0]:
            b = os.read(f.stdout.fileno(), 1 << 20)
            out.write(b)
            size += len(b)
            marks.append((time.time_ns(), size))
    else:
        s = os.fstat(out.fileno()).st_size
        if s != size:
            size = s
            marks.append((time.time_ns(), size))
        time.sleep(0.0005)
f.send_signal(signal.SIGINT)
if a.pipe:
    f.stdout.close()
f.wait()
d.send_signal(signal.SIGTERM)
d.wait()
out.close()

ends = [m[1] for m in marks]
anchor, lat, pos = {}, [], 0
with open(outp, "rb") as fh:
    for line in fh:
        if not line.endswith(b"\n"):
            break   # cut short when the follower was stopped
        pos += len(line)
        i = bisect.bisect_left(ends, pos)
        if i == len(marks):
            break
        r = json.loads(line)
        if r["type"] == "session_start":
            anchor[r["session"]] = (r["anchor_real_ns"], r["anchor_mono_ns"])
        elif r["type"] == "event":
            ar, am = anchor[r["session"]]
            lat.append(marks[i][0] - (ar + r["ts_ns"] - am))
subprocess.run(["rm", "-rf", tmp])
if not lat:
    sys.exit("no events arrived")
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1e6
print("rate %d/s (%d loops, --drain-ms %d): %d of %d events: latency median %.2f ms, p99 %.2f ms, "
      "max %.2f ms%s" % (a.rate, a.loops, a.drain_ms, len(lat), a.loops * events, q(0.5), q(0.99),
                         lat[-1] / 1e6, " (pipe)" if a.pipe else ""))
