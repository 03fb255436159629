/*
 * xtcd/session.c - one attached producer: drain its rings, count, end.
 *
 * The mapping is hostile input.  Everything this file relies on is kept
 * in private memory (geometry, our read index, the tail we published),
 * and every value read from the mapping is checked before use: a head
 * that goes backwards, a drop counter that goes backwards or a head that
 * jumps impossibly far marks that ring corrupt and it is drained no more;
 * a header that changes under us ends the session as `corrupt`.  Record
 * contents are only ever copied and encoded, never followed.
 *
 * Accounting, per session (exact by construction and checked at the end):
 *   produced = sum over rings of (last valid head - head at attach)
 *            + sum over rings of (last drop counter - drop counter at attach)
 *   written  = records in blocks that reached the disk
 *   dropped  = drop-counter deltas + records overwritten before we read them
 *   lost     = records in blocks whose write failed + records left unread
 *              in a ring that turned corrupt
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "proto/xtc_attach.h"
#include "seg.h"
#include "xtcd.h"

#define BATCH        2048u          /* records per EVENTS block */
#define MAX_JUMP     (1ULL << 36)   /* more records than any drain can see */

struct sring {
	uint64_t read;          /* next index to copy */
	uint64_t published;     /* tail last published to the producer */
	uint64_t pub_at_drain;  /* published when the last drain ended */
	uint64_t start;         /* head - unread at attach */
	uint64_t last_head;     /* last head that passed the checks */
	uint64_t final_head;    /* drain up to here once closing */
	uint64_t final_dropped; /* and count drops up to here */
	uint64_t start_dropped;
	uint64_t last_dropped;
	uint64_t last_ts;       /* ns of the last record drained */
	uint32_t loop_id;
	int      corrupt;
};

struct session {
	struct session *next;
	uint64_t id;
	pid_t    pid;
	uid_t    uid;
	gid_t    gid;
	int      conn_fd;
	ev_io    conn_w;
	int      nudge_fd;
	ev_io    nudge_w;
	uint8_t *map;
	uint64_t size;
	struct xtc_shm_hdr hdr;  /* the validated copy */
	struct sring *rings;
	struct xtc_seg_session_start start;
	uint64_t written, dropped, lost, inflight;
	uint64_t no_ring_start, no_ring_last, no_ring_final; /* emits with no ring */
	int      closing;
	int      reason;
	int      header_changed;
};

static struct session *sessions;

static inline struct xtc_shm_ring *ring_at(const struct session *s, uint32_t i)
{
	return (struct xtc_shm_ring *)(s->map + s->hdr.ring_offset + (uint64_t)i * s->hdr.ring_stride);
}

size_t session_count(void)
{
	size_t n = 0;

	for (struct session *s = sessions; s != NULL; s = s->next)
		n++;
	return n;
}

