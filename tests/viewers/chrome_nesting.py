#!/usr/bin/env python3
"""Check Chrome trace JSON slices as a viewer computes them.

    chrome_nesting.py TRACE.json

JSON numbers are read as IEEE doubles (Python's float, as JSON.parse in a
browser), microseconds, and a slice's end is computed the way viewers do:
ts + dur for a complete ("X") event, the E's ts for a B/E pair.  On every
track (pid, tid), slices sorted by start must each end at or before the
next one that is not inside it begins, and a slice that begins inside
another must end inside it.  Prints one line: slices, tracks, mis-nested;
exits 1 if any slice mis-nests (or an E ends nothing), 0 otherwise.
"""
import json
import sys
from collections import defaultdict


def slices_of(events):
    tracks, stacks, bad_e = defaultdict(list), defaultdict(list), 0
    for i, e in enumerate(events):
        k = (e.get("pid"), e.get("tid"))
        ph = e.get("ph")
        if ph == "X":
            tracks[k].append((e["ts"], e["ts"] + e.get("dur", 0.0), i))
        elif ph == "B":
            stacks[k].append((e["ts"], i))
        elif ph == "E":
            if not stacks[k]:
                bad_e += 1
                continue
            ts, j = stacks[k].pop()
            tracks[k].append((ts, e["ts"], j))
    unended = sum(len(s) for s in stacks.values())
    return tracks, bad_e, unended


def misnested(sl):
    """Slices of one track that overlap a neighbour without nesting in it."""
    sl = sorted(sl, key=lambda s: (s[0], -s[1], s[2]))
    stack, bad = [], []
    for b, e, i in sl:
        while stack and stack[-1][1] <= b:
            stack.pop()
        if stack and e > stack[-1][1]:
            bad.append((b, e, stack[-1][0], stack[-1][1]))
        stack.append((b, e))
    return bad


def main():
    d = json.load(open(sys.argv[1]))
    events = d["traceEvents"] if isinstance(d, dict) else d
    tracks, bad_e, unended = slices_of(events)
    n = sum(len(s) for s in tracks.values())
    bad = []
    for k, sl in tracks.items():
        bad += [(k,) + x for x in misnested(sl)]
    print("%d slices on %d tracks: %d mis-nested, %d E without a B, %d never ended" %
          (n, len(tracks), len(bad), bad_e, unended))
    for k, b, e, pb, pe in bad[:3]:
        print("  track %r: [%r, %r] crosses the end of [%r, %r]" % (k, b, e, pb, pe))
    sys.exit(1 if bad or bad_e else 0)


if __name__ == "__main__":
    main()
