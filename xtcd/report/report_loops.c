/*
 * xtcd/report/report_loops.c - loops in xtcd --report: are they alive, do they
 * keep up, how busy are they over time, and is the work shared evenly.
 *
 * Liveness.  Any record from a loop's ring shows the loop was running;
 * LOOP_POLL (an idle poll) shows it was polling with nothing to do.  A
 * loop that records nothing for at least --stall, and for at least ten
 * times its usual gap between records (the 99th percentile so far), while
 * another loop of the same session kept recording, is a finding:
 *
 *   LOOP GAP      it recorded again later: it was stuck for that long
 *   LOOP STOPPED  it never recorded again before the end of the record,
 *                 although its procs were still alive (a loop whose every
 *                 proc exited and that holds no parked task has finished,
 *                 and is not reported)
 *
 * A loop whose last record is an adapter's LOOP_WAIT is in its backend
 * wait, idle: neither a gap nor stopped (report_adapter.c says so).
 *
 * When the whole session goes quiet nothing is reported: an idle program
 * and a stuck one cannot be told apart from the record, and a loop is only
 * judged against loops that demonstrably kept running.  Both verdicts rest
 * on an absence, so a DROP on the loop's rings in the silence (its records
 * may be what was dropped), or a record cut short after it, makes them
 * "cannot tell".
 *
 * This is the join seed 000 asks for: a chain finding says whether its
 * loop kept working after the chain's last step (the task was skipped by a
 * live loop) or recorded nothing more (the task is stranded with its loop).
 *
 * POLL_FULL runs.  A poll that filled its budget may have left completions
 * behind; several in a row with no idle poll between them mean the ring
 * receives completions faster than one poll takes them.  Runs of at least
 * RP_PF_RUN_MIN are counted and the longest is kept.
 *
 * Busy share over time comes from the procs' running intervals (RUN to
 * the next PARK, see report_offcpu.c) summed per loop on a timeline whose
 * bins double in width as the record grows, so it stays RP_TL_BINS wide.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

/* ---- the timeline ---- */

/* Halve every lane's resolution. */
static void tl_fold(struct report *rep)
{
	for (size_t i = 0; i < rep->nsess; i++)
		for (size_t k = 0; k < rep->sess[i]->nloops; k++)
			rp_tl_fold(&rep->sess[i]->loops[k].tl);
	rep->tl_width *= 2;
}

/* The bin of t (folding first when t is past the last bin). */
static size_t tl_bin(struct report *rep, uint64_t t)
{
	uint64_t idx;

	if (t <= rep->tl_t0)
		return 0;
	while ((idx = (t - rep->tl_t0) / rep->tl_width) >= RP_TL_BINS)
		tl_fold(rep);
	return (size_t)idx;
}

/* The sum of a lane over [from, to): only the bins it overlaps, each cut
 * in proportion to the overlap. */
double report_tl_sum(const struct report *rep, const struct rp_loop *l, unsigned lane,
                     uint64_t from, uint64_t to)
{
	double sum = 0;
	size_t i0, i1;

	if (to <= rep->tl_t0 || !rep->tl_width)
		return 0;
	i0 = from > rep->tl_t0 ? (size_t)((from - rep->tl_t0) / rep->tl_width) : 0;
	i1 = (size_t)((to - 1 - rep->tl_t0) / rep->tl_width);
	for (size_t i = i0; i <= i1 && i < RP_TL_BINS; i++) {
		uint64_t lo = rep->tl_t0 + i * rep->tl_width, hi = lo + rep->tl_width;
		uint64_t x = from > lo ? from : lo, y = to < hi ? to : hi;
		uint64_t v = rp_tl_get(&l->tl, i, lane);

		if (y > x && v)
			sum += (double)v * (double)(y - x) / (double)rep->tl_width;
	}
	return sum;
}

