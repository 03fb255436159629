/*
 * xtcd/report/report_latency.c - wake-to-run latency, mailbox high-water marks
 * and message rates in xtcd --report.
 *
 * Latency is RUN's detail: the nanoseconds from a proc's wake to its run,
 * as the runtime measured them.  Each session and each loop gets a
 * log-linear histogram (about 3% resolution; the maximum is exact), from
 * which p50, p90, p99 and p99.9 are read as the top of the bucket that
 * holds them; the RP_WORST largest are kept with their pids.  With no RUN
 * records there is no latency to show, and the report says so instead of
 * printing zeros.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

static const struct { const char *name, *key; double q; } quantiles[] = {
	{ "P50", "p50_ns", 0.50 }, { "P90", "p90_ns", 0.90 }, { "P99", "p99_ns", 0.99 },
	{ "P99.9", "p999_ns", 0.999 },
};
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

/* Keep the RP_WORST largest latencies of s. */
static void worst_add(struct rp_sess *s, const struct rp_ev *e)
{
	size_t i;

	if (s->nworst == RP_WORST && e->detail <= s->worst[RP_WORST - 1].lat)
		return;
	if (s->nworst < RP_WORST)
		s->nworst++;
	for (i = s->nworst - 1; i > 0 && s->worst[i - 1].lat < e->detail; i--)
		s->worst[i] = s->worst[i - 1];
	s->worst[i] = (struct rp_worst){ e->detail, e->t, e->pid, e->loop };
}

/* Close the second being counted for the message peaks. */
static void msg_second(struct rp_sess *s, uint64_t sec)
{
	if (sec == s->msg_sec)
		return;
	if (s->msg_sec_send > s->peak_send)
		s->peak_send = s->msg_sec_send;
	if (s->msg_sec_recv > s->peak_recv)
		s->peak_recv = s->msg_sec_recv;
	s->msg_sec = sec;
	s->msg_sec_send = s->msg_sec_recv = 0;
}

/* One record, in time order. */
void report_lat_event(struct report *rep, struct rp_sess *s, struct rp_loop *l,
                      const struct rp_ev *e, struct rp_proc *p)
{
	if (e->kind == XTC_TAIL_RUN) {
		for (int w = 0; w < 2; w++)
			if (e->view & (RP_VIEW_A << w))
				if (rp_hist_add(&rep->win_lat[w], e->detail) < 0)
					report_oom(rep);
	}
	if (!(e->view & RP_VIEW_MAIN))
		return;
	switch (e->kind) {
	case XTC_TAIL_RUN:
		if (rp_hist_add(&s->lat, e->detail) < 0 || rp_hist_add(&l->lat, e->detail) < 0 ||
		    rp_hist_add(&rep->all_lat, e->detail) < 0)
			report_oom(rep);
		worst_add(s, e);
		break;
	case XTC_TAIL_MBOX_HWM:
		s->mbox_n++;
		if (e->detail > p->mbox_hwm) {
			p->mbox_hwm = e->detail;
			p->mbox_t = e->t;
		}
		break;
	case XTC_TAIL_SEND:
		msg_second(s, e->t / 1000000000u);
		s->send_n++;
		s->send_b += e->detail;
		s->msg_sec_send++;
		l->send_n++;
		break;
	case XTC_TAIL_RECV:
		msg_second(s, e->t / 1000000000u);
		s->recv_n++;
		s->recv_b += e->detail;
		s->msg_sec_recv++;
		l->recv_n++;
		break;
	default:
		break;
	}
}

/* ---- output ---- */

/* One row of the latency table. */
static void text_row(struct report *rep, const char *name, const struct rp_hist *h)
{
	char d[32];

	fprintf(rep->out, "    %5s %10" PRIu64, name, h->n);
	for (size_t q = 0; q < NQ; q++)
		fprintf(rep->out, " %10s", print_duration(d, sizeof(d), rp_hist_quantile(h, quantiles[q].q)));
	fprintf(rep->out, " %10s\n", print_duration(d, sizeof(d), h->max));
}

