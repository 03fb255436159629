/*
 * xtcd/read/filter.c - the record filters of the reading modes (see filter.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/seg/segname.h"
#include "xtcd/read/filter.h"

#define NS_PER_S 1000000000ull

/* ---- parsing ---- */

/* A whole decimal number in [0, max], nothing else; 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The kind number of a name ("run", "Wake", "KIND_20"), or -1. */
static int kind_of(const char *name, size_t len)
{
	char buf[24];
	uint64_t v;

	for (uint32_t k = 0; k < FILTER_MAX_KINDS; k++) {
		const char *kn = segname_kind(k, buf, sizeof(buf));

		if (strncmp(kn, "KIND_", 5) == 0)
			break;  /* past the named kinds */
		if (strlen(kn) == len && strncasecmp(kn, name, len) == 0)
			return (int)k;
	}
	if (len > 5 && len < sizeof(buf) && strncasecmp(name, "KIND_", 5) == 0) {
		memcpy(buf, name + 5, len - 5);
		buf[len - 5] = '\0';
		if (parse_u64(buf, FILTER_MAX_KINDS - 1, &v) == 0)
			return (int)v;
	}
	return -1;
}

/* "SPAWN, EXIT, ..." : every named kind, for an error message. */
static void kind_list(char *buf, size_t len)
{
	size_t o = 0;
	char kb[24];

	buf[0] = '\0';
	for (uint32_t k = 0; k < FILTER_MAX_KINDS && o < len; k++) {
		const char *kn = segname_kind(k, kb, sizeof(kb));

		if (strncmp(kn, "KIND_", 5) == 0)
			break;
		o += (size_t)snprintf(buf + o, len - o, "%s%s", k ? "," : "", kn);
	}
}

/* --kind NAME[,NAME...] into f->kinds. */
static int parse_kinds(struct filter *f, const char *list, char *why, size_t why_len)
{
	const char *p = list;

	f->kinds = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		int k = len ? kind_of(p, len) : -1;

		if (k < 0) {
			char names[256];

			kind_list(names, sizeof(names));
			snprintf(why, why_len, "unknown kind '%.*s'; valid kinds (any case): %s",
			         (int)(len > 32 ? 32 : len), p, names);
			return -EINVAL;
		}
		f->kinds |= 1ull << k;
		p += len;
		if (*p == ',')
			p++;
	}
	if (!f->kinds) {
		snprintf(why, why_len, "expected one or more kind names, such as RUN,WAKE");
		return -EINVAL;
	}
	f->has_kind = 1;
	return 0;
}

/* "123" "123.5" "0.25": a non-negative decimal as a count of `unit`s
 * (unit ns per 1); *end gets the first unparsed char.  0 or -EINVAL. */
static int parse_decimal_ns(const char *s, uint64_t unit, uint64_t *out, const char **end)
{
	uint64_t whole = 0, frac = 0, scale = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++)
			if (scale < NS_PER_S) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
	}
	if (whole > UINT64_MAX / unit)
		return -EINVAL;
	*out = whole * unit + (uint64_t)((double)frac / (double)scale * (double)unit + 0.5);
	*end = p;
	return 0;
}

/* '-5m' and friends: now minus a duration. */
static int parse_relative(const char *s, uint64_t now_ns, uint64_t *out)
{
	static const struct { const char *suffix; uint64_t ns; } units[] = {
		{ "ms", 1000000ull }, { "s", NS_PER_S }, { "m", 60 * NS_PER_S },
		{ "h", 3600 * NS_PER_S }, { "d", 86400 * NS_PER_S },
	};
	const char *end;
	uint64_t d;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(s), sl = strlen(units[i].suffix);

		if (n > sl && strcmp(s + n - sl, units[i].suffix) == 0 &&
		    parse_decimal_ns(s, units[i].ns, &d, &end) == 0 && end == s + n - sl) {
			*out = d > now_ns ? 0 : now_ns - d;
			return 0;
		}
	}
	return -EINVAL;
}

