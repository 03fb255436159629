/*
 * xtcd/report/report_svg.c - xtcd --report --svg FILE: the report as a picture.
 *
 * One self-contained SVG (inline styles, no scripts, no external fonts or
 * links), in two parts:
 *
 *   timeline   one lane per loop of each session over the time in view.
 *              Blue: records in that slice (darker = more); green from
 *              the bottom: the share of the slice the loop's procs were
 *              running.  Red bands: DROPs (records lost there).  Markers:
 *              findings, red when proven, orange when the record cannot
 *              tell, each with a line over the time it waited or was
 *              silent; hover for the text.
 *   histogram  wake-to-run latency over everything in view, four bars per
 *              power of two, with p50, p99 and the maximum marked.  With no
 *              RUN records it says "no data" instead of drawing an empty
 *              chart.
 *
 * Strings from the record (comm) are escaped as XML text.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

#define W        (LEFT + 2 * COLS + 70)
#define LEFT     190
#define RIGHT    20
#define COLS     505                   /* 2 px each */
#define LANE_H   18
#define LANE_GAP 6
#define TOP      70
#define HIST_H   180

/* Text with XML's five specials escaped (and control bytes dropped). */
static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':  fputs("&amp;", f); break;
		case '<':  fputs("&lt;", f); break;
		case '>':  fputs("&gt;", f); break;
		case '"':  fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
				fputc(*s, f);
			else
				fputc('?', f);
		}
	}
}

/* The time range drawn. */
struct frame {
	uint64_t from, to;
	double   px_per_ns;
};

/* The x of time t (clamped to the frame). */
static double x_of(const struct frame *fr, uint64_t t)
{
	if (t < fr->from)
		t = fr->from;
	if (t > fr->to)
		t = fr->to;
	return LEFT + (double)(t - fr->from) * fr->px_per_ns;
}

/* A lane: one loop of one session. */
struct lane {
	const struct rp_sess *s;
	const struct rp_loop *l;
	double y;
};

/* Where column c of COLS starts, in ns: with 128 bits, since a span may
 * be close to 2^64 ns. */
static uint64_t col_at(const struct frame *fr, int c)
{
	return fr->from + (uint64_t)((unsigned __int128)(fr->to - fr->from) * (unsigned)c / COLS);
}

/* Columns of one lane. */
static void draw_lane(FILE *f, const struct report *rep, const struct frame *fr,
                      const struct lane *ln)
{
	double ev[COLS], maxev = 0;
	char lb[16];

	fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"#f2f2f2\"/>\n", LEFT,
	        ln->y, COLS * 2, LANE_H);
	fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"lab\">s%" PRIu64 " ", LEFT - 6,
	        ln->y + LANE_H - 5, ln->s->id);
	xml_text(f, ln->s->comm);
	fprintf(f, " loop %s</text>\n", print_loop(lb, sizeof(lb), ln->l->loop));
	for (int c = 0; c < COLS; c++) {
		uint64_t a = col_at(fr, c), b = col_at(fr, c + 1);

		ev[c] = report_tl_sum(rep, ln->l, RP_LANE_EV, a, b + (b == a));
		if (ev[c] > maxev)
			maxev = ev[c];
	}
	for (int c = 0; c < COLS; c++) {
		uint64_t a = col_at(fr, c), b = col_at(fr, c + 1);
		double busy;

		if (ev[c] > 0)
			fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"2\" height=\"%d\" fill=\"#1f77b4\" "
			        "fill-opacity=\"%.2f\"/>\n", LEFT + 2 * c, ln->y, LANE_H,
			        0.15 + 0.6 * ev[c] / maxev);
		if (b <= a || !ln->l->view_busy_ns)
			continue;
		busy = report_tl_sum(rep, ln->l, RP_LANE_BUSY, a, b) / (double)(b - a);
		if (busy > 1)
			busy = 1;
		if (busy > 0.01)
			fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"2\" height=\"%.1f\" fill=\"#2ca02c\"/>\n",
			        LEFT + 2 * c, ln->y + LANE_H * (1 - busy), LANE_H * busy);
	}
}

/* The lane of (session, loop), or NULL. */
static const struct lane *find_lane(const struct lane *lanes, size_t n, uint64_t sess,
                                    uint32_t loop)
{
	for (size_t i = 0; i < n; i++)
		if (lanes[i].s->id == sess && lanes[i].l->loop == loop)
			return &lanes[i];
	return NULL;
}

/* DROP bands over their loop's lane (every lane of the session when the
 * loop is unknown). */
