/*
 * xtcd/report/report.c - xtcd --report DIR: one pass over the segments that turns
 * the record into verdicts (see report.h for what it answers and
 * report_int.h for how the pieces fit).
 *
 *   int xtcd_report(const char *dir, const struct read_opts *ro,
 *                   const struct report_opts *o, FILE *out);
 *
 * This file drives the pass: the reader callbacks that fill the model
 * (report_model.c), the per-ring merge that puts each session's records
 * back in time order, the dispatch of each record to the analyses, the end
 * of each session (where open chains and silent loops are judged, once
 * every DROP of the session has been read), and the order of the output.
 * The analyses call down into the model, never back into this file.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/seg/seg.h"
#include "xtcd/read/print.h"
#include "lib/seg/segread.h"

#include "xtcd/report/report_int.h"
#include "xtcd/read/view.h"

/* ---- options ---- */

/* Defaults for struct report_opts. */
void report_opts_init(struct report_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->stall_ns = REPORT_DEFAULT_STALL_NS;
	o->top = REPORT_DEFAULT_TOP;
	o->flags = "--report";
}

/* The --export formats the report writes. */
int report_export_format_valid(const char *fmt)
{
	return fmt && (strcmp(fmt, "pprof") == 0 || strcmp(fmt, "collapsed") == 0);
}

/* "500ms", "2s", "1.5s", "3m", "250us", "100ns", "1h". */
int report_parse_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 },
	};
	char *end;
	double v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	v = strtod(s, &end);
	if (end == s || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0 && v * units[i].mul < 1.8e19) {
			*ns = (uint64_t)(v * units[i].mul + 0.5);
			return 0;
		}
	}
	return -EINVAL;
}

/* "FROM..TO". */
int report_parse_window(const char *s, uint64_t now_ns, struct report_window *w, char *why,
                        size_t why_len)
{
	const char *dots = strstr(s, "..");
	char from[128];
	size_t n;

	if (!dots || (n = (size_t)(dots - s)) == 0 || n >= sizeof(from) || !dots[2]) {
		snprintf(why, why_len, "expected a window FROM..TO, such as '-10m..-5m' or "
		         "'2026-11-29 10:00:00..2026-11-29 10:05:00'");
		return -EINVAL;
	}
	memcpy(from, s, n);
	from[n] = '\0';
	if (filter_parse_time(from, now_ns, &w->from) < 0 ||
	    filter_parse_time(dots + 2, now_ns, &w->to) < 0) {
		snprintf(why, why_len, "each side must be 'YYYY-MM-DD HH:MM:SS[.ffffff]' (local), "
		         "'YYYY-MM-DDTHH:MM:SS[Z]', '@EPOCH', now, or a time ago such as -5m");
		return -EINVAL;
	}
	if (w->to <= w->from) {
		snprintf(why, why_len, "the window ends before it begins");
		return -EINVAL;
	}
	return 0;
}

/* ---- sessions ---- */

/* drain_ms from a session's settings text, or 0. */
static unsigned settings_drain_ms(const struct segread_session *ss)
{
	const char *p = ss && ss->settings ? strstr(ss->settings, "drain_ms=") : NULL;

	return p ? (unsigned)strtoul(p + 9, NULL, 10) : 0;
}

/* Fill what a session's start says. */
static void sess_know(struct rp_sess *s, const struct segread_session *ss)
{
	size_t i;
	unsigned drain;

	if (!ss || s->ss)
		return;
	s->ss = ss;
	s->os_pid = ss->start.pid;
	for (i = 0; i < sizeof(ss->start.comm) && ss->start.comm[i] && i + 1 < sizeof(s->comm); i++) {
		unsigned char c = (unsigned char)ss->start.comm[i];

		s->comm[i] = c > 0x20 && c < 0x7f && c != ';' ? (char)c : '?';
	}
	s->comm[i] = '\0';
	/* A ring silent for a few drain periods no longer holds the others
	 * back; and a ring first heard from (or heard again) in a drain can hold
	 * records up to a drain pass older than what the others delivered. */
	drain = settings_drain_ms(ss);
	if ((uint64_t)drain * 4000000ull > s->horizon)
		s->horizon = (uint64_t)drain * 4000000ull;
	s->slack = (uint64_t)(drain ? drain : 20) * 3000000ull + 10000000ull;
}

