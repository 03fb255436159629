/*
 * xtcd/store.c - segments on disk.
 *
 * Blocks are appended to 1 MiB write buffers; a buffer is written to its
 * segment file with io_uring (registered buffers) or, where io_uring is
 * unavailable or --pwrite forces it, with pwrite(2).  One write is in
 * flight at a time, in order, so a failed write never leaves a hole in
 * front of a later one: the file is cut back to its last good byte and
 * only the failed buffer's records are lost (and counted as such).
 *
 * A ring's tail is published to the producer only after the block holding
 * its records is written (see struct commit), so a daemon killed at any
 * point loses nothing that was still in a ring: its successor resumes from
 * the tails.
 *
 * Budget: before a new segment is opened, the oldest closed segments are
 * deleted until the closed ones plus a whole new segment fit in
 * --max-bytes (and --keep-free bytes stay free on the filesystem), so the
 * directory never holds more than the budget.  Every deletion is recorded
 * in the stream as an EVICTED block.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "seg.h"
#include "xtcd.h"

#define BUF_SIZE   (1u << 20)
#define NBUF       8
#define END_ROOM   (sizeof(struct xtc_seg_blk_hdr) + sizeof(struct xtc_seg_segment_end))

enum buf_state { BUF_FREE, BUF_FILLING, BUF_QUEUED, BUF_INFLIGHT };

struct segfile {
	uint64_t seq;
	int      fd;
	off_t    end;        /* bytes on disk */
	off_t    reserved;   /* bytes on disk + bytes waiting in buffers */
	uint64_t blocks;
	int      closing;    /* no more blocks: close once written */
	int      pending;    /* buffers not yet written */
};

struct wbuf {
	uint8_t  *data;
	size_t    len;
	size_t    done;       /* bytes of an in-flight write already written */
	off_t     off;
	int       state;
	struct segfile *file;
	struct commit *commits;
	size_t    ncommits, commit_cap;
	uint64_t  records;
	size_t    begun;      /* payload offset of the block being built */
};

struct ondisk {               /* a segment in the directory, for the budget */
	uint64_t seq;
	uint64_t bytes;
};

static struct {
	struct ev_loop *loop;
	int       dirfd;
	struct wbuf bufs[NBUF];
	struct wbuf *filling;
	struct wbuf *queue[NBUF]; /* FIFO of buffers to write */
	size_t    qhead, qlen;
	struct wbuf *inflight;
	struct segfile *cur;
	struct ondisk *disk;
	size_t    ndisk, disk_cap;
	uint64_t  next_session_id;
	int       use_uring;
	int       fixed;           /* buffers registered with the ring */
	struct io_uring ring;
	int       uring_efd;
	ev_io     uring_w;
	ev_timer  sync_w;
	int       rotating;
	uint64_t  evict_first, evict_last, evict_bytes, evict_records;
	uint64_t *evict_sessions;
	size_t    evict_nsessions;
	int       evict_pending;
	int       last_errno;      /* the last write error, logged once */
} st = { .dirfd = -1, .uring_efd = -1 };

static void submit_next(void);
static int  segment_open(uint64_t seq);

const char *store_io_backend(void)
{
	return st.use_uring ? (st.fixed ? "io_uring (registered buffers)" : "io_uring") : "pwrite";
}

uint64_t store_next_session_id(void)
{
	return st.next_session_id++;
}

uint64_t store_bytes_used(void)
{
	uint64_t n = 0;

	for (size_t i = 0; i < st.ndisk; i++)
		n += st.disk[i].bytes;
	return n;
}

/* ---------------------------------------------------------------------
 * The directory and its budget
 */

static void disk_add(uint64_t seq, uint64_t bytes)
{
	if (st.ndisk == st.disk_cap) {
		size_t cap = st.disk_cap ? st.disk_cap * 2 : 64;
		struct ondisk *d = realloc(st.disk, cap * sizeof *d);

		if (d == NULL) {
			xlog("out of memory tracking segments");
			return;
		}
		st.disk = d;
		st.disk_cap = cap;
	}
	st.disk[st.ndisk++] = (struct ondisk){ seq, bytes };
}

