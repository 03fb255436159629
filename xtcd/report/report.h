/*
 * xtcd/report/report.h - xtcd --report: turn a directory of segments into
 * verdicts.  What main.c needs; the pieces share xtcd/report/report_int.h.
 *
 *   xtcd --report DIR [filters] [--json] [--stall D] [--top N]
 *   xtcd --report DIR [filters] --svg FILE
 *   xtcd --report DIR [filters] --export pprof|collapsed > FILE
 *   xtcd --report --diff A B DIR [filters] [--json]
 *
 * The report reads every record of the sessions the filters select
 * (--session, --pid) in one pass and answers, per session:
 *
 *   findings   wakeup chains that did not complete (PARK_TASK/PARK ->
 *              SUBMIT -> REAP -> WAKE -> RUN, joined on the task pointer),
 *              SUBMIT_FAIL and LIFECYCLE_DROP (faults by their presence),
 *              loops that stopped recording while others went on.  A verdict
 *              that rests on an ABSENCE is printed only when no record that
 *              could have held the missing event was dropped, lost or
 *              evicted in the window it depends on and the session's record
 *              is not cut short there; otherwise it says "cannot tell" and
 *              names the loss.
 *   loops      polls, POLL_FULL runs, busy share over time, imbalance
 *   latency    wake-to-run (RUN detail) percentiles per session and loop,
 *              the worst instances, mailbox high-water marks, SEND/RECV rates
 *   off-CPU    per proc: idle, busy and scheduled ns, polls, wakes
 *
 * --loop, --kind, --since and --until narrow what is REPORTED (findings
 * that begin in the window, on the loop; the statistics); the chains and
 * loop liveness always read every record of the session, because leaving
 * records out would manufacture exactly the absences the report judges.
 */
#ifndef XTCD_REPORT_H
#define XTCD_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xtcd/read/read.h"

/* A wall-clock window [from, to), CLOCK_REALTIME ns. */
struct report_window {
	uint64_t from;
	uint64_t to;
};

/* What --report was asked for, beyond struct read_opts. */
struct report_opts {
	const char *svg_path;          /* --svg FILE, or NULL */
	const char *export_format;     /* "pprof", "collapsed", or NULL */
	uint64_t    stall_ns;          /* --stall: how long counts as stuck */
	unsigned    top;               /* --top: rows of the per-proc tables */
	int         diff;              /* --diff A B was given */
	struct report_window diff_win[2];
	const char *diff_text[2];      /* A and B as typed */
	const char *flags;             /* "--report", "--export pprof": for messages */
	/* the pass behind --export chrome's flows (report_export_chains) */
	const struct export_chain_sink *chains;
};

#define REPORT_DEFAULT_STALL_NS 1000000000ull  /* 1 s */
#define REPORT_DEFAULT_TOP      10u

/* Defaults: no SVG, no export, no diff, stall 1 s, top 10. */
void report_opts_init(struct report_opts *o);

/* Whether --export FMT is one of the report's (pprof, collapsed). */
int report_export_format_valid(const char *fmt);

/* Parse a window "FROM..TO" (each side a time filter_parse_time() takes,
 * relative ones counting back from now_ns).  0, or -EINVAL with a reason. */
int report_parse_window(const char *s, uint64_t now_ns, struct report_window *w, char *why,
                        size_t why_len);

/* Parse a duration such as 500ms, 2s, 1.5s, 3m, 250us.  0 or -EINVAL. */
int report_parse_duration(const char *s, uint64_t *ns);

/*
 * Run the report on dir and write it to out (text, JSON lines with
 * ro->json, a pprof profile or collapsed stacks with o->export_format; the
 * SVG to o->svg_path besides).  Returns the process exit code:
 *   0  the report was written
 *   1  it was written, but some data is damaged (reported on stderr)
 *   2  DIR cannot be read or holds no segments, writing failed, or binary
 *      output would go to a terminal
 *   3  --export: the record holds no task data to profile (reported, not
 *      drawn: an empty profile and an idle program look the same)
 */
int xtcd_report(const char *dir, const struct read_opts *ro, const struct report_opts *o,
                FILE *out);

/* The wakeup chains of dir, for --export chrome's flow arrows: each step
 * of each chain, in time order, then the verdict on every chain that never
 * completed, into sink.  An export_chains_fn (xtcd/read/read.h). */
int report_export_chains(const char *dir, const struct read_opts *o,
                         const struct export_chain_sink *sink);

#endif /* XTCD_REPORT_H */
