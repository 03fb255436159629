/*
 * xtcd/read/stats.c - xtcd --stats DIR [filters] [--json]: what the record
 * holds, per session and per loop.  The first thing to run on a directory.
 *
 *   int xtcd_stats(const char *dir, const struct read_opts *o, FILE *out);
 *
 * Text: a heading line for the directory, one aligned row per session
 * (id, OS pid, comm, start, duration, events, records dropped, how it
 * ended, whether its record is complete), then per session the
 * produced = written + dropped + lost reconciliation, the events per kind
 * and a table of loops (events, DROP records, records dropped).
 *
 * RECORD says whether the session's history can be trusted whole:
 *   complete     it ended cleanly and xtcd says nothing was lost
 *   INCOMPLETE   it ended, but records were dropped or lost, or it did not
 *                detach cleanly (END says how it ended)
 *   open         no SESSION_END yet: still recording (or xtcd is down)
 *   evicted      older segments with its records were deleted under the
 *                byte budget: what is left is the newest part
 * With filters, counts cover the matching records only (see
 * xtcd/read/filter.h), and a session is listed when any of its records match.
 *
 * --json: one object per line, a "summary" first, then one "session" each.
 *
 * Exit codes as --cat: 0; 1 when some data is damaged (reported on
 * stderr); 2 when DIR cannot be read, holds no segments, or writing fails.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/seg/seg.h"
#include "xtcd/read/print.h"
#include "lib/seg/segname.h"
#include "lib/seg/segread.h"

#include "xtcd/read/view.h"
#include "xtcd/read/read.h"

#define NKINDS SEGNAME_NKINDS /* named kinds; later kinds count as "other" */

struct loop_stats {
	uint32_t loop;
	uint64_t events, drops, dropped;
};

struct sess_stats {
	uint64_t id;
	int      have_start;
	struct xtc_seg_session_start start;
	uint64_t start_real;
	int      evicted;            /* older history was deleted under the budget */
	uint64_t first_real, last_real;
	uint64_t events, kinds[NKINDS + 1], drops, dropped, corrupt;
	int      ended;
	struct xtc_seg_session_end end;
	uint64_t end_real;
	struct loop_stats *loops;
	size_t   nloops, loops_cap, last_loop;
};

struct stats {
	const struct read_opts *o;
	struct segread *r;
	FILE    *out;
	struct sess_stats *s;
	size_t   n, cap, last;
	int      fatal;
	uint64_t first_real, last_real;
	uint64_t evicted_blocks, evicted_records;
};

/* ---- gathering ---- */

/* The entry of session id, created if new; NULL on -ENOMEM. */
static struct sess_stats *sess_get(struct stats *st, uint64_t id,
                                   const struct segread_session *known)
{
	struct sess_stats *e;

	if (st->n && st->s[st->last].id == id)
		return &st->s[st->last];
	for (size_t i = 0; i < st->n; i++) {
		if (st->s[i].id == id) {
			st->last = i;
			return &st->s[i];
		}
	}
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 16;
		struct sess_stats *p = realloc(st->s, cap * sizeof(*p));

		if (!p)
			return NULL;
		st->s = p;
		st->cap = cap;
	}
	e = &st->s[st->n];
	memset(e, 0, sizeof(*e));
	e->id = id;
	if (known) {
		e->have_start = 1;
		e->start = known->start;
		e->start_real = segread_wall(known, known->start.start_mono_ns);
	}
	st->last = st->n++;
	return e;
}

/* The entry of a loop in a session, created if new; NULL on -ENOMEM. */
static struct loop_stats *loop_get(struct sess_stats *e, uint32_t loop)
{
	if (e->nloops && e->loops[e->last_loop].loop == loop)
		return &e->loops[e->last_loop];
	for (size_t i = 0; i < e->nloops; i++) {
		if (e->loops[i].loop == loop) {
			e->last_loop = i;
			return &e->loops[i];
		}
	}
	if (e->nloops == e->loops_cap) {
		size_t cap = e->loops_cap ? e->loops_cap * 2 : 8;
		struct loop_stats *p = realloc(e->loops, cap * sizeof(*p));

		if (!p)
			return NULL;
		e->loops = p;
		e->loops_cap = cap;
	}
	memset(&e->loops[e->nloops], 0, sizeof(e->loops[0]));
	e->loops[e->nloops].loop = loop;
	e->last_loop = e->nloops;
	return &e->loops[e->nloops++];
}

/* Note the time of a session's item. */
static void seen_at(struct stats *st, struct sess_stats *e, const struct segread_item *it)
{
	if (!it->has_real)
		return;
	if (!e->first_real || it->real_ns < e->first_real)
		e->first_real = it->real_ns;
	if (it->real_ns > e->last_real)
		e->last_real = it->real_ns;
	if (!st->first_real || it->real_ns < st->first_real)
		st->first_real = it->real_ns;
	if (it->real_ns > st->last_real)
		st->last_real = it->real_ns;
}

