#!/usr/bin/env python3
"""bench/burst_where.py - where a flat-out burst drops, and what xtcd did then.

usage: bench/burst_where.py [--builddir DIR] [--runs N] [--events N]
                            [--no-perf] [-- XTCD_FLAG...]

Runs N bursts (bench/xb-xtc burst, one thread flat out, default ring), each
against a fresh xtcd as bench/run.py does, and for each DROP the segment
holds prints its place (the event index: the burst's detail field counts
events), its time into the burst and how long the ring stayed full.  With
perf (root, sched tracepoints; CLOCK_MONOTONIC, the records' clock), it
also says what xtcd's event loop did in the 6 ms before the first lost
record (running, runnable but waiting for a CPU, or asleep) and which
tasks held each CPU then, and it gives the loop's wake latency after the
producer's nudges.  Figures for a reader, not a test.
"""
import argparse, collections, json, os, re, shutil, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--builddir", default=os.path.join(os.path.dirname(__file__), ".."))
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--events", type=int, default=10_000_000)
ap.add_argument("--no-perf", action="store_true", help="only the DROPs' places")
ap.add_argument("--window-ms", type=float, default=6.0, help="how far back from a loss to look")
ap.add_argument("xtcd_args", nargs="*")
A = ap.parse_args()
B = os.path.abspath(A.builddir)
XTCD, XB = os.path.join(B, "xtcd/xtcd"), os.path.join(B, "bench/xb-xtc")
PERF = not A.no_perf and shutil.which("perf") is not None


def drops_of(seg):
    """The session's first event time and its DROPs: (index, from_s, to_s, count)."""
    cat = subprocess.Popen([XTCD, "--cat", seg, "--json"], stdout=subprocess.PIPE)
    g = subprocess.run(["grep", "-E", "-B1", '"type":"drop"|"detail":0}'], stdin=cat.stdout,
                       stdout=subprocess.PIPE, text=True).stdout
    cat.wait()
    first, prev, out = None, None, []
    for line in g.splitlines():
        if line == "--":
            continue
        r = json.loads(line)
        if r["type"] == "event":
            if first is None and r["detail"] == 0:
                first = r["ts_ns"] / 1e9
            prev = r["detail"]
        elif r["type"] == "drop":
            out.append(((prev or 0) + 1, r["from_ts_ns"] / 1e9, r["to_ts_ns"] / 1e9, r["count"]))
    return first, out


SW = re.compile(r"\s*(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)")