/* qsort_r: proc indexes by mailbox high-water mark, deepest first. */
static int mbox_cmp(const void *a, const void *b, void *user)
{
	const struct rp_proc *procs = user;
	uint64_t x = procs[*(const uint32_t *)a].mbox_hwm, y = procs[*(const uint32_t *)b].mbox_hwm;

	return x > y ? -1 : x < y;
}

/* The procs of s with a mailbox high-water mark, deepest first; count or -1. */
static long mbox_sorted(struct report *rep, const struct rp_sess *s, uint32_t **out)
{
	uint32_t *v = malloc((s->nproc_ids ? s->nproc_ids : 1) * sizeof(*v));
	long n = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < s->nproc_ids; i++)
		if (rep->procs[s->proc_ids[i]].mbox_hwm)
			v[n++] = s->proc_ids[i];
	qsort_r(v, (size_t)n, sizeof(*v), mbox_cmp, rep->procs);
	*out = v;
	return n;
}

/* Messages of s: counts, mean and peak rates, bytes. */
static void text_messages(struct report *rep, struct rp_sess *s)
{
	double span = (double)(s->view_last - s->view_first) / 1e9;

	msg_second(s, UINT64_MAX);
	if (!s->send_n && !s->recv_n) {
		fprintf(rep->out, "    messages: no SEND or RECV records (the MSG source may be off)\n");
		return;
	}
	if (span <= 0)
		span = 1e-9;
	fprintf(rep->out, "    messages: SEND %" PRIu64 " (%.1f/s, peak %" PRIu64 " in one second, "
	        "%.1f KiB), RECV %" PRIu64 " (%.1f/s, peak %" PRIu64 ", %.1f KiB)\n", s->send_n,
	        (double)s->send_n / span, s->peak_send, (double)s->send_b / 1024.0, s->recv_n,
	        (double)s->recv_n / span, s->peak_recv, (double)s->recv_b / 1024.0);
}

/* One session's latency, worst instances, mailboxes and messages. */
static void text_sess(struct report *rep, struct rp_sess *s)
{
	char lb[16], t[64], d[32], pid[64];
	uint32_t *mb = NULL;
	long n;

	fprintf(rep->out, "  session %" PRIu64 " (%s pid %" PRIu32 ")\n", s->id, s->comm, s->os_pid);
	if (!s->lat.n) {
		fprintf(rep->out, "    no data: no RUN records (nothing was woken and run in the "
		        "window, or the SCHED source is off)\n");
	} else {
		fprintf(rep->out, "    %5s %10s", "LOOP", "COUNT");
		for (size_t q = 0; q < NQ; q++)
			fprintf(rep->out, " %10s", quantiles[q].name);
		fprintf(rep->out, " %10s\n", "MAX");
		text_row(rep, "all", &s->lat);
		for (size_t i = 0; s->nloops > 1 && i < s->nloops; i++)
			if (s->loops[i].lat.n)
				text_row(rep, print_loop(lb, sizeof(lb), s->loops[i].loop), &s->loops[i].lat);
		fprintf(rep->out, "    worst:");
		for (size_t i = 0; i < s->nworst; i++)
			fprintf(rep->out, "%s %s proc %s (loop %s) at %s", i ? ";" : "",
			        print_duration(d, sizeof(d), s->worst[i].lat),
			        print_pid(pid, sizeof(pid), &s->worst[i].pid),
			        print_loop(lb, sizeof(lb), s->worst[i].loop),
			        print_wall_clock(t, sizeof(t), s->worst[i].t));
		fputc('\n', rep->out);
	}
	if ((n = mbox_sorted(rep, s, &mb)) > 0) {
		fprintf(rep->out, "    mailbox high-water marks (%" PRIu64 " MBOX_HWM records):", s->mbox_n);
		for (long i = 0; i < n && i < (long)rep->o->top; i++)
			fprintf(rep->out, "%s proc %s depth %" PRIu64 " at %s", i ? ";" : "",
			        print_pid(pid, sizeof(pid), &rep->procs[mb[i]].pid),
			        rep->procs[mb[i]].mbox_hwm, print_wall_clock(t, sizeof(t), rep->procs[mb[i]].mbox_t));
		if (n > (long)rep->o->top)
			fprintf(rep->out, "; %ld more", n - (long)rep->o->top);
		fputc('\n', rep->out);
	} else if (n == 0) {
		fprintf(rep->out, "    mailboxes: no MBOX_HWM records\n");
	}
	free(mb);
	text_messages(rep, s);
}

