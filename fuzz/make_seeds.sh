#!/bin/bash
# fuzz/make_seeds.sh - regenerate the seed corpora in fuzz/corpus/.
#
#   segread/  real segments from a short xtcd run (a clean detach, an
#             overloaded producer's DROPs, a hostile client's CORRUPT
#             ring, rotation and EVICTED blocks under a tiny budget, a
#             session closed as daemon_crashed, a torn tail), each at most
#             128 KiB, the fuzzers' -max_len
#   attach/   valid and invalid hellos with their memfds (see the input
#             layout at the top of fuzz/fuzz_attach.c)
#   shm/      producer programs: clean, overloaded, hostile (see the top
#             of fuzz/fuzz_shm.c)
# Run from a configured and built tree: bash fuzz/make_seeds.sh
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
XTCD=$top/xtcd/xtcd
LOADGEN=$top/tests/xtc-loadgen
BADCLIENT=$top/tests/xtc-badclient
for p in "$XTCD" "$LOADGEN" "$BADCLIENT"; do
	[ -x "$p" ] || { echo "make_seeds.sh: build $p first" >&2; exit 1; }
done
out=$top/fuzz/corpus
T=$(mktemp -d)
trap 'kill -9 $xpid 2>/dev/null; rm -rf "$T"' EXIT
xpid=

# start DIR MAX_BYTES: an xtcd writing 64 KiB segments to $T/DIR
start() {
	mkdir -p "$T/$1"
	"$XTCD" --dir "$T/$1" --socket "$T/sock" --segment-bytes 64K --max-bytes "$2" \
		--drain-ms 5 >>"$T/log" 2>&1 &
	xpid=$!
	for _ in $(seq 100); do grep -q listening "$T/log" 2>/dev/null && return; sleep 0.05; done
	echo "xtcd did not start" >&2; exit 1
}

# ---- segread: real segments ----
rm -rf "$out/segread" && mkdir -p "$out/segread"
export XTC_TAIL_SHM=$T/sock
start a 64M
"$LOADGEN" 2 300 >/dev/null                              # clean, complete
XTC_TAIL_RING_RECORDS=1024 "$LOADGEN" 1 5000 >/dev/null  # DROPs
"$BADCLIENT" "$T/sock" jump >/dev/null                   # CORRUPT head_jumped
"$BADCLIENT" "$T/sock" rewrite >/dev/null                # ended corrupt
"$LOADGEN" 1 200 0 3000 >/dev/null &                     # open at the crash
lg=$!
sleep 0.5
kill -9 "$xpid"; wait "$xpid" 2>/dev/null || true
start a 64M                                              # daemon_crashed
wait "$lg" || true
"$LOADGEN" 1 50 >/dev/null
kill -TERM "$xpid"; wait "$xpid" || true
start b 192K
"$LOADGEN" 3 20000 >/dev/null                            # rotation, EVICTED
kill -TERM "$xpid"; wait "$xpid" || true
xpid=
for f in "$T"/a/xtc-*.seg; do
	[ "$(stat -c %s "$f")" -le 131072 ] && cp "$f" "$out/segread/a-$(basename "$f")"
done
for f in $(ls "$T"/b/xtc-*.seg | tail -n 2); do
	cp "$f" "$out/segread/b-$(basename "$f")"
done
last=$(ls "$out"/segread/a-xtc-*.seg | tail -n 1)
head -c $(( $(stat -c %s "$last") - 37 )) "$last" >"$out/segread/torn.seg"

# ---- attach and shm: built byte by byte ----
python3 - "$out" <<'EOF'
import os, struct, sys
out = sys.argv[1]

def shm_header(rings=1, cap=64, ts_unit=1):
    stride = 320 + cap * 40
    size = 4096 + rings * stride
    h = struct.pack("<QHHIIIIIQQQII16s16sIIQQQQIIQ",
                    0x314d48534354580a, 1, 0, 4096, 40, rings, cap, 320, 4096, stride,
                    size, 4242, 1, b"seed", b"\0" * 16, ts_unit, 0, 1000000000,
                    0, 0, 0, 1, 0, 0)
    return h + b"\0" * (4096 - len(h)), size

def hello(size, magic=0x41435458, major=1, type_=1, msize=72, shm_major=1):
    m = struct.pack("<IHHHHI", magic, major, 0, type_, 0, msize)
    m += struct.pack("<QIIII16s16s", size, shm_major, 0, 4242, 0, b"seed", b"\0" * 16)
    return m