static struct session *session_find(uint64_t id)
{
	for (struct session *s = sessions; s != NULL; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

/* ---------------------------------------------------------------------
 * Validation
 */

/* Check a header copy against everything we can compute.  Returns NULL
 * or what is wrong. */
static const char *header_problem(const struct xtc_shm_hdr *h, uint64_t size)
{
	if (h->magic != XTC_SHM_MAGIC)
		return "the segment does not start with the xtc-tail magic";
	if (h->abi_major != XTC_SHM_MAJOR)
		return "the segment's ABI major version is not one this xtcd speaks";
	if (h->hdr_size != XTC_SHM_HDR_SIZE || h->rec_size != XTC_SHM_REC_SIZE ||
	    h->ring_hdr_size != XTC_SHM_RING_HDR_SIZE || h->ring_offset != XTC_SHM_HDR_SIZE)
		return "the segment header's sizes are not this ABI's";
	if (h->ring_count == 0 || h->ring_count > XTC_SHM_MAX_RINGS)
		return "the segment's ring count is out of range";
	if (h->ring_capacity < XTC_SHM_MIN_RING_CAPACITY || h->ring_capacity > XTC_SHM_MAX_RING_CAPACITY ||
	    (h->ring_capacity & (h->ring_capacity - 1)) != 0)
		return "the segment's ring capacity is not a power of two in range";
	if (h->ring_stride != xtc_shm_ring_stride(h->ring_capacity))
		return "the segment's ring stride does not match its capacity";
	if (h->segment_size != xtc_shm_segment_size(h->ring_count, h->ring_capacity) ||
	    h->segment_size != size)
		return "the segment's size does not match its geometry or the memfd";
	if (h->ts_unit != XTC_SHM_TS_MONO_NS && h->ts_unit != XTC_SHM_TS_TSC)
		return "the segment's timestamp unit is unknown";
	if (h->ts_unit == XTC_SHM_TS_TSC && (h->ts_hz < 1000000 || h->ts_hz > 100000000000ULL))
		return "the segment's tick rate is out of range";
	return NULL;
}

/* Whether the live header still says what it said at attach. */
static int header_intact(const struct session *s)
{
	const struct xtc_shm_hdr *live = (const struct xtc_shm_hdr *)s->map;

	return live->magic == s->hdr.magic && live->ring_count == s->hdr.ring_count &&
	       live->ring_capacity == s->hdr.ring_capacity &&
	       live->ring_stride == s->hdr.ring_stride && live->ring_offset == s->hdr.ring_offset;
}

/* Take ring i out of draining, with a CORRUPT block saying why. */
static void ring_mark_corrupt(struct session *s, uint32_t i, uint32_t reason, uint64_t head, uint64_t tail)
{
	struct sring *sr = &s->rings[i];
	struct xtc_seg_corrupt *c;

	sr->corrupt = 1;
	s->lost += sr->last_head - sr->read; /* unread: gone with the ring */
	sr->read = sr->last_head;
	xlog("session %llu (pid %d): ring %u broke an invariant (%s: head %llu, tail %llu); "
	     "no longer drained", (unsigned long long)s->id, (int)s->pid, i,
	     reason == 1 ? "head went backwards" : reason == 2 ? "head ran past the ring"
	                                         : "drop counter went backwards",
	     (unsigned long long)head, (unsigned long long)tail);
	c = store_block_begin(sizeof *c);
	if (c == NULL)
		return;
	c->session_id = s->id;
	c->ring = i;
	c->reason = reason;
	c->head = head;
	c->tail = tail;
	store_block_end(XTC_BLK_CORRUPT, 0, sizeof *c, NULL);
}

/* ---------------------------------------------------------------------
 * Time
 */

static struct clock_anchor daemon_start;

/* ns for a record's tick, with the daemon's own view of the TSC when it
 * has one (same host, same counter), else the producer's anchor. */
struct ts_conv {
	struct clock_anchor a;
	uint64_t hz;
	uint64_t mult;   /* ns per tick, as a 32.32 fixed-point number */
	int      ns;     /* ticks are already ns */
};

static void ts_conv_init(struct ts_conv *c, const struct session *s)
{
	c->ns = s->hdr.ts_unit == XTC_SHM_TS_MONO_NS;
	if (c->ns)
		return;
	if (clock_use_tsc) {
		clock_anchor_take(&c->a);
		c->hz = clock_hz();
		if (c->a.mono_ns > daemon_start.mono_ns + 1000000000u && c->a.ts > daemon_start.ts)
			c->hz = (uint64_t)((unsigned __int128)(c->a.ts - daemon_start.ts) * 1000000000u /
			                   (c->a.mono_ns - daemon_start.mono_ns));
		return;
	}
	c->a.ts = s->hdr.anchor_ts;
	c->a.mono_ns = s->hdr.anchor_mono_ns;
	c->hz = s->hdr.ts_hz;
}

/* A multiply instead of a 128-bit divide per record: the fixed-point
 * rate is exact to 2^-32 of a nanosecond per tick. */
static void ts_conv_rate(struct ts_conv *c)
{
	if (!c->ns)
		c->mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / c->hz);
}

static inline uint64_t ts_to_ns(const struct ts_conv *c, uint64_t ts)
{
	uint64_t d;

	if (c->ns)
		return ts;
	if (ts >= c->a.ts)
		return c->a.mono_ns + (uint64_t)(((unsigned __int128)(ts - c->a.ts) * c->mult) >> 32);
	d = (uint64_t)(((unsigned __int128)(c->a.ts - ts) * c->mult) >> 32);
	return d > c->a.mono_ns ? 0 : c->a.mono_ns - d;
}

/* ---------------------------------------------------------------------
 * Draining
 */

/* Encode records [from, to) of ring i into EVENTS blocks.  Returns how
 * many were taken (fewer when the store is out of buffers). */
static uint64_t ring_copy_out(struct session *s, uint32_t i, uint64_t from, uint64_t to,
                              const struct ts_conv *tc)
{
	struct xtc_shm_ring *r = ring_at(s, i);
	struct sring *sr = &s->rings[i];
	uint64_t mask = s->hdr.ring_capacity - 1, done = 0;

	while (from + done < to) {
		uint32_t n = (uint32_t)(to - from - done < BATCH ? to - from - done : BATCH);
		uint32_t max = (uint32_t)(sizeof(struct xtc_seg_events) + (size_t)n * SEG_MAX_REC_BYTES);
		struct xtc_seg_events *e = store_block_begin(max);
		uint8_t *body, *p;
		struct seg_codec codec;
		struct commit c;

		if (e == NULL)
			break;
		body = p = (uint8_t *)(e + 1);
		for (uint32_t k = 0; k < n; k++) {
			const volatile struct xtc_shm_rec *src = &r->recs[(from + done + k) & mask];
			xtc_tail_rec_t rec;

			rec.ts_ns = ts_to_ns(tc, src->ts);
			rec.source = src->source;
			rec.kind = src->kind;
			rec.pid.loop_id = src->loop_id;
			rec.pid.local_id = src->local_id;
			rec.pid.gen = src->gen;
			rec.detail = src->detail;
			if (k == 0) {
				memset(e, 0, sizeof *e);
				e->first_ts_ns = rec.ts_ns;
				seg_codec_begin(&codec, sr->loop_id, rec.ts_ns);
			}
			p += seg_encode_rec(&codec, p, &rec);
			sr->last_ts = rec.ts_ns;
		}
		e->session_id = s->id;
		e->ring = i;
		e->loop_id = sr->loop_id;
		e->first_index = from + done;
		e->count = n;
		e->body_len = (uint32_t)(p - body);
		done += n;
		c = (struct commit){ s->id, i, from + done, n };
		store_block_end(XTC_BLK_EVENTS, 0, (uint32_t)(sizeof *e + e->body_len), &c);
		s->inflight += n;
	}
	return done;
}

/* A DROP block for `count` records lost at this point of ring i. */
static void drop_block(struct session *s, uint32_t i, uint64_t count, uint32_t cause, uint64_t to_ts)
{
	struct sring *sr = &s->rings[i];
	struct xtc_seg_drop *d = store_block_begin(sizeof *d);

	s->dropped += count;
	if (d == NULL) {
		xlog("session %llu: %llu records dropped on ring %u (no buffer to record where)",
		     (unsigned long long)s->id, (unsigned long long)count, i);
		return;
	}
	memset(d, 0, sizeof *d);
	d->session_id = s->id;
	d->ring = i;
	d->loop_id = sr->loop_id;
	d->count = count;
	d->from_ts_ns = sr->last_ts;
	d->to_ts_ns = to_ts;
	d->cause = cause;
	store_block_end(XTC_BLK_DROP, 0, sizeof *d, NULL);
}

/* Drain ring i: records written before the first possible loss, the
 * DROP, then the rest, so the DROP sits where the loss happened.  A ring
 * cannot fill, and so cannot drop, before its head reaches the tail we
 * had published at the previous drain plus its capacity. */
static void ring_drain(struct session *s, uint32_t i, const struct ts_conv *tc)
{
	struct xtc_shm_ring *r = ring_at(s, i);
	struct sring *sr = &s->rings[i];
	uint64_t cap = s->hdr.ring_capacity, head, dropped, boundary;

	if (sr->corrupt)
		return;
	if (s->closing) {
		head = sr->final_head;
		dropped = sr->final_dropped;
	} else {
		head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		dropped = __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
		sr->loop_id = __atomic_load_n(&r->loop_id, __ATOMIC_RELAXED);
	}
	if (head < sr->last_head) {
		ring_mark_corrupt(s, i, 1, head, sr->published);
		return;
	}
	if (head - sr->last_head > MAX_JUMP) {
		ring_mark_corrupt(s, i, 2, head, sr->published);
		return;
	}
	if (dropped < sr->last_dropped) {
		ring_mark_corrupt(s, i, 3, head, sr->published);
		return;
	}
	sr->last_head = head;
	if (head - sr->read > cap) {
		/* Overwritten before we read them: a flight-recorder ring
		 * switched to drop-new while full. */
		uint64_t gone = head - cap - sr->read;

		sr->read = head - cap;
		drop_block(s, i, gone, 2, ts_to_ns(tc, r->recs[sr->read & (cap - 1)].ts));
	}
	if (dropped > sr->last_dropped) {
		boundary = sr->pub_at_drain + cap;
		if (boundary > head)
			boundary = head;
		if (sr->read < boundary)
			sr->read += ring_copy_out(s, i, sr->read, boundary, tc);
		if (sr->read < boundary)
			return; /* out of buffers: the DROP waits for its place */
		drop_block(s, i, dropped - sr->last_dropped, 1,
		           sr->read < head ? ts_to_ns(tc, r->recs[sr->read & (cap - 1)].ts) : mono_ns());
		sr->last_dropped = dropped;
	}
	sr->read += ring_copy_out(s, i, sr->read, head, tc);
	sr->pub_at_drain = sr->published;
	if (!s->closing)
		__atomic_store_n(&r->nudge_armed, 1, __ATOMIC_RELEASE);
}

/* Emits that found no free ring are losses too: a DROP with no ring. */
static void no_ring_drain(struct session *s)
{
	const struct xtc_shm_hdr *live = (const struct xtc_shm_hdr *)s->map;
	uint64_t n = s->closing ? s->no_ring_final
	                        : __atomic_load_n(&live->no_ring_count, __ATOMIC_RELAXED);
	struct xtc_seg_drop *d;

	if (n <= s->no_ring_last || n - s->no_ring_last > MAX_JUMP)
		return; /* nothing new, or nonsense we do not count */
	d = store_block_begin(sizeof *d);
	if (d == NULL)
		return;
	memset(d, 0, sizeof *d);
	d->session_id = s->id;
	d->ring = UINT32_MAX;
	d->loop_id = UINT32_MAX;
	d->count = n - s->no_ring_last;
	d->from_ts_ns = d->to_ts_ns = mono_ns();
	d->cause = 4;
	store_block_end(XTC_BLK_DROP, 0, sizeof *d, NULL);
	s->dropped += n - s->no_ring_last;
	s->no_ring_last = n;
}

static void session_drain(struct session *s)
{
	struct ts_conv tc;

	if (s->header_changed)
		return;
	if (!header_intact(s)) {
		s->header_changed = 1;
		xlog("session %llu (pid %d): the producer rewrote its segment header; ending the session",
		     (unsigned long long)s->id, (int)s->pid);
		return;
	}
	ts_conv_init(&tc, s);
	ts_conv_rate(&tc);
	for (uint32_t i = 0; i < s->hdr.ring_count; i++)
		ring_drain(s, i, &tc);
	no_ring_drain(s);
}

/* ---------------------------------------------------------------------
 * Ending
 */

static void session_begin_close(struct session *s, int reason);

static uint64_t session_produced(const struct session *s)
{
	uint64_t n = s->no_ring_last - s->no_ring_start;

	for (uint32_t i = 0; i < s->hdr.ring_count; i++)
		n += s->rings[i].last_head - s->rings[i].start +
		     s->rings[i].last_dropped - s->rings[i].start_dropped;
	return n;
}

/* Whether everything the session will ever write has been written. */
static int session_drained(const struct session *s)
{
	if (s->inflight != 0)
		return 0;
	for (uint32_t i = 0; i < s->hdr.ring_count; i++) {
		const struct sring *sr = &s->rings[i];

		if (!sr->corrupt && !s->header_changed &&
		    (sr->read < sr->final_head || sr->last_dropped != sr->final_dropped))
			return 0;
	}
	return s->header_changed || s->no_ring_last >= s->no_ring_final ||
	       s->no_ring_final - s->no_ring_last > MAX_JUMP;
}

static void session_free(struct session *s)
{
	struct session **pp;

	for (pp = &sessions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	ev_io_stop(xtcd_loop, &s->conn_w);
	ev_io_stop(xtcd_loop, &s->nudge_w);
	close(s->conn_fd);
	close(s->nudge_fd);
	munmap(s->map, s->size);
	free(s->rings);
	free(s);
}

/* Write SESSION_END once everything is on disk.  Returns 1 when ended. */
static int session_try_end(struct session *s)
{
	struct xtc_seg_session_end *e;
	uint64_t produced;
	int corrupt = s->header_changed;

	if (!session_drained(s))
		return 0;
	e = store_block_begin(sizeof *e);
	if (e == NULL)
		return 0;
	for (uint32_t i = 0; i < s->hdr.ring_count; i++) {
		struct sring *sr = &s->rings[i];

		corrupt |= sr->corrupt;
		s->lost += sr->last_head - sr->read; /* never read: header rewritten */
		sr->read = sr->last_head;
	}
	produced = session_produced(s);
	memset(e, 0, sizeof *e);
	e->session_id = s->id;
	e->end_mono_ns = mono_ns();
	e->reason = (uint32_t)(s->header_changed ? XTC_END_CORRUPT : s->reason);
	if (e->reason == XTC_END_DETACHED && s->lost != 0)
		e->reason = XTC_END_IO_ERROR;
	e->produced = produced;
	e->written = s->written;
	e->dropped = s->dropped;
	e->lost = s->lost;
	e->complete = e->reason == XTC_END_DETACHED && s->dropped == 0 && s->lost == 0 && !corrupt;
	store_block_end(XTC_BLK_SESSION_END, 0, sizeof *e, NULL);
	if (produced != s->written + s->dropped + s->lost)
		xlog("session %llu: accounting mismatch: produced %llu != written %llu + dropped %llu + lost %llu",
		     (unsigned long long)s->id, (unsigned long long)produced,
		     (unsigned long long)s->written, (unsigned long long)s->dropped,
		     (unsigned long long)s->lost);
	xlog("session %llu (pid %d, %s) ended: %s, produced %llu, written %llu, dropped %llu, lost %llu%s",
	     (unsigned long long)s->id, (int)s->pid, s->start.comm,
	     e->reason == XTC_END_DETACHED ? "detached" : e->reason == XTC_END_PRODUCER_DIED ? "producer died"
	     : e->reason == XTC_END_DAEMON_SHUTDOWN ? "daemon shutdown" : e->reason == XTC_END_CORRUPT ? "corrupt"
	     : "io error", (unsigned long long)produced, (unsigned long long)s->written,
	     (unsigned long long)s->dropped, (unsigned long long)s->lost, e->complete ? ", complete" : "");
	session_free(s);
	return 1;
}

/* No more records will come: drain to the heads as they are now. */
static void session_begin_close(struct session *s, int reason)
{
	if (s->closing)
		return;
	s->closing = 1;
	s->reason = reason;
	s->no_ring_final = __atomic_load_n(&((const struct xtc_shm_hdr *)s->map)->no_ring_count,
	                                   __ATOMIC_RELAXED);
	ev_io_stop(xtcd_loop, &s->conn_w);
	ev_io_stop(xtcd_loop, &s->nudge_w);
	for (uint32_t i = 0; i < s->hdr.ring_count; i++) {
		struct sring *sr = &s->rings[i];
		uint64_t head = __atomic_load_n(&ring_at(s, i)->head, __ATOMIC_ACQUIRE);
		uint64_t dropped = __atomic_load_n(&ring_at(s, i)->dropped, __ATOMIC_RELAXED);

		/* Out-of-range values make the final drain mark the ring. */
		sr->final_head = head;
		sr->final_dropped = dropped;
	}
}

/* Called when writes complete and after drains: finish closing sessions. */
void session_tick(void)
{
	struct session *s = sessions, *next;

	for (; s != NULL; s = next) {
		next = s->next;
		if (s->closing || s->header_changed) {
			if (!s->closing)
				session_begin_close(s, XTC_END_CORRUPT);
			session_drain(s);
			session_try_end(s);
		}
	}
}

void session_commit(const struct commit *c, int ok)
{
	struct session *s = session_find(c->session_id);
	struct sring *sr;

	if (s == NULL || c->ring >= s->hdr.ring_count)
		return;
	sr = &s->rings[c->ring];
	s->inflight -= c->records;
	if (ok)
		s->written += c->records;
	else
		s->lost += c->records;
	if (c->index > sr->published) {
		sr->published = c->index;
		if (!sr->corrupt)
			__atomic_store_n(&ring_at(s, c->ring)->tail, sr->published, __ATOMIC_RELEASE);
	}
}

void session_drain_all(void)
{
	for (struct session *s = sessions; s != NULL; s = s->next)
		session_drain(s);
	store_flush();
	session_tick();
}

/* SIGTERM: every session ends as daemon_shutdown once what is in its
 * rings now is on disk; the rest stays in the rings for the next xtcd. */
void session_shutdown_all(void)
{
	for (struct session *s = sessions; s != NULL; s = s->next)
		session_begin_close(s, XTC_END_DAEMON_SHUTDOWN);
	while (sessions != NULL) {
		session_drain_all();
		if (sessions != NULL)
			ev_run(xtcd_loop, EVRUN_ONCE);
	}
	store_flush();
}

/* ---------------------------------------------------------------------
 * Attach
 */

static void session_start_block(struct session *s, uint16_t flags)
{
	const char *set = settings_text();
	uint32_t slen = (uint32_t)strlen(set);
	struct xtc_seg_session_start *b = store_block_begin((uint32_t)sizeof *b + slen);

	if (b == NULL) {
		xlog("session %llu: no buffer for its start record", (unsigned long long)s->id);
		return;
	}
	*b = s->start;
	b->settings_len = slen;
	memcpy(b + 1, set, slen);
	store_block_end(XTC_BLK_SESSION_START, flags, (uint32_t)sizeof *b + slen, NULL);
}

void session_restate_all(void)
{
	for (struct session *s = sessions; s != NULL; s = s->next)
		session_start_block(s, XTC_SEG_F_RESTATED);
}

static void conn_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct session *s = w->data;
	char buf[XTC_ATTACH_MAX_MSG];
	const struct xtc_msg_hdr *h = (const struct xtc_msg_hdr *)buf;
	ssize_t n = recv(s->conn_fd, buf, sizeof buf, MSG_DONTWAIT);

	(void)loop; (void)revents;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		session_begin_close(s, XTC_END_PRODUCER_DIED);
	} else if ((size_t)n >= sizeof *h && h->magic == XTC_ATTACH_MAGIC && h->type == XTC_MSG_GOODBYE) {
		session_begin_close(s, XTC_END_DETACHED);
	} else {
		xlog("session %llu (pid %d): unexpected message of %zd bytes ignored",
		     (unsigned long long)s->id, (int)s->pid, n);
		return;
	}
	session_drain_all();
}

