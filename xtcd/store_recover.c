/*
 * xtcd/store_recover.c - what a previous xtcd left behind.
 *
 * At start the segments in --dir join the budget's list, and the newest
 * one is mended: a torn tail (a daemon killed mid-write) is cut back to its
 * last whole block, and the sessions it left open (a start and no end) are
 * learnt with their counts, so that the new segment can close them as
 * incomplete with what they had written and dropped.  A shutdown's
 * SEGMENT_END says that every session had ended.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "lib/seg/idmap.h"
#include "lib/seg/seg.h"
#include "lib/seg/segread.h"
#include "xtcd/store_int.h"
#include "xtcd/xtcd.h"

struct open_session {
	uint64_t id;
	uint64_t written;
	uint64_t dropped;
	int      ended;
};

struct store_recovery {
	struct open_session *s;   /* in the order they started */
	size_t n, cap;
	struct idmap index;       /* session id -> its place in s */
	uint64_t max_id;
	int      shutdown_end;  /* a SEGMENT_END written at shutdown (next_seq 0) */
};

/* A segment may hold hundreds of thousands of short sessions (one user
 * can churn thousands a second), and every block names one: each lookup
 * is O(1), so recovery is linear in the segment. */
static struct open_session *recovery_find(struct store_recovery *r, uint64_t id, int add)
{
	uint64_t at;

	if (idmap_get(&r->index, id, &at))
		return &r->s[at];
	if (!add)
		return NULL;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct open_session *p = realloc(r->s, cap * sizeof *p);

		if (p == NULL)
			return NULL;
		r->s = p;
		r->cap = cap;
	}
	if (idmap_put(&r->index, id, r->n) < 0)
		return NULL;
	r->s[r->n] = (struct open_session){ .id = id };
	return &r->s[r->n++];
}

static int recovery_cb(const struct xtc_seg_blk_hdr *h, const void *p, off_t off, void *user)
{
	struct store_recovery *r = user;
	struct open_session *s;

	(void)off;
	switch (h->type) {
	case XTC_BLK_SESSION_START:
		if (h->len >= sizeof(struct xtc_seg_session_start)) {
			uint64_t id = ((const struct xtc_seg_session_start *)p)->session_id;

			recovery_find(r, id, 1);
			if (id > r->max_id)
				r->max_id = id;
		}
		break;
	case XTC_BLK_EVENTS:
		if (h->len >= sizeof(struct xtc_seg_events)) {
			const struct xtc_seg_events *e = p;

			if ((s = recovery_find(r, e->session_id, 0)) != NULL)
				s->written += e->count;
		}
		break;
	case XTC_BLK_DROP:
		if (h->len >= sizeof(struct xtc_seg_drop)) {
			const struct xtc_seg_drop *d = p;

			if ((s = recovery_find(r, d->session_id, 0)) != NULL)
				s->dropped += d->count;
		}
		break;
	case XTC_BLK_SESSION_END:
		if (h->len >= sizeof(struct xtc_seg_session_end) &&
		    (s = recovery_find(r, ((const struct xtc_seg_session_end *)p)->session_id, 0)) != NULL)
			s->ended = 1;
		break;
	case XTC_BLK_SEGMENT_END:
		r->shutdown_end = h->len >= sizeof(struct xtc_seg_segment_end) &&
		                  ((const struct xtc_seg_segment_end *)p)->next_seq == 0;
		break;
	}
	return 0;
}

/*
 * Mend segment seq, the newest one left (recover() listed only files with
 * a segment's header): cut its torn tail and learn which sessions it left
 * open.  Returns 0 when it turned out not to be a segment after all (the
 * one before it is the one to mend), 1 otherwise.
 */
static int recover_segment(uint64_t seq, struct store_recovery *r)
{
	struct seg_scan scan;
	char path[4096], name[64];
	struct stat sb;
	int fd;

	seg_path(path, sizeof path, cfg.dir, seq);
	seg_path(name, sizeof name, ".", seq);
	fd = openat(store_dir_fd(), name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		xlog_error("cannot open %s to recover it: %s", path, strerror(errno));
		return 1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd); /* listed as a regular file a moment ago: swapped since */
		return 1;
	}
	if (seg_scan_fd(fd, recovery_cb, r, &scan) == 0) {
		if (!scan.header_ok) {
			xlog_warn("%s: not a segment (its header changed since it was listed); left as it is",
			     path);
			store_disk_forget(seq);
			close(fd);
			return 0;
		}
		store_session_id_floor(scan.hdr.next_session_id);
		if (scan.torn) {
			xlog("%s: recovered a torn tail: cut %lld bytes after the last whole block at %lld",
			     path, (long long)(scan.file_size - scan.valid_end), (long long)scan.valid_end);
			if (ftruncate(fd, scan.valid_end) < 0)
				xlog_error("cannot cut %s: %s", path, strerror(errno));
			store_disk_set_bytes(seq, (uint64_t)scan.valid_end);
		}
		if (!(scan.clean_end && r->shutdown_end))
			xlog_warn("%s: the previous xtcd did not shut down cleanly", path);
		/* Every session ended before a shutdown's SEGMENT_END; one
		 * written at a rotation whose next segment never came says
		 * nothing about them. */
		if (scan.clean_end && r->shutdown_end)
			for (size_t i = 0; i < r->n; i++)
				r->s[i].ended = 1;
	}
	close(fd);
	return 1;
}

