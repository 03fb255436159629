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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "proto/xtc_attach.h"
#include "lib/seg/idmap.h"
#include "lib/seg/seg.h"
#include "lib/seg/segname.h"
#include "xtcd/session_int.h"
#include "xtcd/shm_check.h"
#include "xtcd/xtcd.h"

#define BATCH        2048u          /* records per EVENTS block */
/* Records all sessions together may take in one drain round; each gets
 * an equal share of it, and never less than one whole block. */
#define ROUND_RECORDS (1u << 17)
/* Records all sessions together may have in write buffers not yet on
 * disk (a few MiB of blocks); each may hold an equal share, so that one
 * session's records never take every buffer. */
#define INFLIGHT_RECORDS (1u << 20)
#define NBUF_WAIT    16             /* writes to wait for a start record */

struct session *sessions;
struct session_totals session_ended; /* the counts of sessions that ended */
static struct idmap by_id;          /* session id -> struct session * */
static struct idmap uid_sessions;   /* uid -> how many sessions it has */
static struct idmap uid_shm;        /* uid -> bytes of its segments mapped */
static size_t nsessions;
static struct session *rr_next;     /* where the next drain round begins */
static uint64_t round_left = UINT64_MAX; /* records the session drained may still take */
static uint64_t inflight_share = UINT64_MAX; /* records in flight a session may hold */
uint64_t round_ns;                  /* xtcd's clock before this round read a head */
/* This round found a session waiting for its writes: ending, or a ring
 * whose producer is kept out of a good part of it by records read but
 * not yet on disk (store_wake_policy). */
static int round_waits;

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

size_t session_count(void)
{
	return nsessions;
}

size_t session_count_uid(uid_t uid)
{
	uint64_t n = 0;

	idmap_get(&uid_sessions, uid, &n);
	return (size_t)n;
}

uint64_t session_shm_uid(uid_t uid)
{
	uint64_t n = 0;

	idmap_get(&uid_shm, uid, &n);
	return n;
}

/* Commits come back for every block written: a lookup per block must
 * not cost a walk over thousands of sessions. */
static struct session *session_find(uint64_t id)
{
	uint64_t p;

	return idmap_get(&by_id, id, &p) ? (struct session *)(uintptr_t)p : NULL;
}

/* Add s to the live sessions (and their indexes): 0, or -ENOMEM. */
static int session_link(struct session *s)
{
	size_t n = session_count_uid(s->uid);
	uint64_t shm = session_shm_uid(s->uid);

	if (idmap_put(&by_id, s->id, (uint64_t)(uintptr_t)s) < 0 ||
	    idmap_put(&uid_sessions, s->uid, n + 1) < 0 ||
	    idmap_put(&uid_shm, s->uid, shm + s->size) < 0) {
		idmap_del(&by_id, s->id);
		if (n != 0) /* in place: cannot fail */
			idmap_put(&uid_sessions, s->uid, n);
		else
			idmap_del(&uid_sessions, s->uid);
		return -ENOMEM;
	}
	s->next = sessions;
	sessions = s;
	nsessions++;
	return 0;
}

