/*
 * xtcd/store_write.c - the writer: sealed buffers to their segment files,
 * with io_uring (several writes in flight) or pwrite(2).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "xtcd/conf.h"
#include "xtcd/holdoff.h"
#include "xtcd/store_buf.h"
#include "xtcd/store_int.h"
#include "xtcd/xtcd.h"

/* ---------------------------------------------------------------------
 * Writing
 *
 * Sealed buffers wait in store.queue; once handed to the kernel they sit in
 * store.flight, in the order they were handed over, until they retire (in
 * that order).  Each write names its own offset, given when it is first
 * handed over (the end of the writes before it), so with io_uring several
 * are in flight at once, and one that comes back short is sent on from
 * where it stopped, wherever it sits in the line.  A buffer's commits are
 * published only when it retires, that is once it and every buffer before
 * it are written: a ring's tail never moves past a record that is not on
 * disk, whatever order the kernel finishes the writes in.
 *
 * Where the segment could be opened O_DIRECT, a buffer of DIO_MIN or
 * more is written in two parts: its whole DIO_ALIGN blocks with O_DIRECT
 * (the disk takes them from the buffer itself: no copy into the page
 * cache, which for a buffered write the kernel makes on an io-wq thread),
 * the first of them led by the bytes of that block the file already holds
 * (store.c lays the buffer out so: buf_lay_out), rewritten the same; and
 * the rest, less than a block, through the page cache, linked after it,
 * since a file may grow by O_DIRECT only in whole blocks and padding is
 * not a block a reader could take.  A direct write is the only one of its
 * file in flight (see direct_gate), and one that fails or comes back short
 * has its rest written again through the page cache, from where it
 * stopped, by the ordinary path below.
 */

/* What a completion's tag says: the buffer, and which write of it. */
#define TAG(buf, part) ((unsigned)(buf) | (unsigned)(part) << 8)
enum { PART_WHOLE, PART_DIRECT, PART_TAIL };

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
		store_segfile_done(f);
}

static struct wbuf *flight_pop(void)
{
	struct wbuf *b = store.flight[store.fhead];

	store.fhead = (store.fhead + 1) % NBUF;
	store.flen--;
	return b;
}

/* Put b back at the front of the queue of buffers to write. */
static void queue_front(struct wbuf *b)
{
	b->state = BUF_QUEUED;
	store.qhead = (store.qhead + NBUF - 1) % NBUF;
	store.queue[store.qhead] = b;
	store.qlen++;
}

/*
 * Bytes of b's write, at file offset off, that go O_DIRECT, counted from
 * data - lead: every whole block of it; 0 when it all goes through the
 * page cache: too small, begun already, or not where its layout expected
 * it (a write before it failed and was cut back).
 */
static size_t direct_len(const struct wbuf *b, off_t off)
{
	const struct segfile *f = b->file;
	size_t span;

	if (!store.direct || !f->direct || f->dfd < 0 || b->buffered || b->done != 0 || off != b->pred)
		return 0;
	span = (b->lead + b->len) & ~(size_t)(DIO_ALIGN - 1);
	return span >= DIO_MIN ? span : 0;
}

/* O_DIRECT was refused at a write (alignment or a filesystem without it
 * after all): from now on everything goes through the page cache. */
static void direct_refused(int err)
{
	if (store.direct)
		xlog_warn("an O_DIRECT write to %s failed (%s); writing through the page cache from now on",
		          cfg.dir, strerror(err));
	store.direct = 0;
}

/* Queue b's direct write of span bytes and the page-cache write of the
 * rest, linked after it. */
static int direct_send(struct wbuf *b, size_t span)
{
	struct segfile *f = b->file;
	unsigned idx = (unsigned)(b - store.bufs);
	int fixed = f == store.reg_file;
	size_t body = span - b->lead; /* of b's own bytes */
	int tail = body < b->len;
	struct sur_write w = { .fd = f->dfd, .slot = fixed ? 1 : -1, .buf = idx, .p = b->mem,
	                       .len = (unsigned)span, .off = b->pred - (off_t)b->lead,
	                       .tag = TAG(idx, PART_DIRECT), .link = tail };

	if (sur_space() < 1u + (unsigned)tail || sur_queue(&w) < 0)
		return -1;
	b->dio_len = span;
	b->parts = 1 + tail;
	b->part_res[0] = b->part_res[1] = 0;
	store.dio_inflight++;
	if (!tail)
		return 0;
	/* By its fd, not the slot: a linked write finds its file only when
	 * it starts, and by then the slots may hold the next segment's. */
	w = (struct sur_write){ .fd = f->fd, .slot = -1, .buf = idx, .p = b->data + body,
	                        .len = (unsigned)(b->len - body), .off = b->off + (off_t)body,
	                        .tag = TAG(idx, PART_TAIL) };
	return sur_queue(&w); /* room was checked */
}

