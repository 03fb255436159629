/*
 * xtcd/read/view.c - filter, format and colour the items --cat and --follow
 * print (see view.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xtcd/read/view.h"

#define SGR_RESET    "\033[0m"
#define SGR_RED      "\033[1;31m"
#define SGR_GREEN    "\033[1;32m"
#define SGR_YELLOW   "\033[1;33m"
#define SGR_DIM_YEL  "\033[33m"

/* Whether AUTO means colour for out. */
static int color_auto(FILE *out)
{
	const char *term = getenv("TERM");
	const char *no = getenv("NO_COLOR");

	if (no && *no)
		return 0;
	if (!term || !*term || strcmp(term, "dumb") == 0)
		return 0;
	return isatty(fileno(out));
}

/* Set up v. */
void view_init(struct view *v, FILE *out, int json, enum view_color color,
               const struct filter *filter)
{
	memset(v, 0, sizeof(*v));
	print_init(&v->fmt, out, json);
	v->out = out;
	v->filter = filter;
	if (!json)
		v->color = color == VIEW_COLOR_ALWAYS ||
		           (color == VIEW_COLOR_AUTO && color_auto(out));
}

/* Open a reader of dir, or say why not. */
int view_open(struct segread **rp, const char *dir, segread_item_fn item,
              segread_problem_fn problem, void *user)
{
	int ret = segread_open(rp, dir, item, problem, user);

	if (ret < 0)
		fprintf(stderr, "xtcd: cannot read %s: %s\n", dir, strerror(-ret));
	return ret;
}

/* Read every segment, or say why the directory gave nothing. */
int view_run(struct segread *r, const char *mode)
{
	const char *dir = segread_dir(r);
	int ret = segread_run(r);

	view_denied_done(dir);

	if (ret < 0 && segread_stats(r)->listed)
		fprintf(stderr, "xtcd: reading %s failed: %s\n", dir, strerror(-ret));
	else if (ret == -EACCES || ret == -EPERM)
		fprintf(stderr, "xtcd: cannot read %s: %s: the segments are xtcd's own (mode 0600); "
		        "run xtcd %s as root or as the user xtcd runs as\n", dir, strerror(-ret), mode);
	else if (ret < 0)
		fprintf(stderr, "xtcd: cannot read %s: %s: point %s at the directory xtcd writes "
		        "its segments to\n", dir, strerror(-ret), mode);
	else if (segread_stats(r)->listed == 0) {
		fprintf(stderr, "xtcd: %s holds no segments (xtc-NNNNNN.seg): point %s at the "
		        "directory xtcd writes to\n", dir, mode);
		ret = -ENOENT;
	}
	return ret;
}

/* Parse a --color value. */
int view_parse_color(const char *s, enum view_color *out)
{
	if (strcmp(s, "auto") == 0)
		*out = VIEW_COLOR_AUTO;
	else if (strcmp(s, "never") == 0 || strcmp(s, "no") == 0)
		*out = VIEW_COLOR_NEVER;
	else if (strcmp(s, "always") == 0 || strcmp(s, "yes") == 0)
		*out = VIEW_COLOR_ALWAYS;
	else
		return -EINVAL;
	return 0;
}

/* Whether item would be printed. */
int view_wants(const struct view *v, const struct segread *r, const struct segread_item *it)
{
	if (it->type == SEGREAD_SEGMENT_BEGIN)
		return 0;
	return filter_match(v->filter, r, it);
}

/* The colour of an item's line, or NULL for none. */
static const char *sgr_of(const struct segread_item *it)
{
	switch (it->type) {
	case SEGREAD_DROP:
	case SEGREAD_CORRUPT:
		return SGR_RED;
	case SEGREAD_SESSION_START:
		return SGR_GREEN;
	case SEGREAD_SESSION_END:
		return it->u.end.complete ? SGR_GREEN : SGR_YELLOW;
	case SEGREAD_EVICTED:
		return SGR_DIM_YEL;
	default:
		return NULL;
	}
}

/*
 * A coloured line: format it into memory first, so that the reset code
 * goes before the newline and a line-oriented consumer (grep, less -R)
 * never sees a colour spill into the next line.
 */
static int print_colored(struct view *v, const struct segread_item *it, const char *sgr)
{
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	int ret;

	if (!m)
		return -ENOMEM;
	v->fmt.out = m;
	ret = print_item(&v->fmt, it);
	v->fmt.out = v->out;
	if (fclose(m) != 0 && ret == 0)
		ret = -ENOMEM;
	if (ret == 0) {
		if (len && line[len - 1] == '\n')
			len--;
		fprintf(v->out, "%s%.*s%s\n", sgr, (int)len, line, SGR_RESET);
		if (ferror(v->out))
			ret = errno ? -errno : -EIO;
	}
	free(line);
	return ret;
}

/* Segments the reader may not open: the first says what to do, the others
 * are counted and summed up in one line at the end (view_denied_done), so
 * that a directory of thousands of segments does not print thousands of
 * lines.  One reading mode runs in a process, so one count is enough. */
static uint64_t denied;

int view_denied(const struct segread_problem *p)
{
	if (p->kind != SEGREAD_IO_ERROR || (p->err != -EACCES && p->err != -EPERM))
		return 0;
	if (denied++ == 0)
		fprintf(stderr, "xtcd: %s: cannot open: %s: the segments are xtcd's own; run this as "
		        "root or as the user xtcd runs as\n", p->path, strerror(-p->err));
	return 1;
}

void view_denied_done(const char *dir)
{
	if (denied > 1)
		fprintf(stderr, "xtcd: %llu more segments of %s could not be opened either (%s)\n",
		        (unsigned long long)(denied - 1), dir, strerror(EACCES));
	denied = 0;
}

/* One stderr line for a problem in the data. */
void view_problem(FILE *out, const struct segread_problem *p)
{
	long long at = (long long)p->offset, n = (long long)p->bytes;

	fflush(out);
	if (view_denied(p))
		return;
	switch (p->kind) {
	case SEGREAD_TORN_TAIL:
		fprintf(stderr, "xtcd: %s: torn tail at byte %lld (%lld bytes ignored); "
		        "everything before it is intact\n", p->path, at, n);
		break;
	case SEGREAD_CORRUPT_TAIL:
		fprintf(stderr, "xtcd: %s: corrupt at byte %lld (%s; %lld bytes ignored); "
		        "everything before it is intact\n", p->path, at, p->why, n);
		break;
	case SEGREAD_BAD_FILE_HEADER:
		fprintf(stderr, "xtcd: %s: %s; segment skipped\n", p->path, p->why);
		break;
	case SEGREAD_BAD_PAYLOAD:
		fprintf(stderr, "xtcd: %s: block at byte %lld skipped: %s\n", p->path, at, p->why);
		break;
	case SEGREAD_VANISHED:
		fprintf(stderr, "xtcd: %s: deleted while reading (evicted by a running xtcd); "
		        "skipped\n", p->path);
		break;
	case SEGREAD_IO_ERROR:
	default:
		fprintf(stderr, "xtcd: %s: %s: %s; rest of the segment skipped\n", p->path,
		        p->why, strerror(-p->err));
		break;
	}
}

/* Print one item. */
int view_print(struct view *v, const struct segread_item *it)
{
	const char *sgr = v->color ? sgr_of(it) : NULL;
	int ret;

	if (v->out_err)
		return v->out_err;
	ret = sgr ? print_colored(v, it, sgr) : print_item(&v->fmt, it);
	if (ret < 0)
		v->out_err = ret;
	return ret;
}
