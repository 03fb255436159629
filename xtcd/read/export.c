/*
 * xtcd/read/export.c - xtcd --export FORMAT DIR [filters] > FILE: the records
 * of a segment directory in a format other tools open.
 *
 *   int xtcd_export(const char *format, const char *dir,
 *                   const struct read_opts *o, FILE *out);
 *
 * chrome  Chrome trace event JSON ({"traceEvents":[...]}), for the Perfetto
 *         UI (ui.perfetto.dev) and chrome://tracing:
 *           - one process per session: pid is the OS pid, named
 *             "COMM [PID] session ID" by process_name metadata (a second
 *             exported session of the same OS pid, after a re-attach, gets
 *             pid 1073741824 + its session id, so tracks never merge);
 *           - one thread track per loop: tid is the loop id (of the
 *             event's pid, as --loop), named "loop N" ("ring R (no
 *             loop)", tid 1000000 + R, for events with no loop);
 *           - RUN starts a complete ("X") slice named after the proc,
 *             which ends at that proc's PARK or EXIT, at the next RUN on
 *             the same track (one proc runs on a loop at a time), at the
 *             loop's last record before a DROP, or at the session's end or
 *             the end of the record, whichever comes first (args.ended_by
 *             says which), so slices on a track never overlap;
 *           - every other kind is a thread-scoped instant ("i") event
 *             named after its kind, args {pid, detail, raw};
 *           - DROP, CORRUPT and SESSION START/END are process-scoped
 *             instants with names that say what happened ("DROP 17
 *             records (ring_full)", "SESSION END detached, INCOMPLETE");
 *             EVICTED is a global instant on pid 0 ("xtcd").
 *         ts and dur are microseconds with three decimals (exact ns), from
 *         an origin: the whole wall-clock second before the first record,
 *         given in otherData.origin, so the fraction of a ts is the
 *         wall-clock fraction.  Working out the origin reads the data once
 *         before writing.
 * dial9   the dial9 trace format, as xtc_tail_dump_dial9 writes it
 *         (lib/common/trace_enc.h), of the matching event records.
 * xtcl    the XTCL v3 dump of seed 000, as xtc_tail_dump writes it.
 *
 * dial9 and xtcl carry event records only, in time order (the records are
 * gathered in memory, 40 bytes each, and sorted by their CLOCK_MONOTONIC
 * time); a note on stderr says when the selection also had drops or
 * several sessions, which these formats cannot show.  They are binary and
 * are not written to a terminal.
 *
 * Exit codes as --cat: 0 done; 1 done, but some data was damaged
 * (reported on stderr); 2 nothing written: DIR unreadable or without
 * segments, an unknown format, binary output to a terminal, or a failed
 * write.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xtcd/read/print.h"
#include "lib/seg/segname.h"
#include "lib/seg/segread.h"
#include "lib/common/trace_enc.h"

#include "xtcd/read/view.h"
#include "xtcd/read/read.h"

#define NS_PER_S       1000000000ull
#define PID_RESTATED   1073741824u   /* pid base for a second session of one OS pid */
#define TID_NO_LOOP    1000000u      /* tid base of a ring with no loop */
#define LOOP_NONE      XTC_TAIL_LOOP_NONE

/* ---- what every export shares: reading with the filters ---- */

struct export;
typedef int (*export_item_fn)(struct export *x, const struct segread_item *it);

struct export {
	const struct read_opts *o;
	FILE   *out;
	struct segread *r;
	export_item_fn item;     /* gets each item that passes the filters */
	int     out_err;         /* -errno of a failed write */
	int     fatal;           /* -errno that ended reading (-ENOMEM) */

	/* binary formats: the matching event records */
	xtc_tail_rec_t *rec;
	size_t   n, cap;
	uint64_t drops, dropped, first_session;
	int      several_sessions;

