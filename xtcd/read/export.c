/*
 * xtcd/read/export.c - xtcd --export FORMAT DIR [filters] > FILE: the records
 * of a segment directory in a format other tools open.
 *
 *   int xtcd_export(const char *format, const char *dir, const char *out_dir,
 *                   const struct read_opts *o, export_chains_fn chains,
 *                   FILE *out);
 *
 * chrome  Chrome trace event JSON for the Perfetto UI and chrome://tracing
 *         (export_chrome.c).
 * ctf     a CTF 1.8 trace in the directory OUT, for babeltrace2 and Trace
 *         Compass (export_ctf.c).
 * dial9   the dial9 trace format, as xtc_tail_dump_dial9 writes it
 *         (lib/common/trace_enc.h), of the matching event records.
 * xtcl    the XTCL v3 dump of seed 000, as xtc_tail_dump writes it.
 *
 * chrome and ctf stream: their memory does not grow with the record.
 * dial9 and xtcl carry event records only, in time order (the records are
 * gathered in memory, 40 bytes each, and sorted by their CLOCK_MONOTONIC
 * time: these two formats need the count up front and one time order);
 * a note on stderr says when the selection also had drops or several
 * sessions, which these formats cannot show.  They are binary and are not
 * written to a terminal.  Every format ends with one line on stderr that
 * says what it wrote.
 *
 * Exit codes as --cat: 0 done; 1 done, but some data was damaged
 * (reported on stderr); 2 nothing written: DIR unreadable or without
 * segments, an unknown format, binary output to a terminal, or a failed
 * write.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xtcd/read/print.h"
#include "lib/seg/segread.h"
#include "lib/common/trace_enc.h"

#include "xtcd/read/view.h"
#include "xtcd/read/export_int.h"

/* ---- what every export shares: reading with the filters ---- */

/* The binary formats' state: the matching event records. */
struct gather {
	xtc_tail_rec_t *rec;
	size_t   n, cap;
	uint64_t drops, dropped, first_session;
	int      several_sessions;
};

/* segread callback: filter, then hand to the format. */
static int export_item_cb(const struct segread_item *it, void *user)
{
	struct export *x = user;

	if (it->type == SEGREAD_SEGMENT_BEGIN) {
		x->seg_real = it->real_ns;
		return 0;
	}
	if (it->type == SEGREAD_SESSION_START && !it->u.start.first)
		return 0;
	if (!filter_match(&x->o->filter, x->r, it))
		return 0;
	if (it->has_real)
		x->last_real = it->real_ns;
	return x->item(x, it);
}

/* segread callback: one stderr line per problem (not in the pre-pass). */
static void export_problem_cb(const struct segread_problem *p, void *user)
{
	struct export *x = user;

	if (!x->quiet)
		view_problem(x->out, p);
}

/* Read all of dir through the filters into x->item.  0, or 1 when
 * something was damaged (reported), or -errno (reported). */
int export_read(struct export *x, const char *dir)
{
	const struct segread_stats *st;
	int ret;

	ret = segread_open(&x->r, dir, export_item_cb, export_problem_cb, x);
	if (ret < 0) {
		fprintf(stderr, "xtcd: cannot read %s: %s\n", dir, strerror(-ret));
		return ret;
	}
	ret = segread_run(x->r);
	view_denied_done(dir);
	st = segread_stats(x->r);
	if (x->fatal || x->out_err) {
		ret = x->fatal ? x->fatal : x->out_err;
	} else if (ret < 0) {
		fprintf(stderr, "xtcd: cannot read %s: %s: point --export at the directory xtcd "
		        "writes its segments to\n", dir, strerror(-ret));
	} else if (st->listed == 0) {
		fprintf(stderr, "xtcd: %s holds no segments (xtc-NNNNNN.seg): point --export at the "
		        "directory xtcd writes to\n", dir);
		ret = -ENOENT;
	} else {
		ret = st->corrupt ? 1 : 0;
	}
	segread_close(x->r);
	x->r = NULL;
	return ret;
}