static void nudge_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct session *s = w->data;
	uint64_t v;

	(void)loop; (void)revents;
	if (read(s->nudge_fd, &v, sizeof v) < 0 && errno != EAGAIN)
		ev_io_stop(xtcd_loop, &s->nudge_w);
	session_drain_all();
}

/* Set up ring i's private state from what the mapping says now. */
static int ring_adopt(struct session *s, uint32_t i, uint64_t *before)
{
	struct xtc_shm_ring *r = ring_at(s, i);
	struct sring *sr = &s->rings[i];
	uint64_t cap = s->hdr.ring_capacity;
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	sr->loop_id = r->loop_id;
	sr->start_dropped = sr->last_dropped = __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
	*before += sr->start_dropped;
	if (tail > head) {
		xlog("pid %d: ring %u has its tail (%llu) ahead of its head (%llu); not drained",
		     (int)s->pid, i, (unsigned long long)tail, (unsigned long long)head);
		sr->corrupt = 1;
		return -1;
	}
	if (head - tail > cap) {
		*before += head - tail - cap; /* overwritten before we came */
		tail = head - cap;
		__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	}
	sr->read = sr->published = sr->pub_at_drain = sr->start = tail;
	sr->last_head = tail;
	sr->last_ts = mono_ns();
	__atomic_store_n(&r->nudge_armed, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Send ACCEPT with the nudge eventfd. */
static int send_accept(struct session *s)
{
	struct xtc_msg_accept m;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	                     .msg_controllen = sizeof cbuf };
	struct cmsghdr *c;

	memset(&m, 0, sizeof m);
	memset(cbuf, 0, sizeof cbuf);
	xtc_msg_init(&m.hdr, XTC_MSG_ACCEPT, sizeof m);
	m.session_id = s->id;
	m.drain_ms = cfg.drain_ms;
	m.has_nudge_fd = 1;
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &s->nudge_fd, sizeof(int));
	return sendmsg(s->conn_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof m ? 0 : -errno;
}

int session_attach(int conn_fd, int memfd, pid_t pid, uid_t uid, gid_t gid, const void *hello,
                   char *why, size_t why_len)
{
	const struct xtc_msg_hello *hm = hello;
	struct session *s;
	const char *problem;
	uint64_t before = 0;
	void *map;

	map = mmap(NULL, hm->segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (map == MAP_FAILED) {
		snprintf(why, why_len, "cannot map the segment: %s", strerror(errno));
		return -ENOMEM;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL) {
		munmap(map, hm->segment_size);
		snprintf(why, why_len, "xtcd is out of memory");
		return -ENOMEM;
	}
	s->map = map;
	s->size = hm->segment_size;
	memcpy(&s->hdr, map, sizeof s->hdr); /* one copy, then never trusted again */
	problem = header_problem(&s->hdr, s->size);
	if (problem != NULL) {
		snprintf(why, why_len, "%s", problem);
		goto refuse;
	}
	s->rings = calloc(s->hdr.ring_count, sizeof *s->rings);
	s->nudge_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->rings == NULL || s->nudge_fd < 0) {
		snprintf(why, why_len, "xtcd is out of memory or file descriptors");
		goto refuse;
	}
	s->id = store_next_session_id();
	s->pid = pid;
	s->uid = uid;
	s->gid = gid;
	s->conn_fd = conn_fd;
	for (uint32_t i = 0; i < s->hdr.ring_count; i++)
		ring_adopt(s, i, &before);
	s->no_ring_start = s->no_ring_last =
		__atomic_load_n(&((const struct xtc_shm_hdr *)map)->no_ring_count, __ATOMIC_RELAXED);
	before += s->no_ring_start;
	if (send_accept(s) < 0) {
		snprintf(why, why_len, "the client went away before it was accepted");
		goto refuse;
	}
	s->start.session_id = s->id;
	s->start.start_mono_ns = mono_ns();
	s->start.anchor_mono_ns = s->start.start_mono_ns;
	s->start.anchor_real_ns = real_ns();
	s->start.pid = (uint32_t)pid;
	s->start.uid = (uint32_t)uid;
	s->start.gid = (uint32_t)gid;
	s->start.ring_count = s->hdr.ring_count;
	s->start.ring_capacity = s->hdr.ring_capacity;
	s->start.ts_unit = s->hdr.ts_unit;
	s->start.ts_hz = s->hdr.ts_hz;
	s->start.dropped_before = before;
	memcpy(s->start.boot_id, s->hdr.boot_id, sizeof s->start.boot_id);
	memcpy(s->start.comm, s->hdr.comm, sizeof s->start.comm);
	s->start.comm[sizeof s->start.comm - 1] = '\0';
	s->start.attach_count = hm->attach_count;
	s->next = sessions;
	sessions = s;
	session_start_block(s, 0);
	store_flush();
	ev_io_init(&s->conn_w, conn_cb, conn_fd, EV_READ);
	s->conn_w.data = s;
	ev_io_start(xtcd_loop, &s->conn_w);
	ev_io_init(&s->nudge_w, nudge_cb, s->nudge_fd, EV_READ);
	s->nudge_w.data = s;
	ev_io_start(xtcd_loop, &s->nudge_w);
	xlog("session %llu: pid %d (%s) uid %u attached: %u rings x %u records%s",
	     (unsigned long long)s->id, (int)pid, s->start.comm, (unsigned)uid, s->hdr.ring_count,
	     s->hdr.ring_capacity, hm->attach_count ? ", re-attaching" : "");
	return 0;
refuse:
	if (s->nudge_fd > 0)
		close(s->nudge_fd);
	free(s->rings);
	free(s);
	munmap(map, hm->segment_size);
	return -EINVAL;
}

void session_init_clock(void);
void session_init_clock(void)
{
	clock_setup();
	clock_anchor_take(&daemon_start);
}
