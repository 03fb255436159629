/*
 * lib/seg/segread.h - read a directory of xtcd segments (proto/xtc_seg.h) as a
 * stream of decoded items: events, drops, session start/end, evictions,
 * segment ends and corrupt-ring notices.  Shared by xtcd --cat, --follow,
 * the exports and --report.  Internal (libxtcseg.la), never installed.
 *
 * Layers, lowest first:
 *
 *   segread_blocks()   the valid blocks of one open segment file from a
 *                      byte offset; stops at the first short or bad block
 *                      and says where (a follower retries from there).
 *   segread_segment()  one segment by number, from an offset: checks the
 *                      file header, decodes each block into items, tracks
 *                      sessions (so a follower keeps one reader).
 *   segread_run()      every segment in the directory in seq order.
 *
 * Problems in the data (torn tail, corrupt block, bad file header, a
 * segment deleted while reading) never fail the read: they go to the
 * problem callback and reading continues with what is still valid.
 * Functions return 0 or -errno (or, where said, the item callback's
 * nonzero value).  seg_scan_fd() below is built on segread_blocks().
 */
#ifndef XTC_LIB_SEGREAD_H
#define XTC_LIB_SEGREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/seg/seg.h"

/* ---- one segment file, block by block ---- */

/* Why segread_blocks() stopped. */
enum segread_stop {
	SEGREAD_END = 0,     /* at the end of the file, on a block boundary */
	SEGREAD_PARTIAL,     /* a block is cut short by the end of the file */
	SEGREAD_BAD_HEADER,  /* a block header has a bad type or length */
	SEGREAD_BAD_CRC,     /* a whole block whose CRC does not match */
	SEGREAD_STOPPED,     /* the callback returned nonzero */
	SEGREAD_SHRUNK,      /* the file is shorter than the start offset */
};

/* Where segread_blocks() got to. */
struct segread_span {
	off_t    next;       /* after the last valid block: resume here */
	off_t    file_size;  /* the size it read up to (fstat at the start) */
	uint64_t blocks;     /* valid blocks delivered */
	uint16_t last_type;  /* type of the last valid block, 0 if none */
	enum segread_stop stop;
	int      fn_ret;     /* the callback's nonzero value for STOPPED */
};

/* Called for every valid block, in order; return nonzero to stop. */
typedef int (*seg_block_fn)(const struct xtc_seg_blk_hdr *h, const void *payload,
                            off_t offset, void *user);

/* Deliver each valid block of the segment open at fd from byte `from`
 * (the first block, sizeof(struct xtc_seg_file_hdr) for a new file) to fn,
 * in order, until the end of the file as fstat sees it at the call or the
 * first short or invalid block.  The payload fn gets is 8-byte aligned and
 * valid only during the call.  Bytes past the file size are never read.
 * A block still being written shows up as PARTIAL (or BAD_CRC if its bytes
 * land out of order): call again from sp->next later.  Returns 0 or -errno
 * (a read error, -ENOMEM). */
int segread_blocks(int fd, off_t from, seg_block_fn fn, void *user, struct segread_span *sp);

/* ---- decoded items ---- */

/* What the reader knows of one session (from its SESSION_START). */
struct segread_session {
	uint64_t id;
	struct xtc_seg_session_start start;  /* as first seen */
	char    *settings;                   /* settings_len bytes + a NUL */
	size_t   settings_len;
	uint64_t first_seq;                  /* segment it was first seen in */
	int      ended;                      /* a SESSION_END was seen */
};

enum segread_type {
	SEGREAD_EVENT = 1,
	SEGREAD_DROP,
	SEGREAD_SESSION_START,
	SEGREAD_SESSION_END,
	SEGREAD_EVICTED,
	SEGREAD_SEGMENT_END,
	SEGREAD_CORRUPT,         /* a ring was taken out of draining */
	SEGREAD_SEGMENT_BEGIN,   /* a segment's file header was read */
};

/* One decoded item.  Pointers are valid only during the callback. */
struct segread_item {
	enum segread_type type;
	uint64_t seq;                          /* the segment it is in */
	off_t    offset;                       /* its block's offset there */
	const struct segread_session *session; /* NULL: none or never started */
	uint64_t real_ns;                      /* wall-clock time (CLOCK_REALTIME) */
	int      has_real;                     /* real_ns is known */
	union {
		struct {
			uint64_t session_id;
			uint32_t ring;
			uint32_t loop_id;      /* the ring's loop when drained */
			uint64_t index;        /* ring index of the record */
			xtc_tail_rec_t rec;    /* ts_ns: CLOCK_MONOTONIC ns */
		} event;
		struct xtc_seg_drop drop;      /* real_ns is from_ts_ns's */
		struct {
			const struct xtc_seg_session_start *ss; /* this block's */
			const char *settings;  /* settings_len bytes, NUL-terminated */
			size_t   settings_len;
			int      restated;     /* XTC_SEG_F_RESTATED was set */
			int      first;        /* first time this reader saw it */
		} start;
		struct xtc_seg_session_end end;
		struct {
			struct xtc_seg_evicted ev;
			const uint64_t *ids;   /* ev.session_count session ids */
		} evicted;
		struct xtc_seg_segment_end seg_end;
		struct xtc_seg_corrupt corrupt;
		const struct xtc_seg_file_hdr *seg_begin;
	} u;
};