/* Add a running interval [from, to) of a proc of loop. */
void report_loops_busy(struct report *rep, struct rp_sess *s, uint32_t loop, uint64_t from,
                       uint64_t to)
{
	const struct filter *f = &rep->ro->filter;
	struct rp_loop *l;
	size_t a, b;

	if (to <= from || !(l = report_loop(rep, s, loop)))
		return;
	l->busy_ns += to - from;
	for (int w = 0; rep->o->diff && w < 2; w++) {
		uint64_t x = from > rep->o->diff_win[w].from ? from : rep->o->diff_win[w].from;
		uint64_t y = to < rep->o->diff_win[w].to ? to : rep->o->diff_win[w].to;

		if (y > x && (!f->has_loop || loop == f->loop))
			l->win_busy[w] += y - x;
	}
	if (!report_view_overlap(rep, loop, from, to))
		return;
	if (f->has_since && from < f->since_ns)
		from = f->since_ns;
	if (f->has_until && to > f->until_ns)
		to = f->until_ns;
	l->view_busy_ns += to - from;
	if (!rep->tl_started)
		return;
	if (from < rep->tl_t0)
		from = rep->tl_t0;
	if (to <= from)
		return;
	b = tl_bin(rep, to - 1);
	a = tl_bin(rep, from);
	for (size_t i = a; i <= b; i++) {
		uint64_t lo = rep->tl_t0 + i * rep->tl_width, hi = lo + rep->tl_width;
		uint64_t x = from > lo ? from : lo, y = to < hi ? to : hi;

		if (y > x && rp_tl_add(&l->tl, i, RP_LANE_BUSY, y - x) < 0) {
			report_oom(rep);
			return;
		}
	}
}

/* ---- liveness ---- */

/* The 99th percentile of a loop's gaps between records (bucket top), 0
 * with too few to say. */
static uint64_t ivl_p99(const struct rp_loop *l)
{
	uint64_t n = 0, seen = 0;

	for (int i = 0; i < 64; i++)
		n += l->ivl[i];
	if (n < 16)
		return 0;
	for (int i = 0; i < 64; i++) {
		seen += l->ivl[i];
		if (seen * 100 >= n * 99)
			return i >= 63 ? UINT64_MAX : (2ull << i);
	}
	return UINT64_MAX;
}

/* Whether a silence of gap ns is long enough to judge. */
static int silence_counts(const struct report *rep, const struct rp_loop *l, uint64_t gap)
{
	uint64_t p = ivl_p99(l);

	return gap >= rep->o->stall_ns && (p == 0 || gap / 10 >= p);
}

/* Other loops of s that recorded after t. */
static uint32_t loops_after(const struct rp_sess *s, const struct rp_loop *self, uint64_t t)
{
	uint32_t n = 0;

	for (size_t i = 0; i < s->nloops; i++)
		n += &s->loops[i] != self && s->loops[i].last_t > t;
	return n;
}

/* qsort: times. */
static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* How many of the n sorted times are after t. */
static uint32_t times_after(const uint64_t *sorted, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sorted[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)(n - lo);
}

/* Every loop's last record time, sorted, to answer loops_after for each
 * of them at the session's end in log time; NULL (ask loops_after) if
 * there is no memory for it. */
static uint64_t *last_times_sorted(const struct rp_sess *s)
{
	uint64_t *t = s->nloops > 1 ? malloc(s->nloops * sizeof(*t)) : NULL;

	for (size_t i = 0; t && i < s->nloops; i++)
		t[i] = s->loops[i].last_t;
	if (t)
		qsort(t, s->nloops, sizeof(*t), u64_cmp);
	return t;
}

/* A loop finding for the silence of l from its last record to `to`; the
 * caller counts the other loops active meanwhile, only for a finding
 * kept (past RP_FIND_MAX they are only counted, and so cost no scan). */
