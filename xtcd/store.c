/*
 * xtcd/store.c - segments on disk.
 *
 * Blocks are appended to 1 MiB write buffers; a buffer is written to its
 * segment file with io_uring (store_uring.c: several writes in flight) or,
 * where io_uring is unavailable or --pwrite forces it, with pwrite(2).
 * Buffers retire in order, and a failed write never leaves a hole in
 * front of a later one: the file is cut back to its last good byte, the
 * writes behind it are made again from there, and only the failed
 * buffer's records are lost (and counted as such).
 *
 * A ring's tail is published to the producer only after the block holding
 * its records is written (see struct commit), so a daemon killed at any
 * point loses nothing that was still in a ring: its successor resumes from
 * the tails.
 *
 * The budget and the quota are store_budget.c's, the recovery of what a
 * previous xtcd left is store_recover.c's (see store_int.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "xtcd/conf.h"
#include "lib/seg/seg.h"
#include "xtcd/store_int.h"
#include "xtcd/xtcd.h"

#define BUF_SIZE   (1u << 20)
#define NBUF       8
#define SLACK      7u     /* a block is built 8-byte aligned: see build_at() */
#define END_ROOM   (sizeof(struct xtc_seg_blk_hdr) + sizeof(struct xtc_seg_segment_end) + SLACK)

/* A buffer goes FREE -> FILLING -> QUEUED -> INFLIGHT -> WRITTEN or FAILED
 * -> FREE (see "Writing"). */
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
};

struct wbuf {
	uint8_t  *data;
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
};

static struct {
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
	struct segfile *reg_file;  /* the segment in io_uring's file slot */
	ev_io     uring_w;
	ev_timer  sync_w;
	ev_idle   resume_w;        /* pwrite: a starved drain goes on (resume_cb) */
	int       rotating;
	int       starved;         /* a block was refused for want of a free buffer */
	int       last_errno;      /* the last write error, logged once */
	int       open_errno;      /* why the last segment could not be created */
	int       started;         /* the first segment was created */
	ev_timer  check_w;         /* store_check() once a second */
	uint64_t  seg_limit;       /* rotate the current segment at this size */
} st = { .dirfd = -1 };

static void submit_next(void);
static void submit_queued(void);
static void reap_inline(void);
static int  segment_open(uint64_t seq);

const char *store_io_backend(void)
{
	return st.use_uring ? sur_describe() : "pwrite";
}

uint64_t store_next_session_id(void)
{
	return st.next_session_id++;
}

void store_session_id_floor(uint64_t next)
{
	/* Only a crafted file names ids this high (no xtcd hands out 2^62):
	 * going on from one would wrap the ids onto those of older sessions. */
	if (next > (UINT64_MAX >> 2)) {
		xlog_warn("a segment in --dir names session id %llu, beyond any xtcd hands out; "
		     "ignored (new sessions are numbered from %llu)", (unsigned long long)next,
		     (unsigned long long)st.next_session_id);
		return;
	}
	if (next > st.next_session_id)
		st.next_session_id = next;
}

int store_current(uint64_t *seq, uint64_t *reserved)
{
	if (st.cur == NULL)
		return -1;
	*seq = st.cur->seq;
	*reserved = (uint64_t)st.cur->reserved;
	return 0;
}

int store_dir_fd(void)
{
	return st.dirfd;
}