/* An event or a DROP: count it for its session and loop. */
static int count_record(struct stats *st, const struct segread_item *it)
{
	int ev = it->type == SEGREAD_EVENT;
	uint64_t id = ev ? it->u.event.session_id : it->u.drop.session_id;
	struct sess_stats *e = sess_get(st, id, it->session);
	struct loop_stats *l;

	if (!e || !(l = loop_get(e, ev ? filter_event_loop(it) : it->u.drop.loop_id)))
		return -ENOMEM;
	seen_at(st, e, it);
	if (ev) {
		uint32_t k = it->u.event.rec.kind;

		e->events++;
		e->kinds[k < NKINDS ? k : NKINDS]++;
		l->events++;
	} else {
		e->drops++;
		e->dropped += it->u.drop.count;
		l->drops++;
		l->dropped += it->u.drop.count;
	}
	return 0;
}

/* Session start/end, corrupt rings, evictions. */
static int count_other(struct stats *st, const struct segread_item *it)
{
	struct sess_stats *e;

	switch (it->type) {
	case SEGREAD_SESSION_START:
		if (!(e = sess_get(st, it->u.start.ss->session_id, it->session)))
			return -ENOMEM;
		if (it->u.start.first && it->u.start.restated)
			e->evicted = 1;
		seen_at(st, e, it);
		break;
	case SEGREAD_SESSION_END:
		if (!(e = sess_get(st, it->u.end.session_id, it->session)))
			return -ENOMEM;
		e->ended = 1;
		e->end = it->u.end;
		e->end_real = it->real_ns;
		seen_at(st, e, it);
		break;
	case SEGREAD_CORRUPT:
		if (!(e = sess_get(st, it->u.corrupt.session_id, it->session)))
			return -ENOMEM;
		e->corrupt++;
		break;
	case SEGREAD_EVICTED:
		st->evicted_blocks++;
		st->evicted_records += it->u.evicted.ev.records;
		for (uint32_t i = 0; i < it->u.evicted.ev.session_count; i++)
			for (size_t k = 0; k < st->n; k++)
				if (st->s[k].id == it->u.evicted.ids[i])
					st->s[k].evicted = 1;
		break;
	default:
		break;
	}
	return 0;
}

/* segread callback. */
static int stats_item_cb(const struct segread_item *it, void *user)
{
	struct stats *st = user;
	int ret;

	if (it->type == SEGREAD_SEGMENT_BEGIN || it->type == SEGREAD_SEGMENT_END)
		return 0;
	if (!filter_match(&st->o->filter, st->r, it))
		return 0;
	if (it->type == SEGREAD_EVENT || it->type == SEGREAD_DROP)
		ret = count_record(st, it);
	else
		ret = count_other(st, it);
	if (ret < 0) {
		st->fatal = ret;
		return 1;
	}
	return 0;
}

/* segread callback: one stderr line per problem. */
static void stats_problem_cb(const struct segread_problem *p, void *user)
{
	struct stats *st = user;

	view_problem(st->out, p);
}

/* ---- formatting ---- */

/* A session's duration: start to end, or to its last record if open. */
static uint64_t sess_duration(const struct sess_stats *e)
{
	uint64_t from = e->have_start ? e->start_real : e->first_real;
	uint64_t to = e->ended ? e->end_real : e->last_real;

	return to > from ? to - from : 0;
}

/* The RECORD column (see the top of this file). */
static const char *completeness(const struct sess_stats *e)
{
	if (e->evicted)
		return "evicted";
	if (!e->ended)
		return "open";
	return e->end.complete ? "complete" : "INCOMPLETE";
}

