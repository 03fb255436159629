/*
 * xtcd/read/filter.h - the record filters shared by xtcd --cat, --follow,
 * --export and --stats: --session, --pid, --loop, --kind, --since, --until.
 *
 * Every filter given must match (they combine with AND).  What each one
 * does to each kind of item:
 *
 *   item            --session/--pid     --loop        --kind      --since/--until
 *   event           its session         its loop      its kind    its time
 *   DROP            its session         its loop      always kept its window overlaps
 *   SESSION START   its session         always kept   always kept its time
 *   SESSION END     its session         always kept   always kept its time
 *   CORRUPT (ring)  its session         always kept   always kept always kept
 *   EVICTED         lists the session   always kept   always kept always kept
 *   SEGMENT END     dropped             dropped       dropped     its time
 *
 * So a narrowed view still shows where the record has holes (DROP,
 * CORRUPT, EVICTED) and where the matching sessions begin and end, while
 * segment boundaries, which say nothing about a session, only show in an
 * unfiltered (or time-only) view.
 *
 * "Its loop" is an event's pid.loop_id (the "loop_id" of --json: the loop
 * the event happened on, see xtc_tail.h), or, when that is
 * XTC_TAIL_LOOP_NONE, the loop of the ring it was recorded in; a DROP's is
 * its ring's.  --pid is the OS process id of the session (from its
 * SESSION_START), not the loop.local.gen proc id.  Times are wall-clock:
 * --since is inclusive, --until exclusive.
 */
#ifndef XTCD_FILTER_H
#define XTCD_FILTER_H

#include <stdint.h>

#include "lib/seg/segread.h"

#define FILTER_MAX_KINDS 64   /* --kind can name kinds 0..63 */

struct filter {
	unsigned has_session : 1, has_pid : 1, has_loop : 1, has_kind : 1, has_since : 1,
	         has_until : 1;
	uint64_t session;
	uint32_t pid;
	uint32_t loop;
	uint64_t kinds;        /* bit k: kind k passes */
	uint64_t since_ns;     /* CLOCK_REALTIME ns, inclusive */
	uint64_t until_ns;     /* exclusive */
};

/* Parse one filter option's value into f.  opt is the option's name
 * ("session", "pid", "loop", "kind", "since", "until"); now_ns is the
 * wall-clock time relative times count back from.  Returns 0, or -EINVAL
 * with a one-line reason in why (for "xtcd: --OPT VALUE: <why>"). */
int filter_parse(struct filter *f, const char *opt, const char *value, uint64_t now_ns,
                 char *why, size_t why_len);

/* Whether any filter is set. */
int filter_active(const struct filter *f);

/* Whether the item passes f (see the table above).  r is the reader that
 * produced it (for the sessions an EVICTED item names). */
int filter_match(const struct filter *f, const struct segread *r,
                 const struct segread_item *it);

/* The loop of an event item (see above). */
uint32_t filter_event_loop(const struct segread_item *it);

/* Parse a wall-clock time ('YYYY-MM-DD HH:MM:SS[.ffffff]' local,
 * 'YYYY-MM-DDTHH:MM:SS[.ffffff][Z]', '@SECONDS[.fff]', or relative to
 * now_ns like '-5m', '-30s', '-2h', '-1d', '-250ms').  0 or -EINVAL. */
int filter_parse_time(const char *s, uint64_t now_ns, uint64_t *out);

#endif /* XTCD_FILTER_H */
