#!/bin/bash
# A segment cut at every byte offset from the start of its last EVENTS
# block to its end (the EVENTS block, the SESSION_END and SEGMENT_END
# after it): xtcd --cat prints exactly the lines of the whole blocks before
# the cut (the same lines, in the same order, as the intact file), reports
# a torn tail whenever the cut is inside a block, and exits as cat.c
# documents: 0 when the cut segment is the newest (a torn tail is what a
# crash leaves), 1 when a newer segment follows it (damage).  Never a
# crash: no exit code of 128 or more.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

# Two daemon runs make two small, clean segments.
start_xtcd --drain-ms 10
"$LOADGEN" 2 100 >/dev/null || fail "loadgen failed"
wait_log "ended: detached"
stop_xtcd
start_xtcd --drain-ms 10
"$LOADGEN" 1 50 >/dev/null || fail "loadgen failed"
wait_log "ended: detached"
stop_xtcd
[ -f "$DIR/xtc-000001.seg" ] && [ -f "$DIR/xtc-000002.seg" ] || fail "expected two segments: $(ls "$DIR")"

python3 - "$XTCD" "$DIR" "$T" <<'EOF' || fail "truncation"
import os, struct, subprocess, sys, threading
from concurrent.futures import ThreadPoolExecutor

xtcd, src, tmp = sys.argv[1:4]
seg1 = open(os.path.join(src, "xtc-000001.seg"), "rb").read()
seg2 = open(os.path.join(src, "xtc-000002.seg"), "rb").read()

# Block boundaries of segment 1 (file header 128 bytes, block header 16).
bounds, off, last_events = [128], 128, None
while off < len(seg1):
    btype, flags, blen = struct.unpack_from("<HHI", seg1, off)
    if btype == 2:
        last_events = off
    off += 16 + blen
    bounds.append(off)
assert off == len(seg1), "segment 1 does not end on a block boundary"
assert last_events is not None, "segment 1 has no EVENTS block"

def cat(files):
    d = os.path.join(tmp, "cut-%d" % threading.get_ident())
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    for name, data in files:
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    p = subprocess.run([xtcd, "--cat", d, "--json"], capture_output=True)
    if p.returncode >= 128 or p.returncode < 0:
        sys.exit("FAIL: xtcd --cat died with %d on %r" % (p.returncode, [(n, len(b)) for n, b in files]))
    return p.returncode, p.stdout.decode().splitlines(), p.stderr.decode()

rc, full1, err = cat([("xtc-000001.seg", seg1)])
assert rc == 0 and not err, (rc, err)
rc, full2only, err = cat([("xtc-000002.seg", seg2)])
assert rc == 0 and not err, (rc, err)
# Lines of the intact segment 1 up to each block boundary.
upto = {}
for b in bounds:
    if b < last_events:
        continue
    rc, lines, err = cat([("xtc-000001.seg", seg1[:b])])
    assert rc == 0 and not err and lines == full1[:len(lines)], (b, rc, err)
    upto[b] = len(lines)
assert upto[len(seg1)] == len(full1)

def one(cut):
    whole = max(b for b in bounds if b <= cut)
    want = full1[:upto[whole]]
    torn = cut != whole
    # the newest segment: a torn tail is reported, exit 0
    rc, lines, err = cat([("xtc-000001.seg", seg1[:cut])])
    if lines != want:
        sys.exit("FAIL: cut at %d: %d lines, want the first %d of the intact file" % (cut, len(lines), len(want)))
    if rc != 0:
        sys.exit("FAIL: cut at %d of the newest segment: exit %d, want 0" % (cut, rc))
    if torn != ("torn tail at byte %d" % whole in err) or (not torn and err):
        sys.exit("FAIL: cut at %d: stderr %r" % (cut, err))
    # an older segment: the same lines, then the next segment's; exit 1
    rc, lines, err = cat([("xtc-000001.seg", seg1[:cut]), ("xtc-000002.seg", seg2)])
    if lines != want + full2only:
        sys.exit("FAIL: cut at %d with a newer segment: wrong lines" % cut)
    if rc != (1 if torn else 0) or torn != ("corrupt at byte %d" % whole in err):
        sys.exit("FAIL: cut at %d with a newer segment: exit %d, stderr %r" % (cut, rc, err))

# two at a time (two cores); a failure in a worker fails the test
cuts = 0
with ThreadPoolExecutor(max_workers=2) as pool:
    for _ in pool.map(one, range(last_events, len(seg1) + 1)):
        cuts += 1
print("ok: %d cuts over the last %d bytes (%d blocks): every whole record printed, every torn "
      "tail reported, exit 0 (newest) / 1 (older)" % (cuts, len(seg1) - last_events,
                                                      len([b for b in upto]) - 1))
EOF