static void disk_set_bytes(uint64_t seq, uint64_t bytes)
{
	for (size_t i = 0; i < st.ndisk; i++)
		if (st.disk[i].seq == seq)
			st.disk[i].bytes = bytes;
}

struct evict_count {
	uint64_t records;
};

/* Count the records and note the sessions of a segment about to go. */
static int evict_scan_cb(const struct xtc_seg_blk_hdr *h, const void *payload, off_t off, void *user)
{
	struct evict_count *ec = user;
	uint64_t id;

	(void)off;
	if (h->type == XTC_BLK_EVENTS && h->len >= sizeof(struct xtc_seg_events))
		ec->records += ((const struct xtc_seg_events *)payload)->count;
	if (h->type != XTC_BLK_SESSION_START || h->len < sizeof(struct xtc_seg_session_start))
		return 0;
	id = ((const struct xtc_seg_session_start *)payload)->session_id;
	for (size_t i = 0; i < st.evict_nsessions; i++)
		if (st.evict_sessions[i] == id)
			return 0;
	if (st.evict_nsessions < 4096) {
		uint64_t *p = realloc(st.evict_sessions, (st.evict_nsessions + 1) * sizeof *p);

		if (p != NULL) {
			st.evict_sessions = p;
			st.evict_sessions[st.evict_nsessions++] = id;
		}
	}
	return 0;
}

/* Delete the oldest closed segment.  Returns 0, or -1 if there is none. */
static int evict_oldest(void)
{
	char path[4096];
	struct evict_count ec = { 0 };
	struct seg_scan scan;
	struct ondisk d;
	int fd;

	if (st.ndisk == 0 || (st.cur != NULL && st.disk[0].seq == st.cur->seq))
		return -1;
	d = st.disk[0];
	seg_path(path, sizeof path, cfg.dir, d.seq);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		seg_scan_fd(fd, evict_scan_cb, &ec, &scan);
		close(fd);
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		xlog("cannot delete %s to stay within the budget: %s", path, strerror(errno));
		return -1;
	}
	memmove(st.disk, st.disk + 1, (st.ndisk - 1) * sizeof *st.disk);
	st.ndisk--;
	if (!st.evict_pending)
		st.evict_first = d.seq;
	st.evict_last = d.seq;
	st.evict_bytes += d.bytes;
	st.evict_records += ec.records;
	st.evict_pending = 1;
	xlog("deleted %s (%llu bytes, %llu records) to stay within the budget", path,
	     (unsigned long long)d.bytes, (unsigned long long)ec.records);
	return 0;
}

