/*
 * xtcd/report/report_diff.c - xtcd --report --diff A B DIR: what changed between
 * a normal window A and a degraded window B, biggest change first.
 *
 * Compared, over the records the filters select (--since/--until do not
 * apply: A and B are the windows):
 *
 *   rates       records per second of each kind, and of all kinds
 *   latency     wake-to-run p50, p90, p99, p99.9 and max
 *   loop share  each loop's share of the busy time of its session in the
 *               window (of the records, for a session with no busy data)
 *   findings    per class, session and loop: found in B and not in A
 *               (new), in A and not in B (vanished), or a different count
 *
 * Rates are per second of the part of each window the record covers, so
 * a window that runs past the record is not diluted.  Each change gets a
 * score and the rows print in score order: new findings first, then
 * vanished ones, then |ln(B/A)| for rates and latencies (a factor of e is
 * 1) and a tenth of the change in percentage points for shares.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

enum { DM_FINDING = 1, DM_RATE, DM_LATENCY, DM_SHARE };

struct drow {
	int    metric;
	double score;
	double a, b;                   /* the values (rates per s, ns, shares 0..1, counts) */
	char   key[96];
	int    a_none, b_none;         /* no data in that window */
};

struct dtab {
	struct drow *r;
	size_t n, cap;
	uint64_t cover[2];             /* ns of each window the record covers */
};

/* Add a row; NULL on -ENOMEM (the row is then left out). */
static struct drow *row_add(struct dtab *t, int metric, const char *key)
{
	struct drow *r;

	if (rp_grow(&t->r, &t->cap, t->n + 1, sizeof(*t->r)) < 0)
		return NULL;
	r = &t->r[t->n++];
	memset(r, 0, sizeof(*r));
	r->metric = metric;
	snprintf(r->key, sizeof(r->key), "%s", key);
	return r;
}

/* How much of window w the selected sessions' record covers. */
static uint64_t covered(const struct report *rep, const struct report_window *w)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (size_t i = 0; i < rep->nsess; i++) {
		const struct rp_sess *s = rep->sess[i];

		if (!s->events)
			continue;
		first = s->first_t < first ? s->first_t : first;
		last = report_sess_end(s) > last ? report_sess_end(s) : last;
	}
	if (first < w->from)
		first = w->from;
	if (last > w->to)
		last = w->to;
	return last > first ? last - first : 0;
}

/* The ratio score of a to b: |ln(b/a)|, with eps guarding zeros. */
static double ratio_score(double a, double b, double eps)
{
	return fabs(log((b + eps) / (a + eps)));
}

/* Rates of each kind. */
static void diff_rates(struct report *rep, struct dtab *t)
{
	double sa = (double)t->cover[0] / 1e9, sb = (double)t->cover[1] / 1e9;
	double eps = 1.0 / (sa > sb ? sa : sb);

	for (uint32_t k = 0; k <= RP_NKINDS + 1; k++) {
		uint64_t ca = k <= RP_NKINDS ? rep->win_kinds[0][k] : rep->win_events[0];
		uint64_t cb = k <= RP_NKINDS ? rep->win_kinds[1][k] : rep->win_events[1];
		char key[96];
		struct drow *r;

		if (!ca && !cb)
			continue;
		snprintf(key, sizeof(key), "rate of %s", k < RP_NKINDS ? rp_kind(k) :
		         k == RP_NKINDS ? "other kinds" : "all records");
		if (!(r = row_add(t, DM_RATE, key)))
			return;
		r->a = sa > 0 ? (double)ca / sa : 0;
		r->b = sb > 0 ? (double)cb / sb : 0;
		r->a_none = sa <= 0;
		r->b_none = sb <= 0;
		r->score = r->a_none || r->b_none ? 0 : ratio_score(r->a, r->b, eps);
	}
}

/* Latency quantiles. */
static void diff_latency(struct report *rep, struct dtab *t)
{
	static const struct { const char *name; double q; } qs[] = {
		{ "p50", 0.5 }, { "p90", 0.9 }, { "p99", 0.99 }, { "p99.9", 0.999 }, { "max", 1.0 },
	};

	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		char key[96];
		struct drow *r;

		snprintf(key, sizeof(key), "wake-to-run latency %s", qs[i].name);
		if (!(r = row_add(t, DM_LATENCY, key)))
			return;
		r->a_none = !rep->win_lat[0].n;
		r->b_none = !rep->win_lat[1].n;
		r->a = (double)rp_hist_quantile(&rep->win_lat[0], qs[i].q);
		r->b = (double)rp_hist_quantile(&rep->win_lat[1], qs[i].q);
		r->score = r->a_none || r->b_none ? 0 : ratio_score(r->a, r->b, 1000.0);
	}
}

