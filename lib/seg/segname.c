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

static const struct name kinds[] = {
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
	/* the loop-library adapters' (xtc_tail_ev(3)) */
	[XTC_TAIL_LOOP_WAIT]      = { "LOOP_WAIT", NULL },
	[XTC_TAIL_LOOP_WAKE]      = { "LOOP_WAKE", NULL },
	[XTC_TAIL_LOOP_DISPATCH]  = { "LOOP_DISPATCH", NULL },
	[XTC_TAIL_CB_BEGIN]       = { "CB_BEGIN", NULL },
	[XTC_TAIL_CB_END]         = { "CB_END", NULL },
	[XTC_TAIL_CB_FUNC]        = { "CB_FUNC", NULL },
	[XTC_TAIL_WATCH_START]    = { "WATCH_START", NULL },
	[XTC_TAIL_WATCH_STOP]     = { "WATCH_STOP", NULL },
};

/* The counters sized by SEGNAME_NKINDS have a slot for every row here. */
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == SEGNAME_NKINDS,
               "every kind below XTC_TAIL_NKINDS (lib/xtc_tail.h) has a row here");

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
	[XTC_CORRUPT_HEAD_TOO_FAST]     = { "head_too_fast",
	                                    "head moved faster than a producer can write" },
	[XTC_CORRUPT_UNWRITTEN]         = { "unwritten", "head covers memory never written" },
};

/* One enumeration: its rows, and how a value it does not name prints. */
struct table {
	const struct name *rows;
	size_t      count;
	const char *name_prefix;   /* "KIND_" for KIND_17 */
	const char *text_prefix;   /* "reason " for "reason 17"; NULL: no phrases */
};

#define TABLE(rows, name_prefix, text_prefix) \
	{ rows, sizeof(rows) / sizeof(rows[0]), name_prefix, text_prefix }

static const struct table kind_tab = TABLE(kinds, "KIND_", NULL);
static const struct table end_tab = TABLE(end_reasons, "reason_", "reason ");
static const struct table drop_tab = TABLE(drop_causes, "cause_", NULL);
static const struct table corrupt_tab = TABLE(corrupt_reasons, "reason_", "reason ");

/* v's name (or with text, its phrase) in t, else the prefix and the
 * number formatted in buf. */
static const char *lookup(const struct table *t, uint32_t v, int text, char *buf, size_t len)
{
	const struct name *n = v < t->count ? &t->rows[v] : NULL;
	const char *s = n ? (text ? n->text : n->name) : NULL;

	if (s)
		return s;
	snprintf(buf, len, "%s%" PRIu32, text ? t->text_prefix : t->name_prefix, v);
	return buf;
}

/* An event kind's name. */
const char *segname_kind(uint32_t kind, char *buf, size_t len)
{
	return lookup(&kind_tab, kind, 0, buf, len);
}

/* A SESSION_END reason's name. */
const char *segname_end_reason(uint32_t reason, char *buf, size_t len)
{
	return lookup(&end_tab, reason, 0, buf, len);
}

/* A SESSION_END reason as a phrase. */
const char *segname_end_reason_text(uint32_t reason, char *buf, size_t len)
{
	return lookup(&end_tab, reason, 1, buf, len);
}

/* A DROP cause's name. */
const char *segname_drop_cause(uint32_t cause, char *buf, size_t len)
{
	return lookup(&drop_tab, cause, 0, buf, len);
}

/* A CORRUPT reason's name. */
const char *segname_corrupt_reason(uint32_t reason, char *buf, size_t len)
{
	return lookup(&corrupt_tab, reason, 0, buf, len);
}

/* A CORRUPT reason as a phrase. */
const char *segname_corrupt_reason_text(uint32_t reason, char *buf, size_t len)
{
	return lookup(&corrupt_tab, reason, 1, buf, len);
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
