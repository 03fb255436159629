/*
 * xtcd/read/walk.h - the way a reader that keeps up with xtcd (--follow,
 * --ship) moves through the segments of a directory.
 *
 * The position is a segment and a byte offset in it that only ever moves
 * past whole, valid blocks, so nothing is read twice or skipped:
 *
 *   - A block cut short by the end of the file is xtcd writing it: the
 *     walk waits and reads it again from its start, once whole.
 *   - A segment is finished at its SEGMENT_END block, which names the
 *     next one.  Without one (xtcd was killed), it is finished once a
 *     newer segment has its file header on disk: xtcd writes in order, so
 *     nothing more will come, and it is read a last time with what is left
 *     after the last valid block reported as corrupt.  The newer segment
 *     is the next number, or the oldest begun one above when something
 *     that is not a segment sits under that name, or, with nothing under
 *     it (deleted by hand), when a listing of the directory finds one: at
 *     most once a second, and only while the segment does not grow, the
 *     numbers between are then a gap.
 *   - A segment shorter than the position was cut back by xtcd after a
 *     failed write: the walk goes on from its last valid block, or, if
 *     it rewinds, from far enough back that no block appended after the
 *     cut is passed over (walk.c on_shrunk).
 *   - Segments deleted under the byte budget before the walk got to their
 *     end are a gap, told to the user; the walk goes on with the oldest
 *     segment left.  Numbers that name something other than a segment (a
 *     FIFO, a link, a device someone put there, which xtcd skips) are a
 *     gap too, flagged as such: nothing was deleted.
 */
#ifndef XTCD_READ_WALK_H
#define XTCD_READ_WALK_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/seg/segread.h"

struct walk_ops {
	/* Read segment seq from byte `from`: what segread_segment() returns.
	 * A read that an item callback stopped (1) sets the walk's off
	 * itself. */
	int  (*read)(void *user, uint64_t seq, off_t from, enum segread_tail tail,
	             struct segread_span *sp);
	/* Whether the walk must stop for now (the user's reason). */
	int  (*stopped)(void *user);
	/* Segments from..to are not there to read (from from byte at on);
	 * resume: where the walk goes on, 0 while it waits for one.
	 * not_segments: they never were segments, nothing was deleted. */
	void (*gap)(void *user, uint64_t from, off_t at, uint64_t to, uint64_t resume,
	            int not_segments);
	/* Segment seq (at path) was cut back from byte `from` to byte `to`. */
	void (*shrunk)(void *user, const char *path, off_t from, off_t to);
	/* Optional: the walk is at segment seq's start (every move). */
	void (*moved)(void *user, uint64_t seq);
	/* Optional: the first segment found, on a walk that had none. */
	void (*started)(void *user, uint64_t seq);
	/* Optional: the directory holds no segment to read yet. */
	void (*waiting)(void *user);
};

struct walk {
	char     dir[4096];
	const struct walk_ops *ops;
	void    *user;
	int      have_seq;        /* seq names the segment being read */
	uint64_t seq;
	off_t    off;             /* resume here (0: not past the header yet) */
	int      seg_done;        /* finished (its SEGMENT_END was read) */
	uint64_t next_seq;        /* what comes after it (0: not known) */
	uint64_t floor;           /* !have_seq: wait for a segment above this */
	int      rewind;          /* after a cut back, read again rather than skip */
	uint64_t listed_ns;       /* when it last listed the directory past a
	                           * missing next name (monotonic; 0: never) */
	int      recheck;         /* the last step owes such a listing, which no
	                           * change in the directory may prompt: a caller
	                           * that waits for changes steps again within
	                           * WALK_RECHECK_MS all the same */
};

#define WALK_RECHECK_MS 1000

/* A walk of dir that starts at its oldest segment. */
void walk_init(struct walk *w, const char *dir, const struct walk_ops *ops, void *user);
/* Go to the start of segment seq. */
void walk_go_to(struct walk *w, uint64_t seq);
/* A SEGMENT_END naming next_seq (0: none) was read. */
void walk_seg_end(struct walk *w, uint64_t next_seq);
/* Read what is new.  1: moved to another segment (step again at once);
 * 0: caught up, or stopped; -errno: reading cannot go on. */
int  walk_step(struct walk *w);

/* SIGINT or SIGTERM, once caught (walk_catch_stop): a reader that keeps up
 * ends at its next item or wait.  Its write blocked on a reader that
 * stopped reading returns EINTR (no SA_RESTART), so the signal still ends
 * it; SIGPIPE is ignored, so a closed output is EPIPE. */
extern volatile sig_atomic_t walk_stop;
void walk_catch_stop(void);

#endif /* XTCD_READ_WALK_H */