/*
 * Whether the regular file `name` begins with a segment's file header:
 * 1, or 0 with why not in why.  A file that does not is not xtcd's to
 * count, mend or delete, whoever put it there, even one shorter than a
 * header: an xtcd killed while creating a segment leaves such a file, but
 * so can anyone who may write the directory, and nothing tells them apart.
 */
static int file_is_segment(const char *name, char *why, size_t why_len)
{
	struct xtc_seg_file_hdr h;
	int fd = openat(store_dir_fd(), name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	ssize_t n;

	if (fd < 0) {
		snprintf(why, why_len, "it cannot be opened: %s", strerror(errno));
		return 0;
	}
	n = pread(fd, &h, sizeof h, 0);
	close(fd);
	if (n >= 0 && (size_t)n < sizeof h)
		snprintf(why, why_len, "%zd bytes, shorter than a segment's file header (an xtcd killed "
		         "while creating it leaves such a file: remove it)", n);
	else if (n < 0)
		snprintf(why, why_len, "it cannot be read: %s", strerror(errno));
	else if (seg_file_hdr_check(&h) < 0)
		snprintf(why, why_len, "it does not begin with a segment's file header");
	else
		return 1;
	return 0;
}

/* Find the segments, mend the newest one, and learn which sessions it
 * left open.  Returns the next segment number: after every regular file
 * listed, segment or not. */
static uint64_t recover(struct store_recovery *r)
{
	uint64_t *seqs = NULL, next;
	size_t n = 0, kept = 0;
	char name[64];

	if (seg_list(cfg.dir, &seqs, &n) < 0 || n == 0) {
		free(seqs);
		return 1;
	}
	next = 1;
	for (size_t i = 0; i < n; i++) {
		struct stat sb;
		char why[160];

		seg_path(name, sizeof name, ".", seqs[i]);
		if (seqs[i] > STORE_SEQ_MAX) {
			xlog_warn("%s/%s: a segment number too large to go on from (no xtcd gets there); "
			     "ignored, and left as it is", cfg.dir, name + 2);
			continue;
		}
		/* a link or FIFO is said when its number comes (store_seq_free) */
		if (fstatat(store_dir_fd(), name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode))
			continue;
		next = seqs[i] + 1;
		if (!file_is_segment(name, why, sizeof why)) {
			xlog_warn("%s/%s is not a segment: %s; left as it is, and not counted in the budget",
			     cfg.dir, name + 2, why);
			continue;
		}
		store_disk_add(seqs[i], (uint64_t)sb.st_size, 0);
		seqs[kept++] = seqs[i];
	}
	for (size_t i = kept; i-- > 0 && recover_segment(seqs[i], r) == 0;)
		;
	free(seqs);
	store_session_id_floor(r->max_id + 1);
	return next;
}

/* Close the sessions a crashed daemon left open, in the new segment. */
static void recovery_close_sessions(struct store_recovery *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct xtc_seg_session_end *e;

		if (r->s[i].ended)
			continue;
		e = store_block_begin(sizeof *e);
		if (e == NULL)
			break;
		memset(e, 0, sizeof *e);
		e->session_id = r->s[i].id;
		e->end_mono_ns = mono_ns();
		e->reason = XTC_END_DAEMON_CRASHED;
		e->complete = 0;
		e->written = r->s[i].written;
		e->dropped = r->s[i].dropped;
		e->produced = e->written + e->dropped;
		store_block_end(XTC_BLK_SESSION_END, 0, sizeof *e, NULL);
		xlog("session %llu was left open by a crash: closed as incomplete",
		     (unsigned long long)r->s[i].id);
	}
}

uint64_t store_recover(struct store_recovery **rp)
{
	struct store_recovery *r = calloc(1, sizeof *r);

	*rp = r;
	if (r == NULL) {
		xlog_error("out of memory recovering the segments");
		return 1;
	}
	return recover(r);
}

void store_recover_close(struct store_recovery *r)
{
	recovery_close_sessions(r);
	store_recover_free(r);
}

void store_recover_free(struct store_recovery *r)
{
	if (r != NULL) {
		free(r->s);
		idmap_free(&r->index);
	}
	free(r);
}