	/* chrome */
	int      prepass;        /* only working out the origin */
	uint64_t origin;         /* wall-clock ns at ts 0 */
	uint64_t seg_real;       /* time of the segment being read */
	uint64_t last_real;      /* time of the last item with one */
	int      first_event;    /* nothing written into traceEvents yet */
	struct track *tracks;    /* open addressing on (session, tid) */
	size_t   tcap, tn;
	struct proc *procs;      /* sessions given a pid, open addressing */
	size_t   pcap, pn;
	int      xtcd_named;     /* pid 0 has its metadata */
};

/* segread callback: filter, then hand to the format. */
static int export_item_cb(const struct segread_item *it, void *user)
{
	struct export *x = user;

	if (it->type == SEGREAD_SEGMENT_BEGIN) {
		x->seg_real = it->real_ns;
		return 0;
	}
	if (it->type == SEGREAD_SESSION_START && !it->u.start.first)
		return 0;
	if (!filter_match(&x->o->filter, x->r, it))
		return 0;
	if (it->has_real)
		x->last_real = it->real_ns;
	return x->item(x, it);
}

/* segread callback: one stderr line per problem (not in the pre-pass). */
static void export_problem_cb(const struct segread_problem *p, void *user)
{
	struct export *x = user;

	if (!x->prepass)
		view_problem(x->out, p);
}

/* Read all of dir through the filters into x->item.  0, or 1 when
 * something was damaged (reported), or -errno (reported). */
static int export_read(struct export *x, const char *dir)
{
	const struct segread_stats *st;
	int ret;

	ret = segread_open(&x->r, dir, export_item_cb, export_problem_cb, x);
	if (ret < 0) {
		fprintf(stderr, "xtcd: cannot read %s: %s\n", dir, strerror(-ret));
		return ret;
	}
	ret = segread_run(x->r);
	st = segread_stats(x->r);
	if (x->fatal || x->out_err) {
		ret = x->fatal ? x->fatal : x->out_err;
	} else if (ret < 0) {
		fprintf(stderr, "xtcd: cannot read %s: %s: point --export at the directory xtcd "
		        "writes its segments to\n", dir, strerror(-ret));
	} else if (st->listed == 0) {
		fprintf(stderr, "xtcd: %s holds no segments (xtc-NNNNNN.seg): point --export at the "
		        "directory xtcd writes to\n", dir);
		ret = -ENOENT;
	} else {
		ret = st->corrupt ? 1 : 0;
	}
	segread_close(x->r);
	x->r = NULL;
	return ret;
}

/* ---- dial9 and xtcl: gather, sort, encode ---- */

/* Keep one matching event record (and count what the format cannot show). */
static int gather_item(struct export *x, const struct segread_item *it)
{
	if (it->type == SEGREAD_DROP) {
		x->drops++;
		x->dropped += it->u.drop.count;
		return 0;
	}
	if (it->type != SEGREAD_EVENT)
		return 0;
	if (!x->first_session)
		x->first_session = it->u.event.session_id;
	else if (it->u.event.session_id != x->first_session)
		x->several_sessions = 1;
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 65536;
		xtc_tail_rec_t *p = cap > SIZE_MAX / sizeof(*p) ? NULL
		                    : realloc(x->rec, cap * sizeof(*p));

		if (!p) {
			x->fatal = -ENOMEM;
			return 1;
		}
		x->rec = p;
		x->cap = cap;
	}
	x->rec[x->n++] = it->u.event.rec;
	return 0;
}

/* Merge a[lo..mid) and a[mid..hi) into out[lo..hi), stable by ts_ns. */
static void merge_runs(const xtc_tail_rec_t *a, xtc_tail_rec_t *out, size_t lo, size_t mid,
                       size_t hi)
{
	size_t i = lo, j = mid, k = lo;

	while (i < mid && j < hi)
		out[k++] = a[j].ts_ns < a[i].ts_ns ? a[j++] : a[i++];
	while (i < mid)
		out[k++] = a[i++];
	while (j < hi)
		out[k++] = a[j++];
}