/* The LATENCY section. */
void report_lat_text(struct report *rep)
{
	report_text_sessions(rep, "LATENCY (wake to run, from RUN records), MAILBOXES, MESSAGES",
	                     text_sess);
}

/* One latency JSON line. */
static void json_hist(struct report *rep, const struct rp_sess *s, const struct rp_loop *l,
                      const struct rp_hist *h)
{
	fprintf(rep->out, "{\"type\":\"latency\",\"session\":%" PRIu64 ",\"loop\":", s->id);
	if (l)
		fprintf(rep->out, "%lld", print_loop_json(l->loop));
	else
		fputs("\"all\"", rep->out);
	fprintf(rep->out, ",\"count\":%" PRIu64, h->n);
	if (h->n) {
		for (size_t q = 0; q < NQ; q++)
			fprintf(rep->out, ",\"%s\":%" PRIu64, quantiles[q].key,
			        rp_hist_quantile(h, quantiles[q].q));
		fprintf(rep->out, ",\"max_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64, h->max, h->sum / h->n);
	} else {
		fputs(",\"no_data\":true", rep->out);
	}
	fputs("}\n", rep->out);
}

/* Latency, worst, mailbox and message lines. */
void report_lat_json(struct report *rep)
{
	char pid[64];

	for (size_t i = 0; i < rep->nsess; i++) {
		struct rp_sess *s = rep->sess[i];
		double span = (double)(s->view_last - s->view_first) / 1e9;
		uint32_t *mb = NULL;
		long n;

		if (!s->view_events)
			continue;
		json_hist(rep, s, NULL, &s->lat);
		for (size_t k = 0; k < s->nloops; k++)
			json_hist(rep, s, &s->loops[k], &s->loops[k].lat);
		for (size_t k = 0; k < s->nworst; k++)
			fprintf(rep->out, "{\"type\":\"latency_worst\",\"session\":%" PRIu64 ",\"rank\":%zu"
			        ",\"latency_ns\":%" PRIu64 ",\"proc\":\"%s\",\"loop\":%lld,\"real_ns\":%"
			        PRIu64 "}\n", s->id, k + 1, s->worst[k].lat,
			        print_pid(pid, sizeof(pid), &s->worst[k].pid),
			        print_loop_json(s->worst[k].loop), s->worst[k].t);
		if ((n = mbox_sorted(rep, s, &mb)) > 0)
			for (long k = 0; k < n; k++)
				fprintf(rep->out, "{\"type\":\"mailbox\",\"session\":%" PRIu64 ",\"proc\":\"%s\""
				        ",\"loop\":%lld,\"hwm\":%" PRIu64 ",\"real_ns\":%" PRIu64 "}\n", s->id,
				        print_pid(pid, sizeof(pid), &rep->procs[mb[k]].pid),
				        print_loop_json(rep->procs[mb[k]].loop), rep->procs[mb[k]].mbox_hwm,
				        rep->procs[mb[k]].mbox_t);
		free(mb);
		msg_second(s, UINT64_MAX);
		if (span <= 0)
			span = 1e-9;
		fprintf(rep->out, "{\"type\":\"messages\",\"session\":%" PRIu64 ",\"send\":%" PRIu64
		        ",\"send_bytes\":%" PRIu64 ",\"send_per_s\":%.3f,\"send_peak_per_s\":%" PRIu64
		        ",\"recv\":%" PRIu64 ",\"recv_bytes\":%" PRIu64 ",\"recv_per_s\":%.3f"
		        ",\"recv_peak_per_s\":%" PRIu64 ",\"span_ns\":%" PRIu64 "}\n", s->id, s->send_n,
		        s->send_b, (double)s->send_n / span, s->peak_send, s->recv_n, s->recv_b,
		        (double)s->recv_n / span, s->peak_recv, s->view_last - s->view_first);
	}
}
