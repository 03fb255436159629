#!/usr/bin/env python3
"""Checks over `xtcd --cat --json` output, shared by the end-to-end tests.

usage: e2e_check.py FILE CHECK [ARGS...]
Prints what it found and exits 1 with a FAIL line when a check fails.
"""
import json
import sys
from collections import defaultdict


def load(path):
    """Every record, parsed one line at a time; events are kept as small
    tuples-in-dicts only as long as the caller keeps them."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                yield json.loads(line)
            except ValueError as e:
                fail("line %d is not JSON (%s): %r" % (n, e, line[:200]))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def sessions(recs):
    """session id -> dict(start, end, events per loop, drops)"""
    out = defaultdict(lambda: {"start": None, "end": None, "loops": defaultdict(list),
                               "drops": [], "corrupt": []})
    for r in recs:
        t = r["type"]
        if t == "session_start" and out[r["session"]]["start"] is None:
            out[r["session"]]["start"] = r
        elif t == "session_end":
            out[r["session"]]["end"] = r
        elif t == "event":
            out[r["session"]]["loops"][r["loop_id"]].append(r["detail"])
        elif t == "drop":
            out[r["session"]]["drops"].append(r)
        elif t == "corrupt":
            out[r["session"]]["corrupt"].append(r)
    return out


def reconcile(s, sid):
    e = s["end"]
    if e is None:
        fail("session %s has no session_end" % sid)
    if e["produced"] != e["written"] + e["dropped"] + e["lost"]:
        fail("session %s: produced %d != written %d + dropped %d + lost %d"
             % (sid, e["produced"], e["written"], e["dropped"], e["lost"]))
    written = sum(len(v) for v in s["loops"].values())
    if written != e["written"]:
        fail("session %s: %d event records on disk but written says %d" % (sid, written, e["written"]))
    drops = sum(d["count"] for d in s["drops"])
    if drops != e["dropped"]:
        fail("session %s: DROP records add up to %d but dropped says %d" % (sid, drops, e["dropped"]))


def increasing(s, sid):
    for loop, d in s["loops"].items():
        for a, b in zip(d, d[1:]):
            if b <= a:
                fail("session %s loop %s: detail %d follows %d" % (sid, loop, b, a))


def check_complete(recs, loops, per_loop):
    ss = sessions(recs)
    if len(ss) != 1:
        fail("expected one session, found %d" % len(ss))
    sid, s = next(iter(ss.items()))
    reconcile(s, sid)
    e = s["end"]
    if e["reason"] != "detached" or e["complete"] is not True:
        fail("session %s ended %s complete=%s" % (sid, e["reason"], e["complete"]))
    if e["produced"] != loops * per_loop or e["dropped"] or e["lost"] or s["drops"]:
        fail("session %s: produced %d dropped %d lost %d" % (sid, e["produced"], e["dropped"], e["lost"]))
    for loop in range(loops):
        if s["loops"][loop] != list(range(per_loop)):
            fail("loop %d: records are not exactly 0..%d in order" % (loop, per_loop - 1))
    print("ok: one complete session, %d loops x %d records, in order" % (loops, per_loop))


def check_overload(recs):
    ss = sessions(recs)
    for sid, s in ss.items():
        reconcile(s, sid)
        increasing(s, sid)
        e = s["end"]
        if e["dropped"] == 0 or not s["drops"]:
            fail("session %s: expected drops under overload" % sid)
        if e["complete"] is not False or e["lost"] != 0:
            fail("session %s: complete=%s lost=%d" % (sid, e["complete"], e["lost"]))
        for d in s["drops"]:
            if d["from_ts_ns"] > d["to_ts_ns"]:
                fail("drop window runs backwards: %r" % d)
        print("ok: session %s produced %d = written %d + dropped %d in %d DROP records"
              % (sid, e["produced"], e["written"], e["dropped"], len(s["drops"])))


def check_died(recs):
    ss = sessions(recs)
    if len(ss) != 1:
        fail("expected one session, found %d" % len(ss))
    sid, s = next(iter(ss.items()))
    reconcile(s, sid)
    increasing(s, sid)
    e = s["end"]
    if e["reason"] != "producer_died" or e["complete"] is not False or e["lost"] != 0:
        fail("session %s ended %s complete=%s lost=%d" % (sid, e["reason"], e["complete"], e["lost"]))
    print("ok: producer_died, produced %d = written %d + dropped %d" % (e["produced"], e["written"], e["dropped"]))


def check_restart(recs, loops, per_loop):
    ss = sessions(recs)
    reasons = sorted(s["end"]["reason"] for s in ss.values() if s["end"])
    if "daemon_crashed" not in reasons or "detached" not in reasons:
        fail("expected a daemon_crashed and a detached session, found %r" % reasons)
    for sid, s in ss.items():
        increasing(s, sid)
        if s["end"]["reason"] == "detached":
            reconcile(s, sid)
            if s["end"]["dropped"] or s["end"]["lost"]:
                fail("the re-attached session lost records: %r" % s["end"])
    for loop in range(loops):
        seen = set()
        for s in ss.values():
            seen.update(s["loops"][loop])
        missing = per_loop - len(seen & set(range(per_loop)))
        if missing:
            fail("loop %d: %d of %d records missing across the restart" % (loop, missing, per_loop))
    print("ok: %d sessions (%s), every record of %d loops x %d present"
          % (len(ss), ", ".join(reasons), loops, per_loop))


def check_budget(recs):
    recs = list(recs)
    ev = [r for r in recs if r["type"] == "evicted"]
    if not ev:
        fail("no evicted record although segments were deleted")
    ss = sessions(recs)
    for sid, s in ss.items():
        increasing(s, sid)
        e = s["end"]
        if e is None or e["produced"] != e["written"] + e["dropped"] + e["lost"]:
            fail("session %s does not reconcile: %r" % (sid, e))
    print("ok: %d evicted records, %d records evicted in all"
          % (len(ev), sum(r["records"] for r in ev)))


def check_victim(recs, loops, per_loop, nth=-1):
    """The xtc-loadgen session among others (attackers beside it) is
    complete: every record of loops x per_loop, in order, nothing lost.
    With nth, the nth xtc-loadgen session (by id, from 0) of several;
    without, there must be exactly one."""
    ss = sessions(recs)
    mine = sorted((sid, s) for sid, s in ss.items()
                  if s["start"] is not None and s["start"].get("comm") == "xtc-loadgen")
    if (nth < 0 and len(mine) != 1) or nth >= len(mine):
        fail("expected %s xtc-loadgen session, found %d (of %d sessions)"
             % ("one" if nth < 0 else "a %dth" % (nth + 1), len(mine), len(ss)))
    sid, s = mine[max(nth, 0)]
    reconcile(s, sid)
    e = s["end"]
    got = sum(len(s["loops"][loop]) for loop in range(loops))
    print("victim session %s: produced %d, written %d, dropped %d, lost %d (of %d sessions)"
          % (sid, e["produced"], e["written"], e["dropped"], e["lost"], len(ss)))
    if e["reason"] != "detached" or e["complete"] is not True:
        fail("the victim session %s ended %s complete=%s" % (sid, e["reason"], e["complete"]))
    if e["produced"] != loops * per_loop or got != loops * per_loop:
        fail("the victim session %s: produced %d, %d records on disk, expected %d"
             % (sid, e["produced"], got, loops * per_loop))
    for loop in range(loops):
        if s["loops"][loop] != list(range(per_loop)):
            fail("victim loop %d: records are not exactly 0..%d in order" % (loop, per_loop - 1))
    print("ok: the victim's session is complete, %d loops x %d records, in order" % (loops, per_loop))


def main():
    recs = load(sys.argv[1])
    what = sys.argv[2]
    args = [int(a) for a in sys.argv[3:]]
    {"complete": check_complete, "overload": check_overload, "died": check_died,
     "restart": check_restart, "budget": check_budget, "victim": check_victim}[what](recs, *args)


if __name__ == "__main__":
    main()