/* Exactly `n` digits at *p as a number; advances *p.  -1 if not digits. */
static int digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (**p - '0');
	}
	return v;
}

/* 'YYYY-MM-DD[( |T)HH:MM[:SS[.fff]]][Z]': local time, or UTC with Z. */
static int parse_absolute(const char *s, uint64_t *out)
{
	struct tm tm;
	const char *p = s, *end;
	uint64_t frac = 0;
	time_t t;
	int utc = 0;

	memset(&tm, 0, sizeof(tm));
	if ((tm.tm_year = digits(&p, 4)) < 0 || *p++ != '-' || (tm.tm_mon = digits(&p, 2)) < 1 ||
	    *p++ != '-' || (tm.tm_mday = digits(&p, 2)) < 1)
		return -EINVAL;
	if (*p == ' ' || *p == 'T') {
		p++;
		if ((tm.tm_hour = digits(&p, 2)) < 0 || *p++ != ':' || (tm.tm_min = digits(&p, 2)) < 0)
			return -EINVAL;
		if (*p == ':') {
			p++;
			if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]) ||
			    isdigit((unsigned char)p[2]))
				return -EINVAL;
			if (parse_decimal_ns(p, NS_PER_S, &frac, &end) < 0)
				return -EINVAL;
			tm.tm_sec = (int)(frac / NS_PER_S);
			frac %= NS_PER_S;
			p = end;
		}
	}
	if (*p == 'Z') {
		utc = 1;
		p++;
	}
	if (*p || tm.tm_mon > 12 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_isdst = -1;
	t = utc ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1 || t < 0)
		return -EINVAL;
	*out = (uint64_t)t * NS_PER_S + frac;
	return 0;
}

/* Parse a wall-clock time (see filter.h). */
int filter_parse_time(const char *s, uint64_t now_ns, uint64_t *out)
{
	const char *end;

	if (s[0] == '-')
		return parse_relative(s + 1, now_ns, out);
	if (s[0] == '@')
		return parse_decimal_ns(s + 1, NS_PER_S, out, &end) == 0 && !*end ? 0 : -EINVAL;
	if (strcmp(s, "now") == 0) {
		*out = now_ns;
		return 0;
	}
	return parse_absolute(s, out);
}

/* Parse one filter option's value into f. */
int filter_parse(struct filter *f, const char *opt, const char *value, uint64_t now_ns,
                 char *why, size_t why_len)
{
	uint64_t v;

	if (strcmp(opt, "session") == 0) {
		if (parse_u64(value, UINT64_MAX, &v) < 0 || v == 0)
			goto bad_number;
		f->session = v;
		f->has_session = 1;
	} else if (strcmp(opt, "pid") == 0) {
		if (parse_u64(value, UINT32_MAX, &v) < 0 || v == 0)
			goto bad_number;
		f->pid = (uint32_t)v;
		f->has_pid = 1;
	} else if (strcmp(opt, "loop") == 0) {
		if (parse_u64(value, UINT32_MAX - 1, &v) < 0) {
			snprintf(why, why_len, "expected a loop id, a whole number such as 0 or 3");
			return -EINVAL;
		}
		f->loop = (uint32_t)v;
		f->has_loop = 1;
	} else if (strcmp(opt, "kind") == 0) {
		return parse_kinds(f, value, why, why_len);
	} else if (strcmp(opt, "since") == 0 || strcmp(opt, "until") == 0) {
		if (filter_parse_time(value, now_ns, &v) < 0) {
			snprintf(why, why_len, "expected 'YYYY-MM-DD HH:MM:SS[.ffffff]' (local time), "
			         "'YYYY-MM-DDTHH:MM:SS[Z]', '@EPOCH_SECONDS' or a time ago such as "
			         "-30s, -5m, -2h, -1d");
			return -EINVAL;
		}
		if (opt[0] == 's') {
			f->since_ns = v;
			f->has_since = 1;
		} else {
			f->until_ns = v;
			f->has_until = 1;
		}
		if (f->has_since && f->has_until && f->until_ns <= f->since_ns) {
			snprintf(why, why_len, "--until must be later than --since");
			return -EINVAL;
		}
	} else {
		snprintf(why, why_len, "not a filter");
		return -EINVAL;
	}
	return 0;

bad_number:
	snprintf(why, why_len, "expected a %s, a whole number from 1 up",
	         opt[0] == 's' ? "session id (see xtcd --stats)" : "process id");
	return -EINVAL;
}