static void draw_drops(FILE *f, const struct report *rep, const struct frame *fr,
                       const struct lane *lanes, size_t n)
{
	char a[64], b[64], cause[32], lb[16];

	for (size_t i = 0; i < n; i++) {
		const struct rp_sess *s = lanes[i].s;

		for (size_t k = 0; k < s->ndrops; k++) {
			const struct rp_drop *d = &s->drops[k];
			double x0, x1;

			if (d->to < fr->from || d->from > fr->to)
				continue;
			if (!report_drop_on_loop(d, lanes[i].l->loop))
				continue;
			x0 = x_of(fr, d->from);
			x1 = x_of(fr, d->to);
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"#d62728\" "
			        "fill-opacity=\"0.4\" stroke=\"#d62728\"><title>DROP: %" PRIu64 " records lost on loop %s (%s) "
			        "%s .. %s</title></rect>\n", x1 - x0 < 3 ? x0 - 1.5 : x0, lanes[i].y - 2, x1 - x0 < 3 ? 3 : x1 - x0,
			        LANE_H + 4, d->count, print_loop(lb, sizeof(lb), d->loop),
			        segname_drop_cause(d->cause, cause, sizeof(cause)),
			        print_wall_clock(a, sizeof(a), d->from), print_wall_clock(b, sizeof(b), d->to));
		}
	}
	(void)rep;
}

/* A marker and its span for each finding in view. */
static void draw_findings(FILE *f, const struct report *rep, const struct frame *fr,
                          const struct lane *lanes, size_t n)
{
	char text[256];
	double *label_x = calloc(n ? n : 1, sizeof(*label_x));

	for (size_t i = 0; i < rep->nf; i++) {
		const struct rp_finding *fd = &rep->f[i];
		const struct lane *ln = find_lane(lanes, n, fd->sess, fd->loop);
		const char *color = fd->verdict == RV_PROVEN ? "#d62728" : "#ff7f0e";
		double x0, x1, ym, lx;

		if (!ln || !report_find_in_view(rep, fd))
			continue;
		x0 = x_of(fr, fd->t);
		x1 = x_of(fr, fd->t_end);
		ym = ln->y + LANE_H / 2.0;
		report_find_summary(rep, fd, text, sizeof(text));
		fprintf(f, "<g><title>#%zu %s: ", i + 1, fd->verdict == RV_PROVEN ? "proven" : "cannot tell");
		xml_text(f, text);
		fputs("</title>\n", f);
		if (x1 > x0 + 1)
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			        "stroke-width=\"2\" stroke-dasharray=\"4 2\"/>\n", x0, ym, x1, ym, color);
		fprintf(f, "<path d=\"M%.1f %.1f l6 -10 h-12 z\" fill=\"%s\" stroke=\"#000\" "
		        "stroke-width=\"0.5\"/>\n", x0, ln->y, color);
		lx = x0 + 7;                        /* labels of close markers side by side */
		if (label_x && lx < label_x[ln - lanes])
			lx = label_x[ln - lanes];
		if (label_x)
			label_x[ln - lanes] = lx + 6.0 * (double)snprintf(NULL, 0, "%zu,", i + 1);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"num\">%zu</text></g>\n", lx,
		        ln->y - 2, i + 1);
	}
	free(label_x);
}

/* Tick marks every 1, 2 or 5 x 10^k ns, labelled from the start. */
static void draw_axis(FILE *f, const struct frame *fr, double y)
{
	uint64_t span = fr->to - fr->from, step = 1;
	char d[32];

	/* span may be anything up to 2^64 - 1 ns (a producer writes any
	 * timestamp): compare by division, so that neither the step nor the
	 * tick position below can wrap. */
	while (step <= span / 10)
		step *= 10;
	if (span / step < 2)
		step /= 5;
	else if (span / step < 5)
		step /= 2;
	if (!step)
		step = 1;
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#444\"/>\n", LEFT, y,
	        LEFT + 2 * COLS, y);
	for (uint64_t t = 0;; t += step) {
		double x = x_of(fr, fr->from + t);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>"
		        "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">+%s</text>\n", x, y, x, y + 4, x, y + 16,
		        print_duration(d, sizeof(d), t));
		if (span - t < step)
			break;
	}
}

/* Where v falls on the bar scale: bar b = 4 * octave + quarter, linear
 * inside the octave (values below 4 are bars 0..3). */
static double bar_pos(uint64_t v)
{
	int e;

	if (v < 4)
		return (double)v;
	e = 63 - __builtin_clzll(v);
	return e * 4 + (double)v / (double)(1ull << (e - 2)) - 4;
}