/* Send what is left of b's write to the kernel (at the next submit). */
static int write_send(struct wbuf *b)
{
	unsigned idx = (unsigned)(b - store.bufs);
	size_t span = direct_len(b, b->off);
	struct sur_write w = { .fd = b->file->fd, .slot = b->file == store.reg_file ? 0 : -1, .buf = idx,
	                       .p = b->data + b->done, .len = (unsigned)(b->len - b->done),
	                       .off = b->off + (off_t)b->done, .tag = TAG(idx, PART_WHOLE) };

	if (span > 0)
		return direct_send(b, span);
	b->parts = 0;
	return sur_queue(&w);
}

/*
 * Both writes of a direct write are back: 0 when all of b is written;
 * else b->done says how much of it is, in one run from its start, the
 * rest is to go through the page cache, and the result is the error to
 * go on with (-EAGAIN: write the rest).
 */
static int direct_settle(struct wbuf *b)
{
	int body = b->part_res[0], tail = b->part_res[1];
	size_t done = 0, own = b->dio_len - b->lead;

	store.dio_inflight--;
	if (body > (int)b->lead)
		done = (size_t)body - b->lead < own ? (size_t)body - b->lead : own;
	if (body == (int)b->dio_len && tail > 0)
		done += (size_t)tail;
	if (done >= b->len)
		return 0;
	b->done = done;
	b->buffered = 1;
	if (body == -EINVAL || body == -EOPNOTSUPP || body == -ENOTBLK)
		direct_refused(-body);
	if (body < 0 && body != -EINVAL && body != -EOPNOTSUPP && body != -ENOTBLK)
		return body == -EINTR ? -EAGAIN : body; /* as a write through the page cache would */
	return -EAGAIN;
}