def attach(name, nfds=1, nkind=0, fdkind=0, seals=7, size_from_hello=1, fdsize=0,
           msg=None, content=None):
    hdr, size = shm_header()
    msg = hello(size) if msg is None else msg
    content = hdr if content is None else content
    b = bytes([(nfds << 2) | nkind, fdkind, seals, size_from_hello])
    b += struct.pack("<IH", fdsize, len(msg)) + msg + content
    os.makedirs(out + "/attach", exist_ok=True)
    open(out + "/attach/" + name, "wb").write(b)

attach("valid")
attach("pipe", fdkind=4)
attach("dir", fdkind=5)
attach("socket", fdkind=6)
attach("unsealable", fdkind=7)
attach("unsealed", seals=0)
attach("wrongsize", size_from_hello=0, fdsize=8192)
attach("nofd", nfds=0)
attach("twofds", nfds=2)
attach("toomany", nkind=2, nfds=8)
attach("huge", nkind=1)
attach("truncated", msg=hello(6976)[:10])
attach("badmagic", msg=hello(6976, magic=0x12345678))
attach("badversion", msg=hello(6976, major=2))
attach("badshm", msg=hello(6976, shm_major=9))
attach("liar", msg=hello(6976), content=shm_header(rings=2)[0])

# fuzz_shm programs: geometry, b1, patches, ops (opcode | ring << 4)
EMIT, SETHEAD, ADDHEAD, SETDROP, ADDDROP, SETTAIL, DESC, POKE, HDR, NORING, \
    DRAIN, STARVE, FAIL, GOODBYE, DIE, JUNK = range(16)

def emit(ring, n, seed=1):
    return bytes([EMIT | ring << 4, n - 1]) + struct.pack("<I", seed)

def op(code, ring=0, args=b""):
    return bytes([code | ring << 4]) + args

def shm(name, geo, ops, pre=b"", npre=0, patches=b"", npatch=0):
    b = bytes([geo, npatch | npre << 2]) + patches + pre + ops
    os.makedirs(out + "/shm", exist_ok=True)
    open(out + "/shm/" + name, "wb").write(b)

drain = op(DRAIN)
shm("clean", 0x00, emit(0, 10) + drain + emit(0, 100, 7) + drain + op(GOODBYE))
shm("two_rings", 0x01, emit(0, 50) + emit(1, 60, 3) + drain + emit(1, 64) + drain + op(GOODBYE))
shm("drop_new_full", 0x24, emit(0, 128) + emit(0, 128, 5) + emit(0, 50) + drain + op(DIE))
shm("overwritten", 0x00, emit(0, 128) + emit(0, 100, 9) + drain + op(GOODBYE))
shm("tsc", 0x10, emit(0, 30) + drain + op(GOODBYE))
shm("jump", 0x00, emit(0, 10) + drain + op(SETHEAD, 0, struct.pack("<Q", 1 << 40)) + drain + op(GOODBYE))
shm("backwards", 0x00, emit(0, 10) + drain + op(ADDHEAD, 0, struct.pack("<h", -5)) + drain + op(GOODBYE))
shm("dropback", 0x00, op(ADDDROP, 0, struct.pack("<H", 9)) + drain +
    op(SETDROP, 0, struct.pack("<Q", 2)) + drain + op(GOODBYE))
shm("rewrite", 0x01, emit(0, 10) + drain + op(HDR, 0, struct.pack("<HQ", 20, 7)) + drain + op(GOODBYE))
shm("starve_fail", 0x00, emit(0, 60) + op(STARVE, 0, b"\x03") + drain + op(FAIL) + emit(0, 20) +
    drain + drain + op(GOODBYE))
shm("noring", 0x00, op(NORING, 0, b"\x00\x05\x00") + drain + emit(0, 5) + op(GOODBYE))
shm("unread_at_attach", 0x00, drain + op(GOODBYE), pre=emit(0, 128) + emit(0, 90, 2), npre=2)
shm("tail_ahead", 0x00, emit(0, 5) + drain + op(DIE),
    pre=op(SETTAIL, 0, struct.pack("<Q", 99)), npre=1)
shm("bad_header", 0x00, drain, patches=struct.pack("<HBQ", 24, 2, 3), npatch=1)
shm("junk_then_goodbye", 0x00, emit(0, 3) + op(JUNK, 0, b"\x05" * 24) + op(GOODBYE))
EOF
echo "seeds: $(ls "$out/segread" | wc -l) segread, $(ls "$out/attach" | wc -l) attach," \
     "$(ls "$out/shm" | wc -l) shm"
