/*
 * xtcd/session.c - one attached producer: drain its rings, count, end.
 *
 * The mapping is hostile input.  Everything this file relies on is kept
 * in private memory (geometry, our read index, the tail we published),
 * and every value read from the mapping is checked before use: a head
 * that goes backwards, a drop counter that goes backwards or a head that
 * jumps impossibly far marks that ring corrupt and it is drained no more;
 * a header that changes under us ends the session as `corrupt`.  Record
 * contents are only ever copied and encoded, never followed.  The checks
 * themselves are in shm_check.c, where fuzz/fuzz_shm.c drives them too.
 *
 * Accounting, per session (exact by construction and checked at the end):
 *   produced = sum over rings of (last valid head - head at attach)
 *            + sum over rings of (last drop counter - drop counter at attach)
 *   written  = records in blocks that reached the disk
 *   dropped  = drop-counter deltas + records overwritten before we read them
 *   lost     = records in blocks whose write failed + records left unread
 *              in a ring that turned corrupt
 * Records refused because the session's uid is over its quota (store.c
 * says why refusing) are dropped: a DROP of cause quota takes the place of
 * their EVENTS block, and carries the ring tail to publish once written.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "proto/xtc_attach.h"
#include "lib/seg/seg.h"
#include "lib/seg/segname.h"
#include "xtcd/shm_check.h"
#include "xtcd/xtcd.h"

#define BATCH        2048u          /* records per EVENTS block */
#define NBUF_WAIT    16             /* writes to wait for a start record */

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
	uint64_t ts_floor;      /* ns of the last record copied out (see ts_ticks) */
	uint32_t loop_id;
	int      corrupt;
	uint64_t touch_from;    /* first record index whose page we touch */
	uint64_t touch_next;    /* records below this were handed to the worker */
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
	struct worker_touch touch;   /* the worker's first touch of its rings */
	uint8_t *map;
	uint64_t size;
	struct xtc_shm_hdr hdr;  /* the validated copy */
	struct sring *rings;
	struct xtc_seg_session_start start;
	uint64_t written, dropped, lost, inflight;
	uint64_t bytes;          /* of its EVENTS blocks on disk */
	uint64_t quota_dropped;
	uint64_t rate_mark;      /* produced at the last sample */
	uint64_t rate_at;        /* mono ns of the last sample (or attach) */
	uint64_t rate;           /* records produced per second, last sample */
	uint64_t quota_drops_inflight; /* quota DROPs carrying a tail, unwritten */
	uint64_t no_ring_start, no_ring_last, no_ring_final; /* emits with no ring */
	int      closing;
	int      reason;
	int      header_changed;
};

static struct session *sessions;
static struct session_totals ended; /* the counts of sessions that ended */

/* The counts of ended sessions per uid, for the metrics. */
static struct session_uid_totals *ended_uids;
static size_t ended_nuids;

/* The row of uid in tab[0..*n), added (zero) if new and *n < max; NULL
 * when full. */
static struct session_uid_totals *uid_row(struct session_uid_totals *tab, size_t *n, size_t max,
                                          uid_t uid)
{
	for (size_t i = 0; i < *n; i++)
		if (tab[i].uid == uid)
			return &tab[i];
	if (*n == max)
		return NULL;
	tab[*n] = (struct session_uid_totals){ .uid = uid };
	return &tab[(*n)++];
}

static void uid_add(struct session_uid_totals *t, const struct session *s, uint64_t produced)
{
	t->sessions++;
	t->produced += produced;
	t->written += s->written;
	t->dropped += s->dropped;
	t->lost += s->lost;
}

static void uid_ended(const struct session *s, uint64_t produced)
{
	struct session_uid_totals *t = NULL, *grown;

	grown = realloc(ended_uids, (ended_nuids + 1) * sizeof *grown);
	if (grown != NULL)   /* room for one more: uid_row finds or adds */
		ended_uids = grown, t = uid_row(ended_uids, &ended_nuids, ended_nuids + 1, s->uid);
	if (t != NULL)
		uid_add(t, s, produced);
}

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