/* Free bytes on the segment filesystem. */
static uint64_t fs_free(void)
{
	struct statvfs sv;

	if (fstatvfs(st.dirfd, &sv) < 0)
		return UINT64_MAX;
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* Delete old segments until `need` more bytes fit the budget. */
static void evict_for(uint64_t need)
{
	while (store_bytes_used() + need > cfg.max_bytes && evict_oldest() == 0)
		;
	while (cfg.keep_free != 0 && fs_free() < cfg.keep_free + need && evict_oldest() == 0)
		;
}

/* Record the deletions since the last EVICTED block. */
static void evicted_block(void)
{
	size_t ids = st.evict_nsessions;
	uint32_t len = (uint32_t)(sizeof(struct xtc_seg_evicted) + ids * sizeof(uint64_t));
	struct xtc_seg_evicted *e;

	if (!st.evict_pending)
		return;
	e = store_block_begin(len);
	if (e == NULL)
		return; /* kept pending for the next chance */
	memset(e, 0, sizeof *e);
	e->first_seq = st.evict_first;
	e->last_seq = st.evict_last;
	e->bytes = st.evict_bytes;
	e->records = st.evict_records;
	e->session_count = (uint32_t)ids;
	memcpy(e + 1, st.evict_sessions, ids * sizeof(uint64_t));
	store_block_end(XTC_BLK_EVICTED, 0, len, NULL);
	st.evict_pending = 0;
	st.evict_bytes = st.evict_records = 0;
	free(st.evict_sessions);
	st.evict_sessions = NULL;
	st.evict_nsessions = 0;
}

/* ---------------------------------------------------------------------
 * Buffers
 */

static struct wbuf *buf_take(void)
{
	for (int i = 0; i < NBUF; i++)
		if (st.bufs[i].state == BUF_FREE) {
			struct wbuf *b = &st.bufs[i];

			b->state = BUF_FILLING;
			b->len = b->done = 0;
			b->ncommits = 0;
			b->records = 0;
			b->file = st.cur;
			st.cur->pending++;
			return b;
		}
	return NULL;
}

/* Hand the filling buffer to the writer. */
static void buf_seal(void)
{
	struct wbuf *b = st.filling;

	if (b == NULL)
		return;
	st.filling = NULL;
	if (b->len == 0) {
		b->state = BUF_FREE;
		b->file->pending--;
		return;
	}
	b->state = BUF_QUEUED;
	st.queue[(st.qhead + st.qlen) % NBUF] = b;
	st.qlen++;
}

/* Append raw bytes (the file header) to the filling buffer. */
static int buf_put_raw(const void *p, size_t n)
{
	if (st.filling == NULL && (st.filling = buf_take()) == NULL)
		return -1;
	memcpy(st.filling->data + st.filling->len, p, n);
	st.filling->len += n;
	st.cur->reserved += (off_t)n;
	return 0;
}

/* ---------------------------------------------------------------------
 * Segments
 */

/* Close the current segment: a SEGMENT_END, then no more blocks. */
static void segment_close(uint64_t next_seq)
{
	struct xtc_seg_segment_end *e;
	struct segfile *f = st.cur;

	if (f == NULL)
		return;
	st.rotating = 1;
	e = store_block_begin(sizeof *e);
	if (e != NULL) {
		e->end_mono_ns = mono_ns();
		e->next_seq = next_seq;
		e->blocks = f->blocks;
		store_block_end(XTC_BLK_SEGMENT_END, 0, sizeof *e, NULL);
	}
	st.rotating = 0;
	buf_seal();
	/* The budget counts what the file will hold once its buffers are
	 * written, not what is on disk yet. */
	disk_set_bytes(f->seq, (uint64_t)f->reserved);
	f->closing = 1;
	st.cur = NULL;
	if (f->pending == 0) {
		close(f->fd);
		free(f);
	}
}

/* Open segment `seq` with its header; restating live sessions is the
 * caller's.  Returns 0 or -errno. */
static int segment_open(uint64_t seq)
{
	struct xtc_seg_file_hdr h;
	char path[4096], host[64] = "";
	uint8_t boot[16] = { 0 };
	struct segfile *f;
	int fd;

	seg_path(path, sizeof path, cfg.dir, seq);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		xlog("cannot create %s: %s; check that --dir is writable", path, strerror(errno));
		return -errno;
	}
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		close(fd);
		return -ENOMEM;
	}
	f->seq = seq;
	f->fd = fd;
	st.cur = f;
	gethostname(host, sizeof host - 1);
	{
		int bfd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
		char text[64];
		ssize_t n = bfd >= 0 ? read(bfd, text, sizeof text) : -1;
		int k = 0;

		for (ssize_t i = 0; i < n && k < 32; i++) {
			int v = text[i] >= '0' && text[i] <= '9' ? text[i] - '0'
			      : text[i] >= 'a' && text[i] <= 'f' ? text[i] - 'a' + 10 : -1;
			if (v >= 0) {
				boot[k / 2] |= (uint8_t)(k % 2 ? v : v << 4);
				k++;
			}
		}
		if (bfd >= 0)
			close(bfd);
	}
	seg_file_hdr_init(&h, seq, st.next_session_id, real_ns(), mono_ns(), boot, host);
	if (buf_put_raw(&h, sizeof h) < 0) {
		xlog("no write buffer free for the header of %s", path);
	}
	disk_add(seq, sizeof h);
	return 0;
}

/* Move to a new segment: close this one, make room, open the next, and
 * restate the live sessions there. */
static void segment_rotate(void)
{
	uint64_t next = st.cur->seq + 1;

	segment_close(next);
	evict_for(cfg.segment_bytes);
	if (segment_open(next) < 0)
		return;
	st.rotating = 1;
	evicted_block();
	session_restate_all();
	st.rotating = 0;
}

/* ---------------------------------------------------------------------
 * Blocks
 */

