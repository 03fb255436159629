/*
 * xtcd/read/walk.c - through a directory's segments as xtcd writes them
 * (walk.h): where to read next, when a segment is finished, what is gone.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/seg/seg.h"

#include "xtcd/read/walk.h"

#define FILE_HDR    ((off_t)sizeof(struct xtc_seg_file_hdr))
#define WALK_REWIND ((off_t)1 << 20) /* xtcd's write buffer (xtcd/store_buf.h) */
#define WALK_LIST_NS ((uint64_t)WALK_RECHECK_MS * 1000000u) /* at most one listing past a
                                                             * missing name in this */

volatile sig_atomic_t walk_stop;

static void stop_cb(int sig)
{
	walk_stop = sig;
}

void walk_catch_stop(void)
{
	struct sigaction sa = { .sa_handler = stop_cb };
	struct sigaction ign = { .sa_handler = SIG_IGN };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGPIPE, &ign, NULL);
}

void walk_init(struct walk *w, const char *dir, const struct walk_ops *ops, void *user)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->ops = ops;
	w->user = user;
}

void walk_go_to(struct walk *w, uint64_t seq)
{
	w->have_seq = 1;
	w->seq = seq;
	w->off = 0;
	w->seg_done = 0;
	w->next_seq = 0;
	if (w->ops->moved)
		w->ops->moved(w->user, seq);
}

void walk_seg_end(struct walk *w, uint64_t next_seq)
{
	w->seg_done = 1;
	w->next_seq = next_seq;
}

/* Whether every number from..to names something in the directory that is
 * not a segment (which xtcd skips over and seg_list does not list). */
static int gap_not_segments(const struct walk *w, uint64_t from, uint64_t to)
{
	char path[PATH_MAX];
	struct stat st;

	if (to - from >= 64)
		return 0; /* more than anyone plants: a real gap */
	for (uint64_t seq = from; seq <= to; seq++)
		if (seg_path(path, sizeof(path), w->dir, seq) >= (int)sizeof(path) ||
		    lstat(path, &st) < 0 || S_ISREG(st.st_mode))
			return 0;
	return 1;
}

static void gap(struct walk *w, uint64_t from, off_t at, uint64_t to, uint64_t resume)
{
	if (at <= FILE_HDR)
		at = 0;
	w->ops->gap(w->user, from, at, to, resume, at == 0 && gap_not_segments(w, from, to));
}

/* The oldest segment above the current one with its header on disk, or 0. */
static uint64_t oldest_begun_above(const struct walk *w)
{
	uint64_t *seqs, found = 0;
	size_t n;

	if (seg_list(w->dir, &seqs, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && !found; i++)
		if (seqs[i] > w->seq && seg_begun(w->dir, seqs[i]))
			found = seqs[i];
	free(seqs);
	return found;
}

/* Whether a second has passed since the last listing past a missing
 * name (then it is due now, and counted as done). */
static int listing_due(struct walk *w)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (w->listed_ns && now - w->listed_ns < WALK_LIST_NS)
		return 0;
	w->listed_ns = now;
	return 1;
}

/* Whether a segment newer than the current one has its header on disk,
 * and which (*next): the next number, or else the oldest begun one above.
 * That is for two cases: something that is not a segment (yet) sits under
 * the next name (a file shorter than a header that a crashed xtcd left
 * there, which its successor numbers past, must not hold the walk on the
 * current segment for good), or nothing does (xtcd has not rotated, or it
 * was killed and the next file deleted by hand while its successor went
 * on above).  Only a listing tells, so one is made while the segment does
 * not grow (idle), at most once a second (until then the walk owes it:
 * recheck): a walk stays linear in what it reads while xtcd writes on.
 * In the second case what it finds sets *gone: the numbers before it are
 * missing. */
static int newer_begun(struct walk *w, int idle, uint64_t *next, int *gone)
{
	char path[PATH_MAX];
	struct stat st;
	int absent;

	*gone = 0;
	*next = w->seq + 1;
	if (seg_begun(w->dir, *next))
		return 1;
	if (seg_path(path, sizeof(path), w->dir, *next) >= (int)sizeof(path))
		return 0;
	absent = stat(path, &st) < 0;
	if (absent && errno != ENOENT)
		return 0;
	if (!idle || !listing_due(w)) {
		w->recheck = 1;
		return 0;
	}
	*gone = absent;
	return (*next = oldest_begun_above(w)) != 0;
}

/* The segment being read is gone: skip to the oldest one left. */
static int on_vanished(struct walk *w)
{
	uint64_t next;
	int ret = seg_oldest_above(w->dir, w->seq, &next);

	if (ret < 0)
		return ret;
	gap(w, w->seq, w->off, next ? next - 1 : w->seq, next);
	if (next) {
		walk_go_to(w, next);
		return 1;
	}
	w->have_seq = 0;
	w->floor = w->seq;
	return 0;
}

/* The first valid block at or after byte `at` of fd: its offset, or
 * the end of the valid blocks. */
struct block_at { off_t at, found; };

