/*
 * proto/xtc_seg.h - the on-disk segment format xtcd writes and readers read.
 *
 * DIR/xtc-<seq>.seg, seq a decimal number zero-padded to 6 digits (more
 * digits once it outgrows them).  A file is
 *
 *   struct xtc_seg_file_hdr     (128 bytes, with its own CRC)
 *   block, block, block, ...    each struct xtc_seg_blk_hdr + payload
 *
 * A block is self-delimiting: `len` payload bytes follow its 16-byte header
 * and `crc` is CRC-32C over the header (with crc = 0) and the payload.
 * Blocks are appended whole; a reader that meets a short or bad block has
 * reached the end of the valid part of the file (a torn tail after a crash,
 * or a block still being written: a follower retries it).  A clean segment
 * ends with a SEGMENT_END block.
 *
 * Every segment restates the sessions still live when it was opened (a
 * SESSION_START block with XTC_SEG_F_RESTATED), so deleting older segments
 * under the byte budget never orphans the events of a newer one.
 *
 * Integers are little-endian.  Timestamps on disk are CLOCK_MONOTONIC
 * nanoseconds of the host named by boot_id; SESSION_START carries the
 * anchor that maps them to wall-clock time.
 *
 * Version history (bump XTC_SEG_VERSION on any change a reader would
 * misread):
 *   1  first version.
 */
#ifndef XTC_PROTO_SEG_H
#define XTC_PROTO_SEG_H

#include <stddef.h>
#include <stdint.h>

#define XTC_SEG_MAGIC        "XTCSEG1\n"
#define XTC_SEG_VERSION      1u
#define XTC_SEG_MAX_BLOCK    (4u << 20) /* no valid payload is larger */

enum xtc_seg_blk_type {
	XTC_BLK_SESSION_START = 1, /* struct xtc_seg_session_start + settings */
	XTC_BLK_EVENTS        = 2, /* struct xtc_seg_events + encoded records */
	XTC_BLK_DROP          = 3, /* struct xtc_seg_drop */
	XTC_BLK_SESSION_END   = 4, /* struct xtc_seg_session_end */
	XTC_BLK_EVICTED       = 5, /* struct xtc_seg_evicted + session ids */
	XTC_BLK_SEGMENT_END   = 6, /* struct xtc_seg_segment_end */
	XTC_BLK_CORRUPT       = 7, /* struct xtc_seg_corrupt */
};

/* xtc_seg_blk_hdr.flags */
#define XTC_SEG_F_RESTATED 1u /* SESSION_START repeated at a segment start */

/* xtc_seg_session_end.reason */
enum xtc_seg_end_reason {
	XTC_END_DETACHED        = 1, /* goodbye: a clean detach */
	XTC_END_PRODUCER_DIED   = 2, /* EOF without goodbye */
	XTC_END_DAEMON_SHUTDOWN = 3, /* xtcd stopped while the app still ran */
	XTC_END_CORRUPT         = 4, /* the producer broke the ring invariants */
	XTC_END_IO_ERROR        = 5, /* records could not be written */
	XTC_END_DAEMON_CRASHED  = 6, /* closed by recovery after xtcd died */
};

/* xtc_seg_drop.cause: why records were not written. */
enum xtc_seg_drop_cause {
	XTC_DROP_RING_FULL    = 1, /* the ring was full: the producer counted them */
	XTC_DROP_OVERWRITTEN  = 2, /* overwritten before xtcd read them */
	/* 3 is reserved: records lost to I/O count in SESSION_END.lost */
	XTC_DROP_NO_FREE_RING = 4, /* no free ring for the emitting thread
	                            * (ring = XTC_SEG_RING_NONE) */
	XTC_DROP_QUOTA        = 5, /* refused: the session's uid is over its
	                            * quota (xtcd read them, and did not write
	                            * them) */
};

/* xtc_seg_drop.ring of a drop that belongs to no ring. */
#define XTC_SEG_RING_NONE 0xFFFFFFFFu

/* xtc_seg_corrupt.reason: the ring invariant the producer broke. */
enum xtc_seg_corrupt_reason {
	XTC_CORRUPT_HEAD_BACKWARDS    = 1, /* head went backwards */
	XTC_CORRUPT_HEAD_JUMPED       = 2, /* head jumped further than any
	                                    * producer can write (2^36 records) */
	XTC_CORRUPT_DROPPED_BACKWARDS = 3, /* drop counter went backwards */
	XTC_CORRUPT_HEAD_TOO_FAST     = 4, /* head moved faster, on xtcd's
	                                    * clock, than a producer can write
	                                    * (one record a nanosecond) */
	XTC_CORRUPT_UNWRITTEN         = 5, /* head covers ring memory that was
	                                    * never written (a hole of the memfd) */
};

struct xtc_seg_file_hdr {
	char     magic[8];         /* XTC_SEG_MAGIC */
	uint32_t version;          /* XTC_SEG_VERSION */
	uint32_t hdr_size;         /* 128 */
	uint64_t seq;              /* the number in the file name */
	uint64_t created_real_ns;
	uint64_t created_mono_ns;
	uint64_t next_session_id;  /* ids below this were handed out before */
	uint8_t  boot_id[16];
	char     host[56];         /* NUL-padded */
	uint32_t reserved;
	uint32_t crc;              /* CRC-32C of the 124 bytes before it */
};

