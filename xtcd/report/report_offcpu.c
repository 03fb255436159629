/*
 * xtcd/report/report_offcpu.c - where each proc's time went, in xtcd --report:
 * the off-CPU questions of seed 004 answered from the record.
 *
 * Per proc (loop.local.gen of a session), from its own records:
 *
 *   busy       running: from a RUN to the next PARK or EXIT
 *   idle       waiting: from PARK until it was woken, which is the RUN's
 *              time minus the wake-to-run latency the RUN carries
 *   scheduled  woken but not yet running: the RUN latency
 *   polls      times it ran (RUN records)
 *   wakes      completions dispatched to its task (WAKE joined on the task
 *              pointer its PARK_TASK named, see report_chain.c)
 *
 * Time still running or parked when the record ends counts up to the end,
 * and the table says which.  Times are clipped to --since/--until.  Where
 * records were dropped the figures are approximate; the RECORD section
 * says where.  A record with no PARK or RUN has no off-CPU data: that is
 * reported, never drawn as an empty profile (an idle program and an
 * uninstrumented one look the same).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

/* Add a waiting interval. */
static void add_idle(struct report *rep, struct rp_proc *p, uint64_t from, uint64_t to)
{
	if (to > from)
		p->idle += report_view_overlap(rep, p->loop, from, to);
}

/* Add a running interval (to the loop's busy time too). */
static void add_busy(struct report *rep, struct rp_sess *s, struct rp_proc *p, uint64_t from,
                     uint64_t to)
{
	if (to <= from)
		return;
	p->busy += report_view_overlap(rep, p->loop, from, to);
	report_loops_busy(rep, s, p->loop, from, to);
}

/* A RUN: the wait ends at the wake, the schedule delay at the run. */
static void on_run(struct report *rep, struct rp_sess *s, const struct rp_ev *e,
                   struct rp_proc *p)
{
	uint64_t lat = e->detail, wake = e->t >= lat ? e->t - lat : 0;
	int view = (e->view & RP_VIEW_MAIN) != 0;

	switch (p->state) {
	case RP_PS_PARKED:
		if (wake < p->since)
			wake = p->since;
		add_idle(rep, p, p->since, wake);
		p->sched += report_view_overlap(rep, p->loop, wake, e->t);
		break;
	case RP_PS_RUNNING:                 /* its PARK is missing */
		add_busy(rep, s, p, p->since, e->t);
		p->sched += view ? lat : 0;
		break;
	default:
		p->sched += view ? lat : 0;
		break;
	}
	p->polls += view;
	p->state = RP_PS_RUNNING;
	p->since = e->t;
}

/* One record of a proc, in time order. */
void report_offcpu_event(struct report *rep, struct rp_sess *s, const struct rp_ev *e,
                         struct rp_proc *p)
{
	if (!p)
		return;
	if (!p->first_t)
		p->first_t = e->t;
	p->last_t = e->t;
	switch (e->kind) {
	case XTC_TAIL_SPAWN:                /* runnable; it runs at its first RUN */
		break;
	case XTC_TAIL_PARK:
		if (p->state == RP_PS_PARKED)
			break;
		if (p->state == RP_PS_RUNNING)
			add_busy(rep, s, p, p->since, e->t);
		p->state = RP_PS_PARKED;
		p->since = e->t;
		p->parks++;
		break;
	case XTC_TAIL_RUN:
		on_run(rep, s, e, p);
		break;
	case XTC_TAIL_EXIT:
		if (p->state == RP_PS_RUNNING)
			add_busy(rep, s, p, p->since, e->t);
		else if (p->state == RP_PS_PARKED)
			add_idle(rep, p, p->since, e->t);
		p->state = RP_PS_DONE;
		break;
	default:
		break;
	}
}

/* The end of s: close what each proc was doing. */
void report_offcpu_finish(struct report *rep, struct rp_sess *s)
{
	uint64_t end = report_sess_end(s);

	for (size_t i = 0; i < s->nproc_ids; i++) {
		struct rp_proc *p = &rep->procs[s->proc_ids[i]];

		p->at_end = p->state;
		if (p->state == RP_PS_RUNNING)
			add_busy(rep, s, p, p->since, end);
		else if (p->state == RP_PS_PARKED)
			add_idle(rep, p, p->since, end);
	}
}

/* ---- output ---- */

