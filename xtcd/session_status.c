/*
 * xtcd/session_status.c - the live status of the sessions: rates sampled
 * once a second, one STATUS_SESSION each for xtcd --status, and the
 * counts over every session since start (status.c sends them).
 */
#include "config.h"

#include <string.h>

#include "lib/common/clock.h"
#include "proto/xtc_attach.h"
#include "xtcd/session_int.h"
#include "xtcd/xtcd.h"

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

uint64_t session_shm_touched_uid(uid_t uid)
{
	uint64_t n = 0;

	for (const struct session *s = sessions; s != NULL; s = s->next)
		if (s->uid == uid)
			n += session_touched(s);
	return n;
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

	*t = session_ended;
	t->events_per_s = 0;
	for (struct session *s = sessions; s != NULL; s = s->next) {
		t->produced += session_produced(s);
		t->written += s->written;
		t->dropped += s->dropped;
		t->lost += s->lost;
		t->events_per_s += session_rate(s, now);
	}
}
