/*
 * lib/seg/seg.h - encoding and decoding of the on-disk segment format
 * (proto/xtc_seg.h).  Internal: linked into xtcd, the readers and the
 * tests through libxtcseg.la, never installed.
 */
#ifndef XTC_LIB_SEG_H
#define XTC_LIB_SEG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xtc_tail.h"
#include "proto/xtc_seg.h"
#include "proto/xtc_shm.h"

/* CRC-32C (Castagnoli), as every block and file header carries. Start
 * with crc = 0. */
uint32_t seg_crc32c(uint32_t crc, const void *buf, size_t len);

/* Behind seg_crc32c(): whether it uses the CPU's crc32 instruction
 * (SSE4.2, checked once at run time), and the table implementation it
 * falls back to, which the tests hold the instruction against. */
int seg_crc32c_has_hw(void);
uint32_t seg_crc32c_table(uint32_t crc, const void *buf, size_t len);

/* LEB128.  put returns bytes written (1..10); get returns bytes read or 0
 * when the varint is truncated or longer than 10 bytes. */
size_t seg_varint_put(uint8_t *out, uint64_t v);
size_t seg_varint_get(const uint8_t *p, const uint8_t *end, uint64_t *v);

/* The "previous record" state of an EVENTS body (see proto/xtc_seg.h). */
struct seg_codec {
	uint64_t ts;
	uint32_t loop_id;
	uint32_t local_id;
	uint64_t gen;
	uint64_t detail;
};

#define SEG_MAX_REC_BYTES 64 /* an encoded record never takes more */

/* Start a body: previous ts = first_ts_ns, pid = {loop_id, 0, 0}. */
void seg_codec_begin(struct seg_codec *c, uint32_t loop_id, uint64_t first_ts_ns);

/* Encode one record (ts_ns in nanoseconds) at out, which has room for
 * SEG_MAX_REC_BYTES.  Returns bytes written. */
size_t seg_encode_rec(struct seg_codec *c, uint8_t *out, const xtc_tail_rec_t *r);

/* How seg_encode_ring() turns a ring's ticks into nanoseconds: ticks as
 * they are when identity, else anchor_ns + (ticks - anchor_ts) * mult /
 * 2^32 (mult: ns per tick in 32.32 fixed point; 0 where that would go
 * below 0); then a record that comes out less than `jitter` ns before its
 * predecessor is held at the predecessor's time. */
struct seg_ticks {
	uint64_t anchor_ts;
	uint64_t anchor_ns;
	uint64_t mult;
	uint64_t jitter;
	int      identity;
};

/* One EVENTS body's worth of ring slots for seg_encode_ring(). */
struct seg_ring_batch {
	const struct xtc_shm_rec *recs;  /* the ring's slots */
	uint64_t mask;                   /* capacity - 1 */
	uint64_t from;                   /* first index (slot from & mask) */
	uint32_t n;                      /* records, at least 1 */
	uint32_t loop_id;                /* the body's loop (seg_codec_begin) */
	struct seg_ticks ticks;
	uint64_t floor_ns;               /* in: ns of the record before; out: of the last */
	uint64_t first_ns, last_ns;      /* out: ns of the first and last record */
};

/* Encode slots [from, from + n) of a ring as one EVENTS body at out, which
 * has room for n * SEG_MAX_REC_BYTES: the same bytes as seg_codec_begin()
 * at the first record's time and seg_encode_rec() for each, faster.  Each
 * slot is read exactly once (the ring may be another process's shared
 * memory).  Returns the bytes written. */
size_t seg_encode_ring(struct seg_ring_batch *b, uint8_t *out);

/* The same without the x86-64 BMI2 path seg_encode_ring() takes where the
 * CPU has it (seg_encode_has_bmi()): the same bytes, for the tests to
 * hold both paths to the reference. */
size_t seg_encode_ring_portable(struct seg_ring_batch *b, uint8_t *out);
int seg_encode_has_bmi(void);

/* Decode one record from [p, end).  Returns bytes consumed, or 0 when the
 * record is truncated or malformed. */
size_t seg_decode_rec(struct seg_codec *c, const uint8_t *p, const uint8_t *end,
                      xtc_tail_rec_t *r);

/* Fill in a block header for `len` payload bytes that follow it in memory
 * and compute its CRC. */
void seg_blk_seal(struct xtc_seg_blk_hdr *h, uint16_t type, uint16_t flags, uint32_t len);

/* The same for a block at any address (it is written with memcpy only):
 * for blocks built in their packed place in a write buffer. */
void seg_blk_seal_bytes(void *at, uint16_t type, uint16_t flags, uint32_t len);

/* Check a block whose header and `len` payload bytes are in memory:
 * 0 when valid, -EBADMSG when the CRC or type is wrong. */
int seg_blk_verify(const struct xtc_seg_blk_hdr *h);

/* Build a file header (computes its CRC). */
void seg_file_hdr_init(struct xtc_seg_file_hdr *h, uint64_t seq, uint64_t next_session_id,
                       uint64_t real_ns, uint64_t mono_ns, const uint8_t boot_id[16],
                       const char *host);

/* 0 when the header's magic, version, size and CRC are right, -EBADMSG
 * otherwise. */
int seg_file_hdr_check(const struct xtc_seg_file_hdr *h);

/* "DIR/xtc-000042.seg" into buf.  Returns snprintf's result. */
int seg_path(char *buf, size_t len, const char *dir, uint64_t seq);

/* Parse a directory entry name "xtc-<digits>.seg".  Returns 1 and sets
 * *seq when it is one, 0 otherwise. */
int seg_name_parse(const char *name, uint64_t *seq);

/* The numbers of the segments in dir (regular files named like one, or
 * links to such: not FIFOs or devices), sorted ascending, in a malloc'ed
 * array (*out, *n).  Returns 0 or -errno. */
int seg_list(const char *dir, uint64_t **out, size_t *n);
/* The largest segment number xtcd writes: a name with a larger one was put
 * there by someone else (2^63 rotations do not happen), and continuing
 * from it would wrap the numbers onto the oldest segments. */
#define SEG_SEQ_MAX (UINT64_MAX >> 1)

/* The oldest segment of dir numbered above seq (and at most SEG_SEQ_MAX),
 * or 0 when there is none, in *out.  Returns 0 or -errno. */
int seg_oldest_above(const char *dir, uint64_t seq, uint64_t *out);

/* Whether segment seq of dir exists with at least its file header. */
int seg_begun(const char *dir, uint64_t seq);

/* How many segments dir holds, their bytes, and the first and last
 * segment numbers (all 0 when there is none).  Returns 0 or -errno. */
int seg_dir_usage(const char *dir, uint64_t *segs, uint64_t *bytes, uint64_t *first,
                  uint64_t *last);

#endif /* XTC_LIB_SEG_H */