static int block_at_cb(const struct xtc_seg_blk_hdr *h, const void *payload, off_t offset,
                       void *user)
{
	struct block_at *b = user;

	(void)h; (void)payload;
	if (offset < b->at)
		return 0;
	b->found = offset;
	return 1;
}

/*
 * The segment is shorter than where we are: xtcd cut it back to its last
 * whole block when a write failed (and counted that write's records as
 * lost), then appended after it, perhaps already.  Where the cut was is
 * not in the file.  A walk that rewinds goes back to the first block at
 * or after WALK_REWIND bytes before where it was: a reader is never more
 * than one of xtcd's write buffers past a cut (the failed write's bytes
 * stop at a hole or a torn block), so nothing appended after the cut is
 * passed over, and what is read again is the same blocks as before (for
 * --ship the same keys, which collapse).  One that does not (--follow,
 * which would print them twice) goes on from the new end.
 */
static void on_shrunk(struct walk *w)
{
	struct block_at b = { 0, 0 };
	struct segread_span bs;
	char path[PATH_MAX];
	int fd;

	if (seg_path(path, sizeof(path), w->dir, w->seq) >= (int)sizeof(path))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	b.at = w->rewind && w->off > WALK_REWIND + FILE_HDR ? w->off - WALK_REWIND : FILE_HDR;
	if (segread_blocks(fd, FILE_HDR, w->rewind ? block_at_cb : NULL, &b, &bs) == 0 &&
	    bs.stop != SEGREAD_SHRUNK) {
		off_t to = w->rewind && bs.stop == SEGREAD_STOPPED ? b.found : bs.next;

		if (to < w->off) {
			w->ops->shrunk(w->user, path, w->off, to);
			w->off = to;
		}
	}
	close(fd);
}

/* The current segment is finished: move to the one after it, once it has
 * appeared.  1 moved, 0 not yet, or -errno. */
static int advance(struct walk *w)
{
	uint64_t next, from;
	int ret;

	if (w->next_seq && seg_begun(w->dir, w->next_seq)) {
		walk_go_to(w, w->next_seq);
		return 1;
	}
	if ((ret = seg_oldest_above(w->dir, w->seq, &next)) < 0)
		return ret;
	if (!next)
		return 0;
	/* numbers below the one its SEGMENT_END named were skipped by xtcd */
	from = w->next_seq > w->seq + 1 ? w->next_seq : w->seq + 1;
	if (next > from)
		gap(w, from, 0, next - 1, next);
	walk_go_to(w, next);
	return 1;
}

/* With no segment yet: the oldest above the floor, if there is one. */
static int find_first(struct walk *w)
{
	uint64_t first;
	int ret;

	if ((ret = seg_oldest_above(w->dir, w->floor, &first)) < 0)
		return ret;
	if (!first) {
		if (w->ops->waiting)
			w->ops->waiting(w->user);
		return 0;
	}
	if (w->floor && first > w->floor + 1)
		gap(w, w->floor + 1, 0, first - 1, first);
	if (!w->floor && w->ops->started)
		w->ops->started(w->user, first);
	walk_go_to(w, first);
	return 1;
}

/* One read of the current segment.  1: the caller goes on; 0 or -errno:
 * walk_step returns that. */
static int read_once(struct walk *w, enum segread_tail tail, int *ret)
{
	struct segread_span sp;

	*ret = w->ops->read(w->user, w->seq, w->off, tail, &sp);
	if (w->ops->stopped(w->user)) {
		*ret = 0;
		return 0;
	}
	if (*ret == -ENOENT) {
		*ret = on_vanished(w);
		return 0;
	}
	if (*ret == -ENOMEM)
		return 0;
	if (*ret == 0 && sp.stop == SEGREAD_SHRUNK)
		on_shrunk(w);
	else if (*ret == 0 && sp.next > w->off)
		w->off = sp.next;
	return 1;
}

int walk_step(struct walk *w)
{
	uint64_t newer;
	off_t was;
	int ret, gone;

	w->recheck = 0;
	if (!w->have_seq && (ret = find_first(w)) <= 0)
		return ret;
	if (w->seg_done)
		return advance(w);
	was = w->off;
	if (!read_once(w, SEGREAD_TAIL_QUIET, &ret))
		return ret;
	if (w->seg_done)
		return advance(w);
	/*
	 * Not finished.  If a newer segment has its header on disk, xtcd
	 * wrote everything it had for this one first: read it one last time
	 * (reporting what is left as corrupt) and go on.  A bad file header, a
	 * read error or a file that shrank under us ends the segment the same
	 * way, once a newer one exists.
	 */
	if (!newer_begun(w, w->off == was, &newer, &gone))
		return 0;
	if (ret == 0) {
		if (!read_once(w, SEGREAD_TAIL_CORRUPT, &ret))
			return ret;
		if (w->seg_done)
			return advance(w);
	}
	if (gone && newer > w->seq + 1)
		gap(w, w->seq + 1, 0, newer - 1, newer);
	walk_seg_end(w, newer);
	return advance(w);
}