/* Each loop's share of its session, per window. */
static void diff_shares(struct report *rep, struct dtab *t)
{
	for (size_t i = 0; i < rep->nsess; i++) {
		const struct rp_sess *s = rep->sess[i];
		uint64_t busy[2] = { 0, 0 }, ev[2] = { 0, 0 };
		int by_busy;

		for (size_t k = 0; k < s->nloops; k++)
			for (int w = 0; w < 2; w++) {
				busy[w] += s->loops[k].win_busy[w];
				ev[w] += s->loops[k].win_events[w];
			}
		if (s->nloops < 2 || (!ev[0] && !ev[1]))
			continue;
		by_busy = busy[0] && busy[1];
		for (size_t k = 0; k < s->nloops; k++) {
			const struct rp_loop *l = &s->loops[k];
			char key[96], lb[16];
			struct drow *r;

			snprintf(key, sizeof(key), "session %" PRIu64 " loop %s share of %s", s->id,
			         print_loop(lb, sizeof(lb), l->loop), by_busy ? "busy time" : "records");
			if (!(r = row_add(t, DM_SHARE, key)))
				return;
			for (int w = 0; w < 2; w++) {
				uint64_t part = by_busy ? l->win_busy[w] : l->win_events[w];
				uint64_t all = by_busy ? busy[w] : ev[w];

				if (w == 0) {
					r->a = all ? (double)part / (double)all : 0;
					r->a_none = !all;
				} else {
					r->b = all ? (double)part / (double)all : 0;
					r->b_none = !all;
				}
			}
			r->score = r->a_none || r->b_none ? 0 : fabs(r->b - r->a) * 10.0;
		}
	}
}

/* Findings per class, session and loop in each window. */
static void diff_findings(struct report *rep, struct dtab *t)
{
	const struct report_opts *o = rep->o;

	for (size_t i = 0; i < rep->nf; i++) {
		const struct rp_finding *f = &rep->f[i];
		char key[96], lb[16];
		struct drow *r = NULL;
		int in[2];

		for (int w = 0; w < 2; w++)
			in[w] = f->t >= o->diff_win[w].from && f->t < o->diff_win[w].to;
		if (!in[0] && !in[1])
			continue;
		snprintf(key, sizeof(key), "finding %s%s, session %" PRIu64 " loop %s",
		         report_class_key(f->cls), f->verdict == RV_CANNOT_TELL ? " (cannot tell)" : "",
		         f->sess, print_loop(lb, sizeof(lb), f->loop));
		for (size_t k = 0; k < t->n; k++)
			if (t->r[k].metric == DM_FINDING && strcmp(t->r[k].key, key) == 0)
				r = &t->r[k];
		if (!r && !(r = row_add(t, DM_FINDING, key)))
			return;
		r->a += in[0];
		r->b += in[1];
	}
	for (size_t k = 0; k < t->n; k++) {
		struct drow *r = &t->r[k];

		if (r->metric != DM_FINDING)
			continue;
		if (!r->a)
			r->score = 1000 + r->b;
		else if (!r->b)
			r->score = 500 + r->a;
		else
			r->score = ratio_score(r->a, r->b, 0);
	}
}