/* ---- dial9 and xtcl: gather, sort, encode ---- */

/* Keep one matching event record (and count what the format cannot show). */
static int gather_item(struct export *x, const struct segread_item *it)
{
	struct gather *g = x->fmt;

	if (it->type == SEGREAD_DROP) {
		g->drops++;
		g->dropped += it->u.drop.count;
		return 0;
	}
	if (it->type != SEGREAD_EVENT)
		return 0;
	if (!g->first_session)
		g->first_session = it->u.event.session_id;
	else if (it->u.event.session_id != g->first_session)
		g->several_sessions = 1;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 65536;
		xtc_tail_rec_t *p = cap > SIZE_MAX / sizeof(*p) ? NULL
		                    : realloc(g->rec, cap * sizeof(*p));

		if (!p) {
			x->fatal = -ENOMEM;
			return 1;
		}
		g->rec = p;
		g->cap = cap;
	}
	g->rec[g->n++] = it->u.event.rec;
	return 0;
}

/* Merge a[lo..mid) and a[mid..hi) into out[lo..hi), stable by ts_ns. */
static void merge_runs(const xtc_tail_rec_t *a, xtc_tail_rec_t *out, size_t lo, size_t mid,
                       size_t hi)
{
	size_t i = lo, j = mid, k = lo;

	while (i < mid && j < hi)
		out[k++] = a[j].ts_ns < a[i].ts_ns ? a[j++] : a[i++];
	while (i < mid)
		out[k++] = a[i++];
	while (j < hi)
		out[k++] = a[j++];
}

/*
 * Sort rec[0..n) by time, stably.  The records arrive as runs already in
 * order (a block is one ring's records, oldest first), so this is a
 * natural merge sort: find the runs, then merge neighbours until one is
 * left.  0 or -ENOMEM.
 */
static int sort_by_time(xtc_tail_rec_t *rec, size_t n)
{
	xtc_tail_rec_t *tmp, *src = rec, *dst;
	size_t *runs, nr = 0;

	if (n < 2)
		return 0;
	runs = malloc((n + 1) * sizeof(*runs));
	tmp = malloc(n * sizeof(*tmp));
	if (!runs || !tmp) {
		free(runs);
		free(tmp);
		return -ENOMEM;
	}
	runs[nr++] = 0;
	for (size_t i = 1; i < n; i++)
		if (rec[i].ts_ns < rec[i - 1].ts_ns)
			runs[nr++] = i;
	runs[nr] = n;   /* runs[0..nr) start runs; runs[nr] is the end */
	dst = tmp;
	while (nr > 1) {
		size_t k = 0, r;

		for (r = 0; r + 1 < nr; r += 2) {
			merge_runs(src, dst, runs[r], runs[r + 1], runs[r + 2]);
			runs[k++] = runs[r];
		}
		if (r < nr) {   /* an odd run out: copy it over */
			memcpy(dst + runs[r], src + runs[r], (runs[nr] - runs[r]) * sizeof(*dst));
			runs[k++] = runs[r];
		}
		runs[k] = runs[nr];
		nr = k;
		src = dst;
		dst = src == rec ? tmp : rec;
	}
	if (src != rec)
		memcpy(rec, src, n * sizeof(*rec));
	free(runs);
	free(tmp);
	return 0;
}

/* Notes on what a dial9/xtcl export leaves out. */
static void gather_notes(const struct gather *g, const char *format)
{
	if (g->n == 0)
		fprintf(stderr, "xtcd: no event records matched: the %s output is empty\n", format);
	if (g->dropped)
		fprintf(stderr, "xtcd: note: %" PRIu64 " records were dropped (%" PRIu64 " DROP "
		        "records) in this selection; %s cannot show that: see xtcd --stats\n",
		        g->dropped, g->drops, format);
	if (g->several_sessions)
		fprintf(stderr, "xtcd: note: this %s output merges several sessions (processes); "
		        "use --session ID for one\n", format);
}