static struct wbuf *buf_take(void)
{
	for (int i = 0; i < NBUF; i++)
		if (st.bufs[i].state == BUF_FREE) {
			struct wbuf *b = &st.bufs[i];

			b->state = BUF_FILLING;
			b->len = b->done = 0;
			b->off = -1;
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

/* ---------------------------------------------------------------------
 * Segments
 */

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

/* A closed segment is written: sync (per --sync) and close it, on the
 * worker.  Its file leaves io_uring's slot first, or the table would
 * keep it open (and a deleted segment's space taken). */
static void segfile_done(struct segfile *f)
{
	if (st.reg_file == f) {
		sur_file(-1);
		st.reg_file = NULL;
	}
	if (f->fd >= 0)
		worker_close(f->fd, f->seq, cfg.sync != SYNC_NEVER);
	free(f);
}

/* Close the current segment: a SEGMENT_END, then no more blocks. */
static void segment_close(uint64_t next_seq)
{
	struct xtc_seg_segment_end *e;
	struct segfile *f = st.cur;

	if (f == NULL)
		return;
	st.rotating = 1;
	e = f->fd >= 0 ? store_block_begin(sizeof *e) : NULL;
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
	store_disk_set_bytes(f->seq, (uint64_t)f->reserved);
	f->closing = 1;
	st.cur = NULL;
	if (f->pending == 0)
		segfile_done(f);
}

/* The file header of segment seq, as of now. */
static void header_init(struct xtc_seg_file_hdr *h, uint64_t seq)
{
	char host[64] = "";
	uint8_t boot[16];

	clock_boot_id(boot);
	gethostname(host, sizeof host - 1);
	seg_file_hdr_init(h, seq, st.next_session_id, real_ns(), mono_ns(), boot, host);
}

/*
 * Make segment `seq` the current one, its header the first bytes of its
 * first buffer; restating live sessions is the caller's.  When the file
 * cannot be created (--dir removed or unwritable) the segment is dead: it
 * still takes blocks, so sessions go on and can end, but its writes fail
 * at once and their records count as lost, until store_check() creates
 * the file (it tries once a second).  Returns 0, or -errno for a dead
 * segment.
 */
static int segment_open(uint64_t seq)
{
	struct segfile *f = calloc(1, sizeof *f);
	char path[4096], name[64];
	struct stat sb;
	int fd;

	if (f == NULL)
		return -ENOMEM;
	f->seq = seq;
	f->fd = -1;
	st.cur = f;
	seg_path(path, sizeof path, cfg.dir, seq);
	seg_path(name, sizeof name, ".", seq);
	/* a new --dir in place of one removed under us: follow it */
	if (fstat(st.dirfd, &sb) == 0 && sb.st_nlink == 0) {
		int d = open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (d >= 0) {
			close(st.dirfd);
			st.dirfd = d;
		}
	}
	/* Never through a link, never over a file: whatever sits under the
	 * name is not ours to write (see store_seq_free). */
	fd = openat(st.dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0 && (errno == EEXIST || errno == ELOOP)) {
		st.cur = NULL;
		free(f);
		return -EEXIST;
	}
	if (fd < 0) {
		f->err = errno;
		if (!st.started)
			xlog_error("cannot create %s: %s; check that --dir is writable", path, strerror(f->err));
		else if (f->err != st.open_errno)
			xlog_error("cannot create %s: %s; records are counted as lost until a segment can be "
			     "created (tried every second)", path, strerror(f->err));
		st.open_errno = f->err;
		return -f->err;
	}
	if (st.open_errno != 0)
		xlog("created %s: writing again", path);
	st.open_errno = 0;
	st.started = 1;
	f->fd = fd;
	if (st.use_uring && sur_file(fd))
		st.reg_file = f;
	header_init(&f->hdr, seq);
	if (buf_put_raw(&f->hdr, sizeof f->hdr) < 0)
		f->need_header = 1; /* no buffer free: written before the first one */
	store_disk_add(seq, sizeof f->hdr, 1); /* we charge every block of it */
	st.seg_limit = cfg.segment_bytes;
	return 0;
}

/*
 * The first number from `from` on that names nothing in the directory: a
 * file, link or FIFO someone put there under a segment's name is skipped,
 * never written through or over, and said once.  Returns UINT64_MAX when
 * the numbers run out (see STORE_SEQ_MAX).
 */
static uint64_t store_seq_free(uint64_t from)
{
	char name[64];
	struct stat sb;

	for (uint64_t seq = from; seq <= STORE_SEQ_MAX; seq++) {
		seg_path(name, sizeof name, ".", seq);
		if (fstatat(st.dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			return seq; /* free (or the directory is gone: segment_open says) */
		xlog_warn("%s/%s exists but was not created by this xtcd: left alone, segment %llu skipped",
		     cfg.dir, name + 2, (unsigned long long)seq);
	}
	return UINT64_MAX;
}

/* Open a segment numbered from `seq` on, skipping names taken meanwhile:
 * 0, -errno for a dead segment, or -EEXIST when no number is left. */
static int segment_open_free(uint64_t seq)
{
	int ret = -EEXIST;

	for (int tries = 0; tries < 64 && ret == -EEXIST; tries++) {
		seq = store_seq_free(seq);
		if (seq == UINT64_MAX)
			break;
		ret = segment_open(seq);
		seq++;
	}
	if (ret == -EEXIST)
		xlog_error("no segment number left to create in %s (the names are taken); nothing is written "
		     "until some are freed", cfg.dir);
	return ret;
}

/*
 * The live sessions are restated at the start of a segment (session.c).
 * However many there are, that must not fill the segment and so force
 * the next rotation at once (each rotation restates them again, and the
 * budget would delete everyone's data for it): the segment is allowed to
 * grow to four times what the restatement took, within half the budget,
 * and the budget makes room for that.
 */
static void segment_restate(void)
{
	uint64_t before = (uint64_t)st.cur->reserved, took, want;

	st.rotating = 1;
	store_evicted_block();
	session_restate_all();
	took = (uint64_t)st.cur->reserved - before;
	want = took * 4;
	if (want > cfg.max_bytes / 2)
		want = cfg.max_bytes / 2;
	if (want > st.seg_limit) {
		st.seg_limit = want;
		store_evict_for(want);
		store_evicted_block();
	}
	st.rotating = 0;
}

/* Move to a new segment: close this one, make room, open the next, and
 * restate the live sessions there. */
static void segment_rotate(void)
{
	uint64_t next = store_seq_free(st.cur->seq + 1);

	/* No waiting for the old segment's writes here: the new one's first
	 * write is handed over only once they are done (submit_queued). */
	segment_close(next == UINT64_MAX ? 0 : next);
	store_evict_for(cfg.segment_bytes);
	if (segment_open_free(next) < 0)
		return;
	segment_restate();
}

/*
 * Once a second: a dead segment is created again, under the same number
 * (the dead one is renamed out of every count keyed by number first);
 * and a --dir removed under us is noticed (what we write there reaches
 * no one) by moving to a new segment, which follows a new --dir or dies.
 */
static void store_check(void)
{
	struct segfile *dead = st.cur;
	uint64_t seq = dead->seq;
	struct stat sb;

	if (dead->fd >= 0) {
		int free_bufs = 0;

		for (int i = 0; i < NBUF; i++)
			free_bufs += st.bufs[i].state == BUF_FREE;
		if (free_bufs >= 2 && fstat(st.dirfd, &sb) == 0 && sb.st_nlink == 0) {
			xlog_warn("--dir %s was removed under xtcd: moving to a new segment", cfg.dir);
			segment_rotate();
		}
		return;
	}
	dead->seq = UINT64_MAX;
	segment_close(0);
	if (segment_open_free(seq) < 0)
		return;
	segment_restate();
}

/* The once-a-second timer: see store_check(). */
static void check_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	if (st.cur == NULL || st.rotating)
		return;
	store_check();
	store_flush();
}

/* ---------------------------------------------------------------------
 * Blocks
 */

/*
 * Where the block that belongs at offset `len` of a buffer is built.
 * Blocks are packed on disk, so a block's place is rarely 8-byte aligned,
 * while its header and the payload structs hold fields that the callers
 * and seg_blk_seal() store to directly: a misaligned store is undefined
 * behaviour (UBSan stops on it; CPUs other than x86 may trap).  So the
 * block is built at the next aligned offset and moved down into its place
 * by store_block_end().
 */
static size_t build_at(size_t len)
{
	return (len + SLACK) & ~(size_t)SLACK;
}

/* The filling buffer with room for a block of payload len, rotating or
 * sealing as needed; NULL when there is none. */
static struct wbuf *block_room(uint32_t len)
{
	size_t total = sizeof(struct xtc_seg_blk_hdr) + len;
	struct wbuf *b;

	if (st.cur == NULL || total + SLACK + END_ROOM > BUF_SIZE)
		return NULL;
	if (!st.rotating && st.cur->blocks > 0 && st.cur->fd >= 0 &&
	    (uint64_t)st.cur->reserved + total + END_ROOM > st.seg_limit) {
		/* rotation needs two buffers: the end of this file, the next */
		int free_bufs = 0;

		for (int i = 0; i < NBUF; i++)
			free_bufs += st.bufs[i].state == BUF_FREE;
		if (free_bufs < 2) {
			st.starved = 1;
			return NULL;
		}
		segment_rotate();
		if (st.cur == NULL)
			return NULL;
	}
	reap_inline();
	b = st.filling;
	if (b != NULL && b->len + total + SLACK + (st.rotating ? 0 : END_ROOM) > BUF_SIZE) {
		buf_seal();
		b = NULL;
		/* the disk idle while the drain goes on: give it this buffer
		 * now; else it goes with the round's others at store_flush(),
		 * in one system call */
		if (st.use_uring && st.flen == 0)
			submit_queued();
	}
	if (b == NULL && (b = st.filling = buf_take()) == NULL) {
		st.starved = 1;
		return NULL;
	}
	return b;
}

void *store_block_begin(uint32_t len)
{
	struct wbuf *b = block_room(len);

	if (b == NULL)
		return NULL;
	b->begun = build_at(b->len);
	b->packed = 0;
	return b->data + b->begun + sizeof(struct xtc_seg_blk_hdr);
}

uint8_t *store_block_begin_bytes(uint32_t len)
{
	struct wbuf *b = block_room(len);

	if (b == NULL)
		return NULL;
	b->begun = b->len;
	b->packed = 1;
	return b->data + b->begun + sizeof(struct xtc_seg_blk_hdr);
}

void store_block_end(uint16_t type, uint16_t flags, uint32_t len, const struct commit *c)
{
	struct wbuf *b = st.filling;
	size_t total = sizeof(struct xtc_seg_blk_hdr) + len;

	if (b->packed) {
		seg_blk_seal_bytes(b->data + b->begun, type, flags, len);
		b->packed = 0;
	} else {
		struct xtc_seg_blk_hdr *h = (struct xtc_seg_blk_hdr *)(void *)(b->data + b->begun);

		seg_blk_seal(h, type, flags, len);
		if (b->begun != b->len)
			memmove(b->data + b->len, h, total);
	}
	b->len += total;
	st.cur->reserved += (off_t)total;
	st.cur->blocks++;
	if (c == NULL)
		return;
	if (b->ncommits == b->commit_cap) {
		size_t cap = b->commit_cap ? b->commit_cap * 2 : 64;
		struct commit *p = realloc(b->commits, cap * sizeof *p);

		if (p == NULL) {
			xlog_error("out of memory for a commit record");
			return;
		}
		b->commits = p;
		b->commit_cap = cap;
	}
	b->commits[b->ncommits] = *c;
	b->commits[b->ncommits].bytes = 0;
	if (type == XTC_BLK_EVENTS) {
		b->commits[b->ncommits].bytes = (uint32_t)total;
		store_uid_charge(st.cur->seq, c->uid, total, 1);
	}
	b->ncommits++;
	b->records += c->records;
}

/* ---------------------------------------------------------------------
 * Writing
 *
 * Sealed buffers wait in st.queue; once handed to the kernel they sit in
 * st.flight, in the order they were handed over, until they retire (in
 * that order).  Each write names its own offset, given when it is first
 * handed over (the end of the writes before it), so with io_uring several
 * are in flight at once, and one that comes back short is sent on from
 * where it stopped, wherever it sits in the line.  A buffer's commits are
 * published only when it retires, that is once it and every buffer before
 * it are written: a ring's tail never moves past a record that is not on
 * disk, whatever order the kernel finishes the writes in.
 */

/* A buffer is done: publish its commits, free it, close its file if
 * that was the file's last buffer. */
static void buf_done(struct wbuf *b, int ok)
{
	struct segfile *f = b->file;

	for (size_t i = 0; i < b->ncommits; i++) {
		if (!ok && b->commits[i].bytes != 0)
			store_uid_charge(f->seq, b->commits[i].uid, b->commits[i].bytes, -1);
		session_commit(&b->commits[i], ok);
	}
	b->state = BUF_FREE;
	if (ok) {
		f->end += (off_t)b->len;
	} else {
		f->reserved -= (off_t)b->len;
		if (f->fd >= 0)
			store_disk_set_bytes(f->seq, (uint64_t)f->reserved);
	}
	if (--f->pending == 0 && f->closing)
		segfile_done(f);
}

static struct wbuf *flight_pop(void)
{
	struct wbuf *b = st.flight[st.fhead];

	st.fhead = (st.fhead + 1) % NBUF;
	st.flen--;
	return b;
}

/* Put b back at the front of the queue of buffers to write. */
static void queue_front(struct wbuf *b)
{
	b->state = BUF_QUEUED;
	st.qhead = (st.qhead + NBUF - 1) % NBUF;
	st.queue[st.qhead] = b;
	st.qlen++;
}

/* Send what is left of b's write to the kernel (at the next submit). */
static int write_send(struct wbuf *b)
{
	return sur_queue(b->file->fd, b->file == st.reg_file, (unsigned)(b - st.bufs), b->data + b->done,
	                 (unsigned)(b->len - b->done), b->off + (off_t)b->done);
}

/* A write of b came back with res (bytes or -errno). */
static void write_result(unsigned idx, int res)
{
	struct wbuf *b = idx < NBUF ? &st.bufs[idx] : NULL;

	if (b == NULL || b->state != BUF_INFLIGHT)
		return;
	if (res == 0)
		res = -EIO; /* no progress on a regular file: as pwrite says it */
	if (res > 0 && b->done + (size_t)res < b->len && !st.unwinding) {
		b->done += (size_t)res; /* short: send the rest, at its offset */
		if (write_send(b) == 0)
			return;
		res = -EAGAIN;
	}
	if ((res == -EAGAIN || res == -EINTR) && !st.unwinding && write_send(b) == 0)
		return;
	if (res < 0) {
		b->state = BUF_FAILED;
		b->res = res;
		return;
	}
	b->state = BUF_WRITTEN;
	sio_observe(b->submit_ns);
}

/*
 * The buffer at the front of the line failed: cut the file back to its
 * last good byte (the end of the buffers before it, all written), free
 * space if we can, and count its records as lost.  The writes behind it
 * landed (or not) after a hole: they are waited for and written again
 * from the cut, so the file never holds a hole in front of a block.
 */
static void write_failed(struct wbuf *b)
{
	struct segfile *f = b->file;
	int err = -b->res;

	if (f->fd < 0) {
		buf_done(b, 0); /* a dead segment: said when it died */
		return;
	}
	st.unwinding = 1;
	for (size_t i = 0; i < st.flen; i++)
		while (st.flight[(st.fhead + i) % NBUF]->state == BUF_INFLIGHT &&
		       sur_wait(write_result) == 0)
			;
	st.unwinding = 0;
	if (ftruncate(f->fd, f->end) < 0)
		xlog_error("cannot cut segment %llu back after a failed write: %s",
		     (unsigned long long)f->seq, strerror(errno));
	if (f->end == 0)
		f->need_header = 1; /* it held the header: write it again first */
	if (err != st.last_errno)
		xlog_error("writing segment %llu failed: %s; %llu records lost",
		     (unsigned long long)f->seq, strerror(err), (unsigned long long)b->records);
	st.last_errno = err;
	if (err == ENOSPC || err == EDQUOT)
		store_evict_oldest(STORE_FS_FULL);
	f->wend = f->end; /* (buf_done may free f: its last buffer, closing) */
	buf_done(b, 0);
	/* All behind it are f's: a new segment's first write waits for
	 * every write of the old one (segment_rotate). */
	while (st.flen > 0) {
		struct wbuf *later = st.flight[(st.fhead + st.flen - 1) % NBUF];

		st.flen--;
		later->done = 0;
		later->off = -1;
		queue_front(later);
	}
}

/* Retire the written buffers at the front of the line, in order; a failed
 * one too when may_fail (not while a block is being built: a failure may
 * delete segments and so write an EVICTED block). */
static void retire(int may_fail)
{
	while (st.flen > 0) {
		struct wbuf *b = st.flight[st.fhead];

		if (b->state == BUF_WRITTEN) {
			flight_pop();
			st.last_errno = 0;
			buf_done(b, 1);
		} else if (b->state == BUF_FAILED && may_fail) {
			flight_pop();
			write_failed(b);
		} else {
			break;
		}
	}
}

/*
 * Write the header of a segment whose first buffer failed (or never got
 * one) before its next buffer, so that the file does not begin with a
 * block: without its header a segment is unreadable.  Every buffer before
 * this one has retired (submit_next waits for that), so a newer header on
 * disk still tells a follower that the older segments are complete.
 * 0 or an errno value.
 */
static int header_reinstate(struct segfile *f)
{
	int err = sio_pwrite_all(f->fd, &f->hdr, sizeof f->hdr, 0);

	if ((err == ENOSPC || err == EDQUOT) && store_evict_oldest(STORE_FS_FULL) == 0)
		err = sio_pwrite_all(f->fd, &f->hdr, sizeof f->hdr, 0);
	if (err != 0)
		return err;
	f->need_header = 0;
	f->end = f->wend = (off_t)sizeof f->hdr;
	f->reserved += (off_t)sizeof f->hdr;
	store_disk_set_bytes(f->seq, (uint64_t)f->reserved);
	return 0;
}

/* pwrite: b's write, whole, now. */
static void write_now(struct wbuf *b)
{
	int err = sio_pwrite_all(b->file->fd, b->data + b->done, b->len - b->done,
	                         b->off + (off_t)b->done);

	b->state = err != 0 ? BUF_FAILED : BUF_WRITTEN;
	b->res = -err;
	if (err == 0)
		sio_observe(b->submit_ns);
}

/* io_uring would not take the writes: wait for those it has, then write
 * the rest (and from now on everything) with pwrite. */
static void uring_give_up(int err)
{
	xlog_warn("io_uring submit failed (%s); falling back to pwrite", strerror(-err));
	for (size_t i = 0; i < st.flen; i++) {
		struct wbuf *b = st.flight[(st.fhead + i) % NBUF];

		while (b->state == BUF_INFLIGHT && sur_wait(write_result) == 0)
			;
	}
	ev_io_stop(st.loop, &st.uring_w);
	sur_exit(); /* drops the writes never submitted */
	st.use_uring = 0;
	for (size_t i = 0; i < st.flen; i++) {
		struct wbuf *b = st.flight[(st.fhead + i) % NBUF];

		if (b->state == BUF_INFLIGHT)
			write_now(b);
	}
}

/* Hand the queued buffers to the writer, in order. */
static void submit_queued(void)
{
	int err;

	while (st.qlen > 0) {
		struct wbuf *b = st.queue[st.qhead];
		struct segfile *f = b->file;

		/* a header written by hand goes after every write before it */
		if (st.flen > 0 && b->off < 0 && f->need_header)
			break;
		/* and a new segment's first write after every write of the old
		 * one: readers (xtcd --follow) take a newer segment to mean that
		 * every older one is complete, and write_failed() unwinds the
		 * writes of one file at a time.  The loop goes on meanwhile. */
		if (st.flen > 0 && st.flight[(st.fhead + st.flen - 1) % NBUF]->file != f)
			break;
		st.qhead = (st.qhead + 1) % NBUF;
		st.qlen--;
		b->state = BUF_INFLIGHT;
		st.flight[(st.fhead + st.flen++) % NBUF] = b;
		if (f->fd < 0) {
			b->state = BUF_FAILED;
			b->res = -f->err;
			continue;
		}
		if (b->off < 0 && f->need_header && (err = header_reinstate(f)) != 0) {
			b->state = BUF_FAILED;
			b->res = -err;
			continue;
		}
		if (b->off < 0) {
			b->off = f->wend;
			f->wend += (off_t)b->len;
			b->submit_ns = sio_now_ns();
		}
		if (!st.use_uring || write_send(b) < 0)
			write_now(b);
	}
	if (st.use_uring && (err = sur_submit()) < 0 && err != -EAGAIN && err != -EBUSY)
		uring_give_up(err);
}

/* Hand over what is queued and retire what is written.  A failure puts
 * the buffers behind it back in the queue: they go again at once (each
 * round loses the failed buffer, so this ends). */
static void submit_next(void)
{
	for (;;) {
		size_t queued;

		submit_queued();
		queued = st.qlen;
		retire(1);
		/* again when a failure queued buffers anew, or when the line
		 * emptied in front of a new segment's first write */
		if (st.qlen <= queued && !(st.flen == 0 && st.qlen > 0))
			break;
	}
}

/* Completions there are, read without a system call, retired: for the
 * drain, which so frees buffers and publishes tails while it runs. */
static void reap_inline(void)
{
	if (st.use_uring && st.flen > 0 && sur_reap(write_result) > 0) {
		retire(0);
		if (st.flen == 0 && st.qlen > 0)
			submit_queued(); /* a new segment's writes, held for the old one's */
	}
}

/* io_uring told us (through its eventfd) that writes completed. */
static void uring_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	uint64_t n;

	(void)loop; (void)w; (void)revents;
	if (read(sur_efd(), &n, sizeof n) < 0) {
		/* a hint only: read the completions regardless */
	}
	sur_reap(write_result);
	submit_next(); /* the rest of a short write; retires, failures too */
	/* A drain that stopped because every buffer was waiting for the
	 * disk goes on now that one is free, not at the next nudge or
	 * timer: under overload that wait is what made io_uring slower
	 * than pwrite, whose writes never leave the drain without one. */
	if (st.starved && !st.rotating) {
		st.starved = 0;
		session_drain_all();
	}
}

/* pwrite: the buffers a starved drain filled are written now; let the
 * loop run its other watchers once, then drain on instead of waiting for
 * the next nudge or timer (a producer whose ring is full nudges no more).
 * io_uring resumes in uring_cb() instead, when a write completes. */
static void resume_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	ev_idle_stop(loop, w);
	if (st.starved && !st.rotating) {
		st.starved = 0;
		session_drain_all();
	}
}

void store_flush(void)
{
	buf_seal();
	submit_next();
	if (st.starved && !st.use_uring && st.loop != NULL && !ev_is_active(&st.resume_w))
		ev_idle_start(st.loop, &st.resume_w);
}

/* Whether a buffer of segment seq is queued or in flight: such a
 * segment is not deleted yet (the records it holds are counted from the
 * file), which only a budget so small that the segment just closed is
 * the oldest one ever meets; its turn comes at the next eviction. */
int store_segment_writing(uint64_t seq)
{
	for (size_t i = 0; i < st.flen; i++)
		if (st.flight[(st.fhead + i) % NBUF]->file->seq == seq)
			return 1;
	for (size_t i = 0; i < st.qlen; i++)
		if (st.queue[(st.qhead + i) % NBUF]->file->seq == seq)
			return 1;
	return 0;
}

/* Block until a write in flight completes, so a buffer frees up: for
 * the few records that must not wait for the loop (a session's start).
 * Returns 0, or -1 when nothing is in flight to wait for. */
int store_wait_write(void)
{
	store_flush();
	if (st.flen == 0 || !st.use_uring)
		return -1;
	if (sur_wait(write_result) < 0)
		return -1;
	submit_next();
	return 0;
}

static void sync_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	if (st.cur != NULL && st.cur->end > 0 && st.cur->fd >= 0)
		worker_sync(st.cur->fd, st.cur->seq);
}
/* ---------------------------------------------------------------------
 * Init and teardown
 */