/* qsort_r: proc indexes by idle time, most first. */
static int idle_cmp(const void *a, const void *b, void *user)
{
	const struct rp_proc *procs = user;
	const struct rp_proc *x = &procs[*(const uint32_t *)a], *y = &procs[*(const uint32_t *)b];

	if (x->idle != y->idle)
		return x->idle > y->idle ? -1 : 1;
	if (x->sess != y->sess)
		return x->sess < y->sess ? -1 : 1;
	return x->busy > y->busy ? -1 : x->busy < y->busy;
}

/* Procs with any data in view, by idle time. */
long report_offcpu_sorted(struct report *rep, uint32_t **idx)
{
	const struct filter *f = &rep->ro->filter;
	uint32_t *v = malloc((rep->nprocs ? rep->nprocs : 1) * sizeof(*v));
	long n = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < rep->nprocs; i++) {
		const struct rp_proc *p = &rep->procs[i];

		if (f->has_loop && p->loop != f->loop)
			continue;
		if (p->idle || p->busy || p->sched || p->polls || p->wakes)
			v[n++] = (uint32_t)i;
	}
	qsort_r(v, (size_t)n, sizeof(*v), idle_cmp, rep->procs);
	*idx = v;
	return n;
}

/* What a proc was doing when the record ended. */
static const char *at_end(const struct rp_proc *p)
{
	switch (p->at_end) {
	case RP_PS_RUNNING: return "running";
	case RP_PS_PARKED:  return "parked";
	case RP_PS_DONE:    return "exited";
	default:            return "-";
	}
}

/* The OFF-CPU section. */
void report_offcpu_text(struct report *rep)
{
	uint32_t *idx = NULL;
	long n = report_offcpu_sorted(rep, &idx);
	char pid[64], lb[16], a[32], b[32], c[32];

	fprintf(rep->out, "\nOFF-CPU per proc, by idle time (idle: parked until woken; scheduled: "
	        "woken until run; busy: running)\n");
	if (n < 0) {
		report_oom(rep);
		return;
	}
	if (n == 0) {
		fprintf(rep->out, "  no data: no PARK or RUN records to time a proc by (nothing ran, or "
		        "the SCHED source is off); an empty profile and an idle program look the same, "
		        "so this is reported, not drawn\n");
		free(idx);
		return;
	}
	fprintf(rep->out, "  %7s %-16s %5s %12s %12s %12s %8s %8s  %s\n", "SESSION", "PROC", "LOOP",
	        "IDLE", "BUSY", "SCHEDULED", "POLLS", "WAKES", "AT END");
	for (long i = 0; i < n && i < (long)rep->o->top; i++) {
		const struct rp_proc *p = &rep->procs[idx[i]];

		fprintf(rep->out, "  %7" PRIu64 " %-16s %5s %12s %12s %12s %8" PRIu64 " %8" PRIu64 "  %s\n",
		        p->sess, print_pid(pid, sizeof(pid), &p->pid),
		        print_loop(lb, sizeof(lb), p->loop), print_duration(a, sizeof(a), p->idle),
		        print_duration(b, sizeof(b), p->busy), print_duration(c, sizeof(c), p->sched), p->polls,
		        p->wakes, at_end(p));
	}
	if (n > (long)rep->o->top)
		fprintf(rep->out, "  ... %ld more procs (--top N to see more, --json for all, "
		        "--export pprof or collapsed for a flame graph)\n", n - (long)rep->o->top);
	free(idx);
}

/* One JSON line per proc with data. */
void report_offcpu_json(struct report *rep)
{
	uint32_t *idx = NULL;
	long n = report_offcpu_sorted(rep, &idx);
	char pid[64];

	if (n < 0) {
		report_oom(rep);
		return;
	}
	if (n == 0)
		fputs("{\"type\":\"offcpu\",\"no_data\":true}\n", rep->out);
	for (long i = 0; i < n; i++) {
		const struct rp_proc *p = &rep->procs[idx[i]];

		fprintf(rep->out, "{\"type\":\"offcpu\",\"session\":%" PRIu64 ",\"proc\":\"%s\",\"loop\":"
		        "%lld,\"idle_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"scheduled_ns\":%" PRIu64
		        ",\"polls\":%" PRIu64 ",\"wakes\":%" PRIu64 ",\"parks\":%" PRIu64 ",\"at_end\":\"%s\"}\n",
		        p->sess, print_pid(pid, sizeof(pid), &p->pid), print_loop_json(p->loop), p->idle,
		        p->busy, p->sched, p->polls, p->wakes, p->parks, at_end(p));
	}
	free(idx);
}