/* A write of b came back with res (bytes or -errno). */
static void write_result(unsigned tag, int res)
{
	unsigned idx = tag & 0xffu, part = tag >> 8;
	struct wbuf *b = idx < NBUF ? &store.bufs[idx] : NULL;

	if (b == NULL || b->state != BUF_INFLIGHT)
		return;
	if (part != PART_WHOLE) {
		if (b->parts == 0 || part > PART_TAIL)
			return;
		b->part_res[part - PART_DIRECT] = res;
		if (--b->parts > 0)
			return;
		res = direct_settle(b);
		if (res == 0) {
			b->state = BUF_WRITTEN;
			sio_observe(b->submit_ns);
			return;
		}
	}
	if (res == 0)
		res = -EIO; /* no progress on a regular file: as pwrite says it */
	if (res > 0 && b->done + (size_t)res < b->len && !store.unwinding) {
		b->done += (size_t)res; /* short: send the rest, at its offset */
		if (write_send(b) == 0)
			return;
		res = -EAGAIN;
	}
	if ((res == -EAGAIN || res == -EINTR) && !store.unwinding && write_send(b) == 0)
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
	store.unwinding = 1;
	for (size_t i = 0; i < store.flen; i++)
		while (store.flight[(store.fhead + i) % NBUF]->state == BUF_INFLIGHT &&
		       sur_wait(write_result) == 0)
			;
	store.unwinding = 0;
	f->direct = 0; /* the buffers taken were laid out for the offsets before */
	if (ftruncate(f->fd, f->end) < 0)
		xlog_error("cannot cut segment %llu back after a failed write: %s",
		     (unsigned long long)f->seq, strerror(errno));
	if (f->end == 0)
		f->need_header = 1; /* it held the header: write it again first */
	if (err != store.last_errno)
		xlog_error("writing segment %llu failed: %s; %llu records lost",
		     (unsigned long long)f->seq, strerror(err), (unsigned long long)b->records);
	store.last_errno = err;
	if (err == ENOSPC || err == EDQUOT)
		store_evict_oldest(STORE_FS_FULL);
	f->wend = f->end; /* (buf_done may free f: its last buffer, closing) */
	buf_done(b, 0);
	/* All behind it are f's: a new segment's first write waits for
	 * every write of the old one (segment_rotate). */
	while (store.flen > 0) {
		struct wbuf *later = store.flight[(store.fhead + store.flen - 1) % NBUF];

		store.flen--;
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
	while (store.flen > 0) {
		struct wbuf *b = store.flight[store.fhead];

		if (b->state == BUF_WRITTEN) {
			flight_pop();
			store.last_errno = 0;
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
	f->direct = 0; /* the buffers were laid out for offsets before it */
	f->end = f->wend = (off_t)sizeof f->hdr;
	f->reserved += (off_t)sizeof f->hdr;
	store_disk_set_bytes(f->seq, (uint64_t)f->reserved);
	return 0;
}

/* pwrite: b's whole blocks O_DIRECT now, where they go so (see
 * direct_len); what is not written so goes through the page cache. */
static void write_now_direct(struct wbuf *b)
{
	size_t span = direct_len(b, b->off);
	ssize_t n;

	if (span == 0)
		return;
	do
		n = pwrite(b->file->dfd, b->mem, span, b->pred - (off_t)b->lead);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EINVAL || errno == EOPNOTSUPP || errno == ENOTBLK))
		direct_refused(errno);
	if (n > (ssize_t)b->lead)
		b->done = (size_t)n - b->lead < span - b->lead ? (size_t)n - b->lead : span - b->lead;
	b->buffered = 1;
}

/* pwrite: b's write, whole, now. */
static void write_now(struct wbuf *b)
{
	int err;

	b->parts = 0;
	write_now_direct(b);
	err = b->done == b->len ? 0 : sio_pwrite_all(b->file->fd, b->data + b->done, b->len - b->done,
	                                              b->off + (off_t)b->done);

	b->state = err != 0 ? BUF_FAILED : BUF_WRITTEN;
	b->res = -err;
	if (err == 0)
		sio_observe(b->submit_ns);
}

/* ---------------------------------------------------------------------
 * Small writes inline
 *
 * At a low or steady rate a drain round seals one small buffer (at 1M
 * events/s, ~135 KB a 20 ms period).  io_uring cannot write it without
 * a thread: ext4 takes no non-blocking buffered write, so every one goes
 * to an io-wq worker, woken on an idle core to copy bytes another core
 * wrote, which costs more than the copy itself (bench/RESULTS.md).  So
 * a write of at most inline_max bytes, with nothing of its file in the
 * kernel ahead of it (the one in-order line stays: it is written, then
 * retired like any other), is made with pwrite on the loop, as --pwrite
 * makes every write.  A page-cache write is quick unless the kernel
 * throttles it (dirty pages over the limit, a slow disk): one that held
 * the loop longer than INLINE_SLOW_NS sends the writes back to io_uring
 * for a while, so the drain is not held by the disk.  The next inline
 * write after that while is a probe, which the kernel may hold again (a
 * dirty-page throttle pauses a writer up to 200 ms): each slow one
 * doubles the while, up to INLINE_HOLDOFF_MAX, and only that long
 * without a slow one brings it back to INLINE_HOLDOFF_NS, so a disk that
 * stays slow holds the loop a few times in its first minute and then
 * once a minute at most.  Large writes (bursts, high rates) always go to
 * io_uring.
 */

#define INLINE_SLOW_NS      1000000ull            /* 1 ms */
#define INLINE_HOLDOFF_NS   1000000000ull         /* 1 s, then 2, 4, ... */
#define INLINE_HOLDOFF_MAX  64000000000ull

static struct store_write_counts counts;
static struct holdoff inline_off = HOLDOFF_INIT(INLINE_HOLDOFF_NS, INLINE_HOLDOFF_MAX);

void store_write_counts(struct store_write_counts *out)
{
	*out = counts;
	out->starved = store.starved_total;
}

/* Whether b, the last buffer handed over, is written inline. */
static int inline_fits(const struct wbuf *b)
{
	if (b->len - b->done > cfg.inline_max || direct_len(b, b->off) > 0)
		return 0;
	for (size_t i = 0; i + 1 < store.flen; i++)
		if (store.flight[(store.fhead + i) % NBUF]->state == BUF_INFLIGHT)
			return 0;
	return !holdoff_held(&inline_off, sio_now_ns());
}

/* b's write with pwrite now, timed: a slow one turns inline writes off
 * for a while. */
static void write_inline(struct wbuf *b)
{
	uint64_t t0 = sio_now_ns(), end, hold;

	write_now(b);
	counts.inline_writes++;
	end = sio_now_ns();
	hold = holdoff_note(&inline_off, end, end - t0 > INLINE_SLOW_NS);
	if (hold == 0)
		return;
	counts.inline_slow++;
	xlog("a %zu-byte write held the event loop %.1f ms; small writes go to io_uring for %.0f s",
	     b->len, (double)(end - t0) / 1e6, (double)hold / 1e9);
}

/* io_uring would not take the writes: wait for those it has, then write
 * the rest (and from now on everything) with pwrite. */
static void uring_give_up(int err)
{
	xlog_warn("io_uring submit failed (%s); falling back to pwrite", strerror(-err));
	for (size_t i = 0; i < store.flen; i++) {
		struct wbuf *b = store.flight[(store.fhead + i) % NBUF];

		while (b->state == BUF_INFLIGHT && sur_wait(write_result) == 0)
			;
	}
	ev_io_stop(store.loop, &store.uring_w);
	sur_exit(); /* drops the writes never submitted */
	store.use_uring = 0;
	store.dio_inflight = 0;
	for (size_t i = 0; i < store.flen; i++) {
		struct wbuf *b = store.flight[(store.fhead + i) % NBUF];

		if (b->state == BUF_INFLIGHT)
			write_now(b);
	}
}

/*
 * Whether b waits for the writes in flight: an O_DIRECT write runs
 * beside the others of its file, not after them (the kernel serialises
 * page-cache writes to a file, not direct ones), so it goes only when
 * none is in flight, and none goes while it is: else the file could grow
 * past a hole for a while, which a follower would read as zeros.
 */
static int direct_gate(const struct wbuf *b)
{
	if (!store.use_uring || store.flen == 0)
		return 0;
	return store.dio_inflight > 0 || direct_len(b, b->off < 0 ? b->file->wend : b->off) > 0;
}

/* Hand the queued buffers to the writer, in order. */
void writer_submit_queued(void)
{
	int err;

	while (store.qlen > 0) {
		struct wbuf *b = store.queue[store.qhead];
		struct segfile *f = b->file;

		/* a header written by hand goes after every write before it */
		if (store.flen > 0 && b->off < 0 && f->need_header)
			break;
		/* and a new segment's first write after every write of the old
		 * one: readers (xtcd --follow) take a newer segment to mean that
		 * every older one is complete, and write_failed() unwinds the
		 * writes of one file at a time.  The loop goes on meanwhile. */
		if (store.flen > 0 && store.flight[(store.fhead + store.flen - 1) % NBUF]->file != f)
			break;
		if (direct_gate(b))
			break;
		store.qhead = (store.qhead + 1) % NBUF;
		store.qlen--;
		b->state = BUF_INFLIGHT;
		store.flight[(store.fhead + store.flen++) % NBUF] = b;
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
		if (!store.use_uring) {
			counts.pwrite_writes++;
			write_now(b);
		} else if (inline_fits(b)) {
			write_inline(b);
		} else if (write_send(b) == 0) {
			counts.uring_writes++;
		} else {
			counts.pwrite_writes++;
			write_now(b);
		}
	}
	if (store.use_uring && (err = sur_submit()) < 0 && err != -EAGAIN && err != -EBUSY)
		uring_give_up(err);
}

/* Hand over what is queued and retire what is written.  A failure puts
 * the buffers behind it back in the queue: they go again at once (each
 * round loses the failed buffer, so this ends). */
void writer_submit_next(void)
{
	for (;;) {
		size_t queued;

		writer_submit_queued();
		queued = store.qlen;
		retire(1);
		/* again when a failure queued buffers anew, or when the line
		 * emptied in front of a new segment's first write */
		if (store.qlen <= queued && !(store.flen == 0 && store.qlen > 0))
			break;
	}
}

/* Completions there are, read without a system call, retired: for the
 * drain, which so frees buffers and publishes tails while it runs. */
void writer_reap_inline(void)
{
	if (store.use_uring && store.flen > 0 && sur_reap(write_result) > 0) {
		retire(0);
		if (store.flen == 0 && store.qlen > 0)
			writer_submit_queued(); /* a new segment's writes, held for the old one's */
	}
}

/* ---------------------------------------------------------------------
 * Completion wakes
 *
 * io_uring signals its eventfd (and so wakes the loop, uring_cb) at a
 * completion only while something waits for one: a drain starved of
 * buffers, a write held in the queue behind the writes in flight (a new
 * segment's first), a closing segment, or what the sessions say they
 * wait for (store_wake_policy's argument: a session ending, a producer
 * short of room).  Otherwise the completions are read by the next drain
 * round itself (store_reap, and writer_reap_inline at each block), which
 * the drain timer runs at least once a drain period: at a steady rate a
 * round's write is done long before the next round, and a wake to reap
 * it would cost an epoll_wait and an eventfd read a period for nothing
 * (the kernel's own work per write waits for the loop too: store_io.c,
 * SUR_SETUP).
 * So a completion waits at most a drain period to be read, and one that
 * is waited for wakes the loop at once (but in the race below, a period).
 */

static int wake_on = 1;     /* the kernel's default: signal every completion */
static int wake_waits;      /* the sessions' last word (store_wake_policy) */

/* Whether anything in the store waits for a write to complete. */
static int writer_waits(void)
{
	if (store.starved || store.qlen > 0)
		return 1;
	for (size_t i = 0; i < store.flen; i++)
		if (store.flight[(store.fhead + i) % NBUF]->file->closing)
			return 1;
	return 0;
}

void store_wake_policy(int waits)
{
	int on;

	wake_waits = waits;
	if (!store.use_uring)
		return;
	on = store.flen > 0 && (waits || writer_waits());
	if (on == wake_on)
		return;
	wake_on = on;
	/* Completions that came while the signal was off signalled nothing:
	 * have uring_cb read them now.  (One posted by a kernel that read the
	 * flag just before it changed may signal nothing either: the next
	 * round reads it, a drain period later at most.) */
	if (sur_wake(on) > 0 && on)
		ev_feed_event(store.loop, &store.uring_w, EV_READ);
}

void store_reap(void)
{
	writer_reap_inline();
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
	writer_submit_next(); /* the rest of a short write; retires, failures too */
	/* A drain that stopped because every buffer was waiting for the
	 * disk goes on now that one is free, not at the next nudge or
	 * timer: under overload that wait is what made io_uring slower
	 * than pwrite, whose writes never leave the drain without one. */
	if (store.starved && !store.rotating) {
		store.starved = 0;
		session_drain_all(); /* which sets the wakes anew */
		return;
	}
	store_wake_policy(wake_waits);
}

/* pwrite: the buffers a starved drain filled are written now; let the
 * loop run its other watchers once, then drain on instead of waiting for
 * the next nudge or timer (a producer whose ring is full nudges no more).
 * io_uring resumes in uring_cb() instead, when a write completes. */
static void resume_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	ev_idle_stop(loop, w);
	if (store.starved && !store.rotating) {
		store.starved = 0;
		session_drain_all();
	}
}

