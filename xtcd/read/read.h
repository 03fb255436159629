/*
 * xtcd/read/read.h - the reading modes of xtcd: --cat, --follow, --export
 * and --stats.  They read a directory of segments through lib/seg and
 * never touch the daemon's state; main.c dispatches to them.
 *
 *   cat.c      xtcd --cat: print what the segments hold
 *   follow.c   xtcd --follow: print records as they are written
 *   export.c   xtcd --export: reading for every format; dial9, XTCL
 *   export_chrome.c  Chrome trace JSON (slices, instants, flow arrows)
 *   export_ctf.c     CTF 1.8 (TSDL metadata, one binary stream per loop)
 *   stats.c    xtcd --stats: per session and loop summary
 *   filter.c   --session/--pid/--loop/--kind/--since/--until
 *   view.c     filter, format and colour the lines --cat/--follow print
 *   print.c    one text line or JSON object per item
 */
#ifndef XTCD_READ_READ_H
#define XTCD_READ_READ_H

#include <stdint.h>
#include <stdio.h>

#include "xtc_tail.h"
#include "xtcd/read/filter.h"

/* What a reading mode (--cat, --follow, --export, --stats) was asked for. */
struct read_opts {
	int           json;
	int           color;   /* enum view_color (view.h) */
	long long     lines;   /* --follow -n: records shown first; -1 all */
	struct filter filter;
};

/*
 * The wakeup chains of --export chrome's flow arrows.  The join (PARK_TASK
 * -> SUBMIT -> REAP -> WAKE -> RUN on the task pointer, across loops, in
 * time order, and the verdict on a chain that never completed) is the
 * report's (xtcd/report/): the export is handed a function that runs it
 * and feeds a sink, so that read/ never depends on report/.
 */
struct export_chain_ev {
	uint64_t    session;
	uint32_t    os_pid;      /* the session's process */
	const char *comm;        /* its name, NUL-terminated ("" if unknown) */
	uint64_t    flow;        /* the chain's flow id (step() of its PARK_TASK) */
	uint64_t    real_ns;     /* the record's wall-clock time */
	uint32_t    loop;        /* the loop of its ring */
	uint32_t    kind;        /* XTC_TAIL_PARK_TASK, _SUBMIT, _REAP, _WAKE or _RUN */
	xtc_pid_t   pid;         /* the parked proc */
	uint64_t    task;        /* the task pointer */
};

struct export_chain_verdict {
	uint64_t    session;
	xtc_pid_t   pid;         /* the parked proc */
	uint64_t    t_park;      /* its PARK_TASK's wall-clock time */
	uint64_t    t_op;        /* its PARK's, or 0 */
	const char *verdict;     /* "NEVER REAPED", "CANNOT TELL (would be: ...)" */
	const char *key;         /* "never-reaped", ... */
	const char *why;         /* what hides the answer, or "" */
};

struct export_chain_sink {
	void *ctx;
	/* A step, in time order per session.  For a PARK_TASK it returns the
	 * new chain's flow id (0: not drawn, and no later step comes). */
	uint64_t (*step)(void *ctx, const struct export_chain_ev *e);
	/* A chain that never completed, once the record has been read. */
	void (*verdict)(void *ctx, const struct export_chain_verdict *v);
};

/* Run the chain join over dir's records that o selects, into sink.
 * Returns 0, 1 (some data damaged), or 2 (failed, reported). */
typedef int (*export_chains_fn)(const char *dir, const struct read_opts *o,
                                const struct export_chain_sink *sink);

/* The reading modes: each returns the process exit code. */
int xtcd_cat(const char *dir, const struct read_opts *o, FILE *out);
int xtcd_follow(const char *dir, const struct read_opts *o, FILE *out);
/* --export FORMAT DIR: to out, or for ctf into the directory out_dir;
 * chains (may be NULL: no flow arrows) draws chrome's wakeup chains. */
int xtcd_export(const char *format, const char *dir, const char *out_dir,
                const struct read_opts *o, export_chains_fn chains, FILE *out);
int xtcd_stats(const char *dir, const struct read_opts *o, FILE *out);
/* Whether --export knows this format (chrome, ctf, dial9, xtcl). */
int export_format_valid(const char *format);
/* Whether --export FORMAT writes into a directory (ctf) rather than stdout. */
int export_format_is_dir(const char *format);

#endif /* XTCD_READ_READ_H */
