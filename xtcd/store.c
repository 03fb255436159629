/*
 * xtcd/store.c - segments on disk.
 *
 * Blocks are appended to 1 MiB write buffers; a sealed buffer is written
 * to its segment file by store_write.c, with io_uring (several writes in
 * flight) or, where io_uring is unavailable or --pwrite forces it, with
 * pwrite(2).  Buffers retire in order, and a failed write never leaves a
 * hole in front of a later one: the file is cut back to its last good
 * byte, the writes behind it are made again from there, and only the
 * failed buffer's records are lost (and counted as such).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "xtcd/conf.h"
#include "lib/seg/seg.h"
#include "xtcd/store_int.h"
#include "xtcd/store_buf.h"
#include "xtcd/xtcd.h"

struct store_state store = { .dirfd = -1 };

static int  segment_open(uint64_t seq);

const char *store_io_backend(void)
{
	static char text[64];
	const char *how = store.use_uring ? sur_describe() : "pwrite";

	/* O_DIRECT as the current segment has it (a refusal is said apart) */
	if (!store.direct || store.cur == NULL || store.cur->dfd < 0)
		return how;
	snprintf(text, sizeof text, "%s, O_DIRECT", how);
	return text;
}

uint64_t store_next_session_id(void)
{
	return store.next_session_id++;
}

void store_session_id_floor(uint64_t next)
{
	/* Only a crafted file names ids this high (no xtcd hands out 2^62):
	 * going on from one would wrap the ids onto those of older sessions. */
	if (next > (UINT64_MAX >> 2)) {
		xlog_warn("a segment in --dir names session id %llu, beyond any xtcd hands out; "
		     "ignored (new sessions are numbered from %llu)", (unsigned long long)next,
		     (unsigned long long)store.next_session_id);
		return;
	}
	if (next > store.next_session_id)
		store.next_session_id = next;
}

int store_current(uint64_t *seq, uint64_t *reserved)
{
	if (store.cur == NULL)
		return -1;
	*seq = store.cur->seq;
	*reserved = (uint64_t)store.cur->reserved;
	return 0;
}

int store_dir_fd(void)
{
	return store.dirfd;
}

/*
 * Where b's bytes go in its memory.  For a file written O_DIRECT they
 * start at the offset they will have in the file modulo DIO_ALIGN, after
 * a copy of the bytes of that block the file already holds (f->part):
 * so b's whole blocks, the first one included, are one aligned run of
 * memory for one aligned write (store_write.c).  Else at the start.
 */
static void buf_lay_out(struct wbuf *b, struct segfile *f)
{
	b->pred = f->reserved;
	b->lead = 0;
	b->buffered = 0;
	b->parts = 0;
	if (f->direct) {
		b->lead = (size_t)(b->pred % DIO_ALIGN);
		memcpy(b->mem, f->part, b->lead);
	}
	b->data = b->mem + b->lead;
}

/* b is sealed: the file's partial last block is now the end of its bytes
 * (of the lead too, when they do not reach the next block). */
static void buf_keep_part(struct wbuf *b)
{
	struct segfile *f = b->file;
	off_t end = b->pred + (off_t)b->len;
	size_t n = (size_t)(end % DIO_ALIGN);

	if (end != f->reserved) {
		f->direct = 0; /* a write failed under it: the layout is off */
		return;
	}
	memcpy(f->part, b->mem + (size_t)(end - (off_t)n - (b->pred - (off_t)b->lead)), n);
}

static struct wbuf *buf_take(void)
{
	for (int i = 0; i < NBUF; i++)
		if (store.bufs[i].state == BUF_FREE) {
			struct wbuf *b = &store.bufs[i];

			b->state = BUF_FILLING;
			b->len = b->done = 0;
			b->off = -1;
			buf_lay_out(b, store.cur);
			b->ncommits = 0;
			b->records = 0;
			b->file = store.cur;
			store.cur->pending++;
			return b;
		}
	return NULL;
}