void *store_block_begin(uint32_t len)
{
	size_t total = sizeof(struct xtc_seg_blk_hdr) + len;
	struct wbuf *b;

	if (st.cur == NULL || total + END_ROOM > BUF_SIZE)
		return NULL;
	if (!st.rotating && st.cur->blocks > 0 &&
	    (uint64_t)st.cur->reserved + total + END_ROOM > cfg.segment_bytes) {
		/* rotation needs two buffers: the end of this file, the next */
		int free_bufs = 0;

		for (int i = 0; i < NBUF; i++)
			free_bufs += st.bufs[i].state == BUF_FREE;
		if (free_bufs < 2)
			return NULL;
		segment_rotate();
		if (st.cur == NULL)
			return NULL;
	}
	b = st.filling;
	if (b != NULL && b->len + total + (st.rotating ? 0 : END_ROOM) > BUF_SIZE) {
		buf_seal();
		b = NULL;
	}
	if (b == NULL && (b = st.filling = buf_take()) == NULL)
		return NULL;
	b->begun = b->len + sizeof(struct xtc_seg_blk_hdr);
	return b->data + b->begun;
}

void store_block_end(uint16_t type, uint16_t flags, uint32_t len, const struct commit *c)
{
	struct wbuf *b = st.filling;
	struct xtc_seg_blk_hdr *h = (struct xtc_seg_blk_hdr *)(b->data + b->begun - sizeof *h);
	size_t total = sizeof *h + len;

	seg_blk_seal(h, type, flags, len);
	b->len += total;
	st.cur->reserved += (off_t)total;
	st.cur->blocks++;
	if (c == NULL)
		return;
	if (b->ncommits == b->commit_cap) {
		size_t cap = b->commit_cap ? b->commit_cap * 2 : 64;
		struct commit *p = realloc(b->commits, cap * sizeof *p);

		if (p == NULL) {
			xlog("out of memory for a commit record");
			return;
		}
		b->commits = p;
		b->commit_cap = cap;
	}
	b->commits[b->ncommits++] = *c;
	b->records += c->records;
}

/* ---------------------------------------------------------------------
 * Writing
 */

/* A buffer is done: publish its commits, free it, close its file if
 * that was the file's last buffer. */
static void buf_done(struct wbuf *b, int ok)
{
	struct segfile *f = b->file;

	for (size_t i = 0; i < b->ncommits; i++)
		session_commit(&b->commits[i], ok);
	b->state = BUF_FREE;
	if (ok) {
		f->end += (off_t)b->len;
	} else {
		f->reserved -= (off_t)b->len;
		disk_set_bytes(f->seq, (uint64_t)f->reserved);
	}
	if (--f->pending == 0 && f->closing) {
		if (cfg.sync != SYNC_NEVER && fdatasync(f->fd) < 0)
			xlog("fdatasync of segment %llu failed: %s", (unsigned long long)f->seq,
			     strerror(errno));
		close(f->fd);
		free(f);
	}
}

/* The write of the in-flight buffer finished with `res` (bytes or -errno). */
static void write_done(int res)
{
	struct wbuf *b = st.inflight;

	if (res > 0 && b->done + (size_t)res < b->len) {
		b->done += (size_t)res; /* short write: send the rest */
		st.inflight = NULL;
		st.queue[st.qhead = (st.qhead + NBUF - 1) % NBUF] = b;
		st.qlen++;
		submit_next();
		return;
	}
	st.inflight = NULL;
	if (res < 0) {
		/* Cut the file back to its last whole block, free space if we
		 * can, and count the buffer's records as lost. */
		if (ftruncate(b->file->fd, b->file->end) < 0)
			xlog("cannot cut segment %llu back after a failed write: %s",
			     (unsigned long long)b->file->seq, strerror(errno));
		if (-res != st.last_errno)
			xlog("writing segment %llu failed: %s; %llu records lost",
			     (unsigned long long)b->file->seq, strerror(-res),
			     (unsigned long long)b->records);
		st.last_errno = -res;
		if (res == -ENOSPC || res == -EDQUOT)
			evict_oldest();
		buf_done(b, 0);
	} else {
		st.last_errno = 0;
		buf_done(b, 1);
	}
	submit_next();
}