/* Take ring i out of draining, with a CORRUPT block saying why. */
static void ring_mark_corrupt(struct session *s, uint32_t i, uint32_t reason, uint64_t head, uint64_t tail)
{
	struct sring *sr = &s->rings[i];
	struct xtc_seg_corrupt *c;
	char why[32];

	sr->corrupt = 1;
	s->lost += sr->last_head - sr->read; /* unread: gone with the ring */
	sr->read = sr->last_head;
	xlog("session %llu (pid %d): ring %u broke an invariant (%s: head %llu, tail %llu); "
	     "no longer drained", (unsigned long long)s->id, (int)s->pid, i,
	     segname_corrupt_reason_text(reason, why, sizeof why),
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

/* How far apart two drains' conversions of one tick may come out. */
#define ANCHOR_JITTER_NS 1000u

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

/* The same conversion for lib/seg's ring encoder, which also holds a
 * record that comes out a little before its predecessor (each drain
 * converts with a fresh clock anchor, some tens of ns off the last one)
 * at the predecessor's time.  Anything more is what the producer wrote,
 * and shows. */
static struct seg_ticks ts_ticks(const struct ts_conv *c)
{
	if (c->ns)
		return (struct seg_ticks){ .identity = 1 };
	return (struct seg_ticks){ .anchor_ts = c->a.ts, .anchor_ns = c->a.mono_ns, .mult = c->mult,
	                           .jitter = ANCHOR_JITTER_NS };
}

/* ---------------------------------------------------------------------
 * Draining
 */

/* Records [from, to) of ring i, refused because the session's uid is over
 * its quota: one DROP of cause XTC_DROP_QUOTA in place of their EVENTS blocks,
 * carrying the ring tail to publish once it is written.  Returns 0, or -1
 * when the store is out of buffers. */
static int quota_drop(struct session *s, uint32_t i, uint64_t from, uint64_t to,
                      const struct ts_conv *tc)
{
	struct sring *sr = &s->rings[i];
	struct xtc_seg_drop *d = store_block_begin(sizeof *d);
	struct commit c = { .session_id = s->id, .ring = i, .index = to, .records = 0, .uid = s->uid };

	if (d == NULL)
		return -1;
	memset(d, 0, sizeof *d);
	d->session_id = s->id;
	d->ring = i;
	d->loop_id = sr->loop_id;
	d->count = to - from;
	d->from_ts_ns = sr->last_ts;
	d->to_ts_ns = ts_to_ns(tc, ring_at(s, i)->recs[(to - 1) & (s->hdr.ring_capacity - 1)].ts);
	d->cause = XTC_DROP_QUOTA;
	sr->last_ts = d->to_ts_ns; /* d moves at store_block_end() */
	store_block_end(XTC_BLK_DROP, 0, sizeof *d, &c);
	s->dropped += to - from;
	s->quota_dropped += to - from;
	s->quota_drops_inflight++;
	return 0;
}

/* Encode records [from, to) of ring i into EVENTS blocks (or drop them
 * while the uid is over its quota).  Returns how many were taken (fewer
 * when the store is out of buffers). */
static uint64_t ring_copy_out(struct session *s, uint32_t i, uint64_t from, uint64_t to,
                              const struct ts_conv *tc)
{
	struct xtc_shm_ring *r = ring_at(s, i);
	struct sring *sr = &s->rings[i];
	struct seg_ring_batch b = { .recs = r->recs, .mask = s->hdr.ring_capacity - 1,
	                            .loop_id = sr->loop_id, .ticks = ts_ticks(tc) };
	uint64_t done = 0;

	while (from + done < to) {
		uint32_t n = (uint32_t)(to - from - done < BATCH ? to - from - done : BATCH);
		uint32_t max = (uint32_t)(sizeof(struct xtc_seg_events) + (size_t)n * SEG_MAX_REC_BYTES);
		struct xtc_seg_events e;
		struct commit c;
		uint8_t *at;

		if (store_quota_blocked(s->uid)) {
			if (quota_drop(s, i, from + done, to, tc) == 0)
				done = to - from;
			break;
		}
		/* Built in its packed place (bytes only): no move at the end. */
		at = store_block_begin_bytes(max);
		if (at == NULL)
			break;
		memset(&e, 0, sizeof e);
		b.from = from + done;
		b.n = n;
		b.floor_ns = sr->ts_floor;
		e.body_len = (uint32_t)seg_encode_ring(&b, at + sizeof e);
		e.first_ts_ns = b.first_ns;
		sr->ts_floor = sr->last_ts = b.last_ns;
		e.session_id = s->id;
		e.ring = i;
		e.loop_id = sr->loop_id;
		e.first_index = from + done;
		e.count = n;
		memcpy(at, &e, sizeof e);
		done += n;
		c = (struct commit){ s->id, i, from + done, n, s->uid, 0 };
		store_block_end(XTC_BLK_EVENTS, 0, (uint32_t)(sizeof e + e.body_len), &c);
		s->inflight += n;
	}
	return done;
}

/* A DROP block for `count` records lost at this point of ring i.  Returns
 * 0, or -1 when the store is out of buffers: then nothing is counted, and
 * the caller leaves the ring as it is, so the next drain places the DROP
 * (with what was lost meanwhile) where the loss happened. */
static int drop_block(struct session *s, uint32_t i, uint64_t count, uint32_t cause, uint64_t to_ts)
{
	struct sring *sr = &s->rings[i];
	struct xtc_seg_drop *d = store_block_begin(sizeof *d);

	if (d == NULL)
		return -1;
	s->dropped += count;
	memset(d, 0, sizeof *d);
	d->session_id = s->id;
	d->ring = i;
	d->loop_id = sr->loop_id;
	d->count = count;
	d->from_ts_ns = sr->last_ts;
	d->to_ts_ns = to_ts;
	d->cause = cause;
	store_block_end(XTC_BLK_DROP, 0, sizeof *d, NULL);
	return 0;
}

/* On the ring's first lap, have the worker fault its pages into our
 * mapping a quarter of a ring ahead of the producer, so that the drains
 * never wait for page faults (see worker.c).  A ring that is never used,
 * or only a little, is never faulted in beyond that. */
static void ring_touch_ahead(struct session *s, uint32_t i, uint64_t head)
{
	struct sring *sr = &s->rings[i];
	uint64_t cap = s->hdr.ring_capacity;
	uint64_t want = head + cap / 4, end = sr->touch_from + cap;
	const size_t rec = sizeof ring_at(s, i)->recs[0];

	if (want > end)
		want = end;
	if (want <= sr->touch_next || want - sr->touch_next < cap / 16)
		return; /* done, or not worth a job yet */
	worker_touch(&s->touch, (const void *)ring_at(s, i)->recs, cap * rec,
	             (sr->touch_next & (cap - 1)) * rec, (want - sr->touch_next) * rec);
	sr->touch_next = want;
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
	enum shm_ring_fault fault;

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
	fault = shm_check_ring(head, dropped, sr->last_head, sr->last_dropped);
	if (fault != SHM_RING_OK) {
		ring_mark_corrupt(s, i, (uint32_t)fault, head, sr->published);
		return;
	}
	sr->last_head = head;
	if (!s->closing && __atomic_load_n(&r->state, __ATOMIC_RELAXED) == XTC_SHM_RING_BOUND)
		ring_touch_ahead(s, i, head);
	if (head - sr->read > cap) {
		/* Overwritten before we read them: a flight-recorder ring
		 * switched to drop-new while full. */
		uint64_t gone = head - cap - sr->read;

		if (drop_block(s, i, gone, XTC_DROP_OVERWRITTEN, ts_to_ns(tc, r->recs[(head - cap) & (cap - 1)].ts)) < 0)
			return;
		sr->read = head - cap;
	}
	if (dropped > sr->last_dropped) {
		boundary = sr->pub_at_drain + cap;
		if (boundary > head)
			boundary = head;
		if (sr->read < boundary)
			sr->read += ring_copy_out(s, i, sr->read, boundary, tc);
		if (sr->read < boundary)
			return; /* out of buffers: the DROP waits for its place */
		if (drop_block(s, i, dropped - sr->last_dropped, XTC_DROP_RING_FULL,
		               sr->read < head ? ts_to_ns(tc, r->recs[sr->read & (cap - 1)].ts)
		                               : mono_ns()) < 0)
			return;
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

	if (n <= s->no_ring_last || n - s->no_ring_last > SHM_MAX_JUMP)
		return; /* nothing new, or nonsense we do not count */
	d = store_block_begin(sizeof *d);
	if (d == NULL)
		return;
	memset(d, 0, sizeof *d);
	d->session_id = s->id;
	d->ring = XTC_SEG_RING_NONE;
	d->loop_id = UINT32_MAX;
	d->count = n - s->no_ring_last;
	d->from_ts_ns = d->to_ts_ns = mono_ns();
	d->cause = XTC_DROP_NO_FREE_RING;
	store_block_end(XTC_BLK_DROP, 0, sizeof *d, NULL);
	s->dropped += n - s->no_ring_last;
	s->no_ring_last = n;
}

static void session_drain(struct session *s)
{
	struct ts_conv tc;

	if (s->header_changed)
		return;
	if (!shm_check_intact((const struct xtc_shm_hdr *)s->map, &s->hdr)) {
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
	if (s->inflight != 0 || s->quota_drops_inflight != 0)
		return 0;
	for (uint32_t i = 0; i < s->hdr.ring_count; i++) {
		const struct sring *sr = &s->rings[i];

		if (!sr->corrupt && !s->header_changed &&
		    (sr->read < sr->final_head || sr->last_dropped != sr->final_dropped))
			return 0;
	}
	return s->header_changed || s->no_ring_last >= s->no_ring_final ||
	       s->no_ring_final - s->no_ring_last > SHM_MAX_JUMP;
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
	worker_untouch(&s->touch);
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
	char why[32];

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
	ended.produced += produced;
	ended.written += s->written;
	ended.dropped += s->dropped;
	ended.lost += s->lost;
	uid_ended(s, produced);
	if (produced != s->written + s->dropped + s->lost)
		xlog("session %llu: accounting mismatch: produced %llu != written %llu + dropped %llu + lost %llu",
		     (unsigned long long)s->id, (unsigned long long)produced,
		     (unsigned long long)s->written, (unsigned long long)s->dropped,
		     (unsigned long long)s->lost);
	xlog("session %llu (pid %d, %s) ended: %s, produced %llu, written %llu, dropped %llu, lost %llu%s",
	     (unsigned long long)s->id, (int)s->pid, s->start.comm,
	     segname_end_reason_text(e->reason, why, sizeof why), (unsigned long long)produced, (unsigned long long)s->written,
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
		sr->loop_id = __atomic_load_n(&ring_at(s, i)->loop_id, __ATOMIC_RELAXED);
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
	if (c->records == 0 && s->quota_drops_inflight != 0)
		s->quota_drops_inflight--; /* only a quota DROP commits no records */
	if (ok) {
		s->written += c->records;
		s->bytes += c->bytes;
	} else {
		s->lost += c->records;
	}
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

	/* Every write buffer busy (a burst of attaches under load): a
	 * session must not go unannounced, so wait for a write to finish. */
	for (int tries = 0; b == NULL && tries < NBUF_WAIT && store_wait_write() == 0; tries++)
		b = store_block_begin((uint32_t)sizeof *b + slen);
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
	if (shm_check_adopt(head, tail) < 0) {
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
	sr->touch_from = sr->touch_next = tail;
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
	problem = shm_check_header(&s->hdr, s->size);
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
	s->rate_at = s->start.start_mono_ns;
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

/* ---------------------------------------------------------------------
 * Live status
 */

void session_sample(void)
{
	uint64_t now = mono_ns();

	for (struct session *s = sessions; s != NULL; s = s->next) {
		uint64_t p = session_produced(s);

		if (now <= s->rate_at)
			continue;
		s->rate = (uint64_t)((double)(p - s->rate_mark) * 1e9 / (double)(now - s->rate_at));
		s->rate_mark = p;
		s->rate_at = now;
	}
}

/* Ring fills as the mapping shows them: head (untrusted, so clamped)
 * less the tail we published, for each ring bound to a thread or still
 * holding records. */
static void status_loops(const struct session *s, struct xtc_msg_status_session *m)
{
	uint64_t cap = s->hdr.ring_capacity;

	for (uint32_t i = 0; i < s->hdr.ring_count; i++) {
		const struct xtc_shm_ring *r = ring_at(s, i);
		const struct sring *sr = &s->rings[i];
		uint32_t state = __atomic_load_n(&r->state, __ATOMIC_RELAXED);
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		uint64_t used = head > sr->published ? head - sr->published : 0;
		struct xtc_status_loop *l;

		if (used > cap)
			used = cap;
		if (state != XTC_SHM_RING_BOUND && used == 0 && !sr->corrupt)
			continue;
		m->loops_bound++;
		if (m->loops_listed == XTC_STATUS_MAX_LOOPS)
			continue;
		l = &m->loops[m->loops_listed++];
		l->loop_id = __atomic_load_n(&r->loop_id, __ATOMIC_RELAXED);
		l->ring = (uint16_t)i;
		l->fill = sr->corrupt ? XTC_STATUS_FILL_CORRUPT : (uint16_t)(used * 10000 / cap);
	}
}

/* Records produced per second: the last once-a-second sample, or the
 * average since attach when there has been none yet. */
static uint64_t session_rate(const struct session *s, uint64_t now)
{
	if (s->rate_at != s->start.start_mono_ns || now <= s->rate_at)
		return s->rate;
	return (uint64_t)((double)session_produced(s) * 1e9 / (double)(now - s->rate_at));
}

size_t session_status(uid_t uid, struct xtc_msg_status_session *out, size_t max)
{
	uint64_t now = mono_ns();
	size_t n = 0;

	for (struct session *s = sessions; s != NULL && n < max; s = s->next) {
		struct xtc_msg_status_session *m = &out[n];

		if (uid != 0 && s->uid != uid)
			continue;
		memset(m, 0, sizeof *m);
		xtc_msg_init(&m->hdr, XTC_MSG_STATUS_SESSION, sizeof *m);
		m->session_id = s->id;
		m->uptime_ns = now - s->start.start_mono_ns;
		m->pid = (uint32_t)s->pid;
		m->uid = (uint32_t)s->uid;
		m->gid = (uint32_t)s->gid;
		m->ring_count = s->hdr.ring_count;
		m->ring_capacity = s->hdr.ring_capacity;
		m->flags = (s->closing ? 1u : 0u) | (store_quota_blocked(s->uid) ? 2u : 0u);
		memcpy(m->comm, s->start.comm, sizeof m->comm);
		m->events_per_s = session_rate(s, now);
		m->produced = session_produced(s);
		m->written = s->written;
		m->dropped = s->dropped;
		m->lost = s->lost;
		m->bytes = s->bytes;
		m->quota_dropped = s->quota_dropped;
		status_loops(s, m);
		n++;
	}
	return n;
}

void session_totals(struct session_totals *t)
{
	uint64_t now = mono_ns();

	*t = ended;
	t->events_per_s = 0;
	for (struct session *s = sessions; s != NULL; s = s->next) {
		t->produced += session_produced(s);
		t->written += s->written;
		t->dropped += s->dropped;
		t->lost += s->lost;
		t->events_per_s += session_rate(s, now);
	}
}

size_t session_uid_totals(struct session_uid_totals *out, size_t max)
{
	size_t n = ended_nuids < max ? ended_nuids : max;

	memcpy(out, ended_uids, n * sizeof(*out));
	for (struct session *s = sessions; s != NULL; s = s->next) {
		struct session_uid_totals *t = uid_row(out, &n, max, s->uid);

		if (t != NULL)
			uid_add(t, s, session_produced(s));
	}
	return n;
}

void session_init_clock(void);
void session_init_clock(void)
{
	clock_setup();
	clock_anchor_take(&daemon_start);
}
