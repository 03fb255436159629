/*
 * xtcd/read/cat.c - xtcd --cat DIR [--json] [--color=WHEN] [filters]: print
 * every record in the segment directory DIR, oldest first, and exit.
 *
 *   int xtcd_cat(const char *dir, const struct read_opts *o, FILE *out);
 *
 * Filters (--session, --pid, --loop, --kind, --since, --until; see
 * xtcd/read/filter.h) choose the records; the exit code does not depend on them.
 *
 * Output: one line per record on `out`: text (local wall-clock time first,
 * see xtcd/read/print.h) or, with json, one JSON object per line.  A session's
 * SESSION_START is printed once, where it first appears: the restatements
 * at the start of later segments are left out, except when the segment
 * holding the original was already evicted (then it prints with
 * "restated":true / "(restated)").  Problems go to stderr, one line each,
 * and never stop the listing: everything readable is printed.
 *
 * Return value (the process exit code):
 *   0  everything read was valid.  A torn tail on the newest segment is
 *      normal (a crash, or xtcd writing it right now): it is reported on
 *      stderr and still exits 0.  So does a segment deleted under us by a
 *      running xtcd's byte budget.
 *   1  some data is damaged: an older segment ends in a corrupt or partial
 *      block, a segment's file header is bad (the segment is skipped), a
 *      block's contents make no sense, or a segment could not be read.
 *   2  nothing could be done: DIR is missing or unreadable, holds no
 *      segments, or writing the output failed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/seg/segread.h"

#include "xtcd/read/view.h"
#include "xtcd/read/read.h"

struct cat {
	struct view view;
	struct segread *r;
	FILE *out;
	int   out_err;       /* -errno of a failed write */
};

/* Print one item; stop on an output error. */
static int cat_item_cb(const struct segread_item *it, void *user)
{
	struct cat *c = user;
	int ret;

	if (it->type == SEGREAD_SESSION_START && !it->u.start.first)
		return 0;
	if (!view_wants(&c->view, c->r, it))
		return 0;
	ret = view_print(&c->view, it);
	if (ret < 0) {
		c->out_err = ret;
		return 1;
	}
	return 0;
}

/* One stderr line per problem. */
static void cat_problem_cb(const struct segread_problem *p, void *user)
{
	struct cat *c = user;

	/* keep stderr in step with what was printed */
	if (fflush(c->out) != 0 && !c->out_err)
		c->out_err = errno ? -errno : -EIO;
	view_problem(c->out, p);
}

/* The exit code for a finished run. */
static int cat_status(const struct cat *c, const struct segread_stats *st)
{
	if (c->out_err) {
		if (c->out_err != -EPIPE)
			fprintf(stderr, "xtcd: writing the output failed: %s\n",
			        strerror(-c->out_err));
		return 2;
	}
	return st->corrupt ? 1 : 0;
}

/* Print every record in dir to out (see the exit codes above). */
int xtcd_cat(const char *dir, const struct read_opts *o, FILE *out)
{
	struct segread *r;
	struct cat c;
	int status;

	memset(&c, 0, sizeof(c));
	c.out = out;
	view_init(&c.view, out, o->json, (enum view_color)o->color, &o->filter);
	if (view_open(&r, dir, cat_item_cb, cat_problem_cb, &c) < 0)
		return 2;
	c.r = r;
	if (view_run(r, "--cat") < 0 && !c.out_err) {
		segread_close(r);
		return 2;
	}
	if ((fflush(out) != 0 || ferror(out)) && !c.out_err)
		c.out_err = errno ? -errno : -EIO;
	status = cat_status(&c, segread_stats(r));
	segread_close(r);
	return status;
}