/* Start writing the next queued buffer, if none is in flight. */
static void submit_next(void)
{
	struct wbuf *b;

	while (st.inflight == NULL && st.qlen > 0) {
		b = st.queue[st.qhead];
		st.qhead = (st.qhead + 1) % NBUF;
		st.qlen--;
		if (b->done == 0)
			b->off = b->file->end;
		b->state = BUF_INFLIGHT;
		st.inflight = b;
		if (st.use_uring) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&st.ring);

			if (st.fixed)
				io_uring_prep_write_fixed(sqe, b->file->fd, b->data + b->done,
				                          (unsigned)(b->len - b->done),
				                          b->off + (off_t)b->done, (int)(b - st.bufs));
			else
				io_uring_prep_write(sqe, b->file->fd, b->data + b->done,
				                    (unsigned)(b->len - b->done), b->off + (off_t)b->done);
			if (io_uring_submit(&st.ring) >= 1)
				return;
			xlog("io_uring submit failed; falling back to pwrite");
			st.use_uring = 0;
		}
		{
			ssize_t n = pwrite(b->file->fd, b->data + b->done, b->len - b->done,
			                   b->off + (off_t)b->done);

			write_done(n < 0 ? -errno : n == 0 ? -EIO : (int)n);
		}
	}
}

/* io_uring told us (through its eventfd) that writes completed. */
static void uring_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct io_uring_cqe *cqe;
	uint64_t n;

	(void)loop; (void)w; (void)revents;
	if (read(st.uring_efd, &n, sizeof n) < 0) {
		/* a hint only: drain the CQ regardless */
	}
	while (io_uring_peek_cqe(&st.ring, &cqe) == 0) {
		int res = cqe->res;

		io_uring_cqe_seen(&st.ring, cqe);
		if (st.inflight != NULL)
			write_done(res == -EAGAIN || res == -EINTR ? 0 : res);
	}
}

void store_flush(void)
{
	buf_seal();
	submit_next();
}

int store_idle(void)
{
	return st.inflight == NULL && st.qlen == 0 && (st.filling == NULL || st.filling->len == 0);
}

static void sync_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	if (st.cur != NULL && st.cur->end > 0 && fdatasync(st.cur->fd) < 0)
		xlog("fdatasync failed: %s", strerror(errno));
}

/* ---------------------------------------------------------------------
 * Recovery of what a previous xtcd left behind
 */

struct open_session {
	uint64_t id;
	uint64_t written;
	uint64_t dropped;
	int      ended;
};

struct recovery {
	struct open_session *s;
	size_t n;
	uint64_t max_id;
};

static struct open_session *recovery_find(struct recovery *r, uint64_t id, int add)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->s[i].id == id)
			return &r->s[i];
	if (!add)
		return NULL;
	{
		struct open_session *p = realloc(r->s, (r->n + 1) * sizeof *p);

		if (p == NULL)
			return NULL;
		r->s = p;
		r->s[r->n] = (struct open_session){ .id = id };
		return &r->s[r->n++];
	}
}

static int recovery_cb(const struct xtc_seg_blk_hdr *h, const void *p, off_t off, void *user)
{
	struct recovery *r = user;
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
	}
	return 0;
}

/* Find the segments, mend the last one's torn tail, and learn which
 * sessions it left open.  Returns the next segment number. */
