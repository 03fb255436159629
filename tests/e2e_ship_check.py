#!/usr/bin/env python3
"""tests/e2e_ship_check.py XTCD URL QUERIES HOST=DIR...

Check that the ClickHouse at URL holds exactly the records of each
segment directory DIR shipped as HOST (tests/e2e_clickhouse.sh):

  - per host and kind: count, sum(detail) and sum(ts_ns) (mod 2^64) under
    FINAL equal xtcd --cat's, and no record key appears twice;
  - the sessions table equals xtcd --stats --json;
  - drops: the DROP records and their counts equal --cat's;
  - every query in QUERIES returns what --stats and --report say.
"""
import json
import subprocess
import sys
import urllib.parse
import urllib.request

M64 = 1 << 64
KEY = "(host, boot_id, seg_ns, seg, blk, idx)"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def ok(msg):
    print("ok: " + msg)


def query(url, sql):
    req = urllib.request.Request(url, data=(sql + " FORMAT JSONEachRow").encode())
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            body = r.read().decode()
    except urllib.error.HTTPError as e:
        fail("ClickHouse refused %s: %s" % (sql[:200], e.read().decode()[:300]))
    return [json.loads(line) for line in body.splitlines() if line]


def xtcd_json(xtcd, *args):
    p = subprocess.run([xtcd, *args], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        fail("xtcd %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return [json.loads(line) for line in p.stdout.splitlines() if line]


def queries(path):
    out, name, lines = {}, None, []
    for line in open(path):
        if line.startswith("-- name:"):
            if name:
                out[name] = "".join(lines).strip().rstrip(";")
            name, lines = line.split(":", 1)[1].strip(), []
        elif name:
            lines.append(line)
    if name:
        out[name] = "".join(lines).strip().rstrip(";")
    return out


def check_events(url, host, cat):
    want = {}
    for r in cat:
        if r["type"] != "event":
            continue
        w = want.setdefault(r["kind"], [0, 0, 0])
        w[0] += 1
        w[1] = (w[1] + r["detail"]) % M64
        w[2] = (w[2] + r["ts_ns"]) % M64
    got = {r["kind"]: [int(r["n"]), int(r["d"]), int(r["t"])] for r in query(
        url, "SELECT kind, count() AS n, sum(detail) AS d, sum(ts_ns) AS t FROM events FINAL "
        "WHERE host = '%s' GROUP BY kind" % host)}
    if got != want:
        fail("%s: events per kind (count, sum detail, sum ts_ns): ClickHouse %s, --cat %s"
             % (host, got, want))
    total = sum(w[0] for w in want.values())
    raw = query(url, "SELECT count() AS raw, uniqExact(%s) AS keys FROM events WHERE host = '%s'"
                % (KEY, host))[0]
    if int(raw["keys"]) != total:
        fail("%s: %s distinct keys, %d records on disk" % (host, raw["keys"], total))
    ok("%s: %d events in %d kinds, as --cat, each key once (%d rows before FINAL: %d sent "
       "twice and collapsed)" % (host, total, len(want), int(raw["raw"]), int(raw["raw"]) - total))
    return total


def check_sessions(url, host, stats):
    want = {}
    for s in stats:
        if s["type"] != "session":
            continue
        e = s.get("end") or {}
        want[s["session"]] = (s["pid"], s["comm"], e.get("reason", ""), e.get("produced", 0),
                              e.get("written", 0), e.get("dropped", 0), e.get("lost", 0),
                              1 if e.get("complete") else 0, s["start_real_ns"])
    got = {int(r["session"]): (r["pid"], r["comm"], r["reason"], int(r["produced"]),
                               int(r["written"]), int(r["dropped"]), int(r["lost"]),
                               r["complete"], int(r["start_ns"]))
           for r in query(url, "SELECT * FROM sessions FINAL WHERE host = '%s'" % host)}
    if got != want:
        fail("%s: sessions: ClickHouse %s, --stats %s" % (host, got, want))
    ok("%s: %d sessions as --stats says (pid, comm, reason, counts, complete, start)"
       % (host, len(want)))
    return want


def check_drops(url, host, cat):
    want = sorted((r["session"], r["ring"], r["count"]) for r in cat if r["type"] == "drop")
    got = sorted((int(r["session"]), r["ring"], int(r["count"])) for r in query(
        url, "SELECT session, ring, count FROM drops FINAL WHERE host = '%s' AND what = 'drop'"
        % host))
    if got != want:
        fail("%s: drops: ClickHouse %s, --cat %s" % (host, got[:10], want[:10]))
    ok("%s: %d DROP records (%d records dropped) as --cat" % (host, len(want),
                                                             sum(w[2] for w in want)))


def check_per_loop(url, q, hosts):
    got = {(r["host"], r["loop"]): (int(r["events"]), int(r["drop_records"]), int(r["dropped"]))
           for r in query(url, q)}
    want = {}
    for host, stats in hosts.items():
        for s in stats:
            for lp in s.get("loops", []) if s["type"] == "session" else []:
                w = want.setdefault((host, lp["loop"]), [0, 0, 0])
                w[0] += lp["events"]
                w[1] += lp["drops"]
                w[2] += lp["dropped_records"]
    want = {k: tuple(v) for k, v in want.items() if v[0]}
    if got != want:
        fail("events_drops_per_loop: ClickHouse %s, --stats %s" % (got, want))
    ok("events_drops_per_loop: %d (host, loop) rows as --stats" % len(want))


def close(a, b):
    return abs(a - b) <= 0.05 * max(a, b) + 1


def check_latency(url, q, xtcd, dirs):
    per_host = {r["host"]: r for r in query(url, q)}
    per_sess = {(r["host"], int(r["session"])): r for r in query(
        url, q.replace("SELECT host,", "SELECT host, session,", 1)
              .replace("GROUP BY host", "GROUP BY host, session").replace("ORDER BY host", "ORDER BY host, session"))}
    n = 0
    for host, d in dirs.items():
        runs = 0
        for r in xtcd_json(xtcd, "--report", d, "--json"):
            if r["type"] != "latency" or r["loop"] != "all" or not r["count"]:
                continue
            c = per_sess.get((host, r["session"]))
            if not c or int(c["runs"]) != r["count"]:
                fail("latency: %s session %d: --report %s, ClickHouse %s" % (host, r["session"], r, c))
            for k in ("p50_ns", "p99_ns"):
                if not close(int(c[k]), r[k]):
                    fail("latency: %s session %d %s: ClickHouse %s, --report %d (bucket top)"
                         % (host, r["session"], k, c[k], r[k]))
            if int(c["max_ns"]) != r["max_ns"]:
                fail("latency: %s session %d max: ClickHouse %s, --report %d"
                     % (host, r["session"], c["max_ns"], r["max_ns"]))
            runs += r["count"]
            n += 1
        if runs and int(per_host[host]["runs"]) != runs:
            fail("latency_per_host: %s runs %s, --report sessions %d" % (host, per_host[host], runs))
    ok("latency_per_host: runs, p50, p99 and max of %d sessions as --report" % n)


def check_incomplete(url, q, hosts):
    got = {(r["host"], int(r["session"])): r["why"] for r in query(url, q)}
    want = {(host, s["session"]) for host, st in hosts.items() for s in st
            if s["type"] == "session" and s["record"] != "complete"}
    if set(got) != want:
        fail("incomplete_sessions: ClickHouse %s, --stats %s" % (sorted(got), sorted(want)))
    ok("incomplete_sessions: %d as --stats, e.g. %s" % (len(want), next(iter(got.values()), "-")))


def check_lost_wakeups(url, q, xtcd, dirs):
    got = sorted((r["host"], int(r["session"]), int(r["park_ns"]), r["verdict"])
                 for r in query(url, q))
    want = []
    for host, d in dirs.items():
        for r in xtcd_json(xtcd, "--report", d, "--json", "--stall", "1500ms"):
            if r["type"] == "finding" and r["class"] in ("never_submitted", "never_reaped",
                                                           "not_handed_on"):
                want.append((host, r["session"], r["real_ns"], r["verdict"]))
    want.sort()
    if got != want:
        fail("lost_wakeups: ClickHouse %s, --report %s" % (got, want))
    verdicts = sorted(set(w[3] for w in want))
    if "proven" not in verdicts or "cannot_tell" not in verdicts:
        fail("lost_wakeups: the test data should hold both verdicts, has %s" % verdicts)
    ok("lost_wakeups: the %d PARK_TASKs with no WAKE that --report finds, same verdicts (%s)"
       % (len(want), ", ".join("%d %s" % (sum(1 for w in want if w[3] == v), v) for v in verdicts)))


def main():
    xtcd, url, qpath = sys.argv[1:4]
    dirs = dict(a.split("=", 1) for a in sys.argv[4:])
    qs = queries(qpath)
    for name in ("events_drops_per_loop", "latency_per_host", "incomplete_sessions",
                 "lost_wakeups"):
        if name not in qs:
            fail("%s has no query %s" % (qpath, name))
    stats = {}
    for host, d in dirs.items():
        cat = xtcd_json(xtcd, "--cat", d, "--json")
        check_events(url, host, cat)
        check_drops(url, host, cat)
        stats[host] = xtcd_json(xtcd, "--stats", d, "--json")
        check_sessions(url, host, stats[host])
    check_per_loop(url, qs["events_drops_per_loop"], stats)
    check_latency(url, qs["latency_per_host"], xtcd, dirs)
    check_incomplete(url, qs["incomplete_sessions"], stats)
    check_lost_wakeups(url, qs["lost_wakeups"], xtcd, dirs)


main()