static void uring_init(void)
{
	uint8_t *bufs[NBUF];

	if (cfg.force_pwrite)
		return;
	for (int i = 0; i < NBUF; i++)
		bufs[i] = st.bufs[i].data;
	if (sur_init(bufs, NBUF, BUF_SIZE) < 0) {
		xlog_warn("io_uring is unavailable here; writing with pwrite");
		return;
	}
	st.use_uring = 1;
	ev_io_init(&st.uring_w, uring_cb, sur_efd(), EV_READ);
	ev_io_start(st.loop, &st.uring_w);
}

int store_init(struct ev_loop *loop)
{
	struct store_recovery *r;
	uint64_t seq;

	st.loop = loop;
	ev_idle_init(&st.resume_w, resume_cb);
	st.next_session_id = 1;
	st.dirfd = open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st.dirfd < 0) {
		xlog_error("--dir %s: %s; create it or point --dir at a writable directory", cfg.dir,
		     strerror(errno));
		return -1;
	}
	for (int i = 0; i < NBUF; i++) {
		st.bufs[i].data = aligned_alloc(4096, BUF_SIZE);
		if (st.bufs[i].data == NULL)
			return -1;
	}
	uring_init();
	worker_start();
	seq = store_recover(&r);
	if (r == NULL)
		return -1;
	store_evict_for(cfg.segment_bytes);
	if (segment_open_free(seq) < 0) {
		store_recover_free(r);
		return -1;
	}
	store_evicted_block();
	store_recover_close(r);
	ev_timer_init(&st.check_w, check_cb, 1.0, 1.0);
	ev_timer_start(loop, &st.check_w);
	store_quota_attribute();
	store_flush();
	if (cfg.sync == SYNC_PERIOD) {
		ev_timer_init(&st.sync_w, sync_cb, cfg.sync_ms / 1000.0, cfg.sync_ms / 1000.0);
		ev_timer_start(loop, &st.sync_w);
	}
	return 0;
}