static uint64_t recover(struct recovery *r)
{
	uint64_t *seqs = NULL, next = 1;
	struct seg_scan scan;
	size_t n = 0;
	char path[4096];
	int fd;

	if (seg_list(cfg.dir, &seqs, &n) < 0 || n == 0) {
		free(seqs);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		struct stat sb;

		seg_path(path, sizeof path, cfg.dir, seqs[i]);
		if (stat(path, &sb) == 0)
			disk_add(seqs[i], (uint64_t)sb.st_size);
	}
	next = seqs[n - 1] + 1;
	seg_path(path, sizeof path, cfg.dir, seqs[n - 1]);
	free(seqs);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		xlog("cannot open %s to recover it: %s", path, strerror(errno));
		return next;
	}
	if (seg_scan_fd(fd, recovery_cb, r, &scan) == 0) {
		if (scan.header_ok && scan.hdr.next_session_id > st.next_session_id)
			st.next_session_id = scan.hdr.next_session_id;
		if (scan.torn && scan.header_ok) {
			xlog("%s: recovered a torn tail: cut %lld bytes after the last whole block at %lld",
			     path, (long long)(scan.file_size - scan.valid_end), (long long)scan.valid_end);
			if (ftruncate(fd, scan.valid_end) < 0)
				xlog("cannot cut %s: %s", path, strerror(errno));
			disk_set_bytes(next - 1, (uint64_t)scan.valid_end);
		} else if (!scan.header_ok) {
			xlog("%s: not a segment (bad header); left as it is", path);
		}
		if (!scan.clean_end && scan.header_ok)
			xlog("%s: the previous xtcd did not shut down cleanly", path);
		if (scan.clean_end)
			for (size_t i = 0; i < r->n; i++)
				r->s[i].ended = 1;
	}
	close(fd);
	if (r->max_id + 1 > st.next_session_id)
		st.next_session_id = r->max_id + 1;
	return next;
}

/* Close the sessions a crashed daemon left open, in the new segment. */
static void recovery_close_sessions(struct recovery *r)
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

/* ---------------------------------------------------------------------
 * Init and teardown
 */

static void uring_init(void)
{
	struct iovec iov[NBUF];

	if (cfg.force_pwrite)
		return;
	if (io_uring_queue_init(16, &st.ring, 0) < 0) {
		xlog("io_uring is unavailable here; writing with pwrite");
		return;
	}
	st.uring_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (st.uring_efd < 0 || io_uring_register_eventfd(&st.ring, st.uring_efd) < 0) {
		xlog("io_uring eventfd registration failed; writing with pwrite");
		io_uring_queue_exit(&st.ring);
		if (st.uring_efd >= 0)
			close(st.uring_efd);
		st.uring_efd = -1;
		return;
	}
	for (int i = 0; i < NBUF; i++) {
		iov[i].iov_base = st.bufs[i].data;
		iov[i].iov_len = BUF_SIZE;
	}
	st.fixed = io_uring_register_buffers(&st.ring, iov, NBUF) == 0;
	st.use_uring = 1;
	ev_io_init(&st.uring_w, uring_cb, st.uring_efd, EV_READ);
	ev_io_start(st.loop, &st.uring_w);
}

int store_init(struct ev_loop *loop)
{
	struct recovery r = { 0 };
	uint64_t seq;

	st.loop = loop;
	st.next_session_id = 1;
	st.dirfd = open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st.dirfd < 0) {
		xlog("--dir %s: %s; create it or point --dir at a writable directory", cfg.dir,
		     strerror(errno));
		return -1;
	}
	for (int i = 0; i < NBUF; i++) {
		st.bufs[i].data = aligned_alloc(4096, BUF_SIZE);
		if (st.bufs[i].data == NULL)
			return -1;
	}
	uring_init();
	seq = recover(&r);
	evict_for(cfg.segment_bytes);
	if (segment_open(seq) < 0) {
		free(r.s);
		return -1;
	}
	evicted_block();
	recovery_close_sessions(&r);
	free(r.s);
	store_flush();
	if (cfg.sync == SYNC_PERIOD) {
		ev_timer_init(&st.sync_w, sync_cb, cfg.sync_ms / 1000.0, cfg.sync_ms / 1000.0);
		ev_timer_start(loop, &st.sync_w);
	}
	return 0;
}

/* Write out everything, end the segment (clean: with SEGMENT_END). */
void store_fini(int clean)
{
	if (clean)
		segment_close(0);
	else
		buf_seal();
	submit_next();
	while (st.use_uring && st.inflight != NULL) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&st.ring, &cqe) < 0)
			break;
		{
			int res = cqe->res;

			io_uring_cqe_seen(&st.ring, cqe);
			write_done(res);
		}
	}
	if (st.use_uring) {
		ev_io_stop(st.loop, &st.uring_w);
		io_uring_queue_exit(&st.ring);
		close(st.uring_efd);
	}
	for (int i = 0; i < NBUF; i++)
		free(st.bufs[i].data);
	free(st.disk);
	if (st.dirfd >= 0)
		close(st.dirfd);
}