/*
 * Sort rec[0..n) by time, stably.  The records arrive as runs already in
 * order (a block is one ring's records, oldest first), so this is a
 * natural merge sort: find the runs, then merge neighbours until one is
 * left.  0 or -ENOMEM.
 */
static int sort_by_time(xtc_tail_rec_t *rec, size_t n)
{
	xtc_tail_rec_t *tmp, *src = rec, *dst;
	size_t *runs, nr = 0;

	if (n < 2)
		return 0;
	runs = malloc((n + 1) * sizeof(*runs));
	tmp = malloc(n * sizeof(*tmp));
	if (!runs || !tmp) {
		free(runs);
		free(tmp);
		return -ENOMEM;
	}
	runs[nr++] = 0;
	for (size_t i = 1; i < n; i++)
		if (rec[i].ts_ns < rec[i - 1].ts_ns)
			runs[nr++] = i;
	runs[nr] = n;   /* runs[0..nr) start runs; runs[nr] is the end */
	dst = tmp;
	while (nr > 1) {
		size_t k = 0, r;

		for (r = 0; r + 1 < nr; r += 2) {
			merge_runs(src, dst, runs[r], runs[r + 1], runs[r + 2]);
			runs[k++] = runs[r];
		}
		if (r < nr) {   /* an odd run out: copy it over */
			memcpy(dst + runs[r], src + runs[r], (runs[nr] - runs[r]) * sizeof(*dst));
			runs[k++] = runs[r];
		}
		runs[k] = runs[nr];
		nr = k;
		src = dst;
		dst = src == rec ? tmp : rec;
	}
	if (src != rec)
		memcpy(rec, src, n * sizeof(*rec));
	free(runs);
	free(tmp);
	return 0;
}

/* Notes on what a dial9/xtcl export leaves out. */
static void gather_notes(const struct export *x, const char *format)
{
	if (x->n == 0)
		fprintf(stderr, "xtcd: no event records matched: the %s output is empty\n", format);
	if (x->dropped)
		fprintf(stderr, "xtcd: note: %" PRIu64 " records were dropped (%" PRIu64 " DROP "
		        "records) in this selection; %s cannot show that: see xtcd --stats\n",
		        x->dropped, x->drops, format);
	if (x->several_sessions)
		fprintf(stderr, "xtcd: note: this %s output merges several sessions (processes); "
		        "use --session ID for one\n", format);
}

/* --export dial9 / xtcl. */
static int export_binary(struct export *x, const char *dir, const char *format)
{
	int xtcl = strcmp(format, "xtcl") == 0;
	int ret, status;

	x->item = gather_item;
	status = export_read(x, dir);
	if (status < 0)
		goto out;
	if ((ret = sort_by_time(x->rec, x->n)) < 0 ||
	    (xtcl && (ret = trace_enc_xtcl_check(x->rec, x->n)) < 0)) {
		fprintf(stderr, "xtcd: cannot export %s: %s\n", format,
		        ret == -ERANGE ? "a record's kind or source does not fit in a byte" :
		        ret == -EOVERFLOW ? "more than 4294967295 records: narrow it with --since/"
		                            "--until or --session" : strerror(-ret));
		status = ret;
		goto out;
	}
	fflush(x->out);
	ret = xtcl ? trace_enc_xtcl_write(fileno(x->out), x->rec, x->n)
	           : trace_enc_dial9_write(fileno(x->out), x->rec, x->n);
	if (ret < 0) {
		x->out_err = ret;
		status = ret;
		goto out;
	}
	gather_notes(x, format);
out:
	free(x->rec);
	return status;
}

/* ---- chrome ---- */

/* A session's process in the trace. */
struct proc {
	uint64_t session;        /* 0: empty slot */
	uint32_t pid;            /* the trace's pid */
};

