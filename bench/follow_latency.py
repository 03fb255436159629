#!/usr/bin/env python3
"""Follow latency: from xtc_tail_emit() to the line `xtcd --follow --json` prints.

usage: bench/follow_latency.py [--rate EVENTS_PER_S] [--loops N] [--seconds S]
                               [--drain-ms MS] [--builddir DIR]

Starts a private xtcd and `xtcd --follow DIR -n 0 --json` on it, runs
tests/xtc-loadgen at the given total rate, and stamps every chunk the
follower writes into its pipe the moment it arrives.  An event's latency is
that arrival time minus its emit time (the record's CLOCK_MONOTONIC stamp
turned into wall-clock time with its session's anchors, as --cat does).
Prints the median, p99 and max, and how many events arrived.
"""
import argparse, json, os, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--rate", type=int, default=1000, help="events per second in all")
ap.add_argument("--loops", type=int, default=1)
ap.add_argument("--seconds", type=float, default=5.0)
ap.add_argument("--drain-ms", type=int, default=20)
ap.add_argument("--builddir", default=os.path.join(os.path.dirname(__file__), ".."))
a = ap.parse_args()

xtcd = os.path.join(a.builddir, "xtcd/xtcd")
loadgen = os.path.join(a.builddir, "tests/xtc-loadgen")
tmp = tempfile.mkdtemp(prefix="xtc-lat.")
seg, sock = os.path.join(tmp, "seg"), os.path.join(tmp, "xtcd.sock")
os.mkdir(seg)
d = subprocess.Popen([xtcd, "--dir", seg, "--socket", sock, "--drain-ms", str(a.drain_ms)],
                     stderr=subprocess.DEVNULL)
while not os.path.exists(sock):
    time.sleep(0.01)
f = subprocess.Popen([xtcd, "--follow", seg, "-n", "0", "--json"], stdout=subprocess.PIPE)
time.sleep(0.2)
per_loop = a.rate // a.loops
events = int(per_loop * a.seconds)
env = dict(os.environ, XTC_TAIL_SHM=sock)
lg = subprocess.Popen([loadgen, str(a.loops), str(events), str(per_loop), "300"], env=env,
                      stdout=subprocess.DEVNULL)

# Stamp raw chunks on arrival into one preallocated buffer, and parse
# afterwards, so the reader keeps up (no allocation per read).
import select
import mmap
buf = mmap.mmap(-1, max(64 << 20, int(a.rate * a.seconds * 260)))
view, used, marks, fd = memoryview(buf), 0, [], f.stdout.fileno()
deadline = None
while used < len(buf):
    if deadline is None and lg.poll() is not None:
        deadline = time.monotonic() + 1.0
    if deadline is not None and time.monotonic() > deadline:
        break
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        n = os.readv(fd, [view[used:]])
        if not n:
            break
        used += n
        marks.append((time.time_ns(), used))
f.send_signal(signal.SIGINT)
f.wait()
d.send_signal(signal.SIGTERM)
d.wait()

anchor, lat, start = {}, [], 0
for t, end in marks:
    # lines complete by this chunk's end arrived at t
    stop = buf.rfind(b"\n", start, end) + 1
    if stop <= start:
        continue
    lines = bytes(view[start:stop]).split(b"\n")[:-1]
    start = stop
    for line in lines:
        r = json.loads(line)
        if r["type"] == "session_start":
            anchor[r["session"]] = (r["anchor_real_ns"], r["anchor_mono_ns"])
        elif r["type"] == "event":
            ar, am = anchor[r["session"]]
            lat.append(t - (ar + r["ts_ns"] - am))
lat.sort()
if not lat:
    sys.exit("no events arrived")
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1e6
print("rate %d/s (%d loops), %d events arrived in %d reads: latency median %.2f ms, p99 %.2f ms, max %.2f ms"
      % (a.rate, a.loops, len(lat), len(marks), q(0.5), q(0.99), lat[-1] / 1e6))
subprocess.run(["rm", "-rf", tmp])