struct xtc_seg_blk_hdr {
	uint16_t type;             /* enum xtc_seg_blk_type */
	uint16_t flags;
	uint32_t len;              /* payload bytes that follow */
	uint32_t crc;              /* CRC-32C of header (crc = 0) + payload */
	uint32_t reserved;
};

/* A session begins (or is restated at the start of a newer segment). */
struct xtc_seg_session_start {
	uint64_t session_id;
	uint64_t start_mono_ns;    /* when xtcd accepted it */
	uint64_t anchor_mono_ns;   /* wall = anchor_real_ns + (ts - anchor_mono_ns) */
	uint64_t anchor_real_ns;
	uint32_t pid, uid, gid;    /* from SO_PEERCRED */
	uint32_t ring_count;
	uint32_t ring_capacity;
	uint32_t ts_unit;          /* the producer's clock (enum xtc_shm_ts_unit) */
	uint64_t ts_hz;
	uint64_t dropped_before;   /* drops the producer had counted before attach */
	uint8_t  boot_id[16];
	char     comm[16];
	uint32_t attach_count;     /* earlier attaches of the same segment */
	uint32_t settings_len;     /* bytes of "key=value\n" text that follow */
};

/* A batch of records from one ring, compactly encoded.
 *
 * Each record is:
 *   kind     1 byte (kinds >= 255 are written 255 then a varint)
 *   flags    1 byte:
 *              bits 0-2  log2(source) when source is one bit 1..64,
 *                        7 = a varint source follows
 *              bit 3     pid equals the previous record's (nothing follows)
 *              bit 4     loop_id equals the previous record's
 *              bits 5-6  detail: 0 varint, 1 zigzag delta from the previous
 *                        record's detail, 2 zero (nothing follows)
 *   [source] varint     when bits 0-2 are 7
 *   ts       zigzag varint, ns since the previous record (first: since
 *            first_ts_ns)
 *   loop_id  varint     unless bit 3 or bit 4
 *   local_id varint     unless bit 3
 *   gen      varint     unless bit 3
 *   detail   varint     per bits 5-6
 * "Previous" starts as ts = first_ts_ns, pid = {loop_id, 0, 0}, detail 0.
 * Varints are LEB128 (7 bits a byte, low first), at most 10 bytes. */
struct xtc_seg_events {
	uint64_t session_id;
	uint32_t ring;             /* index in the producer's segment */
	uint32_t loop_id;          /* the ring's bound loop when drained */
	uint64_t first_index;      /* ring index of the first record */
	uint64_t first_ts_ns;
	uint32_t count;            /* records encoded in this block */
	uint32_t body_len;         /* bytes of encoded records that follow */
};

/* Records the producer could not keep: the ring was full (or they were
 * overwritten before the consumer read them).  Placed in the stream where
 * the loss happened: after the last record drained before it. */
struct xtc_seg_drop {
	uint64_t session_id;
	uint32_t ring;
	uint32_t loop_id;
	uint64_t count;
	uint64_t from_ts_ns;       /* last record seen before the loss */
	uint64_t to_ts_ns;         /* first record seen after it (or drain time) */
	uint32_t cause;            /* enum xtc_seg_drop_cause */
	uint32_t reserved;
};

struct xtc_seg_session_end {
	uint64_t session_id;
	uint64_t end_mono_ns;
	uint32_t reason;           /* enum xtc_seg_end_reason */
	uint32_t complete;         /* 1 only for a clean, lossless detach */
	uint64_t produced;         /* == written + dropped + lost */
	uint64_t written;
	uint64_t dropped;
	uint64_t lost;
};

/* Older segments were deleted under the byte budget. */
struct xtc_seg_evicted {
	uint64_t first_seq;        /* range of segment numbers deleted */
	uint64_t last_seq;
	uint64_t bytes;
	uint64_t records;          /* event records they held */
	uint32_t session_count;    /* session ids (u64) that follow */
	uint32_t reserved;
};

struct xtc_seg_segment_end {
	uint64_t end_mono_ns;
	uint64_t next_seq;         /* 0 at daemon shutdown */
	uint64_t blocks;           /* blocks before this one */
};

/* A ring was taken out of draining because it broke an invariant. */
struct xtc_seg_corrupt {
	uint64_t session_id;
	uint32_t ring;
	uint32_t reason;           /* enum xtc_seg_corrupt_reason.  A rewritten
	                            * segment header ends the whole session with
	                            * XTC_END_CORRUPT instead. */
	uint64_t head, tail;       /* what was seen */
};

_Static_assert(sizeof(struct xtc_seg_file_hdr) == 128, "file header");
_Static_assert(offsetof(struct xtc_seg_file_hdr, crc) == 124, "file crc");
_Static_assert(sizeof(struct xtc_seg_blk_hdr) == 16, "block header");
_Static_assert(sizeof(struct xtc_seg_session_start) == 112, "session start");
_Static_assert(sizeof(struct xtc_seg_events) == 40, "events");
_Static_assert(sizeof(struct xtc_seg_drop) == 48, "drop");
_Static_assert(sizeof(struct xtc_seg_session_end) == 56, "session end");
_Static_assert(sizeof(struct xtc_seg_evicted) == 40, "evicted");
_Static_assert(sizeof(struct xtc_seg_segment_end) == 24, "segment end");
_Static_assert(sizeof(struct xtc_seg_corrupt) == 32, "corrupt");

#endif /* XTC_PROTO_SEG_H */
