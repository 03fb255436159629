#!/usr/bin/env python3
"""bench/cpu_1m.py - xtcd's CPU at a steady rate, several xtcd binaries
interleaved: what make bench's "daemon CPU at 1M events/s" row measures,
with every thread's CPU read from /proc/PID/task/*/schedstat (run time in
ns, io_uring's io-wq threads included) and each thread's wakes
(voluntary context switches).

  bench/cpu_1m.py [--pairs N] [--seconds S] [--rate R] [--xtcd-args '...']
                  NAME=PATH_TO_XTCD[@ARGS] [NAME=PATH[@ARGS] ...]

Each round runs every binary once, in turn, so the machine's load falls
on all alike; the load average is printed with each round.  Figures per
binary (with its own xtcd flags after an @, e.g. new=xtcd/xtcd@--pwrite):
median [min-max] of CPU-s per million events, and the share of
the main thread, the worker and the io-wq threads, and wakes a second.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

B = os.environ.get("top_builddir", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
XB = os.path.join(B, "bench/xb-xtc")


def threads(pid):
    """{tid: (comm, run_ns, voluntary switches)} of every live thread."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                run = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                comm = f.read().strip()
            vol = 0
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol = int(line.split()[1])
            out[int(t)] = (comm, run, vol)
        except (OSError, ValueError, IndexError):
            pass
    return out


def kind(tid, pid, comm):
    if comm.startswith("iou-"):
        return "iowq"
    return "main" if tid == pid else "worker"


class Watch:
    """The last reading of every thread seen, polled: a thread that exits
    between two polls keeps what it had at the last one."""

    def __init__(self, pid):
        self.pid = pid
        self.first = threads(pid)
        self.last = dict(self.first)

    def poll(self):
        self.last.update(threads(self.pid))

    def totals(self):
        tot = {}
        for tid, (comm, run, vol) in self.last.items():
            c0, r0, v0 = self.first.get(tid, (comm, 0, 0))
            k = kind(tid, self.pid, comm)
            cpu, wk = tot.get(k, (0, 0))
            tot[k] = (cpu + run - r0, wk + vol - v0)
        return tot


def run_once(xtcd, a):
    xtcd, _, extra = xtcd.partition("@")
    tmp = tempfile.mkdtemp(prefix="xtc-cpu1m.")
    seg, sock, logp = os.path.join(tmp, "seg"), os.path.join(tmp, "sock"), os.path.join(tmp, "log")
    os.mkdir(seg)
    logf = open(logp, "w")
    p = subprocess.Popen([xtcd, "--dir", seg, "--socket", sock, "--max-bytes", "8G"] +
                         shlex.split(a.xtcd_args) + shlex.split(extra), stdout=logf, stderr=subprocess.STDOUT)
    try:
        for _ in range(500):
            if os.path.exists(sock) and "listening" in open(logp).read():
                break
            time.sleep(0.01)
        time.sleep(0.2)
        w = Watch(p.pid)
        env = dict(os.environ, XTC_TAIL_SHM=sock)
        t0 = time.monotonic()
        xb = subprocess.Popen([XB, "paced", "--rate", str(a.rate), "--loops", "1",
                               "--seconds", str(a.seconds)], env=env, stdout=subprocess.PIPE, text=True)
        while xb.poll() is None:
            w.poll()
            time.sleep(0.25)
        out = xb.stdout.read()
        for _ in range(500):
            w.poll()
            if "ended:" in open(logp).read():
                break
            time.sleep(0.02)
        w.poll()
        wall = time.monotonic() - t0
        m = re.search(r"emitted=(\d+)", out)
        ev = int(m.group(1)) if m else 0
        log = open(logp).read()
        d = re.search(r"ended: \w+, produced (\d+), written (\d+), dropped (\d+)", log)
        return dict(ev=ev, wall=wall, t=w.totals(), dropped=int(d.group(3)) if d else -1)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        logf.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rate", type=int, default=1_000_000)
    ap.add_argument("--xtcd-args", default="")
    ap.add_argument("bins", nargs="+")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bins]
    res = {n: [] for n, _ in bins}
    for rnd in range(a.pairs):
        for n, path in (bins if rnd % 2 == 0 else bins[::-1]):
            r = run_once(path, a)
            res[n].append(r)
            t = r["t"]
            cpu = sum(c for c, _ in t.values()) / 1e9
            print(f"round {rnd + 1} {n:>10}: {cpu / (r['ev'] / 1e6):.4f} CPU-s/M  "
                  + "  ".join(f"{k} {c / 1e9:.3f}s {w / r['wall']:.0f}w/s" for k, (c, w) in sorted(t.items()))
                  + f"  dropped {r['dropped']}  load {os.getloadavg()[0]:.2f}", flush=True)
    print()
    base = None
    for n, _ in bins:
        v = [sum(c for c, _ in r["t"].values()) / 1e9 / (r["ev"] / 1e6) for r in res[n]]
        md = statistics.median(v)
        base = base or md
        parts = {}
        for r in res[n]:
            for k, (c, w) in r["t"].items():
                parts.setdefault(k, []).append((c / 1e9 / (r["ev"] / 1e6), w / r["wall"]))
        print(f"{n:>10}: {md:.4f} [{min(v):.4f}-{max(v):.4f}] CPU-s/M, x{md / base:.2f}  " +
              "  ".join(f"{k} {statistics.median(x for x, _ in p):.4f} ({statistics.median(y for _, y in p):.0f} wakes/s)"
                        for k, p in sorted(parts.items())))


if __name__ == "__main__":
    sys.exit(main())
