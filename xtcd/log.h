/*
 * xtcd/log.h - the daemon's log: one line per call on standard error,
 * prefixed "xtcd: ", written whole (also from the worker thread) and
 * leaving errno as it was.
 *
 * Four levels; a line is printed when its level is at or above the one in
 * force (log_level in xtcd.conf(5), --verbose).  The default, info, prints
 * every line the daemon has always printed; debug says more.  xlog() is
 * the info-level call most of the daemon makes.
 */
#ifndef XTCD_LOG_H
#define XTCD_LOG_H

#include <stdarg.h>
#include <sys/types.h>

/* Ordered: a level lets through itself and every level before it. */
enum xlog_level {
	XLOG_NONE    = -1, /* nothing at all (the fuzzers) */
	XLOG_ERROR   = 0,  /* something failed: data or a client may be lost */
	XLOG_WARNING = 1,  /* something is wrong but xtcd carries on */
	XLOG_INFO    = 2,  /* what an operator follows: starts, sessions, reloads */
	XLOG_DEBUG   = 3,  /* what a developer follows */
};

#define XLOG_DEFAULT XLOG_INFO

void xlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xlog_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xlog_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xlog_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line at any level (the same as the calls above). */
void xlog_at(enum xlog_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xlog_vat(enum xlog_level level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* log_limit.c: a line a client of uid causes (its sessions' attach and
 * end lines, its refusals), under a rate limit per uid: within each
 * interval the first `lines` are printed as xlog_at() would, the rest
 * counted and said in one line when the interval is over (at the next
 * line of that uid, or at xlog_limit_tick(), once a second).  lines 0:
 * no limit.  Event loop only. */
void xlog_uid(enum xlog_level level, uid_t uid, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void xlog_limit_set(unsigned lines, unsigned interval_ms);
/* all: also the intervals still running (at exit). */
void xlog_limit_tick(int all);

/* Whether a line at level would be printed: to skip building costly
 * arguments for a debug line nobody reads. */
int  xlog_enabled(enum xlog_level level);

/* Set the level in force (at start and on SIGHUP). */
void xlog_set_level(enum xlog_level level);

/* "debug" -> XLOG_DEBUG: 0, or -1 for a name that is not a level. */
int  xlog_level_parse(const char *name, enum xlog_level *out);
const char *xlog_level_name(enum xlog_level level);

#endif /* XTCD_LOG_H */
