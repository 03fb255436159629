/*
 * lib/seg/segname.c - the format's numbers in words (see segname.h).
 *
 * The tables are indexed by value with designated initializers, so a row
 * says which number it names and a hole (DROP cause 3) stays a hole.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <stdio.h>

#include "lib/seg/segname.h"

/* One value: its token, and its phrase where sentences use one. */
struct name {
	const char *name;
	const char *text;
};

static const struct name kinds[SEGNAME_NKINDS] = {
	[XTC_TAIL_SPAWN]          = { "SPAWN", NULL },
	[XTC_TAIL_EXIT]           = { "EXIT", NULL },
	[XTC_TAIL_WAKE]           = { "WAKE", NULL },
	[XTC_TAIL_RUN]            = { "RUN", NULL },
	[XTC_TAIL_PARK]           = { "PARK", NULL },
	[XTC_TAIL_SEND]           = { "SEND", NULL },
	[XTC_TAIL_RECV]           = { "RECV", NULL },
	[XTC_TAIL_MBOX_HWM]       = { "MBOX_HWM", NULL },
	[XTC_TAIL_LOOP_POLL]      = { "LOOP_POLL", NULL },
	[XTC_TAIL_PARK_TASK]      = { "PARK_TASK", NULL },
	[XTC_TAIL_REAP]           = { "REAP", NULL },
	[XTC_TAIL_SUBMIT]         = { "SUBMIT", NULL },
	[XTC_TAIL_SUBMIT_FAIL]    = { "SUBMIT_FAIL", NULL },
	[XTC_TAIL_POLL_FULL]      = { "POLL_FULL", NULL },
	[XTC_TAIL_LIFECYCLE_DROP] = { "LIFECYCLE_DROP", NULL },
};

static const struct name end_reasons[] = {
	[XTC_END_DETACHED]        = { "detached", "detached" },
	[XTC_END_PRODUCER_DIED]   = { "producer_died", "producer died" },
	[XTC_END_DAEMON_SHUTDOWN] = { "daemon_shutdown", "daemon shutdown" },
	[XTC_END_CORRUPT]         = { "corrupt", "corrupt" },
	[XTC_END_IO_ERROR]        = { "io_error", "io error" },
	[XTC_END_DAEMON_CRASHED]  = { "daemon_crashed", "daemon crashed" },
};

static const struct name drop_causes[] = {
	[XTC_DROP_RING_FULL]    = { "ring_full", NULL },
	[XTC_DROP_OVERWRITTEN]  = { "overwritten", NULL },
	[XTC_DROP_NO_FREE_RING] = { "no_free_ring", NULL },
	[XTC_DROP_QUOTA]        = { "quota", NULL },
};

static const struct name corrupt_reasons[] = {
	[XTC_CORRUPT_HEAD_BACKWARDS]    = { "head_backwards", "head went backwards" },
	[XTC_CORRUPT_HEAD_JUMPED]       = { "head_jumped", "head ran past the ring" },
	[XTC_CORRUPT_DROPPED_BACKWARDS] = { "dropped_backwards", "drop counter went backwards" },
};

/* The row of v, or NULL for a value the table does not name. */
static const struct name *row(const struct name *tab, size_t count, uint32_t v)
{
	return v < count && tab[v].name ? &tab[v] : NULL;
}

#define ROW(tab, v) row(tab, sizeof(tab) / sizeof(tab[0]), v)

/* s, or "<prefix><v>" formatted in buf when s is NULL. */
static const char *or_number(const char *s, const char *prefix, uint32_t v, char *buf,
                             size_t len)
{
	if (s)
		return s;
	snprintf(buf, len, "%s%" PRIu32, prefix, v);
	return buf;
}

/* An event kind's name. */
const char *segname_kind(uint32_t kind, char *buf, size_t len)
{
	const struct name *n = ROW(kinds, kind);

	return or_number(n ? n->name : NULL, "KIND_", kind, buf, len);
}

/* A SESSION_END reason's name. */
const char *segname_end_reason(uint32_t reason, char *buf, size_t len)
{
	const struct name *n = ROW(end_reasons, reason);

	return or_number(n ? n->name : NULL, "reason_", reason, buf, len);
}

/* A SESSION_END reason as a phrase. */
const char *segname_end_reason_text(uint32_t reason, char *buf, size_t len)
{
	const struct name *n = ROW(end_reasons, reason);

	return or_number(n ? n->text : NULL, "reason ", reason, buf, len);
}

/* A DROP cause's name. */
const char *segname_drop_cause(uint32_t cause, char *buf, size_t len)
{
	const struct name *n = ROW(drop_causes, cause);

	return or_number(n ? n->name : NULL, "cause_", cause, buf, len);
}

/* A CORRUPT reason's name. */
const char *segname_corrupt_reason(uint32_t reason, char *buf, size_t len)
{
	const struct name *n = ROW(corrupt_reasons, reason);

	return or_number(n ? n->name : NULL, "reason_", reason, buf, len);
}

/* A CORRUPT reason as a phrase. */
const char *segname_corrupt_reason_text(uint32_t reason, char *buf, size_t len)
{
	const struct name *n = ROW(corrupt_reasons, reason);

	return or_number(n ? n->text : NULL, "reason ", reason, buf, len);
}

/* Split a SUBMIT_FAIL detail into an errno or a short submit's count. */
int segname_submit_fail(uint64_t detail, int *err, uint64_t *left)
{
	int64_t s = (int64_t)detail;

	*err = 0;
	*left = 0;
	if (s < 0 && s > -(int64_t)XTC_TAIL_SHORT_SUBMIT_BASE) {
		*err = (int)-s;
		return 0;
	}
	if (detail < XTC_TAIL_SHORT_SUBMIT_BASE) {
		*err = (int)detail;
		return 0;
	}
	*left = detail - XTC_TAIL_SHORT_SUBMIT_BASE;
	return 1;
}