/* Hand the filling buffer to the writer. */
void store_buf_seal(void)
{
	struct wbuf *b = store.filling;

	if (b == NULL)
		return;
	store.filling = NULL;
	if (b->len == 0) {
		b->state = BUF_FREE;
		b->file->pending--;
		return;
	}
	if (b->file->direct)
		buf_keep_part(b);
	b->state = BUF_QUEUED;
	store.queue[(store.qhead + store.qlen) % NBUF] = b;
	store.qlen++;
}

/* ---------------------------------------------------------------------
 * Segments
 */

/* Append raw bytes (the file header) to the filling buffer. */
static int buf_put_raw(const void *p, size_t n)
{
	if (store.filling == NULL && (store.filling = buf_take()) == NULL)
		return -1;
	memcpy(store.filling->data + store.filling->len, p, n);
	store.filling->len += n;
	store.cur->reserved += (off_t)n;
	return 0;
}

/* A closed segment is written: sync (per --sync) and close it, on the
 * worker.  Its file leaves io_uring's slot first, or the table would
 * keep it open (and a deleted segment's space taken). */
void store_segfile_done(struct segfile *f)
{
	if (store.reg_file == f) {
		sur_file(-1, -1);
		store.reg_file = NULL;
	}
	if (f->dfd >= 0)
		close(f->dfd);
	if (f->fd >= 0)
		worker_close(f->fd, f->seq, cfg.sync != SYNC_NEVER);
	free(f);
}

/* Close the current segment: a SEGMENT_END, then no more blocks. */
static void segment_close(uint64_t next_seq)
{
	struct xtc_seg_segment_end *e;
	struct segfile *f = store.cur;

	if (f == NULL)
		return;
	store.rotating = 1;
	e = f->fd >= 0 ? store_block_begin(sizeof *e) : NULL;
	if (e != NULL) {
		e->end_mono_ns = mono_ns();
		e->next_seq = next_seq;
		e->blocks = f->blocks;
		store_block_end(XTC_BLK_SEGMENT_END, 0, sizeof *e, NULL);
	}
	store.rotating = 0;
	store_buf_seal();
	/* The budget counts what the file will hold once its buffers are
	 * written, not what is on disk yet. */
	store_disk_set_bytes(f->seq, (uint64_t)f->reserved);
	f->closing = 1;
	store.cur = NULL;
	if (f->pending == 0)
		store_segfile_done(f);
}

/* The file header of segment seq, as of now. */
static void header_init(struct xtc_seg_file_hdr *h, uint64_t seq)
{
	char host[64] = "";
	uint8_t boot[16];

	clock_boot_id(boot);
	gethostname(host, sizeof host - 1);
	seg_file_hdr_init(h, seq, store.next_session_id, real_ns(), mono_ns(), boot, host);
}

/*
 * The new segment file fd (`name` in --dir) opened again with O_DIRECT,
 * for the writes of whole blocks (store_write.c); -1 when not asked for,
 * when the filesystem refuses it (said once: everything then goes
 * through the page cache, as before), or when the name no longer leads
 * to fd's file.
 */