static void session_unlink(struct session *s)
{
	struct session **pp;
	size_t n = session_count_uid(s->uid);
	uint64_t shm = session_shm_uid(s->uid);

	for (pp = &sessions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	if (rr_next == s)
		rr_next = s->next;
	idmap_del(&by_id, s->id);
	if (n > 1)
		idmap_put(&uid_sessions, s->uid, n - 1); /* in place: cannot fail */
	else
		idmap_del(&uid_sessions, s->uid);
	if (shm > s->size)
		idmap_put(&uid_shm, s->uid, shm - s->size);
	else
		idmap_del(&uid_shm, s->uid);
	nsessions--;
}

/* ---------------------------------------------------------------------
 * Validation
 */

/* Take ring i out of draining, with a CORRUPT block saying why. */
static void ring_mark_corrupt(struct session *s, uint32_t i, uint32_t reason, uint64_t head, uint64_t tail)
{
	struct sring *sr = &s->rings[i];
	struct xtc_seg_corrupt *c;
	char why[64];

	sr->corrupt = 1;
	s->lost += sr->last_head - sr->read; /* unread: gone with the ring */
	sr->read = sr->last_head;
	xlog_uid(XLOG_WARNING, s->uid, "session %llu (pid %d): ring %u broke an invariant (%s: head %llu, tail %llu); "
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

/* A record's ns: from its tick and the header's unit, rate and anchor
 * only (clock_conv), as the producer's own xtc_tail_read and dumps
 * compute it, so that every reader gives it the same time. */
static void ts_conv_init(struct clock_conv *c, const struct session *s)
{
	clock_conv_init(c, s->hdr.ts_unit, s->hdr.ts_hz, s->hdr.anchor_ts, s->hdr.anchor_mono_ns);
}

/* The same conversion for lib/seg's ring encoder (the same formula as
 * clock_conv_ns), with no hold of a record that comes out before its
 * predecessor: what the producer wrote shows, as every reader sees it. */
static struct seg_ticks ts_ticks(const struct clock_conv *c)
{
	if (c->ns)
		return (struct seg_ticks){ .identity = 1 };
	return (struct seg_ticks){ .anchor_ts = c->anchor_ts, .anchor_ns = c->anchor_ns,
	                           .mult = c->mult, .jitter = 0 };
}

/* ---------------------------------------------------------------------
 * Draining
 */

/* Records [from, to) of ring i, refused because the session's uid is over
 * its quota: one DROP of cause XTC_DROP_QUOTA in place of their EVENTS blocks,
 * carrying the ring tail to publish once it is written.  Returns 0, or -1
 * when the store is out of buffers. */
static int quota_drop(struct session *s, uint32_t i, uint64_t from, uint64_t to,
                      const struct clock_conv *tc)
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
	d->to_ts_ns = clock_conv_ns(tc, ring_at(s, i)->recs[(to - 1) & (s->hdr.ring_capacity - 1)].ts);
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
                              const struct clock_conv *tc)
{
	struct xtc_shm_ring *r = ring_at(s, i);
	struct sring *sr = &s->rings[i];
	struct seg_ring_batch b = { .recs = r->recs, .mask = s->hdr.ring_capacity - 1,
	                            .loop_id = sr->loop_id, .ticks = ts_ticks(tc) };
	uint64_t done = 0;

	while (from + done < to && round_left != 0) {
		uint32_t n = (uint32_t)(to - from - done < BATCH ? to - from - done : BATCH);
		uint32_t max;
		struct xtc_seg_events e;
		struct commit c;
		uint8_t *at;

		if (n > round_left)
			n = (uint32_t)round_left;
		if (s->inflight >= inflight_share)
			break; /* its share of the buffers is taken: the others' turn */
		max = (uint32_t)(sizeof(struct xtc_seg_events) + (size_t)n * SEG_MAX_REC_BYTES);
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
		round_left -= n;
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
static void ring_drain(struct session *s, uint32_t i, const struct clock_conv *tc)
{
	struct xtc_shm_ring *r = ring_at(s, i);
	struct sring *sr = &s->rings[i];
	uint64_t cap = s->hdr.ring_capacity, head, dropped, boundary;
	/* What the producer could see as we read its counters: writes that
	 * complete during the drain publish more (store.c reaps them), but a
	 * loss counted from here on happened no earlier than this tail plus
	 * a ring. */
	uint64_t pub_start = sr->published;
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
	if (fault == SHM_RING_OK)
		fault = ring_too_fast(sr, head);
	if (fault == SHM_RING_OK)
		fault = ring_unwritten(s, i, head);
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

		if (drop_block(s, i, gone, XTC_DROP_OVERWRITTEN, clock_conv_ns(tc, r->recs[(head - cap) & (cap - 1)].ts)) < 0)
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
		               sr->read < head ? clock_conv_ns(tc, r->recs[sr->read & (cap - 1)].ts)
		                               : mono_ns()) < 0)
			return;
		sr->last_dropped = dropped;
	}
	sr->read += ring_copy_out(s, i, sr->read, head, tc);
	sr->pub_at_drain = pub_start;
	/* An eighth of the ring: at 20 ms a period, a producer of 1.6M
	 * records/s in a default ring; a faster one has its room back as
	 * soon as the write completes, not a period later. */
	if (head - sr->published >= cap / 8)
		round_waits = 1;
	/* Re-armed only when the producer used it: a store to a line the
	 * producer reads, in each ring at every drain, costs more than the
	 * load, and most rings are idle. */
	if (!s->closing && __atomic_load_n(&r->nudge_armed, __ATOMIC_RELAXED) != 1)
		__atomic_store_n(&r->nudge_armed, 1, __ATOMIC_RELEASE);
}

/* Each ring's counters sit a whole ring apart, in pages of their own, and
 * are cold after a drain period: ask for all of them before reading any,
 * so that their misses overlap instead of adding up. */
static void rings_prefetch(const struct session *s)
{
	for (uint32_t i = 0; i < s->hdr.ring_count; i++) {
		const struct xtc_shm_ring *r = ring_at(s, i);

		__builtin_prefetch(&r->head);
		__builtin_prefetch(&r->nudge_armed);
		__builtin_prefetch(&r->state);
	}
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
	struct clock_conv tc;

	if (s->header_changed)
		return;
	if (!shm_check_intact((const struct xtc_shm_hdr *)s->map, &s->hdr)) {
		s->header_changed = 1;
		xlog_uid(XLOG_WARNING, s->uid, "session %llu (pid %d): the producer rewrote its segment header; ending the session",
		     (unsigned long long)s->id, (int)s->pid);
		return;
	}
	ts_conv_init(&tc, s);
	rings_prefetch(s);
	for (uint32_t i = 0; i < s->hdr.ring_count; i++)
		ring_drain(s, i, &tc);
	no_ring_drain(s);
}

/* ---------------------------------------------------------------------
 * Ending
 */

static void session_begin_close(struct session *s, int reason);

uint64_t session_produced(const struct session *s)
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
	session_unlink(s);
	ev_io_stop(xtcd_loop, &s->conn_w);
	ev_io_stop(xtcd_loop, &s->nudge_w);
	close(s->conn_fd);
	close(s->nudge_fd);
	worker_untouch(&s->touch);
	if (s->memfd >= 0)
		close(s->memfd);
	munmap(s->map, s->size);
	free(s->rings);
	free(s);
}