void store_flush(void)
{
	store_buf_seal();
	writer_submit_next();
	/* io_uring resumes it at a completion, if one is to come */
	if (store.starved && (!store.use_uring || store.flen == 0) && store.loop != NULL &&
	    !ev_is_active(&store.resume_w))
		ev_idle_start(store.loop, &store.resume_w);
}

/* Whether a buffer of segment seq is queued or in flight: such a
 * segment is not deleted yet (the records it holds are counted from the
 * file), which only a budget so small that the segment just closed is
 * the oldest one ever meets; its turn comes at the next eviction. */
int store_segment_writing(uint64_t seq)
{
	for (size_t i = 0; i < store.flen; i++)
		if (store.flight[(store.fhead + i) % NBUF]->file->seq == seq)
			return 1;
	for (size_t i = 0; i < store.qlen; i++)
		if (store.queue[(store.qhead + i) % NBUF]->file->seq == seq)
			return 1;
	return 0;
}

/* Block until a write in flight completes, so a buffer frees up: for
 * the few records that must not wait for the loop (a session's start).
 * Returns 0, or -1 when nothing is in flight to wait for. */
int store_wait_write(void)
{
	store_flush();
	if (store.flen == 0 || !store.use_uring)
		return -1;
	if (sur_wait(write_result) < 0)
		return -1;
	writer_submit_next();
	return 0;
}

/* ---------------------------------------------------------------------
 * Init and teardown
 */

void writer_init(void)
{
	uint8_t *bufs[NBUF];

	ev_idle_init(&store.resume_w, resume_cb);
	store.direct = cfg.direct;
	if (cfg.force_pwrite)
		return;
	for (int i = 0; i < NBUF; i++)
		bufs[i] = store.bufs[i].data;
	if (sur_init(bufs, NBUF, BUF_SIZE + DIO_ALIGN) < 0) {
		xlog_warn("io_uring is unavailable here; writing with pwrite");
		return;
	}
	store.use_uring = 1;
	ev_io_init(&store.uring_w, uring_cb, sur_efd(), EV_READ);
	ev_io_start(store.loop, &store.uring_w);
}

void writer_wait_all(void)
{
	ev_idle_stop(store.loop, &store.resume_w);
	writer_submit_next();
	while (store.use_uring && store.flen > 0 && sur_wait(write_result) == 0)
		writer_submit_next();
}

void writer_fini(void)
{
	if (store.use_uring) {
		ev_io_stop(store.loop, &store.uring_w);
		sur_exit();
	}
}