static struct rp_finding *silence_finding(struct report *rep, struct rp_sess *s,
                                          struct rp_loop *l, enum rp_class cls, uint64_t to,
                                          uint64_t others)
{
	struct rp_finding *f = report_find_add(rep, cls, s);

	if (!f)
		return NULL;
	f->loop = l->loop;
	f->t = f->t_last = l->last_t;
	f->t_end = to;
	f->detail = to - l->last_t;
	f->others_events = others;
	f->procs_live = l->spawned > l->exited ? l->spawned - l->exited : 0;
	f->chains_open = l->open_chains;
	f->proof[0] = l->last_ev;
	f->nproof = 1;
	return f;
}

/* A record after a silence: a gap if it was long and others went on. */
static void check_gap(struct report *rep, struct rp_sess *s, struct rp_loop *l,
                      const struct rp_ev *e)
{
	uint64_t gap = e->t - l->last_t, others = s->events - 1 - l->sess_events_at_last;
	struct rp_finding *f;

	if (!others || l->loop == XTC_TAIL_LOOP_NONE || !silence_counts(rep, l, gap))
		return;
	if (l->last_ev.kind == XTC_TAIL_LOOP_WAIT)
		return;                     /* an adapter's loop idle in its wait, not stuck */
	if (!(f = silence_finding(rep, s, l, RF_LOOP_GAP, e->t, others)))
		return;
	f->loops_active = loops_after(s, l, l->last_t);
	f->verdict = 0;                     /* judged when the session's drops are all read */
	report_find_proof(f, e);
	if (rp_grow(&s->gap_ids, &s->gap_ids_cap, s->ngap_ids + 1, sizeof(*s->gap_ids)) < 0) {
		report_oom(rep);
		return;
	}
	s->gap_ids[s->ngap_ids++] = f->id;
}

/* End a run of POLL_FULLs. */
static void pf_close(struct rp_loop *l)
{
	if (l->pf_n >= RP_PF_RUN_MIN)
		l->pf_runs++;
	if (l->pf_n > l->pf_long_n) {
		l->pf_long_n = l->pf_n;
		l->pf_long_start = l->pf_start;
		l->pf_long_end = l->pf_last;
	}
	l->pf_n = 0;
}

/* An untagged REAP: does it answer an untagged SUBMIT? */
static void on_reap0(struct report *rep, struct rp_loop *l, uint64_t t)
{
	l->reap0++;
	if (l->submit0_open) {
		l->submit0_open--;
		return;
	}
	if (l->nreap0_t < RP_REAP0_KEEP &&
	    rp_grow(&l->reap0_t, &l->reap0_cap, l->nreap0_t + 1, sizeof(*l->reap0_t)) == 0)
		l->reap0_t[l->nreap0_t++] = t;
	else if (l->nreap0_t < RP_REAP0_KEEP)
		report_oom(rep);
	l->reap0_unexplained++;
}

/* One record of loop l, in time order. */
void report_loops_event(struct report *rep, struct rp_sess *s, struct rp_loop *l,
                        const struct rp_ev *e)
{
	int view = (e->view & RP_VIEW_MAIN) != 0;

	if (l->events) {
		uint64_t gap = e->t > l->last_t ? e->t - l->last_t : 0;

		check_gap(rep, s, l, e);
		l->ivl[63 - __builtin_clzll(gap | 1)]++;
	} else {
		l->first_t = e->t;
	}
	l->events++;
	l->view_events += view;
	l->last_t = e->t;
	l->sess_events_at_last = s->events;
	l->last_ev = (struct rp_proof){ e->t, e->detail, e->pid, e->kind, e->loop };
	switch (e->kind) {
	case XTC_TAIL_LOOP_POLL:
		l->polls++;
		l->view_polls += view;
		l->last_poll_t = e->t;
		pf_close(l);
		break;
	case XTC_TAIL_POLL_FULL:
		l->poll_full += view;
		if (l->pf_n++ == 0)
			l->pf_start = e->t;
		l->pf_last = e->t;
		break;
	case XTC_TAIL_SPAWN: l->spawned++; break;
	case XTC_TAIL_EXIT:  l->exited++; break;
	case XTC_TAIL_SUBMIT:
		if (!e->detail)
			l->submit0_open++;
		break;
	case XTC_TAIL_REAP:
		if (!e->detail)
			on_reap0(rep, l, e->t);
		break;
	default:
		break;
	}
	if (view && rep->tl_started) {
		size_t b = tl_bin(rep, e->t);

		if (rp_tl_add(&l->tl, b, RP_LANE_EV, 1) < 0 ||
		    (e->kind == XTC_TAIL_LOOP_POLL && rp_tl_add(&l->tl, b, RP_LANE_POLLS, 1) < 0))
			report_oom(rep);
	}
}