/* --export dial9 / xtcl. */
static int export_binary(struct export *x, const char *dir, const char *format)
{
	int xtcl = strcmp(format, "xtcl") == 0;
	struct gather g;
	int ret, status;

	memset(&g, 0, sizeof(g));
	x->fmt = &g;
	x->item = gather_item;
	status = export_read(x, dir);
	if (status < 0)
		goto out;
	if ((ret = sort_by_time(g.rec, g.n)) < 0 ||
	    (xtcl && (ret = trace_enc_xtcl_check(g.rec, g.n)) < 0)) {
		fprintf(stderr, "xtcd: cannot export %s: %s\n", format,
		        ret == -ERANGE ? "a record's kind or source does not fit in a byte" :
		        ret == -EOVERFLOW ? "more than 4294967295 records: narrow it with --since/"
		                            "--until or --session" : strerror(-ret));
		status = ret;
		goto out;
	}
	fflush(x->out);
	ret = xtcl ? trace_enc_xtcl_write(fileno(x->out), g.rec, g.n)
	           : trace_enc_dial9_write(fileno(x->out), g.rec, g.n);
	if (ret < 0) {
		x->out_err = ret;
		status = ret;
		goto out;
	}
	gather_notes(&g, format);
	fprintf(stderr, "xtcd: --export %s: %zu events, no flows, no drops (the format has "
	        "neither; %" PRIu64 " DROP records left out)\n", format, g.n, g.drops);
out:
	free(g.rec);
	return status;
}

/* ---- the mode ---- */

/* Whether format is one --export knows. */
int export_format_valid(const char *format)
{
	return strcmp(format, "chrome") == 0 || strcmp(format, "ctf") == 0 ||
	       strcmp(format, "dial9") == 0 || strcmp(format, "xtcl") == 0;
}

/* Whether --export format writes a directory (given after DIR). */
int export_format_is_dir(const char *format)
{
	return strcmp(format, "ctf") == 0;
}

/* Write the records of dir to out (or out_dir) in format. */
int xtcd_export(const char *format, const char *dir, const char *out_dir,
                const struct read_opts *o, export_chains_fn chains, FILE *out)
{
	struct export x;
	int status;

	if (!export_format_valid(format)) {
		fprintf(stderr, "xtcd: --export %s: unknown format; expected chrome, ctf, dial9 or "
		        "xtcl\n", format);
		return 2;
	}
	if (export_format_is_dir(format) && !out_dir) {
		fprintf(stderr, "xtcd: --export %s needs a directory to write to: xtcd --export %s "
		        "%s OUT/\n", format, format, dir);
		return 2;
	}
	if (strcmp(format, "chrome") != 0 && !export_format_is_dir(format) &&
	    isatty(fileno(out))) {
		fprintf(stderr, "xtcd: --export %s writes binary data: redirect it to a file, e.g. "
		        "xtcd --export %s %s > trace.%s\n", format, format, dir,
		        format[0] == 'd' ? "d9" : "xtcl");
		return 2;
	}
	memset(&x, 0, sizeof(x));
	x.o = o;
	x.out = out;
	if (strcmp(format, "chrome") == 0)
		status = export_chrome(&x, dir, chains);
	else if (strcmp(format, "ctf") == 0)
		status = export_ctf(&x, dir, out_dir);
	else
		status = export_binary(&x, dir, format);
	if ((fflush(out) != 0 || ferror(out)) && !x.out_err)
		x.out_err = errno ? -errno : -EIO;
	if (x.out_err) {
		if (x.out_err != -EPIPE)
			fprintf(stderr, "xtcd: writing the output failed: %s\n", strerror(-x.out_err));
		return 2;
	}
	if (x.fatal) {
		fprintf(stderr, "xtcd: export failed: %s\n", strerror(-x.fatal));
		return 2;
	}
	return status < 0 ? 2 : status;
}