/* The comm of a session, printable. */
static void comm_of(const struct sess_stats *e, char *buf, size_t len)
{
	size_t i;

	for (i = 0; e->have_start && i + 1 < len && i < sizeof(e->start.comm) && e->start.comm[i];
	     i++) {
		unsigned char c = (unsigned char)e->start.comm[i];

		buf[i] = c > 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[i] = '\0';
	if (!i)
		snprintf(buf, len, "?");
}

/* Order sessions by id, loops by loop id. */
static int sess_cmp(const void *a, const void *b)
{
	const struct sess_stats *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int loop_cmp(const void *a, const void *b)
{
	const struct loop_stats *x = a, *y = b;

	return x->loop < y->loop ? -1 : x->loop > y->loop;
}

/* The heading: the directory, its segments and time span. */
static void text_heading(struct stats *st, const char *dir)
{
	struct printer f;
	uint64_t segs, bytes, first, last;
	char a[48], b[48];

	print_init(&f, st->out, 0);
	seg_dir_usage(dir, &segs, &bytes, &first, &last);
	fprintf(st->out, "%s: %zu session%s in %" PRIu64 " segment%s", dir, st->n,
	        st->n == 1 ? "" : "s", segs, segs == 1 ? "" : "s");
	if (segs)
		fprintf(st->out, " (%06" PRIu64 "..%06" PRIu64 ", %s)", first, last,
		        print_bytes(a, sizeof(a), bytes));
	if (st->first_real)
		fprintf(st->out, ", %s .. %s", print_time(&f, st->first_real, a, sizeof(a)),
		        print_time(&f, st->last_real, b, sizeof(b)));
	fputc('\n', st->out);
	if (st->evicted_blocks)
		fprintf(st->out, "older history was deleted under the byte budget: %" PRIu64
		        " records in all\n", st->evicted_records);
	if (filter_active(&st->o->filter))
		fprintf(st->out, "filtered: the counts cover the matching records only\n");
}

/* The table of sessions, one row each. */
static void text_sessions(struct stats *st)
{
	struct printer f;
	char t[48], d[32], comm[24], reason[24];

	print_init(&f, st->out, 0);
	fprintf(st->out, "\n%7s %8s %-16s %-26s %10s %12s %10s  %-16s %s\n", "SESSION", "PID",
	        "COMM", "START", "DURATION", "EVENTS", "DROPPED", "END", "RECORD");
	for (size_t i = 0; i < st->n; i++) {
		const struct sess_stats *e = &st->s[i];

		comm_of(e, comm, sizeof(comm));
		fprintf(st->out, "%7" PRIu64 " %8" PRIu32 " %-16s %-26s %10s %12" PRIu64 " %10" PRIu64
		        "  %-16s %s\n", e->id, e->have_start ? e->start.pid : 0, comm,
		        e->have_start ? print_time(&f, e->start_real, t, sizeof(t)) : "?",
		        print_duration(d, sizeof(d), sess_duration(e)), e->events, e->dropped,
		        e->ended ? segname_end_reason(e->end.reason, reason, sizeof(reason)) : "-",
		        completeness(e));
	}
}

/* One session's details: reconciliation, kinds, loops. */
static void text_session_detail(struct stats *st, struct sess_stats *e)
{
	char comm[24], kb[24], lb[16];
	int any = 0;

	comm_of(e, comm, sizeof(comm));
	fprintf(st->out, "\nsession %" PRIu64 ": %s, pid %" PRIu32, e->id, comm,
	        e->have_start ? e->start.pid : 0);
	if (e->have_start)
		fprintf(st->out, ", uid %" PRIu32 ", %" PRIu32 " rings x %" PRIu32 " records",
		        e->start.uid, e->start.ring_count, e->start.ring_capacity);
	fputc('\n', st->out);
	if (e->ended)
		fprintf(st->out, "  produced %" PRIu64 " = written %" PRIu64 " + dropped %" PRIu64
		        " + lost %" PRIu64 "\n", e->end.produced, e->end.written, e->end.dropped,
		        e->end.lost);
	fprintf(st->out, "  on disk: %" PRIu64 " events, %" PRIu64 " records dropped in %" PRIu64
	        " DROP records", e->events, e->dropped, e->drops);
	if (e->corrupt)
		fprintf(st->out, ", %" PRIu64 " rings taken out as corrupt", e->corrupt);
	if (e->ended && !filter_active(&st->o->filter) && e->events < e->end.written)
		fprintf(st->out, " (%" PRIu64 " written records are no longer on disk)",
		        e->end.written - e->events);
	fputs("\n  kinds:", st->out);
	for (uint32_t k = 0; k <= NKINDS; k++) {
		if (!e->kinds[k])
			continue;
		fprintf(st->out, " %s %" PRIu64, k < NKINDS ? segname_kind(k, kb, sizeof(kb))
		                                          : "other", e->kinds[k]);
		any = 1;
	}
	fputs(any ? "\n" : " none\n", st->out);
	qsort(e->loops, e->nloops, sizeof(e->loops[0]), loop_cmp);
	fprintf(st->out, "  %6s %12s %8s %10s\n", "LOOP", "EVENTS", "DROPS", "DROPPED");
	for (size_t i = 0; i < e->nloops; i++)
		fprintf(st->out, "  %6s %12" PRIu64 " %8" PRIu64 " %10" PRIu64 "\n",
		        print_loop(lb, sizeof(lb), e->loops[i].loop), e->loops[i].events,
		        e->loops[i].drops, e->loops[i].dropped);
}

/* The JSON lines. */
static void json_out(struct stats *st, const char *dir)
{
	uint64_t segs, bytes, first, last;
	char kb[24], reason[24], comm[24];

	seg_dir_usage(dir, &segs, &bytes, &first, &last);
	fprintf(st->out, "{\"type\":\"summary\",\"dir\":");
	print_json_string(st->out, dir, strlen(dir));
	fprintf(st->out, ",\"sessions\":%zu,\"segments\":%" PRIu64 ",\"bytes\":%" PRIu64
	        ",\"first_real_ns\":%" PRIu64 ",\"last_real_ns\":%" PRIu64 ",\"evicted_records\":%"
	        PRIu64 ",\"filtered\":%s}\n", st->n, segs, bytes, st->first_real, st->last_real,
	        st->evicted_records, filter_active(&st->o->filter) ? "true" : "false");
	for (size_t i = 0; i < st->n; i++) {
		struct sess_stats *e = &st->s[i];
		int sep = 0;

		comm_of(e, comm, sizeof(comm));
		fprintf(st->out, "{\"type\":\"session\",\"session\":%" PRIu64 ",\"pid\":%" PRIu32
		        ",\"comm\":", e->id, e->have_start ? e->start.pid : 0);
		print_json_string(st->out, comm, strlen(comm));
		fprintf(st->out, ",\"start_real_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64
		        ",\"events\":%" PRIu64 ",\"drops\":%" PRIu64 ",\"dropped_records\":%" PRIu64
		        ",\"corrupt_rings\":%" PRIu64 ",\"record\":\"%s\",\"kinds\":{",
		        e->have_start ? e->start_real : 0, sess_duration(e), e->events, e->drops,
		        e->dropped, e->corrupt, completeness(e));
		for (uint32_t k = 0; k <= NKINDS; k++) {
			if (!e->kinds[k])
				continue;
			fprintf(st->out, "%s\"%s\":%" PRIu64, sep++ ? "," : "",
			        k < NKINDS ? segname_kind(k, kb, sizeof(kb)) : "other", e->kinds[k]);
		}
		fputs("},\"end\":", st->out);
		if (e->ended)
			fprintf(st->out, "{\"reason\":\"%s\",\"complete\":%s,\"produced\":%" PRIu64
			        ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"lost\":%" PRIu64 "}",
			        segname_end_reason(e->end.reason, reason, sizeof(reason)),
			        e->end.complete ? "true" : "false", e->end.produced, e->end.written,
			        e->end.dropped, e->end.lost);
		else
			fputs("null", st->out);
		fputs(",\"loops\":[", st->out);
		qsort(e->loops, e->nloops, sizeof(e->loops[0]), loop_cmp);
		for (size_t l = 0; l < e->nloops; l++)
			fprintf(st->out, "%s{\"loop\":%lld,\"events\":%" PRIu64 ",\"drops\":%" PRIu64
			        ",\"dropped_records\":%" PRIu64 "}", l ? "," : "",
			        print_loop_json(e->loops[l].loop), e->loops[l].events, e->loops[l].drops, e->loops[l].dropped);
		fputs("]}\n", st->out);
	}
}

/* ---- the mode ---- */

/* Summarise dir on out. */
int xtcd_stats(const char *dir, const struct read_opts *o, FILE *out)
{
	struct stats st;
	const struct segread_stats *rs;
	int ret, status;

	memset(&st, 0, sizeof(st));
	st.o = o;
	st.out = out;
	if (view_open(&st.r, dir, stats_item_cb, stats_problem_cb, &st) < 0)
		return 2;
	ret = view_run(st.r, "--stats");
	rs = segread_stats(st.r);
	if (st.fatal || ret < 0) {
		if (st.fatal)
			fprintf(stderr, "xtcd: --stats failed: %s\n", strerror(-st.fatal));
		status = 2;
		goto out;
	}
	status = rs->corrupt ? 1 : 0;
	if (st.n) /* st.s is NULL with no session, and qsort wants an array */
		qsort(st.s, st.n, sizeof(st.s[0]), sess_cmp);
	if (o->json) {
		json_out(&st, dir);
	} else {
		text_heading(&st, dir);
		if (st.n)
			text_sessions(&st);
		for (size_t i = 0; i < st.n; i++)
			text_session_detail(&st, &st.s[i]);
	}
	if (fflush(out) != 0 || ferror(out)) {
		if (errno != EPIPE)
			fprintf(stderr, "xtcd: writing the output failed: %s\n", strerror(errno));
		status = 2;
	}
out:
	for (size_t i = 0; i < st.n; i++)
		free(st.s[i].loops);
	free(st.s);
	segread_close(st.r);
	return status;
}