/* The end of s: silent loops, open POLL_FULL runs, gaps judged. */
void report_loops_finish(struct report *rep, struct rp_sess *s)
{
	uint64_t end = report_sess_end(s), *last = last_times_sorted(s);

	for (size_t i = 0; i < s->nloops && !rep->fatal; i++) {
		struct rp_loop *l = &s->loops[i];
		uint64_t others = s->events - l->sess_events_at_last;
		struct rp_finding *f;

		pf_close(l);
		if (!l->events || l->loop == XTC_TAIL_LOOP_NONE || end <= l->last_t || !others || !silence_counts(rep, l, end - l->last_t))
			continue;
		if (l->spawned && l->spawned <= l->exited && !l->open_chains)
			continue;                   /* every proc exited: it finished */
		if (l->last_ev.kind == XTC_TAIL_LOOP_WAIT)
			continue;                   /* idle in its wait (see report_adapter.c) */
		if (!(f = silence_finding(rep, s, l, RF_LOOP_STOPPED, end, others)))
			continue;
		f->loops_active = last ? times_after(last, s->nloops, l->last_t) : loops_after(s, l, l->last_t);
		if (report_loss(rep, s, RS_LOOP, l->loop, f->t, end, 1, &f->loss))
			f->verdict = RV_CANNOT_TELL;
	}
	for (size_t i = 0; i < s->ngap_ids; i++) {
		struct rp_finding *f = &rep->f[s->gap_ids[i]];

		f->verdict = report_loss(rep, s, RS_LOOP, f->loop, f->t, f->t_end, 0, &f->loss) ?
		             RV_CANNOT_TELL : RV_PROVEN;
	}
	free(last);
	free(s->gap_ids);
	s->gap_ids = NULL;
	s->ngap_ids = s->gap_ids_cap = 0;
}

/* ---- busy share ---- */

/* Busy percent of l in n slices of [from, to); -1 where unknown. */
static void loop_slices(const struct report *rep, const struct rp_loop *l, uint64_t from,
                        uint64_t to, int *pct, unsigned n)
{
	uint64_t span = to > from ? to - from : 0;

	for (unsigned k = 0; k < n; k++) {
		uint64_t a = from + span * k / n, b = from + span * (k + 1) / n;
		double busy = 0;

		pct[k] = -1;
		if (b <= a || !l->view_busy_ns || !rep->tl_width)
			continue;
		busy = report_tl_sum(rep, l, RP_LANE_BUSY, a, b) * 100.0 / (double)(b - a);
		pct[k] = busy > 100.0 ? 100 : (int)(busy + 0.5);
	}
}

/* What a loop's share is taken of: the session's busy time, or, with no
 * busy data, its records.  Summed once, not for each loop. */
struct share_of {
	uint64_t busy, ev;
};

static struct share_of session_totals(const struct rp_sess *s)
{
	struct share_of t = { 0, 0 };

	for (size_t i = 0; i < s->nloops; i++) {
		t.busy += s->loops[i].view_busy_ns;
		t.ev += s->loops[i].view_events;
	}
	return t;
}

/* The share of a loop in its session's totals t. */
static double loop_share(const struct share_of *t, const struct rp_loop *l)
{
	if (t->busy)
		return (double)l->view_busy_ns / (double)t->busy;
	return t->ev ? (double)l->view_events / (double)t->ev : 0;
}

/* The busiest and idlest loops of s and how uneven they are. */
struct imbalance {
	size_t nloops, max, min;
	double max_share, min_share, ratio;
	int by_busy;
};

