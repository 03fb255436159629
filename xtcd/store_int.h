/*
 * xtcd/store_int.h - what the parts of the store share.  Only store*.c
 * include it; the rest of xtcd sees the store through xtcd/xtcd.h.
 *
 *   store.c          write buffers, blocks, segment files and rotation,
 *                    init and teardown (store_buf.h: what it shares with the
 *                    writer)
 *   store_write.c    the writer: sealed buffers to disk in order, with
 *                    io_uring or pwrite, failed writes unwound
 *   store_budget.c   the list of segments in the directory, deletion under
 *                    the byte budget (EVICTED blocks), the per-uid quota
 *   store_recover.c  what a previous xtcd left: the newest segment mended,
 *                    the sessions it left open closed
 *   store_io.c       the writer's system calls, timed: pwrite, and the
 *                    io_uring (registered buffers and file, writes queued
 *                    and submitted, completions reaped)
 */
#ifndef XTCD_STORE_INT_H
#define XTCD_STORE_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/seg/seg.h"

#define STORE_BUDGET  "to stay within the budget"
#define STORE_FS_FULL "to make room: the filesystem is full"
/* The largest segment number xtcd continues from (see seg.h): a file
 * named with a larger one is ignored, and said. */
#define STORE_SEQ_MAX SEG_SEQ_MAX

/* store.c */
/* The segment being written: its number and the bytes it will hold once
 * its buffers are written.  0, or -1 when there is none. */
int  store_current(uint64_t *seq, uint64_t *reserved);
int  store_segment_writing(uint64_t seq);
/* The segment directory, open (it follows a --dir replaced under us). */
int  store_dir_fd(void);
/* Session ids from here on are at least `next` (what recovery found). */
void store_session_id_floor(uint64_t next);

/* store_budget.c: the directory, oldest segment first. */
/* A segment is in the directory with `bytes`; attributed: every EVENTS
 * block of it will be charged as it is appended (a segment we create). */
void store_disk_add(uint64_t seq, uint64_t bytes, int attributed);
void store_disk_set_bytes(uint64_t seq, uint64_t bytes);
/* Segment seq (the newest) is gone from the directory. */
void store_disk_forget(uint64_t seq);
/* Add (sign > 0) or take back the bytes of an EVENTS block of uid in
 * segment seq, for the quota. */
void store_uid_charge(uint64_t seq, uid_t uid, uint64_t bytes, int sign);
/* Delete the oldest closed segment, `why` (for the log): 0, or -1 when
 * there is none (or it could not be deleted). */
int  store_evict_oldest(const char *why);
/* Delete old segments until `need` more bytes fit the budget and
 * --keep-free. */
void store_evict_for(uint64_t need);
/* Record the deletions since the last EVICTED block in one. */
void store_evicted_block(void);
/* When a quota is configured, charge the segments an earlier xtcd wrote
 * to their uids (a scan of each, once). */
void store_quota_attribute(void);
void store_budget_fini(void);

/* store_io.c */
/* CLOCK_MONOTONIC now, and a buffer's write handed over at submit_ns is
 * done: counted in the latency histogram (store_write_latency). */
uint64_t sio_now_ns(void);
void sio_observe(uint64_t submit_ns);
/* pwrite all of [p, p + len) at off: 0 or an errno value. */
int  sio_pwrite_all(int fd, const void *p, size_t len, off_t off);
/* io_uring: 0, or -1 when it cannot be set up here. */
int  sur_init(uint8_t *const *bufs, unsigned n, size_t size);
/* The eventfd a completion signals, for the event loop. */
int  sur_efd(void);
const char *sur_describe(void);
/* Put fd and dfd (the file opened O_DIRECT; -1: none) in the registered
 * file slots 0 and 1: 1 when writes to them may name the slots
 * (struct sur_write's slot), else 0. */
int  sur_file(int fd, int dfd);
/* One write for sur_queue: buffer number buf's [p, p + len) at off of fd,
 * or of registered slot `slot` (-1: none) where the kernel took them;
 * tag comes back with its result; link: the next write queued starts
 * only once this one is done, and is cancelled if it fails or is short. */
struct sur_write {
	int      fd, slot;
	unsigned buf;
	const uint8_t *p;
	unsigned len;
	off_t    off;
	unsigned tag;
	int      link;
};
/* Queue a write: 0, or -1 when the submission queue is full.  It reaches
 * the kernel at the next sur_submit(). */
int  sur_queue(const struct sur_write *w);
/* Room left in the submission queue, in writes. */
unsigned sur_space(void);
/* Hand the queued writes to the kernel: how many, or -errno. */
int  sur_submit(void);
/* done(tag, result) for every completion there is, without waiting;
 * returns how many. */
unsigned sur_reap(void (*done)(unsigned tag, int res));
/* The same, waiting for at least one: 0 or -errno. */
int  sur_wait(void (*done)(unsigned tag, int res));
/* Signal the eventfd at each completion (on) or not; returns non-zero
 * when completions wait unread. */
unsigned sur_wake(int on);
void sur_exit(void);

/* store_recover.c */
struct store_recovery;
/* Find the segments (into the budget's list), mend the newest, and learn
 * which sessions it left open.  Returns the number of the next segment;
 * *r is NULL only when out of memory. */
uint64_t store_recover(struct store_recovery **r);
/* In the new, current segment: close the sessions a crashed xtcd left
 * open, as incomplete.  Then free r. */
void store_recover_close(struct store_recovery *r);
/* Free r without writing (the new segment could not be created). */
void store_recover_free(struct store_recovery *r);

#endif /* XTCD_STORE_INT_H */