/* A loop's track in a session, and the slice open on it. */
struct track {
	uint64_t session;        /* 0: empty slot */
	uint32_t tid;
	uint32_t pid;            /* the trace pid of its session */
	int      open;           /* a RUN slice is open */
	xtc_pid_t run_pid;       /* whose */
	uint64_t run_real;       /* since when (wall ns) */
	uint64_t run_detail;     /* the RUN's wake-to-run latency */
	uint64_t free_at;        /* where the last slice ended */
	uint64_t last_real;      /* the last event on the track */
};

/* Spread a (session, n) key over a table of cap (a power of two) slots. */
static size_t slot_of(uint64_t session, uint32_t n, size_t cap)
{
	uint64_t h = (session * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)n * 0xC2B2AE3D27D4EB4Full);

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* "123.456": ns as microseconds with three decimals. */
static void put_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* ts of a wall-clock time. */
static void put_ts(struct export *x, uint64_t real)
{
	fputs(",\"ts\":", x->out);
	put_us(x->out, real > x->origin ? real - x->origin : 0);
}

/* Start one trace event object: the separator, then {"name":NAME,"ph":PH. */
static void ev_begin(struct export *x, const char *name, size_t len, char ph)
{
	fputs(x->first_event ? "\n" : ",\n", x->out);
	x->first_event = 0;
	fputs("{\"name\":", x->out);
	print_json_string(x->out, name, len);
	fprintf(x->out, ",\"ph\":\"%c\"", ph);
}

/* A metadata event: process_name / thread_name. */
static void ev_meta(struct export *x, const char *what, uint32_t pid, uint32_t tid,
                    const char *name)
{
	ev_begin(x, what, strlen(what), 'M');
	fprintf(x->out, ",\"ts\":0,\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"args\":{\"name\":",
	        pid, tid);
	print_json_string(x->out, name, strlen(name));
	fputs("}}", x->out);
}

/* Double a table of `size`-byte slots keyed by a leading u64 session
 * (0 empty) and a u32 at key_off (none when key_off is 0).  0 or
 * -ENOMEM. */
static int table_grow(void **tab, size_t *cap, size_t size, size_t key_off)
{
	size_t ncap = *cap ? *cap * 2 : 64;
	char *nt = calloc(ncap, size), *old = *tab;

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		char *e = old + i * size;
		uint64_t s;
		uint32_t k = 0;
		size_t j;

		memcpy(&s, e, sizeof(s));
		if (!s)
			continue;
		if (key_off)
			memcpy(&k, e + key_off, sizeof(k));
		for (j = slot_of(s, k, ncap);; j = (j + 1) & (ncap - 1)) {
			uint64_t t;

			memcpy(&t, nt + j * size, sizeof(t));
			if (!t)
				break;
		}
		memcpy(nt + j * size, e, size);
	}
	free(old);
	*tab = nt;
	*cap = ncap;
	return 0;
}

/* The trace pid of a session (giving it one, with its name, if new);
 * 0 on -ENOMEM (x->fatal set). */