/* Fill im for s; 0 when it has fewer than two loops with records. */
static int imbalance_of(const struct rp_sess *s, struct imbalance *im)
{
	struct share_of t = session_totals(s);

	memset(im, 0, sizeof(*im));
	im->by_busy = t.busy > 0;
	for (size_t i = 0; i < s->nloops; i++) {
		const struct rp_loop *l = &s->loops[i];
		double sh;

		if (l->loop == XTC_TAIL_LOOP_NONE || !l->view_events)
			continue;
		sh = loop_share(&t, l);
		if (!im->nloops || sh > im->max_share) {
			im->max_share = sh;
			im->max = i;
		}
		if (!im->nloops || sh < im->min_share) {
			im->min_share = sh;
			im->min = i;
		}
		im->nloops++;
	}
	if (im->nloops < 2)
		return 0;
	im->ratio = im->max_share * (double)im->nloops;
	return 1;
}

/* ---- output ---- */

/* qsort: loops by id. */
static int loop_cmp(const void *a, const void *b)
{
	const struct rp_loop *x = a, *y = b;

	return x->loop < y->loop ? -1 : x->loop > y->loop;
}

/* Busy share of l over the session's span, percent, or -1. */
static double busy_pct(const struct rp_sess *s, const struct rp_loop *l)
{
	uint64_t span = s->view_last - s->view_first;

	if (!l->view_busy_ns || !span)
		return -1;
	return (double)l->view_busy_ns * 100.0 / (double)span;
}

/* One session's loop table. */
static void text_sess_loops(struct report *rep, struct rp_sess *s)
{
	char lb[16], t[64], a[64], b[64], d[32];
	struct imbalance im;
	int pct[RP_SLICES], any_busy = 0;

	report_loops_sort(rep, s, loop_cmp);
	fprintf(rep->out, "  session %" PRIu64 " (%s pid %" PRIu32 "): %zu loop%s\n", s->id, s->comm,
	        s->os_pid, s->nloops, s->nloops == 1 ? "" : "s");
	fprintf(rep->out, "    %5s %10s %10s %9s %7s %-22s %6s  %s\n", "LOOP", "RECORDS",
	        "IDLE_POLLS", "POLL_FULL", "RUNS>=4", "LONGEST_FULL_RUN", "BUSY", "LAST RECORD");
	for (size_t i = 0; i < s->nloops; i++) {
		const struct rp_loop *l = &s->loops[i];
		double bp = busy_pct(s, l);
		char run[48], busy[16];

		if (l->pf_long_n > 1)
			snprintf(run, sizeof(run), "%" PRIu64 " in %s", l->pf_long_n,
			         print_duration(d, sizeof(d), l->pf_long_end - l->pf_long_start));
		else if (l->pf_long_n)
			snprintf(run, sizeof(run), "1");
		else
			snprintf(run, sizeof(run), "-");
		if (bp >= 0) {
			snprintf(busy, sizeof(busy), "%.1f%%", bp > 100 ? 100.0 : bp);
			any_busy = 1;
		} else {
			snprintf(busy, sizeof(busy), "-");
		}
		fprintf(rep->out, "    %5s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %7" PRIu64
		        " %-22s %6s  %s\n", print_loop(lb, sizeof(lb), l->loop), l->view_events,
		        l->view_polls, l->poll_full, l->pf_runs, run, busy,
		        l->events ? print_wall_clock(t, sizeof(t), l->last_t) : "-");
	}
	if (!any_busy) {
		fprintf(rep->out, "    busy share: no data (no RUN and PARK records of procs to time "
		        "them: nothing ran, or the SCHED source is off)\n");
	} else {
		fprintf(rep->out, "    busy %% by tenth of %s .. %s:\n",
		        print_wall_clock(a, sizeof(a), s->view_first), print_wall_clock(b, sizeof(b), s->view_last));
		for (size_t i = 0; i < s->nloops; i++) {
			loop_slices(rep, &s->loops[i], s->view_first, s->view_last, pct, RP_SLICES);
			fprintf(rep->out, "    %5s ", print_loop(lb, sizeof(lb), s->loops[i].loop));
			for (int k = 0; k < RP_SLICES; k++)
				fprintf(rep->out, pct[k] < 0 ? "   -" : " %3d", pct[k]);
			fputc('\n', rep->out);
		}
	}
	if (imbalance_of(s, &im))
		fprintf(rep->out, "    %s: loop %s carries %.0f%% of the %s of %zu loops (%.1fx an even "
		        "share); loop %s the least, %.0f%%\n",
		        im.ratio >= 1.5 ? "IMBALANCED" : "balance", print_loop(a, sizeof(a),
		        s->loops[im.max].loop), im.max_share * 100, im.by_busy ? "busy time" : "records",
		        im.nloops, im.ratio, print_loop(b, sizeof(b), s->loops[im.min].loop),
		        im.min_share * 100);
}

