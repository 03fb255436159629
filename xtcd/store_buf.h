/*
 * xtcd/store_buf.h - the write buffers and the segment being written:
 * what store.c (blocks, segments, rotation) and store_write.c (the
 * writer that takes sealed buffers to disk) share.  Only those two
 * include it.
 */
#ifndef XTCD_STORE_BUF_H
#define XTCD_STORE_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ev.h>

#include "lib/seg/seg.h"
#include "xtcd/xtcd.h"

#define BUF_SIZE   (1u << 20)
#define NBUF       8
#define SLACK      7u     /* a block is built 8-byte aligned: see build_at() */
#define END_ROOM   (sizeof(struct xtc_seg_blk_hdr) + sizeof(struct xtc_seg_segment_end) + SLACK)
/* O_DIRECT writes start and end on this boundary (the page and ext4's
 * block; a multiple of any logical block size but 64 KiB ones), from
 * memory aligned to it. */
#define DIO_ALIGN  4096u
/* ... and go direct only when at least this much of a buffer does: a
 * smaller write costs less through the page cache (bench/RESULTS.md). */
#define DIO_MIN    (256u << 10)

/* A buffer goes FREE -> FILLING -> QUEUED -> INFLIGHT -> WRITTEN or FAILED
 * -> FREE (see store_write.c). */
enum buf_state { BUF_FREE, BUF_FILLING, BUF_QUEUED, BUF_INFLIGHT, BUF_WRITTEN, BUF_FAILED };

struct segfile {
	uint64_t seq;        /* UINT64_MAX: a dead segment given up (see segment_open) */
	int      fd;         /* -1: a dead segment */
	int      err;        /* why it is dead: what creating it failed with */
	int      need_header;/* its header is not on disk: write it before the next buffer */
	struct xtc_seg_file_hdr hdr;
	off_t    end;        /* bytes on disk */
	off_t    wend;       /* ... and those of the writes in flight: the next write's offset */
	off_t    reserved;   /* bytes on disk + bytes waiting in buffers */
	uint64_t blocks;
	int      closing;    /* no more blocks: close once written */
	int      pending;    /* buffers not yet written */
	int      dfd;        /* the same file opened O_DIRECT; -1: none */
	int      direct;     /* its buffers are laid out for O_DIRECT (see buf_take) */
	uint8_t  part[DIO_ALIGN]; /* the last, partial DIO_ALIGN block of what the
	                           * buffers hold: reserved % DIO_ALIGN bytes */
};

struct wbuf {
	uint8_t  *mem;        /* BUF_SIZE + DIO_ALIGN bytes, DIO_ALIGN aligned */
	uint8_t  *data;       /* mem + lead: the buffer's own bytes */
	size_t    lead;       /* in front of them, the bytes of their first block
	                       * already in the file (f->part): pred % DIO_ALIGN */
	off_t     pred;       /* the offset the bytes will have in the file, if no
	                       * write before them fails: f->reserved when taken */
	size_t    len;
	size_t    done;       /* bytes of an in-flight write already written */
	off_t     off;        /* where in its file: -1 until handed to the writer */
	int       state;
	int       res;        /* BUF_FAILED: -errno */
	struct segfile *file;
	struct commit *commits;
	size_t    ncommits, commit_cap;
	uint64_t  records;
	size_t    begun;      /* where the block being built is: build_at(len) */
	uint64_t  submit_ns;  /* when its write was handed to the kernel */
	int       packed;     /* ... or len itself (store_block_begin_bytes) */
	size_t    dio_len;    /* a direct write in flight: its bytes, from data - lead */
	int       parts;      /* completions of it still to come (direct and tail) */
	int       part_res[2];
	int       buffered;   /* written through the page cache, whatever its layout */
};

struct store_state {
	struct ev_loop *loop;
	int       dirfd;
	struct wbuf bufs[NBUF];
	struct wbuf *filling;
	struct wbuf *queue[NBUF]; /* FIFO of buffers to write */
	size_t    qhead, qlen;
	struct wbuf *flight[NBUF];/* FIFO of buffers handed to the writer, not retired */
	size_t    fhead, flen;
	int       unwinding;       /* write_failed() waits for the writes behind */
	struct segfile *cur;
	uint64_t  next_session_id;
	int       use_uring;
	int       direct;          /* O_DIRECT writes (--direct, and not refused) */
	int       direct_said;     /* a refusal of O_DIRECT was logged */
	int       dio_inflight;    /* direct writes handed over, not back */
	struct segfile *reg_file;  /* the segment in io_uring's file slot */
	ev_io     uring_w;
	ev_timer  sync_w;
	ev_idle   resume_w;        /* pwrite: a starved drain goes on (resume_cb) */
	int       rotating;
	int       starved;         /* a block was refused for want of a free buffer */
	uint64_t  starved_total;   /* times a drain became starved, since start */
	int       last_errno;      /* the last write error, logged once */
	int       open_errno;      /* why the last segment could not be created */
	int       started;         /* the first segment was created */
	ev_timer  check_w;         /* store_check() once a second */
	uint64_t  seg_limit;       /* rotate the current segment at this size */
};

extern struct store_state store;

/* store.c */
/* Hand the filling buffer to the writer. */
void store_buf_seal(void);
/* A closed segment is written: close it (on the worker) and free f. */
void store_segfile_done(struct segfile *f);

/* store_write.c */
/* Hand the queued buffers to the writer, in order. */
void writer_submit_queued(void);
/* ... and retire what is written, failures too (see store_write.c). */
void writer_submit_next(void);
/* Completions there are, read without a system call, retired. */
void writer_reap_inline(void);
/* io_uring, unless --pwrite or unavailable; the loop's watchers. */
void writer_init(void);
/* Write out every sealed buffer, waiting for each write in flight. */
void writer_wait_all(void);
/* Let io_uring go (after writer_wait_all and the worker's closes). */
void writer_fini(void);

#endif /* XTCD_STORE_BUF_H */