/* Something wrong with the data; reading went on past it. */
enum segread_problem_kind {
	SEGREAD_TORN_TAIL = 1,   /* the newest segment ends in a partial or bad
	                          * block: normal after a crash or mid-write */
	SEGREAD_CORRUPT_TAIL,    /* an older segment does: its rest is lost */
	SEGREAD_BAD_FILE_HEADER, /* not a valid segment header: skipped */
	SEGREAD_BAD_PAYLOAD,     /* a block with a good CRC but bad contents:
	                          * what could be decoded was delivered */
	SEGREAD_VANISHED,        /* deleted before it could be read: skipped */
	SEGREAD_IO_ERROR,        /* reading it failed (err): skipped the rest */
};

struct segread_problem {
	enum segread_problem_kind kind;
	uint64_t    seq;
	const char *path;
	off_t       offset;      /* where in the file */
	off_t       bytes;       /* bytes from offset to the end of the file */
	int         err;         /* -errno for VANISHED and IO_ERROR */
	const char *why;         /* a short phrase: "bad CRC", ... */
};

/* Called for each item in order; nonzero stops reading and is returned. */
typedef int (*segread_item_fn)(const struct segread_item *it, void *user);

/* Called for each problem. */
typedef void (*segread_problem_fn)(const struct segread_problem *p, void *user);

/* Counts over a reader's life. */
struct segread_stats {
	uint64_t listed;         /* segments segread_run() found in the directory */
	uint64_t segments;       /* segments opened with a valid header */
	uint64_t blocks;         /* valid blocks */
	uint64_t events;         /* event records delivered */
	uint64_t torn;           /* TORN_TAIL problems */
	uint64_t corrupt;        /* CORRUPT_TAIL, BAD_FILE_HEADER, BAD_PAYLOAD, IO_ERROR */
	uint64_t vanished;       /* VANISHED problems */
};

struct segread;

/* How segread_segment() reports bytes after the last valid block. */
enum segread_tail {
	SEGREAD_TAIL_TORN,       /* as TORN_TAIL: the newest segment */
	SEGREAD_TAIL_CORRUPT,    /* as CORRUPT_TAIL: a segment with successors */
	SEGREAD_TAIL_QUIET,      /* not at all: a follower will retry it */
};

/* A reader of dir (the string is copied).  problem may be NULL. */
int segread_open(struct segread **rp, const char *dir, segread_item_fn item,
                 segread_problem_fn problem, void *user);

/* Free a reader and its session table. */
void segread_close(struct segread *r);

/* Read segment seq from byte `from` to its current end.  The file header
 * is always checked; from < sizeof(struct xtc_seg_file_hdr) starts at the
 * first block and delivers SEGMENT_BEGIN first.  sp says where it stopped;
 * a follower calls again from sp->next (a file still shorter than its
 * header leaves sp->next at 0, stop PARTIAL).  When the item callback stops
 * the read inside an EVENTS block, sp->next is past that whole block.
 * Returns 0 (problems reported), the item callback's nonzero value, -ENOENT
 * if the segment is gone (also reported as VANISHED), -EBADMSG for a bad
 * file header (also reported) or another -errno. */
int segread_segment(struct segread *r, uint64_t seq, off_t from, enum segread_tail tail,
                    struct segread_span *sp);

/* Read every segment in the directory, oldest first; the newest one's bad
 * tail is TORN, others' CORRUPT.  Returns 0, the item callback's nonzero
 * value, or -errno when the directory cannot be listed. */
int segread_run(struct segread *r);

/* Counts so far. */
const struct segread_stats *segread_stats(const struct segread *r);

/* The session with this id, or NULL if no SESSION_START for it was read. */
const struct segread_session *segread_session_find(const struct segread *r, uint64_t id);

/* Wall-clock ns of a CLOCK_MONOTONIC ts of session s. */
uint64_t segread_wall(const struct segread_session *s, uint64_t mono_ns);

/* The directory being read. */
const char *segread_dir(const struct segread *r);

/* What a scan of one segment file found. */
struct seg_scan {
	off_t    valid_end;     /* bytes from 0 that hold whole, valid blocks */
	off_t    file_size;
	uint64_t blocks;        /* valid blocks */
	int      header_ok;     /* the file header was whole and valid */
	int      clean_end;     /* the last valid block is SEGMENT_END */
	int      torn;          /* bytes past valid_end (torn or corrupt tail) */
	struct xtc_seg_file_hdr hdr;
};

/* Read the segment file at fd from its start, calling fn for each valid
 * block until the end or the first short or invalid block.  Returns 0 or
 * -errno for a read error. */
int seg_scan_fd(int fd, seg_block_fn fn, void *user, struct seg_scan *out);

#endif /* XTC_LIB_SEGREAD_H */