static int segment_open_direct(int fd, const char *name)
{
	struct stat a, b;
	int dfd;

	if (!store.direct)
		return -1;
	dfd = openat(store.dirfd, name, O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (!store.direct_said)
			xlog("%s: O_DIRECT refused (%s); writing through the page cache", cfg.dir,
			     strerror(errno));
		store.direct_said = 1;
		return -1;
	}
	if (fstat(fd, &a) < 0 || fstat(dfd, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		close(dfd);
		return -1;
	}
	return dfd;
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
	f->fd = f->dfd = -1;
	store.cur = f;
	seg_path(path, sizeof path, cfg.dir, seq);
	seg_path(name, sizeof name, ".", seq);
	/* a new --dir in place of one removed under us: follow it */
	if (fstat(store.dirfd, &sb) == 0 && sb.st_nlink == 0) {
		int d = open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (d >= 0) {
			close(store.dirfd);
			store.dirfd = d;
		}
	}
	/* Never through a link, never over a file: whatever sits under the
	 * name is not ours to write (see store_seq_free). */
	fd = openat(store.dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0 && (errno == EEXIST || errno == ELOOP)) {
		store.cur = NULL;
		free(f);
		return -EEXIST;
	}
	if (fd < 0) {
		f->err = errno;
		if (!store.started)
			xlog_error("cannot create %s: %s; check that --dir is writable", path, strerror(f->err));
		else if (f->err != store.open_errno)
			xlog_error("cannot create %s: %s; records are counted as lost until a segment can be "
			     "created (tried every second)", path, strerror(f->err));
		store.open_errno = f->err;
		return -f->err;
	}
	if (store.open_errno != 0)
		xlog("created %s: writing again", path);
	store.open_errno = 0;
	store.started = 1;
	f->fd = fd;
	f->dfd = segment_open_direct(fd, name);
	f->direct = f->dfd >= 0;
	if (store.use_uring && sur_file(fd, f->dfd))
		store.reg_file = f;
	header_init(&f->hdr, seq);
	if (buf_put_raw(&f->hdr, sizeof f->hdr) < 0)
		f->need_header = 1; /* no buffer free: written before the first one */
	store_disk_add(seq, sizeof f->hdr, 1); /* we charge every block of it */
	store.seg_limit = cfg.segment_bytes;
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
		if (fstatat(store.dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
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
	uint64_t before = (uint64_t)store.cur->reserved, took, want;

	store.rotating = 1;
	store_evicted_block();
	session_restate_all();
	took = (uint64_t)store.cur->reserved - before;
	want = took * 4;
	if (want > cfg.max_bytes / 2)
		want = cfg.max_bytes / 2;
	if (want > store.seg_limit) {
		store.seg_limit = want;
		store_evict_for(want);
		store_evicted_block();
	}
	store.rotating = 0;
}

/* Move to a new segment: close this one, make room, open the next, and
 * restate the live sessions there. */
static void segment_rotate(void)
{
	uint64_t next = store_seq_free(store.cur->seq + 1);

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
	struct segfile *dead = store.cur;
	uint64_t seq = dead->seq;
	struct stat sb;

	if (dead->fd >= 0) {
		int free_bufs = 0;

		for (int i = 0; i < NBUF; i++)
			free_bufs += store.bufs[i].state == BUF_FREE;
		if (free_bufs >= 2 && fstat(store.dirfd, &sb) == 0 && sb.st_nlink == 0) {
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
	if (store.cur == NULL || store.rotating)
		return;
	store_check();
	store_flush();
}

/* ---------------------------------------------------------------------
 * Blocks
 */

/*
 * Where the block that belongs at the end of buffer b is built.  Blocks
 * are packed on disk, so a block's place in memory is rarely 8-byte
 * aligned (nor is a buffer's start: see buf_lay_out), while its header
 * and the payload structs hold fields that the callers and seg_blk_seal()
 * store to directly: a misaligned store is undefined behaviour (UBSan
 * stops on it; CPUs other than x86 may trap).  So the block is built at
 * the next aligned address and moved down into its place by
 * store_block_end().
 */
static size_t build_at(const struct wbuf *b)
{
	uintptr_t at = (uintptr_t)(b->data + b->len);

	return b->len + (size_t)(((at + SLACK) & ~(uintptr_t)SLACK) - at);
}

/* Every write buffer is full or waiting for the disk: the drain stops
 * here and goes on when a write completes (store_write.c), which counts
 * once a stop. */
static void starve(void)
{
	if (!store.starved)
		store.starved_total++;
	store.starved = 1;
}

/* The filling buffer with room for a block of payload len, rotating or
 * sealing as needed; NULL when there is none. */
static struct wbuf *block_room(uint32_t len)
{
	size_t total = sizeof(struct xtc_seg_blk_hdr) + len;
	struct wbuf *b;

	if (store.cur == NULL || total + SLACK + END_ROOM > BUF_SIZE)
		return NULL;
	if (!store.rotating && store.cur->blocks > 0 && store.cur->fd >= 0 &&
	    (uint64_t)store.cur->reserved + total + END_ROOM > store.seg_limit) {
		/* rotation needs two buffers: the end of this file, the next */
		int free_bufs = 0;

		for (int i = 0; i < NBUF; i++)
			free_bufs += store.bufs[i].state == BUF_FREE;
		if (free_bufs < 2) {
			starve();
			return NULL;
		}
		segment_rotate();
		if (store.cur == NULL)
			return NULL;
	}
	writer_reap_inline();
	b = store.filling;
	if (b != NULL && b->len + total + SLACK + (store.rotating ? 0 : END_ROOM) > BUF_SIZE) {
		store_buf_seal();
		b = NULL;
		/* the disk idle while the drain goes on: give it this buffer
		 * now; else it goes with the round's others at store_flush(),
		 * in one system call */
		if (store.use_uring && store.flen == 0)
			writer_submit_queued();
	}
	if (b == NULL && (b = store.filling = buf_take()) == NULL) {
		starve();
		return NULL;
	}
	return b;
}

void *store_block_begin(uint32_t len)
{
	struct wbuf *b = block_room(len);

	if (b == NULL)
		return NULL;
	b->begun = build_at(b);
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
	struct wbuf *b = store.filling;
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
	store.cur->reserved += (off_t)total;
	store.cur->blocks++;
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
		store_uid_charge(store.cur->seq, c->uid, total, 1);
	}
	b->ncommits++;
	b->records += c->records;
}


static void sync_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	if (store.cur != NULL && store.cur->end > 0 && store.cur->fd >= 0)
		worker_sync(store.cur->fd, store.cur->seq);
}
/* ---------------------------------------------------------------------
 * Init and teardown
 */

int store_init(struct ev_loop *loop)
{
	struct store_recovery *r;
	uint64_t seq;

	store.loop = loop;
	store.next_session_id = 1;
	store.dirfd = open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (store.dirfd < 0) {
		xlog_error("--dir %s: %s; create it or point --dir at a writable directory", cfg.dir,
		     strerror(errno));
		return -1;
	}
	for (int i = 0; i < NBUF; i++) {
		store.bufs[i].mem = store.bufs[i].data = aligned_alloc(DIO_ALIGN, BUF_SIZE + DIO_ALIGN);
		if (store.bufs[i].mem == NULL)
			return -1;
	}
	writer_init();
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
	ev_timer_init(&store.check_w, check_cb, 1.0, 1.0);
	ev_timer_start(loop, &store.check_w);
	store_quota_attribute();
	store_flush();
	if (cfg.sync == SYNC_PERIOD) {
		ev_timer_init(&store.sync_w, sync_cb, cfg.sync_ms / 1000.0, cfg.sync_ms / 1000.0);
		ev_timer_start(loop, &store.sync_w);
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
	ev_timer_stop(store.loop, &store.sync_w);
	if (cfg.sync == SYNC_PERIOD) {
		ev_timer_init(&store.sync_w, sync_cb, cfg.sync_ms / 1000.0, cfg.sync_ms / 1000.0);
		ev_timer_start(store.loop, &store.sync_w);
	}
}

/* Write out everything, end the segment (clean: with SEGMENT_END). */
void store_fini(int clean)
{
	ev_timer_stop(store.loop, &store.check_w);
	if (clean)
		segment_close(0);
	else
		store_buf_seal();
	writer_wait_all();
	worker_stop(); /* every closed segment synced (per --sync) and closed */
	writer_fini();
	for (int i = 0; i < NBUF; i++)
		free(store.bufs[i].mem);
	store_budget_fini();
	if (store.dirfd >= 0)
		close(store.dirfd);
}