static uint32_t proc_pid(struct export *x, uint64_t session, const struct segread_session *s)
{
	char name[96], comm[17];
	struct proc *p;
	size_t i;
	uint32_t pid;

	if ((x->pn + 1) * 2 > x->pcap &&
	    table_grow((void **)&x->procs, &x->pcap, sizeof(*p), 0) < 0) {
		x->fatal = -ENOMEM;
		return 0;
	}
	for (i = slot_of(session, 0, x->pcap); x->procs[i].session; i = (i + 1) & (x->pcap - 1))
		if (x->procs[i].session == session)
			return x->procs[i].pid;
	/* new: the OS pid, unless another session of this export has it */
	pid = s && s->start.pid ? s->start.pid : PID_RESTATED + (uint32_t)session;
	for (size_t k = 0; k < x->pcap; k++)
		if (x->procs[k].session && x->procs[k].pid == pid)
			pid = PID_RESTATED + (uint32_t)session;
	/* the slot is found again: the key in it is the session, not the pid */
	for (i = slot_of(session, 0, x->pcap); x->procs[i].session; i = (i + 1) & (x->pcap - 1))
		;
	x->procs[i].session = session;
	x->procs[i].pid = pid;
	x->pn++;
	memset(comm, 0, sizeof(comm));
	if (s)
		memcpy(comm, s->start.comm, sizeof(s->start.comm));
	for (char *c = comm; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	snprintf(name, sizeof(name), "%s [%" PRIu32 "] session %" PRIu64, comm[0] ? comm : "?",
	         s ? s->start.pid : 0, session);
	ev_meta(x, "process_name", pid, 0, name);
	return pid;
}

/* The track (session, tid), or NULL if it has none yet. */
static struct track *track_find(struct export *x, uint64_t session, uint32_t tid)
{
	if (!x->tcap)
		return NULL;
	for (size_t i = slot_of(session, tid, x->tcap); x->tracks[i].session;
	     i = (i + 1) & (x->tcap - 1))
		if (x->tracks[i].session == session && x->tracks[i].tid == tid)
			return &x->tracks[i];
	return NULL;
}

/* The track of an event (created, with its name, if new); NULL on ENOMEM. */
static struct track *track_of(struct export *x, const struct segread_item *it)
{
	uint64_t session = it->u.event.session_id;
	uint32_t loop = filter_event_loop(it);
	uint32_t tid = loop != LOOP_NONE ? loop : TID_NO_LOOP + it->u.event.ring;
	struct track *t = track_find(x, session, tid);
	char name[48];
	size_t i;
	uint32_t pid;

	if (t)
		return t;
	if (!(pid = proc_pid(x, session, it->session)))
		return NULL;
	if ((x->tn + 1) * 2 > x->tcap &&
	    table_grow((void **)&x->tracks, &x->tcap, sizeof(*t), offsetof(struct track, tid)) < 0) {
		x->fatal = -ENOMEM;
		return NULL;
	}
	for (i = slot_of(session, tid, x->tcap); x->tracks[i].session; i = (i + 1) & (x->tcap - 1))
		;
	t = &x->tracks[i];
	memset(t, 0, sizeof(*t));
	t->session = session;
	t->tid = tid;
	t->pid = pid;
	x->tn++;
	if (loop != LOOP_NONE)
		snprintf(name, sizeof(name), "loop %" PRIu32, tid);
	else
		snprintf(name, sizeof(name), "ring %" PRIu32 " (no loop)", it->u.event.ring);
	ev_meta(x, "thread_name", pid, tid, name);
	return t;
}

/* Write the open slice of t as an "X" event ending at end (not before
 * its start). */
static void slice_close(struct export *x, struct track *t, uint64_t end, const char *why)
{
	char name[80];
	int len;

	if (!t->open)
		return;
	t->open = 0;
	if (end < t->run_real)
		end = t->run_real;
	t->free_at = end;
	len = snprintf(name, sizeof(name), "RUN %" PRIu32 ".%" PRIu32 ".%" PRIu64,
	               t->run_pid.loop_id, t->run_pid.local_id, t->run_pid.gen);
	ev_begin(x, name, (size_t)len, 'X');
	fputs(",\"cat\":\"run\"", x->out);
	put_ts(x, t->run_real);
	fputs(",\"dur\":", x->out);
	put_us(x->out, end - t->run_real);
	fprintf(x->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"args\":{\"pid\":\"%" PRIu32
	        ".%" PRIu32 ".%" PRIu64 "\",\"wake_to_run_us\":", t->pid, t->tid,
	        t->run_pid.loop_id, t->run_pid.local_id, t->run_pid.gen);
	put_us(x->out, t->run_detail);
	fprintf(x->out, ",\"ended_by\":\"%s\"}}", why);
}

/* Same proc. */
static int pid_eq(xtc_pid_t a, xtc_pid_t b)
{
	return a.loop_id == b.loop_id && a.local_id == b.local_id && a.gen == b.gen;
}

/* An event: a slice boundary, or an instant. */
static void chrome_event(struct export *x, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	struct track *t = track_of(x, it);
	char kbuf[24], det[64];
	const char *kn;

	if (!t)
		return;
	t->last_real = it->real_ns;
	switch (r->kind) {
	case XTC_TAIL_RUN:
		/* Slices on a track follow each other.  A RUN from before the
		 * open or the last slice (only when two rings record one loop's
		 * procs) stays an instant rather than overlap them. */
		if (it->real_ns < (t->open ? t->run_real : t->free_at))
			break;
		slice_close(x, t, it->real_ns, "next RUN");
		t->open = 1;
		t->run_pid = r->pid;
		t->run_real = it->real_ns;
		t->run_detail = r->detail;
		return;
	case XTC_TAIL_PARK:
	case XTC_TAIL_EXIT:
		if (t->open && pid_eq(t->run_pid, r->pid))
			slice_close(x, t, it->real_ns, r->kind == XTC_TAIL_PARK ? "PARK" : "EXIT");
		break;
	}
	kn = segname_kind(r->kind, kbuf, sizeof(kbuf));
	print_detail(det, sizeof(det), r->kind, r->detail);
	ev_begin(x, kn, strlen(kn), 'i');
	fputs(",\"s\":\"t\"", x->out);
	put_ts(x, it->real_ns);
	fprintf(x->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"args\":{\"pid\":\"%" PRIu32
	        ".%" PRIu32 ".%" PRIu64 "\",\"detail\":", t->pid, t->tid, r->pid.loop_id,
	        r->pid.local_id, r->pid.gen);
	print_json_string(x->out, det, strlen(det));
	fprintf(x->out, ",\"raw\":%" PRIu64 "}}", r->detail);
}

/* Close every open slice of a session (0: of every session) at end, or
 * at its track's last event when end is 0. */
static void slices_close_all(struct export *x, uint64_t session, uint64_t end, const char *why)
{
	for (size_t i = 0; i < x->tcap; i++) {
		struct track *t = &x->tracks[i];

		if (t->session && t->open && (!session || t->session == session))
			slice_close(x, t, end ? end : t->last_real, why);
	}
}

/* Begin a process-scoped marker: name, "s":"p", ts, pid, tid. */
static void marker_begin(struct export *x, const char *name, uint64_t real, uint32_t pid,
                         uint32_t tid)
{
	ev_begin(x, name, strlen(name), 'i');
	fputs(",\"s\":\"p\"", x->out);
	put_ts(x, real);
	fprintf(x->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, pid, tid);
}

/* DROP: a marker on the session's process.  A slice open on the loop
 * ends at the loop's last record before the loss: what ran during it is
 * unknown. */
static void chrome_drop(struct export *x, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	uint32_t pid = proc_pid(x, d->session_id, it->session);
	/* XTC_SEG_RING_NONE: a thread that found no free ring; no track */
	uint32_t tid = d->loop_id != LOOP_NONE ? d->loop_id
	             : d->ring != XTC_SEG_RING_NONE ? TID_NO_LOOP + d->ring : pid;
	struct track *t = track_find(x, d->session_id, tid);
	char name[96], cbuf[24];
	const char *cause;
	uint64_t win = 0;

	if (!pid)
		return;
	if (t)
		slice_close(x, t, t->last_real, "DROP");
	if (it->session && d->to_ts_ns >= d->from_ts_ns && d->from_ts_ns)
		win = d->to_ts_ns - d->from_ts_ns;
	cause = segname_drop_cause(d->cause, cbuf, sizeof(cbuf));
	snprintf(name, sizeof(name), "DROP %" PRIu64 " records (%s)", d->count, cause);
	marker_begin(x, name, it->real_ns, pid, tid);
	fprintf(x->out, ",\"args\":{\"count\":%" PRIu64 ",\"cause\":\"%s\",\"ring\":%" PRIu32
	        ",\"loop\":%lld,\"window_us\":", d->count, cause, d->ring,
	        print_loop_json(d->loop_id));
	put_us(x->out, win);
	fputs("}}", x->out);
}

/* SESSION START / END: markers on the session's process. */
static void chrome_session(struct export *x, const struct segread_item *it)
{
	char name[96], rbuf[24];
	const char *reason;
	uint64_t id;
	uint32_t pid;

	if (it->type == SEGREAD_SESSION_START) {
		id = it->u.start.ss->session_id;
		if (!(pid = proc_pid(x, id, it->session)))
			return;
		marker_begin(x, it->u.start.restated ? "SESSION START (restated: earlier history "
		             "evicted)" : "SESSION START", it->real_ns, pid, pid);
		fprintf(x->out, ",\"args\":{\"session\":%" PRIu64 ",\"rings\":%" PRIu32
		        ",\"ring_capacity\":%" PRIu32 ",\"dropped_before\":%" PRIu64 "}}", id,
		        it->u.start.ss->ring_count, it->u.start.ss->ring_capacity,
		        it->u.start.ss->dropped_before);
		return;
	}
	id = it->u.end.session_id;
	if (!(pid = proc_pid(x, id, it->session)))
		return;
	slices_close_all(x, id, it->real_ns, "session end");
	reason = segname_end_reason(it->u.end.reason, rbuf, sizeof(rbuf));
	snprintf(name, sizeof(name), "SESSION END %s, %s", reason,
	         it->u.end.complete ? "complete" : "INCOMPLETE");
	marker_begin(x, name, it->real_ns, pid, pid);
	fprintf(x->out, ",\"args\":{\"session\":%" PRIu64 ",\"reason\":\"%s\",\"complete\":%s"
	        ",\"produced\":%" PRIu64 ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64
	        ",\"lost\":%" PRIu64 "}}", id, reason, it->u.end.complete ? "true" : "false",
	        it->u.end.produced, it->u.end.written, it->u.end.dropped, it->u.end.lost);
}

/* CORRUPT: a marker on the session's process. */
static void chrome_corrupt(struct export *x, const struct segread_item *it)
{
	const struct xtc_seg_corrupt *c = &it->u.corrupt;
	uint32_t pid = proc_pid(x, c->session_id, it->session);
	char name[96], rbuf[24];
	const char *reason;

	if (!pid)
		return;
	reason = segname_corrupt_reason(c->reason, rbuf, sizeof(rbuf));
	snprintf(name, sizeof(name), "CORRUPT ring %" PRIu32 " (%s): no longer recorded", c->ring,
	         reason);
	marker_begin(x, name, x->last_real ? x->last_real : x->seg_real, pid, pid);
	fprintf(x->out, ",\"args\":{\"ring\":%" PRIu32 ",\"reason\":\"%s\"}}", c->ring, reason);
}

/* EVICTED: a global marker on pid 0, "xtcd". */
static void chrome_evicted(struct export *x, const struct segread_item *it)
{
	const struct xtc_seg_evicted *ev = &it->u.evicted.ev;
	char name[128];

	if (!x->xtcd_named) {
		ev_meta(x, "process_name", 0, 0, "xtcd");
		x->xtcd_named = 1;
	}
	snprintf(name, sizeof(name), "EVICTED segments %" PRIu64 "..%" PRIu64 " (%" PRIu64
	         " records deleted under the byte budget)", ev->first_seq, ev->last_seq, ev->records);
	ev_begin(x, name, strlen(name), 'i');
	fputs(",\"s\":\"g\"", x->out);
	put_ts(x, x->seg_real);
	fprintf(x->out, ",\"pid\":0,\"tid\":0,\"args\":{\"bytes\":%" PRIu64 ",\"records\":%"
	        PRIu64 "}}", ev->bytes, ev->records);
}

/* One item of the chrome export. */
static int chrome_item(struct export *x, const struct segread_item *it)
{
	switch (it->type) {
	case SEGREAD_EVENT:         chrome_event(x, it); break;
	case SEGREAD_DROP:          chrome_drop(x, it); break;
	case SEGREAD_SESSION_START:
	case SEGREAD_SESSION_END:   chrome_session(x, it); break;
	case SEGREAD_CORRUPT:       chrome_corrupt(x, it); break;
	case SEGREAD_EVICTED:       chrome_evicted(x, it); break;
	default:                    break;
	}
	if (x->fatal)
		return 1;
	if (ferror(x->out)) {
		x->out_err = errno ? -errno : -EIO;
		return 1;
	}
	return 0;
}

/* The pre-pass: the earliest wall-clock time of what will be written. */
static int origin_item(struct export *x, const struct segread_item *it)
{
	uint64_t t = it->has_real ? it->real_ns : x->seg_real;

	if (t && (!x->origin || t < x->origin))
		x->origin = t;
	return 0;
}

/* The "otherData" object: where ts 0 is. */
static void chrome_other(struct export *x, const char *dir)
{
	char local[64] = "";
	time_t sec = (time_t)(x->origin / NS_PER_S);
	struct tm tm;

	if (localtime_r(&sec, &tm))
		strftime(local, sizeof(local), "%Y-%m-%d %H:%M:%S %z", &tm);
	fprintf(x->out, ",\"otherData\":{\"generator\":\"xtcd %s\",\"dir\":", PACKAGE_VERSION);
	print_json_string(x->out, dir, strlen(dir));
	fprintf(x->out, ",\"origin\":\"%s\",\"origin_real_ns\":%" PRIu64 "}", local, x->origin);
}

/* --export chrome. */
static int export_chrome(struct export *x, const char *dir)
{
	int status;

	x->item = origin_item;
	x->prepass = 1;
	status = export_read(x, dir);
	if (status < 0)
		return status;
	x->prepass = 0;
	x->origin -= x->origin % NS_PER_S;
	x->last_real = 0;
	x->item = chrome_item;
	x->first_event = 1;
	fputs("{\"traceEvents\":[", x->out);
	status = export_read(x, dir);
	if (status >= 0) {
		slices_close_all(x, 0, 0, "end of record");
		fputs("\n],\"displayTimeUnit\":\"ns\"", x->out);
		chrome_other(x, dir);
		fputs("}\n", x->out);
		if (x->first_event)
			fprintf(stderr, "xtcd: no records matched: the trace is empty\n");
	}
	free(x->tracks);
	free(x->procs);
	return status;
}

/* ---- the mode ---- */

/* Whether format is one --export knows. */
int export_format_valid(const char *format)
{
	return strcmp(format, "chrome") == 0 || strcmp(format, "dial9") == 0 ||
	       strcmp(format, "xtcl") == 0;
}

/* Write the records of dir to out in format. */
int xtcd_export(const char *format, const char *dir, const struct read_opts *o, FILE *out)
{
	struct export x;
	int status;

	if (!export_format_valid(format)) {
		fprintf(stderr, "xtcd: --export %s: unknown format; expected chrome, dial9 or xtcl\n",
		        format);
		return 2;
	}
	if (strcmp(format, "chrome") != 0 && isatty(fileno(out))) {
		fprintf(stderr, "xtcd: --export %s writes binary data: redirect it to a file, e.g. "
		        "xtcd --export %s %s > trace.%s\n", format, format, dir,
		        format[0] == 'd' ? "d9" : "xtcl");
		return 2;
	}
	memset(&x, 0, sizeof(x));
	x.o = o;
	x.out = out;
	status = format[0] == 'c' ? export_chrome(&x, dir) : export_binary(&x, dir, format);
	if ((fflush(out) != 0 || ferror(out)) && !x.out_err)
		x.out_err = errno ? -errno : -EIO;
	if (x.out_err) {
		if (x.out_err != -EPIPE)
			fprintf(stderr, "xtcd: writing the output failed: %s\n", strerror(-x.out_err));
		return 2;
	}
	if (x.fatal) {
		fprintf(stderr, "xtcd: export failed: %s\n", strerror(-x.fatal));
		return 2;
	}
	return status < 0 ? 2 : status;
}
