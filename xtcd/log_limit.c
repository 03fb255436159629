/*
 * xtcd/log_limit.c - a rate limit on the lines a client causes, per uid,
 * as journald limits a service (RateLimitIntervalSec=, RateLimitBurst=).
 *
 * Every session costs an attach and an end line, every refused hello a
 * line: one local user churning ten thousand sessions a second would
 * otherwise have xtcd write twenty thousand lines a second to the
 * journal, pushing everyone else's lines out of it.  Within an interval
 * a uid's first `burst` lines are printed as they always were; the rest
 * are counted, and one line says how many once the interval is over.
 * Other uids keep their own counts, so a well-behaved user's lines still
 * show.  Only the event loop calls these (the worker thread never logs a
 * client's line).
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/common/clock.h"
#include "xtcd/log.h"

#define NUIDS 64            /* uids with an interval running; more share one */
#define OTHERS ((uid_t)-1)  /* the shared row, when every row is taken */

struct uid_rate {
	uid_t    uid;
	int      used;
	int      level;          /* the most severe level suppressed */
	uint64_t since_ns;       /* when its interval began */
	uint64_t printed, suppressed;
};

static struct uid_rate rows[NUIDS + 1]; /* rows[NUIDS]: OTHERS */
static unsigned burst = 100;
static uint64_t interval_ns = 10000000000ull;

void xlog_limit_set(unsigned lines, unsigned interval_ms)
{
	burst = lines;
	interval_ns = (uint64_t)interval_ms * 1000000u;
}

/* The one line for the lines of r suppressed in its interval, and a new
 * interval from now. */
static void row_close(struct uid_rate *r, uint64_t now)
{
	if (r->suppressed != 0) {
		char who[32];

		if (r->uid == OTHERS)
			snprintf(who, sizeof who, "other uids");
		else
			snprintf(who, sizeof who, "uid %u", (unsigned)r->uid);
		xlog_at((enum xlog_level)r->level,
		        "%s: %llu more session and refusal lines suppressed in the last %.0f s "
		        "(at most %u per uid every %.0f s: log_rate_burst, log_rate_interval_ms)",
		        who, (unsigned long long)r->suppressed, (double)(now - r->since_ns) / 1e9, burst,
		        (double)interval_ns / 1e9);
	}
	r->since_ns = now;
	r->printed = r->suppressed = 0;
	r->level = XLOG_DEBUG;
}

/* uid's row: its own, else a free one or one whose interval is over
 * (what it suppressed said first), else the shared row. */
static struct uid_rate *row_of(uid_t uid, uint64_t now)
{
	struct uid_rate *spare = NULL;

	for (int i = 0; i < NUIDS; i++) {
		struct uid_rate *r = &rows[i];

		if (r->used && r->uid == uid)
			return r;
		if (spare == NULL && (!r->used || now - r->since_ns >= interval_ns))
			spare = r;
	}
	if (spare == NULL) {
		spare = &rows[NUIDS];
		if (spare->used)
			return spare;
		uid = OTHERS;
	} else if (spare->used) {
		row_close(spare, now);
	}
	spare->used = 1;
	spare->uid = uid;
	spare->since_ns = now;
	spare->printed = spare->suppressed = 0;
	spare->level = XLOG_DEBUG;
	return spare;
}

void xlog_uid(enum xlog_level level, uid_t uid, const char *fmt, ...)
{
	uint64_t now;
	struct uid_rate *r;
	va_list ap;

	if (!xlog_enabled(level))
		return;
	if (burst != 0) {
		now = mono_ns();
		r = row_of(uid, now);
		if (now - r->since_ns >= interval_ns)
			row_close(r, now);
		if (r->printed >= burst) {
			r->suppressed++;
			if ((int)level < r->level)
				r->level = (int)level;
			return;
		}
		r->printed++;
	}
	va_start(ap, fmt);
	xlog_vat(level, fmt, ap);
	va_end(ap);
}

void xlog_limit_tick(int all)
{
	uint64_t now = mono_ns();

	for (int i = 0; i <= NUIDS; i++)
		if (rows[i].used && rows[i].suppressed != 0 && (all || now - rows[i].since_ns >= interval_ns))
			row_close(&rows[i], now);
}