/* qsort: highest score first, then by name. */
static int row_cmp(const void *x, const void *y)
{
	const struct drow *a = x, *b = y;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* Every row, ranked. */
static int diff_build(struct report *rep, struct dtab *t)
{
	memset(t, 0, sizeof(*t));
	for (int w = 0; w < 2; w++)
		t->cover[w] = covered(rep, &rep->o->diff_win[w]);
	diff_findings(rep, t);
	diff_rates(rep, t);
	diff_latency(rep, t);
	diff_shares(rep, t);
	if (t->n > 1)
		qsort(t->r, t->n, sizeof(*t->r), row_cmp);
	return 0;
}

/* A value as text. */
static const char *val_text(char *buf, size_t len, const struct drow *r, int which)
{
	double v = which ? r->b : r->a;

	if (which ? r->b_none : r->a_none)
		return snprintf(buf, len, "no data"), buf;
	switch (r->metric) {
	case DM_FINDING: snprintf(buf, len, "%.0f", v); break;
	case DM_RATE:    snprintf(buf, len, "%.1f/s", v); break;
	case DM_LATENCY: print_duration(buf, len, (uint64_t)v); break;
	default:         snprintf(buf, len, "%.1f%%", v * 100); break;
	}
	return buf;
}

/* The change as text: new, vanished, xN, +Npp. */
static const char *change_text(char *buf, size_t len, const struct drow *r)
{
	if (r->a_none || r->b_none)
		snprintf(buf, len, "?");
	else if (r->metric == DM_FINDING)
		snprintf(buf, len, "%s", !r->a ? "NEW" : !r->b ? "VANISHED" : r->b > r->a ? "more" : "fewer");
	else if (r->metric == DM_SHARE)
		snprintf(buf, len, "%+.1fpp", (r->b - r->a) * 100);
	else if (r->a == r->b)
		snprintf(buf, len, "same");
	else if (r->a == 0)
		snprintf(buf, len, "from 0");
	else if (r->b == 0)
		snprintf(buf, len, "to 0");
	else
		snprintf(buf, len, "x%.2f", r->b / r->a);
	return buf;
}

/* The window headings. */
static void text_windows(struct report *rep, const struct dtab *t)
{
	char a[64], b[64], d[32];

	for (int w = 0; w < 2; w++)
		fprintf(rep->out, "  %c = %s: %s .. %s, the record covers %s of it, %" PRIu64 " records\n",
		        'A' + w, rep->o->diff_text[w], print_wall(a, sizeof(a), rep->o->diff_win[w].from),
		        print_wall_clock(b, sizeof(b), rep->o->diff_win[w].to),
		        print_duration(d, sizeof(d), t->cover[w]), rep->win_events[w]);
}

/* The DIFF section. */
void report_diff_text(struct report *rep)
{
	struct dtab t;
	size_t shown = 0;

	diff_build(rep, &t);
	fprintf(rep->out, "\nDIFF: what changed from A to B, biggest change first\n");
	text_windows(rep, &t);
	if (!rep->win_events[0] || !rep->win_events[1])
		fprintf(rep->out, "  no data in window %s: nothing to compare there\n",
		        !rep->win_events[0] && !rep->win_events[1] ? "A or B" :
		        !rep->win_events[0] ? "A" : "B");
	fprintf(rep->out, "\n  %4s  %-9s %-56s %14s %14s\n", "RANK", "CHANGE", "WHAT", "A", "B");
	for (size_t i = 0; i < t.n; i++) {
		const struct drow *r = &t.r[i];
		char a[32], b[32], c[32];

		if (r->score <= 0 && r->metric != DM_FINDING && shown >= 20)
			continue;
		fprintf(rep->out, "  %4zu  %-9s %-56s %14s %14s\n", ++shown, change_text(c, sizeof(c), r),
		        r->key, val_text(a, sizeof(a), r, 0), val_text(b, sizeof(b), r, 1));
	}
	free(t.r);
}

/* One JSON line per window, then per row. */
void report_diff_json(struct report *rep)
{
	static const char *metrics[] = { "", "finding", "rate", "latency", "loop_share" };
	struct dtab t;
	char c[32];

	diff_build(rep, &t);
	for (int w = 0; w < 2; w++) {
		fprintf(rep->out, "{\"type\":\"diff_window\",\"name\":\"%c\",\"text\":", 'A' + w);
		print_json_string(rep->out, rep->o->diff_text[w], strlen(rep->o->diff_text[w]));
		fprintf(rep->out, ",\"from_real_ns\":%" PRIu64 ",\"to_real_ns\":%" PRIu64
		        ",\"covered_ns\":%" PRIu64 ",\"records\":%" PRIu64 "}\n", rep->o->diff_win[w].from,
		        rep->o->diff_win[w].to, t.cover[w], rep->win_events[w]);
	}
	for (size_t i = 0; i < t.n; i++) {
		const struct drow *r = &t.r[i];

		fprintf(rep->out, "{\"type\":\"diff\",\"rank\":%zu,\"metric\":\"%s\",\"key\":", i + 1,
		        metrics[r->metric]);
		print_json_string(rep->out, r->key, strlen(r->key));
		fprintf(rep->out, ",\"a\":");
		if (r->a_none)
			fputs("null", rep->out);
		else
			fprintf(rep->out, "%.6g", r->a);
		fprintf(rep->out, ",\"b\":");
		if (r->b_none)
			fputs("null", rep->out);
		else
			fprintf(rep->out, "%.6g", r->b);
		fprintf(rep->out, ",\"change\":\"%s\",\"score\":%.4f}\n", change_text(c, sizeof(c), r),
		        r->score);
	}
	free(t.r);
}
