/*
 * xtcd/read/view.h - what xtcd --cat and --follow print for each item: the
 * filters (xtcd/read/filter.h), then a text line or a JSON object (xtcd/read/print.h),
 * with DROP, CORRUPT, EVICTED and session start/end lines coloured when
 * asked to (--color) or, by default, when the output is a terminal.
 */
#ifndef XTCD_VIEW_H
#define XTCD_VIEW_H

#include <stdio.h>

#include "xtcd/read/filter.h"
#include "xtcd/read/print.h"
#include "lib/seg/segread.h"

/* --color */
enum view_color {
	VIEW_COLOR_AUTO = 0,   /* when out is a terminal, TERM is not "dumb" and
	                        * NO_COLOR is unset */
	VIEW_COLOR_NEVER,
	VIEW_COLOR_ALWAYS,
};

struct view {
	struct printer fmt;
	FILE *out;
	const struct filter *filter;
	int   color;         /* colour this output (resolved, never AUTO) */
	int   out_err;       /* -errno of the first failed write */
};

/* Print to out as JSON or text, through filter (kept by reference). */
void view_init(struct view *v, FILE *out, int json, enum view_color color,
               const struct filter *filter);

/* Print one item that passed the filter (view_wants() said so).  Returns
 * 0, or -errno once writing failed (remembered in out_err). */
int view_print(struct view *v, const struct segread_item *it);

/* Whether item would be printed: it passes the filter and is not a
 * SEGMENT_BEGIN.  Session starts are the caller's to deduplicate. */
int view_wants(const struct view *v, const struct segread *r, const struct segread_item *it);

/* The one stderr line --cat, --export and --stats print for a problem in
 * the data (lib/seg/segread.h); out is flushed first so the two stay in step. */
void view_problem(FILE *out, const struct segread_problem *p);

/* A segment the reader may not open (EACCES, EPERM): 1 after saying so
 * with what to do for the first one only, else 0 (not that problem). */
int view_denied(const struct segread_problem *p);

/* After the reading: one line for the segments of dir that view_problem()
 * did not name for want of permission, if any. */
void view_denied_done(const char *dir);

/* segread_open() for a reading mode: 0, or -errno after one stderr line. */
int view_open(struct segread **rp, const char *dir, segread_item_fn item,
              segread_problem_fn problem, void *user);

/* segread_run() for the reading mode named by mode ("--stats"): 0, the item
 * callback's nonzero value, or -errno after one stderr line saying why the
 * directory gave nothing to read (-ENOENT: it holds no segments). */
int view_run(struct segread *r, const char *mode);

/* Parse a --color value; 0 or -EINVAL. */
int view_parse_color(const char *s, enum view_color *out);

#endif /* XTCD_VIEW_H */