/* Write SESSION_END once everything is on disk.  Returns 1 when ended. */
static int session_try_end(struct session *s)
{
	struct xtc_seg_session_end *e;
	uint32_t reason;
	int complete;
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
	/* e is the block's place while it is built: store_block_end() may
	 * move the block, so what the log line says is taken first */
	reason = e->reason;
	complete = e->complete;
	store_block_end(XTC_BLK_SESSION_END, 0, sizeof *e, NULL);
	session_ended.produced += produced;
	session_ended.written += s->written;
	session_ended.dropped += s->dropped;
	session_ended.lost += s->lost;
	uid_ended(s, produced);
	if (produced != s->written + s->dropped + s->lost)
		xlog_error("session %llu: accounting mismatch: produced %llu != written %llu + dropped %llu + lost %llu",
		     (unsigned long long)s->id, (unsigned long long)produced,
		     (unsigned long long)s->written, (unsigned long long)s->dropped,
		     (unsigned long long)s->lost);
	xlog_uid(XLOG_INFO, s->uid, "session %llu (pid %d, %s) ended: %s, produced %llu, written %llu, dropped %llu, lost %llu%s",
	     (unsigned long long)s->id, (int)s->pid, s->start.comm,
	     segname_end_reason_text(reason, why, sizeof why), (unsigned long long)produced, (unsigned long long)s->written,
	     (unsigned long long)s->dropped, (unsigned long long)s->lost, complete ? ", complete" : "");
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

	round_ns = mono_ns();
	for (; s != NULL; s = next) {
		next = s->next;
		if (s->closing || s->header_changed) {
			if (!s->closing)
				session_begin_close(s, XTC_END_CORRUPT);
			session_drain(s);
			if (!session_try_end(s))
				round_waits = 1; /* its last writes end it */
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

/*
 * One drain round.  Every session gets its turn and an equal share of
 * the round (ROUND_RECORDS), beginning one session further on each time:
 * when the write buffers run out during a round, it is never the same
 * sessions that find them full, so a client with rings full of records
 * (or heads moved on without writing any) cannot starve the others.
 */
void session_drain_all(void)
{
	struct session *start = rr_next != NULL ? rr_next : sessions, *s = start;
	uint64_t share = UINT64_MAX;

	round_ns = mono_ns();
	round_waits = 0;
	store_reap(); /* the last round's writes: their tails, before the heads */
	/* alone, a session has no one to share with */
	inflight_share = UINT64_MAX;
	if (nsessions > 1) {
		share = ROUND_RECORDS / nsessions;
		inflight_share = INFLIGHT_RECORDS / nsessions;
		share = share < BATCH ? BATCH : share;
		inflight_share = inflight_share < BATCH ? BATCH : inflight_share;
	}
	for (size_t k = 0; s != NULL && k < nsessions; k++) {
		struct session *next = s->next != NULL ? s->next : sessions;

		round_left = share;
		session_drain(s);
		s = next;
		if (s == start)
			break;
	}
	round_left = inflight_share = UINT64_MAX;
	rr_next = start != NULL && start->next != NULL ? start->next : sessions;
	store_flush();
	session_tick();
	store_wake_policy(round_waits);
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
		xlog_error("session %llu: no buffer for its start record", (unsigned long long)s->id);
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
		xlog_uid(XLOG_WARNING, s->uid, "session %llu (pid %d): unexpected message of %zd bytes ignored",
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
	uint64_t cap = s->hdr.ring_capacity, before_ns = mono_ns();
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	sr->loop_id = r->loop_id;
	sr->start_dropped = sr->last_dropped = __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
	*before += sr->start_dropped;
	if (shm_check_adopt(head, tail) < 0) {
		xlog_uid(XLOG_WARNING, s->uid, "pid %d: ring %u has its tail (%llu) ahead of its head (%llu); not drained",
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
	sr->touch_from = sr->touch_next = sr->written_to = tail;
	sr->rate_head = head; /* what came before attach is bounded by the ring only */
	sr->rate_ns = before_ns;
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

/* A descriptor of our own for the client's memfd, with its own file
 * offset (lseek must not move the client's): a fresh open through /proc,
 * or else a duplicate.  -1 when neither works. */
static int memfd_reopen(int memfd)
{
	char path[40];
	int fd;

	snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : fcntl(memfd, F_DUPFD_CLOEXEC, 3);
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
	s->memfd = memfd_reopen(memfd);
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
	if (session_link(s) < 0) {
		snprintf(why, why_len, "xtcd is out of memory");
		goto refuse;
	}
	session_start_block(s, 0);
	store_flush();
	ev_io_init(&s->conn_w, conn_cb, conn_fd, EV_READ);
	s->conn_w.data = s;
	ev_io_start(xtcd_loop, &s->conn_w);
	ev_io_init(&s->nudge_w, nudge_cb, s->nudge_fd, EV_READ);
	s->nudge_w.data = s;
	ev_io_start(xtcd_loop, &s->nudge_w);
	xlog_uid(XLOG_INFO, uid, "session %llu: pid %d (%s) uid %u attached: %u rings x %u records%s",
	     (unsigned long long)s->id, (int)pid, s->start.comm, (unsigned)uid, s->hdr.ring_count,
	     s->hdr.ring_capacity, hm->attach_count ? ", re-attaching" : "");
	return 0;
refuse:
	if (s->nudge_fd > 0)
		close(s->nudge_fd);
	if (s->memfd >= 0)
		close(s->memfd);
	free(s->rings);
	free(s);
	munmap(map, hm->segment_size);
	return -EINVAL;
}

/* The counts per uid, ended sessions and live ones, for the metrics. */
size_t session_uid_totals(struct session_uid_totals *out, size_t max)
{
	size_t n = ended_nuids < max ? ended_nuids : max;

	if (n)  /* ended_uids is NULL before the first session ends */
		memcpy(out, ended_uids, n * sizeof(*out));
	for (struct session *s = sessions; s != NULL; s = s->next) {
		struct session_uid_totals *t = uid_row(out, &n, max, s->uid);

		if (t != NULL) {
			uid_add(t, s, session_produced(s));
			t->shm_mapped += s->size;
			t->shm_touched += session_touched(s);
		}
	}
	return n;
}

void session_init_clock(void);
void session_init_clock(void)
{
	clock_setup();
}