def sched_of(pdata):
    """Per CPU, who ran when; per tid, its state changes (run/wait/sleep)."""
    out = subprocess.run(["perf", "script", "-i", pdata, "-F", "pid,tid,cpu,time,event,trace"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    runs, cur = collections.defaultdict(list), {}
    state = collections.defaultdict(list)
    wakes = []  # (t, waker pid, wakee tid)
    for line in out.splitlines():
        m = SW.match(line)
        if not m:
            continue
        pid, cpu, t, ev = int(m[1]), int(m[3]), float(m[4]), m[5]
        f = dict(re.findall(r"(\w+)=(\S+)", m[6]))
        if ev == "sched_switch":
            if cpu in cur:
                runs[cpu].append((cur[cpu][0], t, cur[cpu][1], cur[cpu][2]))
            cur[cpu] = (t, f["next_comm"], int(f["next_pid"]))
            state[int(f["prev_pid"])].append((t, "wait" if f["prev_state"].startswith("R") else "sleep"))
            state[int(f["next_pid"])].append((t, "run"))
        elif ev == "sched_wakeup":
            state[int(f["pid"])].append((t, "wait"))
        elif ev == "sched_waking":
            wakes.append((t, pid, int(f["pid"])))
    return runs, state, wakes


def time_in(states, a, b):
    acc, last_t, last_s = collections.Counter(), a, "?"
    for t, s in states:
        if t <= a:
            last_s = s
            continue
        if t >= b:
            break
        acc[last_s] += t - last_t
        last_t, last_s = t, s
    acc[last_s] += b - last_t
    return acc


def cpu_use(runs, a, b, mine):
    acc = collections.Counter()
    for t0, t1, comm, tid in runs:
        o = min(t1, b) - max(t0, a)
        if o > 0:
            acc[comm + (" (ours)" if tid in mine else "")] += o
    return acc


def nudge_latency(states, wakes, xpid, prod):
    lat = []
    for t, waker, wakee in wakes:
        if waker == prod and wakee == xpid:
            nxt = [u for u, s in states if u >= t and s == "run"]
            if nxt and nxt[0] - t < 0.05:
                lat.append(nxt[0] - t)
    return sorted(lat)


def one_run(i, tmp):
    seg, sock = os.path.join(tmp, f"seg{i}"), os.path.join(tmp, f"s{i}")
    os.mkdir(seg)
    logp = os.path.join(tmp, f"xtcd{i}.log")
    with open(logp, "w") as logf:
        d = subprocess.Popen([XTCD, "--dir", seg, "--socket", sock, "--max-bytes", "8G"] + A.xtcd_args,
                             stdout=logf, stderr=subprocess.STDOUT)
    while not os.path.exists(sock):
        if d.poll() is not None:
            sys.exit("xtcd exited at start: " + open(logp).read())
        time.sleep(0.01)
    perf, pdata = None, os.path.join(tmp, f"p{i}.data")
    if PERF:
        perf = subprocess.Popen(["perf", "record", "-q", "-k", "mono", "-a", "-o", pdata,
                                 "-e", "sched:sched_switch", "-e", "sched:sched_wakeup",
                                 "-e", "sched:sched_waking"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    with open("/proc/stat") as f:
        st0 = f.readline().split()
    out = subprocess.run([XB, "burst", "--events", str(A.events)], env=dict(os.environ, XTC_TAIL_SHM=sock),
                         stdout=subprocess.PIPE, text=True).stdout
    with open("/proc/stat") as f:
        st1 = f.readline().split()
    time.sleep(0.3)
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    d.send_signal(signal.SIGTERM)
    d.wait()
    res = dict(t.split("=") for t in out.strip().splitlines()[-1].split()[1:])
    prod = re.search(r"pid (\d+) \(", open(logp).read())
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"run {i + 1}: {res['ns_per_event']} ns/event, dropped {res['dropped']}, load {load}, "
          f"steal {int(st1[8]) - int(st0[8])} jiffies")
    first, drops = drops_of(seg)
    have = perf is not None and os.path.exists(pdata) and prod is not None
    if have:
        runs, states, wakes = sched_of(pdata)
        mine = {int(t) for t in os.listdir(f"/proc/{d.pid}/task")} if os.path.exists(f"/proc/{d.pid}") else set()
        mine |= {tid for cpu in runs for _, _, comm, tid in runs[cpu]
                 if comm.startswith(("iou-wrk-%d" % d.pid, "xtcd"))}
        lat = nudge_latency(states[d.pid], wakes, d.pid, int(prod[1]))
        if lat:
            q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3
            print(f"   nudges {len(lat)}: the loop ran after {q(.5):.3f} / {q(.9):.3f} / {q(.99):.3f} ms "
                  f"(p50 / p90 / p99)")
    for idx, fr, to, cnt in drops:
        print(f"   DROP {cnt} at event {idx / 1e6:.3f}M, +{(fr - first) * 1e3:.2f} ms, "
              f"ring full {(to - fr) * 1e3:.2f} ms")
        if have:
            a = fr - A.window_ms / 1e3
            s = time_in(states[d.pid], a, fr)
            print("      the loop in the " + f"{A.window_ms:g} ms before: " +
                  ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in s.most_common()))
            for cpu in sorted(runs):
                u = cpu_use(runs[cpu], a, fr, mine)
                print(f"      cpu{cpu}: " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in u.most_common(4)))


def main():
    tmp = tempfile.mkdtemp(prefix="xtc-where.")
    try:
        for i in range(A.runs):
            one_run(i, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