/* The LOOPS section. */
void report_loops_text(struct report *rep)
{
	report_text_sessions(rep, "LOOPS", text_sess_loops);
}

/* One JSON line per loop, one per session with 2+ loops on balance. */
void report_loops_json(struct report *rep)
{
	struct imbalance im;
	int pct[RP_SLICES];

	for (size_t i = 0; i < rep->nsess; i++) {
		struct rp_sess *s = rep->sess[i];

		report_loops_sort(rep, s, loop_cmp);
		for (size_t k = 0; k < s->nloops; k++) {
			const struct rp_loop *l = &s->loops[k];
			double bp = busy_pct(s, l);

			fprintf(rep->out, "{\"type\":\"loop\",\"session\":%" PRIu64 ",\"loop\":%lld"
			        ",\"records\":%" PRIu64 ",\"view_records\":%" PRIu64 ",\"idle_polls\":%" PRIu64
			        ",\"poll_full\":%" PRIu64 ",\"poll_full_runs\":%" PRIu64
			        ",\"longest_poll_full_run\":%" PRIu64 ",\"first_real_ns\":%" PRIu64
			        ",\"last_real_ns\":%" PRIu64 ",\"procs_spawned\":%" PRIu64 ",\"procs_exited\":%"
			        PRIu64 ",\"untagged_reaps\":%" PRIu64 ",\"unexplained_untagged_reaps\":%" PRIu64
			        ",\"busy_ns\":%" PRIu64, s->id, print_loop_json(l->loop), l->events,
			        l->view_events, l->view_polls, l->poll_full, l->pf_runs, l->pf_long_n,
			        l->first_t, l->last_t, l->spawned, l->exited, l->reap0, l->reap0_unexplained,
			        l->view_busy_ns);
			if (bp < 0) {
				fputs(",\"busy_share\":null,\"busy_share_slices\":null}\n", rep->out);
				continue;
			}
			fprintf(rep->out, ",\"busy_share\":%.4f,\"busy_share_slices\":[", bp / 100);
			loop_slices(rep, l, s->view_first, s->view_last, pct, RP_SLICES);
			for (int j = 0; j < RP_SLICES; j++)
				fprintf(rep->out, j ? ",%d" : "%d", pct[j]);
			fputs("]}\n", rep->out);
		}
		if (imbalance_of(s, &im))
			fprintf(rep->out, "{\"type\":\"imbalance\",\"session\":%" PRIu64 ",\"loops\":%zu"
			        ",\"by\":\"%s\",\"max_loop\":%lld,\"max_share\":%.4f,\"min_loop\":%lld"
			        ",\"min_share\":%.4f,\"ratio_to_even\":%.3f,\"imbalanced\":%s}\n", s->id,
			        im.nloops, im.by_busy ? "busy" : "records", print_loop_json(s->loops[im.max].loop),
			        im.max_share, print_loop_json(s->loops[im.min].loop), im.min_share, im.ratio,
			        im.ratio >= 1.5 ? "true" : "false");
	}
}