/* ---- the merge ---- */

/* Heap of rings ordered by the time of their oldest buffered record. */
static uint64_t ring_head_t(const struct rp_sess *s, uint32_t ri)
{
	const struct rp_ring *r = &s->rings[ri];

	return r->q[r->head].t;
}

/* Swap two heap slots, keeping the rings' positions right. */
static void heap_swap(struct rp_sess *s, size_t a, size_t b)
{
	uint32_t t = s->heap[a];

	s->heap[a] = s->heap[b];
	s->heap[b] = t;
	s->rings[s->heap[a]].heap_pos = (uint32_t)a;
	s->rings[s->heap[b]].heap_pos = (uint32_t)b;
}

/* Move slot i up to its place. */
static void heap_up(struct rp_sess *s, size_t i)
{
	while (i > 0 && ring_head_t(s, s->heap[(i - 1) / 2]) > ring_head_t(s, s->heap[i])) {
		heap_swap(s, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* Move slot i down to its place. */
static void heap_down(struct rp_sess *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < s->nheap && ring_head_t(s, s->heap[l]) < ring_head_t(s, s->heap[m]))
			m = l;
		if (r < s->nheap && ring_head_t(s, s->heap[r]) < ring_head_t(s, s->heap[m]))
			m = r;
		if (m == i)
			return;
		heap_swap(s, i, m);
		i = m;
	}
}

/* The merge state of ring `ring` of s, created if new. */
static struct rp_ring *sess_ring(struct report *rep, struct rp_sess *s, uint32_t ring)
{
	struct rp_ring *r;

	if (s->nrings && s->rings[s->last_ring].ring == ring)
		return &s->rings[s->last_ring];
	for (size_t i = 0; i < s->nrings; i++) {
		if (s->rings[i].ring == ring) {
			s->last_ring = i;
			return &s->rings[i];
		}
	}
	if (rp_grow(&s->rings, &s->rings_cap, s->nrings + 1, sizeof(*s->rings)) < 0 ||
	    rp_grow(&s->heap, &s->heap_cap, s->nrings + 1, sizeof(*s->heap)) < 0) {
		report_oom(rep);
		return NULL;
	}
	r = &s->rings[s->nrings];
	memset(r, 0, sizeof(*r));
	r->ring = ring;
	r->heap_pos = RP_NONE;
	s->last_ring = s->nrings;
	return &s->rings[s->nrings++];
}

/* Append e to r's FIFO (its capacity a power of two); 0 or -ENOMEM. */
static int fifo_push(struct rp_ring *r, const struct rp_ev *e)
{
	if (r->len == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 256;
		struct rp_ev *nq = malloc(ncap * sizeof(*nq));

		if (!nq)
			return -ENOMEM;
		for (size_t i = 0; i < r->len; i++)
			nq[i] = r->q[(r->head + i) & (r->cap - 1)];
		free(r->q);
		r->q = nq;
		r->cap = ncap;
		r->head = 0;
	}
	r->q[(r->head + r->len) & (r->cap - 1)] = *e;
	r->len++;
	return 0;
}

/* The time up to which every ring still producing has delivered, less
 * the slack a ring not heard from yet may still fill. */
static uint64_t watermark(const struct rp_sess *s)
{
	uint64_t wm = s->max_t > s->slack ? s->max_t - s->slack : 0;

	for (size_t i = 0; i < s->nrings; i++) {
		const struct rp_ring *r = &s->rings[i];

		if (r->last_t + s->horizon >= s->max_t && r->last_t < wm)
			wm = r->last_t;
	}
	return wm;
}

static void dispatch(struct report *rep, struct rp_sess *s, const struct rp_ev *e);
static void finish_sess(struct report *rep, struct rp_sess *s);

/* Hand the records that are in order to the analyses (all of them when
 * all is set: the session ended or the pass did). */
static void release(struct report *rep, struct rp_sess *s, int all)
{
	uint64_t wm = all ? UINT64_MAX : watermark(s);

	while (s->nheap && !rep->fatal) {
		uint32_t ri = s->heap[0];
		struct rp_ring *r = &s->rings[ri];
		struct rp_ev e = r->q[r->head];

		if (e.t > wm) {
			if (s->buffered <= RP_MERGE_MAX / 2)
				break;
			s->forced++;
		}
		r->head = (r->head + 1) & (r->cap - 1);
		if (--r->len == 0) {
			r->heap_pos = RP_NONE;
			s->heap[0] = s->heap[--s->nheap];
			if (s->nheap) {
				s->rings[s->heap[0]].heap_pos = 0;
				heap_down(s, 0);
			}
		} else {
			heap_down(s, 0);
		}
		s->buffered--;
		if (e.t > s->out_t)
			s->out_t = e.t;
		dispatch(rep, s, &e);
	}
	s->since_release = 0;
}

/* Take one record of ring `ring` of s into the ring's FIFO. */
static void merge_push(struct report *rep, struct rp_sess *s, uint32_t ring,
                       const struct rp_ev *e)
{
	struct rp_ring *r = sess_ring(rep, s, ring);

	if (!r)
		return;
	if (fifo_push(r, e) < 0) {
		report_oom(rep);
		return;
	}
	if (r->heap_pos == RP_NONE) {
		r->heap_pos = (uint32_t)s->nheap;
		s->heap[s->nheap++] = (uint32_t)(r - s->rings);
		heap_up(s, s->nheap - 1);
	}
	if (e->t > r->last_t)
		r->last_t = e->t;
	if (e->t > s->max_t)
		s->max_t = e->t;
	if (e->t < s->out_t)
		s->late++;
	s->buffered++;
	if (++s->since_release >= 512 || s->buffered > RP_MERGE_MAX)
		release(rep, s, 0);
}

/* ---- dispatch ---- */

/* Kinds that concern a proc (pid is a proc, not a loop). */
static int proc_kind(uint32_t kind)
{
	switch (kind) {
	case XTC_TAIL_SPAWN: case XTC_TAIL_EXIT: case XTC_TAIL_RUN: case XTC_TAIL_PARK:
	case XTC_TAIL_PARK_TASK: case XTC_TAIL_MBOX_HWM: case XTC_TAIL_SEND: case XTC_TAIL_RECV:
		return 1;
	default:
		return 0;
	}
}

/* One record, in time order, to every analysis. */
static void dispatch(struct report *rep, struct rp_sess *s, const struct rp_ev *e)
{
	struct rp_loop *l = report_loop(rep, s, e->loop);
	struct rp_proc *p = NULL;
	size_t li;

	if (!l)
		return;
	li = (size_t)(l - s->loops);
	if (proc_kind(e->kind) && !(p = report_proc(rep, s, &e->pid, e->loop)))
		return;
	if (!s->first_t || e->t < s->first_t)
		s->first_t = e->t;
	if (e->t > s->last_t)
		s->last_t = e->t;
	s->events++;
	if (e->view & RP_VIEW_MAIN) {
		s->view_events++;
		s->kinds[e->kind < RP_NKINDS ? e->kind : RP_NKINDS]++;
		if (!s->view_first || e->t < s->view_first)
			s->view_first = e->t;
		if (e->t > s->view_last)
			s->view_last = e->t;
		if (!rep->view_first || e->t < rep->view_first)
			rep->view_first = e->t;
		if (e->t > rep->view_last)
			rep->view_last = e->t;
		rep->view_events++;
	}
	for (int w = 0; w < 2; w++) {
		if (e->view & (RP_VIEW_A << w)) {
			rep->win_kinds[w][e->kind < RP_NKINDS ? e->kind : RP_NKINDS]++;
			rep->win_events[w]++;
			l->win_events[w]++;
		}
	}
	report_loops_event(rep, s, l, e);
	report_chain_event(rep, s, e, p);
	report_offcpu_event(rep, s, e, p);
	l = &s->loops[li];  /* the off-CPU pass may have added a loop */
	report_lat_event(rep, s, l, e, p);
	report_adapter_event(rep, s, e);
}

/* ---- reader callbacks ---- */

/* Which views an event at t is in. */
static unsigned event_view(struct report *rep, const struct segread_item *it)
{
	const struct filter *f = &rep->ro->filter;
	unsigned v = 0;

	if (!rep->filtered || filter_match(f, rep->r, it))
		v |= RP_VIEW_MAIN;
	if (rep->o->diff) {
		struct filter nt = *f;

		nt.has_since = nt.has_until = 0;
		if (filter_match(&nt, rep->r, it)) {
			for (int w = 0; w < 2; w++)
				if (it->real_ns >= rep->o->diff_win[w].from &&
				    it->real_ns < rep->o->diff_win[w].to)
					v |= RP_VIEW_A << w;
		}
	}
	return v;
}

/* An event record. */
static void on_event(struct report *rep, const struct segread_item *it)
{
	struct rp_sess *s = report_sess(rep, it->u.event.session_id);
	struct rp_ev e;

	if (!s || s->finalized)
		return;
	sess_know(s, it->session);
	e.t = it->real_ns;
	e.detail = it->u.event.rec.detail;
	e.pid = it->u.event.rec.pid;
	e.kind = it->u.event.rec.kind < 0xffff ? (uint16_t)it->u.event.rec.kind : 0xffff;
	e.loop = filter_event_loop(it);
	e.view = (uint8_t)event_view(rep, it);
	e.source = it->u.event.rec.source < 0x100 ? (uint8_t)it->u.event.rec.source : 0;
	if (!rep->tl_started) {
		rep->tl_started = 1;
		rep->tl_t0 = e.t > 100000000u ? e.t - 100000000u : 0;
		rep->tl_width = 1000000u;
	}
	merge_push(rep, s, it->u.event.ring, &e);
}

/* A DROP record. */
static void on_drop(struct report *rep, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	struct rp_sess *s = report_sess(rep, d->session_id);
	struct rp_drop *rd;

	if (!s)
		return;
	sess_know(s, it->session);
	if (rp_grow(&s->drops, &s->drops_cap, s->ndrops + 1, sizeof(*s->drops)) < 0) {
		report_oom(rep);
		return;
	}
	rd = &s->drops[s->ndrops++];
	rd->from = it->real_ns;
	rd->to = it->real_ns;
	if (d->to_ts_ns > d->from_ts_ns && d->from_ts_ns)
		rd->to = it->real_ns + (d->to_ts_ns - d->from_ts_ns);
	else if (!d->from_ts_ns && it->session)
		rd->from = it->session->start.anchor_real_ns - (it->session->start.anchor_mono_ns -
		           it->session->start.start_mono_ns);
	rd->count = d->count;
	rd->ring = d->ring;
	rd->loop = d->loop_id;
	rd->cause = d->cause;
	s->dropped_seen += d->count;
}

/* Session start, end, evictions, corrupt rings. */
static void on_other(struct report *rep, const struct segread_item *it)
{
	struct rp_sess *s;

	switch (it->type) {
	case SEGREAD_SESSION_START:
		if (!(s = report_sess(rep, it->u.start.ss->session_id)))
			return;
		sess_know(s, it->session);
		if (it->u.start.first && it->u.start.restated)
			s->evicted = 1;
		break;
	case SEGREAD_SESSION_END:
		if (!(s = report_sess(rep, it->u.end.session_id)) || s->finalized)
			return;
		sess_know(s, it->session);
		s->ended = 1;
		s->end = it->u.end;
		s->end_t = it->real_ns;
		finish_sess(rep, s);
		break;
	case SEGREAD_EVICTED:
		rep->evicted_records += it->u.evicted.ev.records;
		for (uint32_t i = 0; i < it->u.evicted.ev.session_count; i++) {
			uint64_t at;

			if (idmap_get(&rep->sess_index, it->u.evicted.ids[i], &at))
				rep->sess[at]->evicted = 1;
		}
		break;
	case SEGREAD_CORRUPT:
		if ((s = report_sess(rep, it->u.corrupt.session_id))) {
			if (s->corrupt_rings++ == 0)
				s->corrupt_reason = it->u.corrupt.reason;
			else if (s->corrupt_reason != it->u.corrupt.reason)
				s->corrupt_reason = UINT32_MAX;
		}
		break;
	default:
		break;
	}
}

/* segread item callback. */
static int report_item_cb(const struct segread_item *it, void *user)
{
	struct report *rep = user;

	if (it->has_real) {
		if (rep->damage_open) {
			rep->damage[rep->ndamage - 1].to = it->real_ns;
			rep->damage_open = 0;
		}
		if (it->real_ns > rep->last_real)
			rep->last_real = it->real_ns;
	}
	if (it->type == SEGREAD_SEGMENT_BEGIN || it->type == SEGREAD_SEGMENT_END)
		return 0;
	if (rep->sess_filtered && it->type != SEGREAD_EVICTED &&
	    !filter_match(&rep->sess_filter, rep->r, it))
		return 0;
	if (it->type == SEGREAD_EVENT)
		on_event(rep, it);
	else if (it->type == SEGREAD_DROP)
		on_drop(rep, it);
	else
		on_other(rep, it);
	return rep->fatal ? 1 : 0;
}

/* segread problem callback: say it, and remember the hole it leaves. */
static void report_problem_cb(const struct segread_problem *p, void *user)
{
	struct report *rep = user;
	struct rp_damage *d;

	if (!rep->o->chains)        /* --export chrome reports problems itself */
		view_problem(rep->out, p);
	if (rep->damage_open)
		return;
	if (rp_grow(&rep->damage, &rep->damage_cap, rep->ndamage + 1, sizeof(*rep->damage)) < 0) {
		report_oom(rep);
		return;
	}
	d = &rep->damage[rep->ndamage++];
	d->from = rep->last_real;
	d->to = UINT64_MAX;
	d->kind = (int)p->kind;
	d->seq = p->seq;
	rep->damage_open = 1;
}

/* ---- the end of a session ---- */

/* Release what s holds back, then judge its open chains and loops. */
static void finish_sess(struct report *rep, struct rp_sess *s)
{
	if (s->finalized)
		return;
	release(rep, s, 1);
	report_offcpu_finish(rep, s);
	report_loops_finish(rep, s);
	report_chain_finish(rep, s);
	report_adapter_finish(rep, s);
	for (size_t i = 0; i < s->nrings; i++)
		free(s->rings[i].q);
	free(s->rings);
	free(s->heap);
	s->rings = NULL;
	s->heap = NULL;
	s->nrings = s->rings_cap = s->nheap = s->heap_cap = 0;
	s->finalized = 1;
}

/* ---- output ---- */

/* How a session ended, in words. */
static void sess_end_words(const struct rp_sess *s, char *buf, size_t len)
{
	char reason[32];

	if (!s->ended)
		snprintf(buf, len, "open (no SESSION_END: still recording, or xtcd stopped "
		         "without closing it)");
	else
		snprintf(buf, len, "%s%s",
		         segname_end_reason(s->end.reason, reason, sizeof(reason)),
		         s->end.complete ? ", complete" : ", INCOMPLETE");
}

/* The first lines: the directory, its sessions and span. */
static void text_heading(struct report *rep, const char *dir)
{
	uint64_t segs, bytes, first, last;
	char a[64], b[64], d[32];

	seg_dir_usage(dir, &segs, &bytes, &first, &last);
	fprintf(rep->out, "xtcd report of %s: %zu session%s, %" PRIu64 " segment%s (%s)",
	        dir, rep->nsess, rep->nsess == 1 ? "" : "s", segs, segs == 1 ? "" : "s",
	        print_bytes(d, sizeof(d), bytes));
	if (rep->view_events)
		fprintf(rep->out, ", %s .. %s (%s), %" PRIu64 " events",
		        print_wall(a, sizeof(a), rep->view_first), print_wall_clock(b, sizeof(b), rep->view_last),
		        print_duration(d, sizeof(d), rep->view_last - rep->view_first), rep->view_events);
	fputc('\n', rep->out);
	if (rep->ro->filter.has_loop || rep->ro->filter.has_kind || rep->ro->filter.has_since ||
	    rep->ro->filter.has_until)
		fprintf(rep->out, "filtered: findings that begin in the window and on the loop, and "
		        "statistics of the matching records; chains and loops were judged on every "
		        "record of the selected sessions\n");
	if (rep->evicted_records)
		fprintf(rep->out, "older history was deleted under the byte budget: %" PRIu64
		        " records\n", rep->evicted_records);
}

/* One block per session on what its record can support. */
static void text_record(struct report *rep)
{
	char a[64], b[64], end[160];

	fprintf(rep->out, "\nRECORD (what the verdicts can rest on)\n");
	for (size_t i = 0; i < rep->nsess; i++) {
		const struct rp_sess *s = rep->sess[i];

		sess_end_words(s, end, sizeof(end));
		fprintf(rep->out, "  session %" PRIu64 " (%s pid %" PRIu32 "): %" PRIu64 " events, %zu "
		        "loop%s, %" PRIu64 " procs; ended %s\n", s->id, s->comm, s->os_pid, s->events,
		        s->nloops, s->nloops == 1 ? "" : "s", s->nprocs, end);
		if (s->ndrops)
			fprintf(rep->out, "    %zu DROP record%s, %" PRIu64 " records dropped: absences "
			        "that overlap them are reported as \"cannot tell\"\n", s->ndrops,
			        s->ndrops == 1 ? "" : "s", s->dropped_seen);
		if (s->ended && s->end.lost)
			fprintf(rep->out, "    %" PRIu64 " records lost to I/O at unknown times: no "
			        "absence in this session can be trusted\n", s->end.lost);
		if (s->ended && s->end.dropped > s->dropped_seen)
			fprintf(rep->out, "    %" PRIu64 " dropped records with no DROP record to place "
			        "them\n", s->end.dropped - s->dropped_seen);
		if (s->evicted)
			fprintf(rep->out, "    its older records were deleted under the byte budget: "
			        "nothing is known before %s\n", print_wall(a, sizeof(a), s->first_t));
		if (s->corrupt_rings)
			fprintf(rep->out, "    %" PRIu64 " ring%s taken out of draining as corrupt (%s%s)\n",
			        s->corrupt_rings, s->corrupt_rings == 1 ? "" : "s",
			        s->corrupt_reason == UINT32_MAX ? "for different reasons: see --cat" : "",
			        s->corrupt_reason == UINT32_MAX ? ""
			                : segname_corrupt_reason_text(s->corrupt_reason, a, sizeof(a)));
		if (s->late || s->forced)
			fprintf(rep->out, "    %" PRIu64 " records arrived out of order beyond the merge "
			        "window: joins near them may be wrong\n", s->late + s->forced);
	}
	for (size_t i = 0; i < rep->ndamage; i++)
		fprintf(rep->out, "  damaged data in segment %06" PRIu64 ": records of any session "
		        "may be missing from %s to %s\n", rep->damage[i].seq,
		        rep->damage[i].from == 0 ? "the start" : print_wall(a, sizeof(a), rep->damage[i].from),
		        rep->damage[i].to == UINT64_MAX ? "the end" : print_wall(b, sizeof(b),
		                                                              rep->damage[i].to));
}

/* The JSON summary and one line per session. */
static void json_record(struct report *rep, const char *dir)
{
	uint64_t segs, bytes, first, last;
	char reason[32];

	seg_dir_usage(dir, &segs, &bytes, &first, &last);
	fputs("{\"type\":\"summary\",\"dir\":", rep->out);
	print_json_string(rep->out, dir, strlen(dir));
	fprintf(rep->out, ",\"sessions\":%zu,\"segments\":%" PRIu64 ",\"bytes\":%" PRIu64
	        ",\"first_real_ns\":%" PRIu64 ",\"last_real_ns\":%" PRIu64 ",\"events\":%" PRIu64
	        ",\"findings\":%zu,\"evicted_records\":%" PRIu64 ",\"damaged\":%zu,\"filtered\":%s"
	        ",\"stall_ns\":%" PRIu64 "}\n", rep->nsess, segs, bytes, rep->view_first,
	        rep->view_last, rep->view_events, report_find_count(rep), rep->evicted_records,
	        rep->ndamage, filter_active(&rep->ro->filter) ? "true" : "false", rep->o->stall_ns);
	for (size_t i = 0; i < rep->nsess; i++) {
		const struct rp_sess *s = rep->sess[i];
		char cbuf[32];
		const char *creason = "null", *q = "";

		if (s->corrupt_rings && s->corrupt_reason != UINT32_MAX)
			creason = segname_corrupt_reason(s->corrupt_reason, cbuf, sizeof(cbuf)), q = "\"";
		else if (s->corrupt_rings)
			creason = "mixed", q = "\"";
		fprintf(rep->out, "{\"type\":\"session\",\"session\":%" PRIu64 ",\"pid\":%" PRIu32
		        ",\"comm\":", s->id, s->os_pid);
		print_json_string(rep->out, s->comm, strlen(s->comm));
		fprintf(rep->out, ",\"first_real_ns\":%" PRIu64 ",\"last_real_ns\":%" PRIu64
		        ",\"events\":%" PRIu64 ",\"view_events\":%" PRIu64 ",\"loops\":%zu,\"procs\":%"
		        PRIu64 ",\"drops\":%zu,\"dropped_records\":%" PRIu64 ",\"evicted\":%s"
		        ",\"corrupt_rings\":%" PRIu64 ",\"corrupt_reason\":%s%s%s,\"out_of_order\":%" PRIu64 ",\"parks\":%" PRIu64
		        ",\"chains_completed\":%" PRIu64 ",\"chains_resumed\":%" PRIu64
		        ",\"chains_in_flight\":%" PRIu64 ",\"orphan_reaps\":%" PRIu64
		        ",\"orphan_wakes\":%" PRIu64 ",\"end\":", s->first_t, s->last_t, s->events,
		        s->view_events, s->nloops, s->nprocs, s->ndrops, s->dropped_seen,
		        s->evicted ? "true" : "false", s->corrupt_rings, q, creason, q,
		        s->late + s->forced, s->parks,
		        s->chains_done, s->chains_resumed, s->chains_inflight, s->orphan_reap,
		        s->orphan_wake);
		if (s->ended)
			fprintf(rep->out, "{\"reason\":\"%s\",\"complete\":%s,\"real_ns\":%" PRIu64
			        ",\"produced\":%" PRIu64 ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64
			        ",\"lost\":%" PRIu64 "}",
			        segname_end_reason(s->end.reason, reason, sizeof(reason)),
			        s->end.complete ? "true" : "false", s->end_t, s->end.produced,
			        s->end.written, s->end.dropped, s->end.lost);
		else
			fputs("null", rep->out);
		fputs(",\"drop_list\":[", rep->out);
		for (size_t k = 0; k < s->ndrops && k < 64; k++) {
			char cause[32];

			fprintf(rep->out, "%s{\"loop\":%lld,\"ring\":%" PRIu32 ",\"count\":%" PRIu64
			        ",\"from_real_ns\":%" PRIu64 ",\"to_real_ns\":%" PRIu64 ",\"cause\":\"%s\"}",
			        k ? "," : "", print_loop_json(s->drops[k].loop), s->drops[k].ring,
			        s->drops[k].count, s->drops[k].from, s->drops[k].to,
			        segname_drop_cause(s->drops[k].cause, cause, sizeof(cause)));
		}
		fputs("]}\n", rep->out);
	}
}

/* Everything but the export, in order. */
static void write_report(struct report *rep, const char *dir)
{
	if (rep->ro->json) {
		json_record(rep, dir);
		if (rep->o->diff) {
			report_diff_json(rep);
			return;
		}
		report_find_json(rep);
		report_loops_json(rep);
		report_lat_json(rep);
		report_offcpu_json(rep);
		report_adapter_json(rep);
		return;
	}
	text_heading(rep, dir);
	if (rep->o->diff) {
		text_record(rep);
		report_diff_text(rep);
		return;
	}
	report_find_text(rep);
	text_record(rep);
	report_loops_text(rep);
	report_lat_text(rep);
	report_offcpu_text(rep);
	report_adapter_text(rep);
}

/* Free everything the pass built. */
static void report_free(struct report *rep)
{
	report_model_free(rep);
	free(rep->damage);
	report_chain_free(rep);
	report_adapter_free(rep);
	free(rep->f);
	rp_hist_free(&rep->win_lat[0]);
	rp_hist_free(&rep->win_lat[1]);
	rp_hist_free(&rep->all_lat);
	segread_close(rep->r);
}

/* Run the report (see report.h for the exit codes). */
int xtcd_report(const char *dir, const struct read_opts *ro, const struct report_opts *o,
                FILE *out)
{
	struct report rep;
	const struct segread_stats *rs;
	int ret, status;

	memset(&rep, 0, sizeof(rep));
	rep.ro = ro;
	rep.o = o;
	rep.out = out;
	rep.sess_filter.has_session = ro->filter.has_session;
	rep.sess_filter.session = ro->filter.session;
	rep.sess_filter.has_pid = ro->filter.has_pid;
	rep.sess_filter.pid = ro->filter.pid;
	rep.filtered = filter_active(&ro->filter);
	rep.sess_filtered = filter_active(&rep.sess_filter);
	if (view_open(&rep.r, dir, report_item_cb, report_problem_cb, &rep) < 0) {
		report_free(&rep);
		return 2;
	}
	ret = view_run(rep.r, o->flags);
	for (size_t i = 0; i < rep.nsess && !rep.fatal; i++)
		finish_sess(&rep, rep.sess[i]);
	rs = segread_stats(rep.r);
	if (rep.fatal || ret < 0) {
		if (rep.fatal)
			fprintf(stderr, "xtcd: %s failed: %s\n", o->flags, strerror(-rep.fatal));
		report_free(&rep);
		return 2;
	}
	report_chain_link(&rep);
	report_find_sort(&rep);
	status = rs->corrupt ? 1 : 0;
	if (o->svg_path && (ret = report_svg(&rep, o->svg_path)) < 0) {
		fprintf(stderr, "xtcd: --svg %s: %s\n", o->svg_path, strerror(-ret));
		status = 2;
	}
	if (o->export_format) {
		ret = report_export(&rep, o->export_format, out);
		if (ret)
			status = ret;
	} else {
		write_report(&rep, dir);
	}
	/* the chains pass of --export chrome writes nothing: the export owns
	 * the output and says once what failed there */
	if (!o->chains && (fflush(out) != 0 || ferror(out))) {
		if (errno != EPIPE)
			fprintf(stderr, "xtcd: writing the output failed: %s\n", strerror(errno));
		status = 2;
	}
	report_free(&rep);
	return status;
}
