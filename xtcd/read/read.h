/*
 * xtcd/read/read.h - the reading modes of xtcd: --cat, --follow, --export
 * and --stats.  They read a directory of segments through lib/seg and
 * never touch the daemon's state; main.c dispatches to them.
 *
 *   cat.c      xtcd --cat: print what the segments hold
 *   follow.c   xtcd --follow: print records as they are written
 *   export.c   xtcd --export: Chrome trace JSON, dial9, XTCL
 *   stats.c    xtcd --stats: per session and loop summary
 *   filter.c   --session/--pid/--loop/--kind/--since/--until
 *   view.c     filter, format and colour the lines --cat/--follow print
 *   print.c    one text line or JSON object per item
 */
#ifndef XTCD_READ_READ_H
#define XTCD_READ_READ_H

#include <stdio.h>

#include "xtcd/read/filter.h"

/* What a reading mode (--cat, --follow, --export, --stats) was asked for. */
struct read_opts {
	int           json;
	int           color;   /* enum view_color (view.h) */
	long long     lines;   /* --follow -n: records shown first; -1 all */
	struct filter filter;
};

/* The reading modes: each returns the process exit code. */
int xtcd_cat(const char *dir, const struct read_opts *o, FILE *out);
int xtcd_follow(const char *dir, const struct read_opts *o, FILE *out);
int xtcd_export(const char *format, const char *dir, const struct read_opts *o, FILE *out);
int xtcd_stats(const char *dir, const struct read_opts *o, FILE *out);
/* Whether --export knows this format (chrome, dial9, xtcl). */
int export_format_valid(const char *format);

#endif /* XTCD_READ_READ_H */
