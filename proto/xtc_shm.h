/*
 * proto/xtc_shm.h - the shared-memory ABI between libxtctail and xtcd.
 *
 * A process that records events owns one memfd segment:
 *
 *   offset 0                 struct xtc_shm_hdr      (XTC_SHM_HDR_SIZE bytes)
 *   ring_offset              ring 0                  (ring_stride bytes)
 *   ring_offset + stride     ring 1 ...
 *
 * and each ring is
 *
 *   +0     producer line(s)  head, dropped           (written by the producer)
 *   +128   consumer line(s)  tail, evicted, nudge    (written by the consumer)
 *   +256   descriptor        state, loop id, tid     (written on bind/release)
 *   +320   ring_capacity records of struct xtc_shm_rec
 *
 * Indexes are free-running 64-bit counters; the record for index i lives in
 * slot i & (capacity - 1).  `head - tail` is the number of unread records.
 *
 * Trust: the daemon maps memory another process writes at any time.  It
 * checks the memfd's seals and size before mapping, validates every field
 * here against what it can compute itself, keeps its own private copy of
 * every index it relies on, and treats a ring whose head or drop counter
 * moves backwards, whose head jumps further than any producer could
 * write between two drains or faster than one record a nanosecond of the
 * consumer's clock, or whose head covers record slots on pages that were
 * never written (holes of the memfd), as corrupt.  A producer therefore
 * writes a record before it moves the head over it, as it must anyway.  A head more than a capacity ahead
 * of the consumer means records were overwritten before they were read
 * (a flight-recorder ring switched to drop-new): those count as dropped.
 * Nothing here is a pointer.
 *
 * Version history (bump XTC_SHM_MAJOR for any change a reader would
 * misread; add fields only at the end of reserved space and bump MINOR):
 *   1.0  first version.
 */
#ifndef XTC_PROTO_SHM_H
#define XTC_PROTO_SHM_H

#include <stddef.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xtc-tail's shared-memory and on-disk formats are little-endian only"
#endif

#define XTC_SHM_MAGIC              0x314d48534354580aULL /* "\nXTCSHM1" LE */
#define XTC_SHM_MAJOR              1
#define XTC_SHM_MINOR              0
#define XTC_SHM_OLDEST_COMPATIBLE  1

#define XTC_SHM_HDR_SIZE       4096u
#define XTC_SHM_RING_HDR_SIZE  320u
#define XTC_SHM_REC_SIZE       40u

/* Bounds a consumer enforces before mapping. */
#define XTC_SHM_MAX_RINGS          1024u
#define XTC_SHM_MIN_RING_CAPACITY  64u
#define XTC_SHM_MAX_RING_CAPACITY  (1u << 26)      /* 2.5 GiB of records */
#define XTC_SHM_MAX_SEGMENT_SIZE   (64ULL << 30)

/* xtc_shm_hdr.mode: what a producer does with a full ring. */
enum xtc_shm_mode {
	XTC_SHM_MODE_OVERWRITE = 1, /* flight recorder: evict the oldest */
	XTC_SHM_MODE_DROP_NEW  = 2, /* a consumer owns tail: drop the new */
};

/* xtc_shm_hdr.ts_unit: what xtc_shm_rec.ts counts. */
enum xtc_shm_ts_unit {
	XTC_SHM_TS_MONO_NS = 1, /* CLOCK_MONOTONIC nanoseconds */
	XTC_SHM_TS_TSC     = 2, /* x86 TSC ticks (constant, nonstop) */
};

/* xtc_shm_hdr.producer_state */
enum xtc_shm_producer_state {
	XTC_SHM_PRODUCER_ACTIVE   = 1,
	XTC_SHM_PRODUCER_DETACHED = 2, /* said goodbye; no more records */
};

/* xtc_shm_ring.state */
enum xtc_shm_ring_state {
	XTC_SHM_RING_FREE  = 0, /* never bound, or released at thread exit */
	XTC_SHM_RING_BOUND = 1, /* one thread produces into it */
};

/* The segment header.  Written once by the producer before the memfd is
 * shared, except for the fields marked "live". */