/* The latency histogram: four bars per power of two. */
static void draw_hist(FILE *f, const struct report *rep, double y0)
{
	const struct rp_hist *h = &rep->all_lat;
	uint64_t bars[64 * 4] = { 0 }, maxc = 0;
	int lo = 255, hi = 0, nb;
	double bw, base = y0 + HIST_H;
	char d[32];

	fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"h\">Wake-to-run latency (RUN records)</text>\n",
	        LEFT, y0 - 8);
	if (!h->n) {
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"lab2\">no data: no RUN records in view "
		        "(nothing was woken and run, or the SCHED source is off)</text>\n", LEFT, y0 + 30);
		return;
	}
	for (unsigned i = 0; i < RP_HIST_N; i++) {
		uint64_t v = rp_hist_low(i), c;
		int b;

		if (!(c = rp_hist_count(h, i)))
			continue;
		b = v < 4 ? (int)v : (63 - __builtin_clzll(v)) * 4 +
		    (int)((v >> ((63 - __builtin_clzll(v)) - 2)) & 3);
		bars[b] += c;
		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
	}
	for (int b = lo; b <= hi; b++)
		maxc = bars[b] > maxc ? bars[b] : maxc;
	nb = hi - lo + 1;
	bw = (2.0 * COLS) / nb;
	for (int b = lo; b <= hi; b++) {
		double hgt = (double)HIST_H * (double)bars[b] / (double)maxc;
		uint64_t from = b < 8 ? (uint64_t)(b < 4 ? b : 4) : (uint64_t)(4 + (b & 3)) << (b / 4 - 2);

		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#9467bd\">"
		        "<title>%s and up: %" PRIu64 " runs</title></rect>\n", LEFT + (b - lo) * bw + 0.5,
		        base - hgt, bw - 1 > 1 ? bw - 1 : 1, hgt, print_duration(d, sizeof(d), from), bars[b]);
		if ((b - lo) % (nb > 24 ? 8 : 4) == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%s</text>\n",
			        LEFT + (b - lo) * bw, base + 14, print_duration(d, sizeof(d), from));
	}
	{
		static const struct { const char *name; double q; } marks[] = {
			{ "p50", 0.5 }, { "p99", 0.99 }, { "max", 1.0 },
		};
		for (size_t m = 0; m < 3; m++) {
			uint64_t v = rp_hist_quantile(h, marks[m].q);
			double x = LEFT + (bar_pos(v) - lo) * bw;

			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
			        "stroke-dasharray=\"3 3\"/><text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%s %s"
			        "</text>\n", x, y0, x, base, x + 3, y0 + 10 + 12.0 * (double)m, marks[m].name,
			        print_duration(d, sizeof(d), v));
		}
	}
	fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"lab2\">%" PRIu64 " runs; bars: four per power "
	        "of two, height linear in count</text>\n", LEFT, base + 32, h->n);
}

/* Write the SVG; 0 or -errno. */
int report_svg(struct report *rep, const char *path)
{
	struct lane *lanes = NULL;
	size_t n = 0, cap = 0;
	struct frame fr;
	double hist_y, height;
	char a[64], d[32];
	FILE *f;
	int ret = 0;

	for (size_t i = 0; i < rep->nsess; i++)
		for (size_t k = 0; k < rep->sess[i]->nloops; k++) {
			if (!rep->sess[i]->loops[k].view_events)
				continue;
			if (rp_grow(&lanes, &cap, n + 1, sizeof(*lanes)) < 0) {
				free(lanes);
				return -ENOMEM;
			}
			lanes[n].s = rep->sess[i];
			lanes[n].l = &rep->sess[i]->loops[k];
			lanes[n].y = TOP + (double)n * (LANE_H + LANE_GAP);
			n++;
		}
	if (!(f = fopen(path, "w"))) {
		ret = -errno;
		free(lanes);
		return ret;
	}
	fr.from = rep->view_first;
	fr.to = rep->view_last > rep->view_first ? rep->view_last : rep->view_first + 1;
	fr.px_per_ns = (2.0 * COLS) / (double)(fr.to - fr.from);
	hist_y = TOP + (double)n * (LANE_H + LANE_GAP) + 90;
	height = hist_y + HIST_H + 60;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
	        "viewBox=\"0 0 %d %.0f\" font-family=\"sans-serif\">\n"
	        "<style>.h{font-size:14px;font-weight:bold}.lab{font-size:11px;text-anchor:end}"
	        ".lab2{font-size:11px}.tick{font-size:10px}.num{font-size:9px;font-weight:bold}</style>\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", W, height, W, height);
	fprintf(f, "<text x=\"10\" y=\"22\" class=\"h\">xtcd report: ");
	xml_text(f, segread_dir(rep->r));
	fprintf(f, "</text>\n<text x=\"10\" y=\"40\" class=\"lab2\">");
	if (rep->view_events)
		fprintf(f, "from %s for %s, %" PRIu64 " records, %zu finding%s", print_wall(a, sizeof(a),
		        fr.from), print_duration(d, sizeof(d), fr.to - fr.from), rep->view_events,
		        report_find_count(rep), report_find_count(rep) == 1 ? "" : "s");
	else
		fputs("no data: no records match", f);
	fputs(" - blue: records; green: busy share; red band: dropped records; "
	      "triangles: findings (red proven, orange cannot tell)</text>\n", f);
	for (size_t i = 0; i < n; i++)
		draw_lane(f, rep, &fr, &lanes[i]);
	draw_drops(f, rep, &fr, lanes, n);
	draw_findings(f, rep, &fr, lanes, n);
	if (n)
		draw_axis(f, &fr, TOP + (double)n * (LANE_H + LANE_GAP) + 4);
	draw_hist(f, rep, hist_y);
	fputs("</svg>\n", f);
	/* what is still buffered fails again and says why (a full disk), where
	 * the error flag alone would only say that something failed */
	errno = 0;
	if (fflush(f) != 0 || ferror(f))
		ret = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !ret)
		ret = -errno;
	free(lanes);
	return ret;
}
