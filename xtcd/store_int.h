/*
 * xtcd/store_int.h - what the parts of the store share.  Only store*.c
 * include it; the rest of xtcd sees the store through xtcd/xtcd.h.
 *
 *   store.c          write buffers, blocks, segment files and rotation, the
 *                    io_uring/pwrite writer, init and teardown
 *   store_budget.c   the list of segments in the directory, deletion under
 *                    the byte budget (EVICTED blocks), the per-uid quota
 *   store_recover.c  what a previous xtcd left: the newest segment mended,
 *                    the sessions it left open closed
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
/* The segment directory, open (it follows a --dir replaced under us). */
int  store_dir_fd(void);
/* Whether buffers of segment seq are still to be written; and wait until
 * none is (the event loop stops meanwhile: only for a rare case). */
int  store_seq_writing(uint64_t seq);
void store_seq_finish(uint64_t seq);
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