/* ---- matching ---- */

/* Whether any filter is set. */
int filter_active(const struct filter *f)
{
	return f->has_session || f->has_pid || f->has_loop || f->has_kind || f->has_since ||
	       f->has_until;
}

/* The loop of an event: its pid's, else its ring's. */
uint32_t filter_event_loop(const struct segread_item *it)
{
	if (it->u.event.rec.pid.loop_id != XTC_TAIL_LOOP_NONE)
		return it->u.event.rec.pid.loop_id;
	return it->u.event.loop_id;
}

/* Whether session id (whose tracked state is s, or NULL) passes
 * --session and --pid. */
static int session_ok(const struct filter *f, uint64_t id, const struct segread_session *s)
{
	if (f->has_session && id != f->session)
		return 0;
	if (f->has_pid && (!s || s->start.pid != f->pid))
		return 0;
	return 1;
}

/* Whether wall time t passes --since/--until. */
static int time_ok(const struct filter *f, uint64_t t)
{
	return (!f->has_since || t >= f->since_ns) && (!f->has_until || t < f->until_ns);
}

/* Whether an EVICTED item names a session that passes. */
static int evicted_ok(const struct filter *f, const struct segread *r,
                      const struct segread_item *it)
{
	if (!f->has_session && !f->has_pid)
		return 1;
	for (uint32_t i = 0; i < it->u.evicted.ev.session_count; i++) {
		uint64_t id = it->u.evicted.ids[i];

		if (session_ok(f, id, r ? segread_session_find(r, id) : NULL))
			return 1;
	}
	return 0;
}

/* Whether a DROP's window [from, to] overlaps [since, until). */
static int drop_time_ok(const struct filter *f, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	uint64_t from = it->real_ns, to = it->real_ns;

	if (it->session && d->to_ts_ns >= d->from_ts_ns)
		to = segread_wall(it->session, d->to_ts_ns);
	return (!f->has_until || from < f->until_ns) && (!f->has_since || to >= f->since_ns);
}

/* Whether the item passes f. */
int filter_match(const struct filter *f, const struct segread *r,
                 const struct segread_item *it)
{
	switch (it->type) {
	case SEGREAD_EVENT:
		return session_ok(f, it->u.event.session_id, it->session) &&
		       (!f->has_loop || filter_event_loop(it) == f->loop) &&
		       (!f->has_kind || (it->u.event.rec.kind < FILTER_MAX_KINDS &&
		                         (f->kinds >> it->u.event.rec.kind & 1))) &&
		       time_ok(f, it->real_ns);
	case SEGREAD_DROP:
		return session_ok(f, it->u.drop.session_id, it->session) &&
		       (!f->has_loop || it->u.drop.loop_id == f->loop) && drop_time_ok(f, it);
	case SEGREAD_SESSION_START:
		return session_ok(f, it->u.start.ss->session_id, it->session) &&
		       time_ok(f, it->real_ns);
	case SEGREAD_SESSION_END:
		return session_ok(f, it->u.end.session_id, it->session) && time_ok(f, it->real_ns);
	case SEGREAD_CORRUPT:
		return session_ok(f, it->u.corrupt.session_id, it->session);
	case SEGREAD_EVICTED:
		return evicted_ok(f, r, it);
	case SEGREAD_SEGMENT_END:
		return !f->has_session && !f->has_pid && !f->has_loop && !f->has_kind &&
		       time_ok(f, it->real_ns);
	case SEGREAD_SEGMENT_BEGIN:
	default:
		return 1;
	}
}