struct xtc_shm_hdr {
	uint64_t magic;           /* XTC_SHM_MAGIC */
	uint16_t abi_major;       /* XTC_SHM_MAJOR */
	uint16_t abi_minor;       /* XTC_SHM_MINOR */
	uint32_t hdr_size;        /* XTC_SHM_HDR_SIZE */
	uint32_t rec_size;        /* XTC_SHM_REC_SIZE */
	uint32_t ring_count;      /* N rings */
	uint32_t ring_capacity;   /* C records per ring, a power of two */
	uint32_t ring_hdr_size;   /* XTC_SHM_RING_HDR_SIZE */
	uint64_t ring_offset;     /* byte offset of ring 0 (== hdr_size) */
	uint64_t ring_stride;     /* ring_hdr_size + C * rec_size */
	uint64_t segment_size;    /* ring_offset + N * ring_stride */
	uint32_t producer_pid;    /* informational: never trusted */
	uint32_t mode;            /* enum xtc_shm_mode, set before sharing */
	char     comm[16];        /* informational, NUL-padded */
	uint8_t  boot_id[16];     /* /proc/sys/kernel/random/boot_id */
	uint32_t ts_unit;         /* enum xtc_shm_ts_unit */
	uint32_t reserved0;
	uint64_t ts_hz;           /* ticks per second (1e9 for MONO_NS) */
	uint64_t anchor_ts;       /* ts value taken ... */
	uint64_t anchor_mono_ns;  /* ... together with CLOCK_MONOTONIC ... */
	uint64_t anchor_real_ns;  /* ... and CLOCK_REALTIME */
	uint32_t producer_state;  /* live: enum xtc_shm_producer_state */
	uint32_t reserved1;
	uint64_t no_ring_count;   /* live: emits that found no free ring */
	uint8_t  reserved[4096 - 152];
};

/* One record as it sits in a ring: the public xtc_tail_rec_t with `ts` in
 * the header's ts_unit instead of nanoseconds. */
struct xtc_shm_rec {
	uint64_t ts;
	uint32_t source;
	uint32_t kind;
	uint32_t loop_id;
	uint32_t local_id;
	uint64_t gen;
	uint64_t detail;
};

struct xtc_shm_ring {
	/* Producer side: only the bound thread writes these. */
	uint64_t head;       /* records published (release-stored) */
	uint64_t dropped;    /* records refused because the ring was full */
	uint64_t claim;      /* index being written + 1: a reader that copied
	                      * slot i while the ring may wrap keeps it only if
	                      * i >= claim - capacity after the copy */
	uint8_t  pad0[104];
	/* Consumer side: only the attached consumer writes these. */
	uint64_t tail;       /* records consumed (and safely written) */
	uint64_t evicted;    /* records overwritten before the consumer read them */
	uint32_t nudge_armed;/* consumer sets 1; producer clears it to nudge */
	uint8_t  pad1[108];
	/* Descriptor: written by the library on bind and release. */
	uint32_t state;      /* enum xtc_shm_ring_state */
	uint32_t loop_id;    /* XTC_TAIL_LOOP_NONE for an unbound thread */
	uint32_t tid;        /* informational */
	uint32_t bind_seq;   /* bumped on every bind */
	uint8_t  pad2[48];
	struct xtc_shm_rec recs[];
};

_Static_assert(sizeof(struct xtc_shm_hdr) == XTC_SHM_HDR_SIZE, "shm header size");
_Static_assert(offsetof(struct xtc_shm_hdr, ring_count) == 20, "ring_count");
_Static_assert(offsetof(struct xtc_shm_hdr, ring_offset) == 32, "ring_offset");
_Static_assert(offsetof(struct xtc_shm_hdr, segment_size) == 48, "segment_size");
_Static_assert(offsetof(struct xtc_shm_hdr, comm) == 64, "comm");
_Static_assert(offsetof(struct xtc_shm_hdr, boot_id) == 80, "boot_id");
_Static_assert(offsetof(struct xtc_shm_hdr, ts_hz) == 104, "ts_hz");
_Static_assert(offsetof(struct xtc_shm_hdr, producer_state) == 136, "producer_state");
_Static_assert(offsetof(struct xtc_shm_hdr, no_ring_count) == 144, "no_ring_count");
_Static_assert(sizeof(struct xtc_shm_rec) == XTC_SHM_REC_SIZE, "record size");
_Static_assert(offsetof(struct xtc_shm_rec, gen) == 24, "rec gen");
_Static_assert(offsetof(struct xtc_shm_rec, detail) == 32, "rec detail");
_Static_assert(offsetof(struct xtc_shm_ring, tail) == 128, "ring tail");
_Static_assert(offsetof(struct xtc_shm_ring, state) == 256, "ring state");
_Static_assert(offsetof(struct xtc_shm_ring, recs) == XTC_SHM_RING_HDR_SIZE, "ring records");

/* Bytes one ring of `capacity` records takes. */
static inline uint64_t xtc_shm_ring_stride(uint32_t capacity)
{
	return XTC_SHM_RING_HDR_SIZE + (uint64_t)capacity * XTC_SHM_REC_SIZE;
}

/* Bytes a segment of `rings` rings of `capacity` records takes. */
static inline uint64_t xtc_shm_segment_size(uint32_t rings, uint32_t capacity)
{
	return XTC_SHM_HDR_SIZE + (uint64_t)rings * xtc_shm_ring_stride(capacity);
}

#endif /* XTC_PROTO_SHM_H */