void store_reconfigure(void)
{
	store_quota_attribute();
	/* A smaller budget takes effect now, not at the next rotation. */
	store_evict_for(cfg.segment_bytes);
	store_evicted_block();
	store_flush();
	ev_timer_stop(st.loop, &st.sync_w);
	if (cfg.sync == SYNC_PERIOD) {
		ev_timer_init(&st.sync_w, sync_cb, cfg.sync_ms / 1000.0, cfg.sync_ms / 1000.0);
		ev_timer_start(st.loop, &st.sync_w);
	}
}

/* Write out everything, end the segment (clean: with SEGMENT_END). */
void store_fini(int clean)
{
	ev_timer_stop(st.loop, &st.check_w);
	ev_idle_stop(st.loop, &st.resume_w);
	if (clean)
		segment_close(0);
	else
		buf_seal();
	submit_next();
	while (st.use_uring && st.flen > 0 && sur_wait(write_result) == 0)
		submit_next();
	worker_stop(); /* every closed segment synced (per --sync) and closed */
	if (st.use_uring) {
		ev_io_stop(st.loop, &st.uring_w);
		sur_exit();
	}
	for (int i = 0; i < NBUF; i++)
		free(st.bufs[i].data);
	store_budget_fini();
	if (st.dirfd >= 0)
		close(st.dirfd);
}
