/*
 * xtcd/read/export_chrome.c - xtcd --export chrome: Chrome trace event JSON
 * ({"traceEvents":[...]}) for the Perfetto UI (ui.perfetto.dev), the
 * DevTools performance panel and chrome://tracing.
 *
 *   - one process per session: pid is the OS pid, named "COMM [PID]
 *     session ID" by process_name metadata (a second exported session of
 *     the same OS pid, after a re-attach, gets pid 1073741824 + its session
 *     id, so tracks never merge);
 *   - one thread track per loop: tid is the loop id (of the event's pid, as
 *     --loop), named "loop N" ("ring R (no loop)", tid 1000000 + R, for
 *     events with no loop);
 *   - RUN begins a complete ("X") slice named after the proc, which ends
 *     at that proc's PARK or EXIT, at the next RUN on the same track (one
 *     proc runs on a loop at a time), at the loop's last record before a
 *     DROP, or at the session's end or the end of the record, whichever
 *     comes first (args.ended_by says which, args.dur_ns how long), so
 *     slices on a track never overlap;
 *   - an adapter's CB_BEGIN..CB_END is a complete slice "CB <watcher>"
 *     and its LOOP_WAIT..LOOP_WAKE a slice "wait", from the one record to
 *     the other (args.dur_ns its length, args.detail_ns the length the
 *     adapter measured, the END's detail: xtc_tail_ev(3)); an END
 *     whose BEGIN is not in the export (lost, evicted, filtered) begins
 *     its detail before it;
 *   - every other kind is a thread-scoped instant ("i") named after its
 *     kind, args {pid, detail, raw};
 *   - DROP, CORRUPT and SESSION START/END are process-scoped instants with
 *     names that say what happened ("DROP 17 records (ring_full)",
 *     "SESSION END detached, INCOMPLETE"); EVICTED is a global instant on
 *     pid 0 ("xtcd");
 *   - wakeup chains are flows named "wakeup" (ids from 1): "s" at the
 *     PARK_TASK inside the parked proc's slice, "t" at the SUBMIT, REAP and
 *     WAKE on whichever loops did them, "f" (binding point "e") at the RUN
 *     that resumed the proc, so the viewers draw arrows from the parked
 *     task to the waker and on to the run.  A chain that never completed
 *     (the report's finding) carries its verdict in args.chain_verdict,
 *     chain_class and chain_why of its PARK_TASK and PARK instants and of
 *     the slice its PARK ended.
 *
 * Slices that nest in a viewer's arithmetic: a viewer reads ts and dur as
 * doubles of microseconds and adds them.  With dur printed as the exact
 * difference in ns (0.07 here), 228817.404 + 0.07 is 228817.47400000002,
 * past the next slice's 228817.474, and the slices no longer nest.  So ts
 * is exact ns in decimal (three decimals) and dur is the double that,
 * added to ts's double, gives the end's (the next ts's) double exactly:
 * 0.069999999992433563 here; args.dur_ns has the exact length.  (B/E
 * pairs would avoid the sum, but the DevTools engine matches every E to
 * the last B of any thread, so B/E on several tracks come apart there.)
 * An adapter slice spans its two records, not its END's time less its
 * detail: the detail is ticks the adapter converted with its own 2 ms
 * calibration, the records' times are xtcd's conversion with a fresh
 * anchor at each drain, and the two disagree by a few ppm and by the
 * anchors' jitter (a 163 ms wait of nghttpd came out 1 us longer than its
 * records, and began before the callback slice that ended just before its
 * LOOP_WAIT).  Records of one ring have non-decreasing times, so slices
 * spanning them nest; a track still never gets a slice that crosses
 * another when its records are not in time order (two rings for one
 * loop, the conversion's jitter): a slice begins at or after the end of
 * every slice written on the track before it opened and after its
 * parent's beginning, and ends at or after everything written inside it.
 *
 * ts count from an origin: the whole wall-clock second before the first
 * record, given in otherData.origin, so the fraction of a ts is the
 * wall-clock fraction.
 *
 * Flow events bind to the event with the same ts, pid, tid and cat (the
 * DevTools rule; Perfetto binds "s"/"t" to the slice enclosing their ts):
 * the chain's instants and the RUN slices are cat "task", other instants
 * "loop".
 *
 * Passes: one works out the origin; the chain join (the report's, run by
 * the function the caller gives) writes the flows into a temporary file
 * and keeps the verdicts of the chains that never completed (the
 * report's findings, which it caps); the last writes the slices and
 * instants, then the flows are copied after them, so that each flow
 * event follows, in the file, the event it binds to.  Memory does not
 * grow with the record: tracks and processes are per loop and session.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/seg/idmap.h"
#include "lib/seg/segname.h"
#include "xtcd/read/print.h"
#include "xtcd/read/export_int.h"

#define PID_RESTATED   1073741824u   /* pid base for a second session of one OS pid */
#define TID_NO_LOOP    1000000u      /* tid base of a ring with no loop */
#define LOOP_NONE      XTC_TAIL_LOOP_NONE
#define ADAPT_DEPTH    8             /* adapter slices open at once on a loop */

/* A session's process in the trace. */
struct proc {
	uint64_t session;        /* 0: empty slot */
	uint32_t pid;            /* the trace's pid */
	uint32_t ntracks;        /* its tracks, chained from first_tid by next_tid */
	uint32_t first_tid;
};

/* A loop's track in a session, and the slice open on it. */
struct track {
	uint64_t session;        /* 0: empty slot */
	uint32_t tid;
	uint32_t pid;            /* the trace pid of its session */
	uint32_t next_tid;       /* the session's track made before this one */
	int      open;           /* a RUN slice is open */
	xtc_pid_t run_pid;       /* whose */
	uint64_t run_real;       /* since when (wall ns) */
	uint64_t run_detail;     /* the RUN's wake-to-run latency */
	uint64_t free_at;        /* where the last slice ended */
	uint64_t last_real;      /* the last event on the track */
	/* The adapter's CB_BEGIN / LOOP_WAIT records still open on the loop,
	 * innermost last: a callback runs a nested ev_run of its own loop. */
	uint32_t akind[ADAPT_DEPTH];
	uint64_t abeg[ADAPT_DEPTH];  /* where each one's slice begins */
	unsigned adepth;             /* open in akind/abeg */
	unsigned adeep;              /* open past ADAPT_DEPTH, unkept */
	uint64_t aend;               /* the latest end of an adapter slice here */
};

/* The verdict on a chain that never completed, found at one time. */
struct verdict {
	uint64_t  session;       /* 0: empty slot */
	uint64_t  t;             /* its PARK_TASK's or its PARK's time */
	xtc_pid_t pid;
	char     *text;          /* the args it adds, JSON, after a comma */
};

struct chrome {
	struct export *x;
	uint64_t origin;         /* wall-clock ns at ts 0 */
	int      first_event;    /* nothing written into traceEvents yet */
	struct track *tracks;    /* open addressing on (session, tid) */
	size_t   tcap, tn;
	struct proc *procs;      /* sessions given a pid, open addressing */
	size_t   pcap, pn;
	struct idmap pids;       /* the pids procs hold: a scan for each new one is quadratic */
	int      xtcd_named;     /* pid 0 has its metadata */
	FILE    *flows;          /* the flow events, until they are copied */
	struct verdict *verdicts;
	size_t   vcap, vn;
	/* what was written */
	uint64_t slices, instants, markers, drops, dropped;
	uint64_t nflows, flow_steps, flow_ends, nverdicts;
};

/* Spread a (session, n) key over a table of cap (a power of two) slots. */
static size_t slot_of(uint64_t session, uint64_t n, size_t cap)
{
	uint64_t h = (session * 0x9E3779B97F4A7C15ull) ^ (n * 0xC2B2AE3D27D4EB4Full);

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* "123.456": ns as microseconds with three decimals. */
static void put_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* ,"ts":... of a wall-clock time. */
static void put_ts(struct chrome *c, FILE *out, uint64_t real)
{
	fputs(",\"ts\":", out);
	put_us(out, real > c->origin ? real - c->origin : 0);
}

/* Start one trace event object: the separator, then {"name":NAME,"ph":PH. */
static void ev_begin(struct chrome *c, const char *name, size_t len, char ph)
{
	FILE *out = c->x->out;

	fputs(c->first_event ? "\n" : ",\n", out);
	c->first_event = 0;
	fputs("{\"name\":", out);
	print_json_string(out, name, len);
	fprintf(out, ",\"ph\":\"%c\"", ph);
}

/* A metadata event: process_name / thread_name. */
static void ev_meta(struct chrome *c, const char *what, uint32_t pid, uint32_t tid,
                    const char *name)
{
	ev_begin(c, what, strlen(what), 'M');
	fprintf(c->x->out, ",\"ts\":0,\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"args\":{\"name\":",
	        pid, tid);
	print_json_string(c->x->out, name, strlen(name));
	fputs("}}", c->x->out);
}

/* Double a table of `size`-byte slots keyed by a leading u64 session
 * (0 empty) and a u32 (or u64 with wide) at key_off (none when key_off is
 * 0).  0 or -ENOMEM. */
static int table_grow(void **tab, size_t *cap, size_t size, size_t key_off, int wide)
{
	size_t ncap = *cap ? *cap * 2 : 64;
	char *nt = calloc(ncap, size), *old = *tab;

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		char *e = old + i * size;
		uint64_t s, k = 0;
		uint32_t k32 = 0;
		size_t j;

		memcpy(&s, e, sizeof(s));
		if (!s)
			continue;
		if (key_off && wide)
			memcpy(&k, e + key_off, sizeof(k));
		else if (key_off)
			memcpy(&k32, e + key_off, sizeof(k32)), k = k32;
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

/* The slot of a session in procs: its own, or the empty one it would take. */
static size_t proc_slot(const struct chrome *c, uint64_t session)
{
	size_t i = slot_of(session, 0, c->pcap);

	while (c->procs[i].session && c->procs[i].session != session)
		i = (i + 1) & (c->pcap - 1);
	return i;
}

/* The proc of a session, or NULL if it has no pid yet. */
static struct proc *proc_find(struct chrome *c, uint64_t session)
{
	size_t i = c->pcap ? proc_slot(c, session) : 0;

	return c->pcap && c->procs[i].session ? &c->procs[i] : NULL;
}

/* The trace pid of a session (giving it one, with its name, if new), from
 * its OS pid (0: unknown) and comm; 0 on -ENOMEM (x->fatal set). */
static uint32_t proc_pid(struct chrome *c, uint64_t session, uint32_t os_pid, const char *comm_in)
{
	char name[96], comm[17];
	struct proc *p;
	size_t i;
	uint32_t pid;

	if ((c->pn + 1) * 2 > c->pcap &&
	    table_grow((void **)&c->procs, &c->pcap, sizeof(*p), 0, 0) < 0) {
		c->x->fatal = -ENOMEM;
		return 0;
	}
	i = proc_slot(c, session);
	if (c->procs[i].session)
		return c->procs[i].pid;
	/* new: the OS pid, unless another session of this export has it */
	pid = os_pid ? os_pid : PID_RESTATED + (uint32_t)session;
	if (idmap_get(&c->pids, pid, NULL))
		pid = PID_RESTATED + (uint32_t)session;
	if (idmap_put(&c->pids, pid, session) < 0) {
		c->x->fatal = -ENOMEM;
		return 0;
	}
	c->procs[i].session = session;
	c->procs[i].pid = pid;
	c->pn++;
	snprintf(comm, sizeof(comm), "%s", comm_in ? comm_in : "");
	for (char *ch = comm; *ch; ch++)
		if ((unsigned char)*ch < 0x20 || (unsigned char)*ch >= 0x7f)
			*ch = '?';
	snprintf(name, sizeof(name), "%s [%" PRIu32 "] session %" PRIu64, comm[0] ? comm : "?",
	         os_pid, session);
	ev_meta(c, "process_name", pid, 0, name);
	return pid;
}

/* proc_pid of a reader's session (NULL: never started). */
static uint32_t item_pid(struct chrome *c, uint64_t session, const struct segread_session *s)
{
	char comm[17];

	memset(comm, 0, sizeof(comm));
	if (s)
		memcpy(comm, s->start.comm, sizeof(s->start.comm));
	return proc_pid(c, session, s ? s->start.pid : 0, comm);
}

/* The track (session, tid), or NULL if it has none yet. */
static struct track *track_find(struct chrome *c, uint64_t session, uint32_t tid)
{
	if (!c->tcap)
		return NULL;
	for (size_t i = slot_of(session, tid, c->tcap); c->tracks[i].session;
	     i = (i + 1) & (c->tcap - 1))
		if (c->tracks[i].session == session && c->tracks[i].tid == tid)
			return &c->tracks[i];
	return NULL;
}

/* The track of an event (created, with its name, if new); NULL on ENOMEM. */
static struct track *track_of(struct chrome *c, const struct segread_item *it)
{
	uint64_t session = it->u.event.session_id;
	uint32_t loop = filter_event_loop(it);
	uint32_t tid = loop != LOOP_NONE ? loop : TID_NO_LOOP + it->u.event.ring;
	struct track *t = track_find(c, session, tid);
	struct proc *p;
	char name[48];
	size_t i;
	uint32_t pid;

	if (t)
		return t;
	if (!(pid = item_pid(c, session, it->session)))
		return NULL;
	if ((c->tn + 1) * 2 > c->tcap &&
	    table_grow((void **)&c->tracks, &c->tcap, sizeof(*t), offsetof(struct track, tid), 0) < 0) {
		c->x->fatal = -ENOMEM;
		return NULL;
	}
	for (i = slot_of(session, tid, c->tcap); c->tracks[i].session; i = (i + 1) & (c->tcap - 1))
		;
	t = &c->tracks[i];
	memset(t, 0, sizeof(*t));
	t->session = session;
	t->tid = tid;
	t->pid = pid;
	c->tn++;
	if ((p = proc_find(c, session)) != NULL) {
		t->next_tid = p->first_tid;
		p->first_tid = tid;
		p->ntracks++;
	}
	if (loop != LOOP_NONE)
		snprintf(name, sizeof(name), "loop %" PRIu32, tid);
	else
		snprintf(name, sizeof(name), "ring %" PRIu32 " (no loop)", it->u.event.ring);
	ev_meta(c, "thread_name", pid, tid, name);
	return t;
}

/* ---- verdicts of chains that never completed ---- */

/* The verdict args of (session, pid) at t, or NULL. */
static const char *verdict_find(const struct chrome *c, uint64_t session, xtc_pid_t pid,
                                uint64_t t)
{
	if (!c->vcap)
		return NULL;
	for (size_t i = slot_of(session, t, c->vcap); c->verdicts[i].session;
	     i = (i + 1) & (c->vcap - 1)) {
		const struct verdict *v = &c->verdicts[i];

		if (v->session == session && v->t == t && v->pid.loop_id == pid.loop_id &&
		    v->pid.local_id == pid.local_id && v->pid.gen == pid.gen)
			return v->text;
	}
	return NULL;
}

/* Keep text (owned by the table from now on) for (session, pid, t). */
static int verdict_put(struct chrome *c, uint64_t session, xtc_pid_t pid, uint64_t t, char *text)
{
	struct verdict *v;
	size_t i;

	if ((c->vn + 1) * 2 > c->vcap &&
	    table_grow((void **)&c->verdicts, &c->vcap, sizeof(*v), offsetof(struct verdict, t), 1) < 0) {
		free(text);
		return -ENOMEM;
	}
	for (i = slot_of(session, t, c->vcap); c->verdicts[i].session; i = (i + 1) & (c->vcap - 1))
		;
	v = &c->verdicts[i];
	v->session = session;
	v->t = t;
	v->pid = pid;
	v->text = text;
	c->vn++;
	return 0;
}

/* sink: a chain that never completed.  Its args, kept for its PARK_TASK
 * and for its PARK. */
static void chain_verdict(void *ctx, const struct export_chain_verdict *v)
{
	struct chrome *c = ctx;
	char *text = NULL, *copy;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m) {
		c->x->fatal = -ENOMEM;
		return;
	}
	fputs(",\"chain_verdict\":", m);
	print_json_string(m, v->verdict, strlen(v->verdict));
	fputs(",\"chain_class\":", m);
	print_json_string(m, v->key, strlen(v->key));
	fputs(",\"chain_why\":", m);
	print_json_string(m, v->why, strlen(v->why));
	if (fclose(m) != 0 || !text) {
		free(text);
		c->x->fatal = -ENOMEM;
		return;
	}
	c->nverdicts++;
	copy = v->t_op && v->t_op != v->t_park ? strdup(text) : NULL;
	if (verdict_put(c, v->session, v->pid, v->t_park, text) < 0 ||
	    (v->t_op && v->t_op != v->t_park &&
	     (!copy || verdict_put(c, v->session, v->pid, v->t_op, copy) < 0)))
		c->x->fatal = -ENOMEM;
}

/* sink: one step of a chain, as a flow event into c->flows. */
static uint64_t chain_step(void *ctx, const struct export_chain_ev *e)
{
	struct chrome *c = ctx;
	uint32_t pid;
	uint64_t flow = e->flow;
	char ph;

	if (e->loop == LOOP_NONE || c->x->fatal)
		return 0;
	if (!(pid = proc_pid(c, e->session, e->os_pid, e->comm)))
		return 0;
	switch (e->kind) {
	case XTC_TAIL_PARK_TASK:
		flow = ++c->nflows;
		ph = 's';
		break;
	case XTC_TAIL_RUN:
		c->flow_ends++;
		ph = 'f';
		break;
	default:
		ph = 't';
		break;
	}
	c->flow_steps++;
	fprintf(c->flows, ",\n{\"name\":\"wakeup\",\"cat\":\"task\",\"ph\":\"%c\",\"id\":%" PRIu64,
	        ph, flow);
	put_ts(c, c->flows, e->real_ns);
	fprintf(c->flows, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 "%s}", pid, e->loop,
	        ph == 'f' ? ",\"bp\":\"e\"" : "");
	return flow;
}

/* Run the chain join into c->flows and c->verdicts.  0, or 2 (reported). */
static int chrome_chains(struct chrome *c, const char *dir, export_chains_fn chains)
{
	struct export_chain_sink sink = { c, chain_step, chain_verdict };
	int ret;

	if (!(c->flows = tmpfile())) {
		fprintf(stderr, "xtcd: --export chrome: cannot make a temporary file for the flows: "
		        "%s; set TMPDIR to a writable directory\n", strerror(errno));
		return 2;
	}
	ret = chains(dir, c->x->o, &sink);
	if (c->x->fatal)
		return 2;
	if (ferror(c->flows)) {
		fprintf(stderr, "xtcd: --export chrome: writing the flows to a temporary file "
		        "failed: %s\n", strerror(errno ? errno : EIO));
		return 2;
	}
	return ret == 2 ? 2 : 0;
}

/* Append the flows after everything else. */
static void flows_copy(struct chrome *c)
{
	char buf[65536];
	size_t n;

	rewind(c->flows);
	while ((n = fread(buf, 1, sizeof(buf), c->flows)) > 0)
		if (fwrite(buf, 1, n, c->x->out) != n)
			break;
	if (ferror(c->flows))
		c->x->out_err = -EIO;
}

/* ---- slices and instants ---- */

/* The proc's name and ts; pid and tid of a track event. */
static void ev_track(struct chrome *c, const struct track *t, uint64_t real)
{
	put_ts(c, c->x->out, real);
	fprintf(c->x->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, t->pid, t->tid);
}

/* "RUN l.l.g" */
static int run_name(char *buf, size_t len, xtc_pid_t pid)
{
	return snprintf(buf, len, "RUN %" PRIu32 ".%" PRIu32 ".%" PRIu64, pid.loop_id,
	                pid.local_id, pid.gen);
}

/* Begin t's slice at a RUN record (written when it ends). */
static void slice_open(struct track *t, const struct segread_item *it)
{
	t->open = 1;
	t->run_pid = it->u.event.rec.pid;
	t->run_real = it->real_ns;
	t->run_detail = it->u.event.rec.detail;
}

/* "123.456" of ns from the origin, into buf. */
static void us_text(const struct chrome *c, uint64_t real, char *buf, size_t len)
{
	uint64_t ns = real > c->origin ? real - c->origin : 0;

	snprintf(buf, len, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/*
 * The dur of a slice from ts text a to ts text b, as text: the double a
 * viewer adds to a's double to get b's.  b - a of two doubles this close
 * is exact, so ts + dur lands on the next slice's ts itself, never past
 * it; printed in the fewest digits (from 15) that read back as that
 * double.
 */
static void dur_text(const char *a, const char *b, char *buf, size_t len)
{
	double t0 = strtod(a, NULL), t1 = strtod(b, NULL), d = t1 - t0;

	while (d > 0 && t0 + d > t1)          /* not with a sane origin; kept safe */
		d = nextafter(d, 0);
	for (int prec = 15; prec <= 17; prec++) {     /* %g drops trailing zeros */
		snprintf(buf, len, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

/* Write the open slice of t as an "X" ending at end (not before its
 * start); more: further args (after a comma) or NULL. */
static void slice_close(struct chrome *c, struct track *t, uint64_t end, const char *why,
                        const char *more)
{
	char name[80], ts[32], te[32], dur[40];
	int len;

	if (!t->open)
		return;
	t->open = 0;
	if (end < t->run_real)
		end = t->run_real;
	t->free_at = end;
	c->slices++;
	us_text(c, t->run_real, ts, sizeof(ts));
	us_text(c, end, te, sizeof(te));
	dur_text(ts, te, dur, sizeof(dur));
	len = run_name(name, sizeof(name), t->run_pid);
	ev_begin(c, name, (size_t)len, 'X');
	fprintf(c->x->out, ",\"cat\":\"task\",\"ts\":%s,\"dur\":%s,\"pid\":%" PRIu32 ",\"tid\":%"
	        PRIu32 ",\"args\":{\"pid\":\"%" PRIu32 ".%" PRIu32 ".%" PRIu64
	        "\",\"wake_to_run_us\":", ts, dur, t->pid, t->tid, t->run_pid.loop_id,
	        t->run_pid.local_id, t->run_pid.gen);
	put_us(c->x->out, t->run_detail);
	fprintf(c->x->out, ",\"ended_by\":\"%s\",\"dur_ns\":%" PRIu64 "%s}}", why,
	        end - t->run_real, more ? more : "");
}

/* Same proc. */
static int pid_eq(xtc_pid_t a, xtc_pid_t b)
{
	return a.loop_id == b.loop_id && a.local_id == b.local_id && a.gen == b.gen;
}

/* The category of an instant: the kinds a wakeup chain is made of bind
 * flows, and must share the flows' "task". */
static const char *kind_cat(uint32_t kind)
{
	switch (kind) {
	case XTC_TAIL_SPAWN: case XTC_TAIL_EXIT: case XTC_TAIL_WAKE: case XTC_TAIL_PARK:
	case XTC_TAIL_PARK_TASK: case XTC_TAIL_REAP: case XTC_TAIL_SUBMIT:
		return "task";
	default:
		return "loop";
	}
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The BEGIN kind an adapter END closes. */
static uint32_t adapter_begin_kind(uint32_t end_kind)
{
	return end_kind == XTC_TAIL_CB_END ? XTC_TAIL_CB_BEGIN : XTC_TAIL_LOOP_WAIT;
}

/* Where a slice opened now at depth d may begin, at the earliest: after
 * every slice written on the track (they are all before it or inside an
 * ancestor's earlier child) and not before its parent; at the top, inside
 * the RUN open on the track or after the last one. */
static uint64_t adapter_floor(const struct track *t, unsigned d)
{
	if (d)
		return max_u64(t->aend, t->abeg[d - 1]);
	return max_u64(t->aend, t->open ? t->run_real : t->free_at);
}

/* CB_BEGIN or LOOP_WAIT: an adapter slice opens at the record. */
static void adapter_open(struct track *t, const struct segread_item *it)
{
	unsigned d = t->adepth;

	if (d == ADAPT_DEPTH || t->adeep) {
		t->adeep++;
		return;
	}
	t->akind[d] = it->u.event.rec.kind;
	t->abeg[d] = max_u64(it->real_ns, adapter_floor(t, d));
	t->adepth = d + 1;
}

/* The beginning of the slice a CB_END or LOOP_WAKE closes: its open
 * BEGIN's (records above it that never ended are forgotten), or, when
 * none is open, its detail before it, not before the floor. */
static uint64_t adapter_close_begin(struct track *t, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	uint32_t want = adapter_begin_kind(r->kind);
	unsigned d = t->adepth;

	if (t->adeep) {
		t->adeep--;
	} else {
		while (d > 0 && t->akind[d - 1] != want)
			d--;
		if (d > 0) {
			t->adepth = d - 1;
			return t->abeg[d - 1];
		}
	}
	/* at the open depth (ADAPT_DEPTH, under the last kept, past it) */
	return max_u64(it->real_ns > r->detail ? it->real_ns - r->detail : 0,
	               adapter_floor(t, t->adepth));
}

/* An adapter's CB_END or LOOP_WAKE as a complete slice from its BEGIN to
 * the record: "CB 1.io:22.cb4" or "wait". */
static void adapter_slice(struct chrome *c, struct track *t, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	uint64_t from = adapter_close_begin(t, it);
	uint64_t to = max_u64(it->real_ns, max_u64(from, t->aend));
	char name[96], w[64], ts[32], te[32], dur[40];
	int len;

	t->aend = to;
	if (r->kind == XTC_TAIL_CB_END && print_watcher_pid(w, sizeof(w), r))
		len = snprintf(name, sizeof(name), "CB %s", w);
	else
		len = snprintf(name, sizeof(name), "wait");
	us_text(c, from, ts, sizeof(ts));
	us_text(c, to, te, sizeof(te));
	dur_text(ts, te, dur, sizeof(dur));
	c->slices++;
	ev_begin(c, name, (size_t)len, 'X');
	fprintf(c->x->out, ",\"cat\":\"loop\",\"ts\":%s,\"dur\":%s,\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
	        ",\"args\":{\"dur_ns\":%" PRIu64 ",\"detail_ns\":%" PRIu64 "}}", ts, dur, t->pid,
	        t->tid, to - from, r->detail);
}

/* An event: a slice boundary, or an instant. */
static void chrome_event(struct chrome *c, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	struct track *t = track_of(c, it);
	const char *kn, *verdict = NULL;
	char kbuf[24], det[64];

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
		slice_close(c, t, it->real_ns, "next RUN", NULL);
		slice_open(t, it);
		return;
	case XTC_TAIL_PARK:
	case XTC_TAIL_EXIT:
		if (c->vn && r->kind == XTC_TAIL_PARK)
			verdict = verdict_find(c, it->u.event.session_id, r->pid, it->real_ns);
		if (t->open && pid_eq(t->run_pid, r->pid))
			slice_close(c, t, it->real_ns, r->kind == XTC_TAIL_PARK ? "PARK" : "EXIT",
			            verdict);
		break;
	case XTC_TAIL_PARK_TASK:
		if (c->vn)
			verdict = verdict_find(c, it->u.event.session_id, r->pid, it->real_ns);
		break;
	case XTC_TAIL_CB_BEGIN:
	case XTC_TAIL_LOOP_WAIT:
		adapter_open(t, it);
		break;
	case XTC_TAIL_CB_END:
	case XTC_TAIL_LOOP_WAKE:
		adapter_slice(c, t, it);
		return;
	}
	c->instants++;
	kn = segname_kind(r->kind, kbuf, sizeof(kbuf));
	print_detail(det, sizeof(det), r->kind, r->detail);
	ev_begin(c, kn, strlen(kn), 'i');
	fprintf(c->x->out, ",\"s\":\"t\",\"cat\":\"%s\"", kind_cat(r->kind));
	ev_track(c, t, it->real_ns);
	fprintf(c->x->out, ",\"args\":{\"pid\":\"%" PRIu32 ".%" PRIu32 ".%" PRIu64 "\",\"detail\":",
	        r->pid.loop_id, r->pid.local_id, r->pid.gen);
	print_json_string(c->x->out, det, strlen(det));
	fprintf(c->x->out, ",\"raw\":%" PRIu64 "%s}}", r->detail, verdict ? verdict : "");
}

/* Close every open slice of a session (0: of every session) at end, or
 * at its track's last event when end is 0. */
static void slices_close_all(struct chrome *c, uint64_t session, uint64_t end, const char *why)
{
	const struct proc *p = session ? proc_find(c, session) : NULL;
	struct track *own = p && p->ntracks ? track_find(c, session, p->first_tid) : NULL;

	/* one session's through its own tracks: a scan of every session's at
	 * each session end would be quadratic */
	for (uint32_t k = 0; own && k < p->ntracks; k++) {
		if (own->open)
			slice_close(c, own, end ? end : own->last_real, why, NULL);
		own = k + 1 < p->ntracks ? track_find(c, session, own->next_tid) : NULL;
	}
	if (session)
		return;
	for (size_t i = 0; i < c->tcap; i++) {
		struct track *t = &c->tracks[i];

		if (t->session && t->open && (!session || t->session == session))
			slice_close(c, t, end ? end : t->last_real, why, NULL);
	}
}

/* Begin a process-scoped marker: name, "s":"p", ts, pid, tid. */
static void marker_begin(struct chrome *c, const char *name, uint64_t real, uint32_t pid,
                         uint32_t tid)
{
	c->markers++;
	ev_begin(c, name, strlen(name), 'i');
	fputs(",\"s\":\"p\"", c->x->out);
	put_ts(c, c->x->out, real);
	fprintf(c->x->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, pid, tid);
}

/* DROP: a marker on the session's process.  A slice open on the loop
 * ends at the loop's last record before the loss: what ran during it is
 * unknown. */
static void chrome_drop(struct chrome *c, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	uint32_t pid = item_pid(c, d->session_id, it->session);
	/* XTC_SEG_RING_NONE: a thread that found no free ring; no track */
	uint32_t tid = d->loop_id != LOOP_NONE ? d->loop_id
	             : d->ring != XTC_SEG_RING_NONE ? TID_NO_LOOP + d->ring : pid;
	struct track *t = track_find(c, d->session_id, tid);
	char name[96], cbuf[24];
	const char *cause;
	uint64_t win = 0;

	if (!pid)
		return;
	if (t) {
		slice_close(c, t, t->last_real, "DROP", NULL);
		t->adepth = t->adeep = 0;  /* an END after the loss pairs with nothing before */
	}
	if (it->session && d->to_ts_ns >= d->from_ts_ns && d->from_ts_ns)
		win = d->to_ts_ns - d->from_ts_ns;
	c->drops++;
	c->dropped += d->count;
	cause = segname_drop_cause(d->cause, cbuf, sizeof(cbuf));
	snprintf(name, sizeof(name), "DROP %" PRIu64 " records (%s)", d->count, cause);
	marker_begin(c, name, it->real_ns, pid, tid);
	fprintf(c->x->out, ",\"args\":{\"count\":%" PRIu64 ",\"cause\":\"%s\",\"ring\":%" PRIu32
	        ",\"loop\":%lld,\"window_us\":", d->count, cause, d->ring,
	        print_loop_json(d->loop_id));
	put_us(c->x->out, win);
	fputs("}}", c->x->out);
}

/* SESSION START / END: markers on the session's process. */
static void chrome_session(struct chrome *c, const struct segread_item *it)
{
	FILE *out = c->x->out;
	char name[96], rbuf[24];
	const char *reason;
	uint64_t id;
	uint32_t pid;

	if (it->type == SEGREAD_SESSION_START) {
		id = it->u.start.ss->session_id;
		if (!(pid = item_pid(c, id, it->session)))
			return;
		marker_begin(c, it->u.start.restated ? "SESSION START (restated: earlier history "
		             "evicted)" : "SESSION START", it->real_ns, pid, pid);
		fprintf(out, ",\"args\":{\"session\":%" PRIu64 ",\"rings\":%" PRIu32
		        ",\"ring_capacity\":%" PRIu32 ",\"dropped_before\":%" PRIu64 "}}", id,
		        it->u.start.ss->ring_count, it->u.start.ss->ring_capacity,
		        it->u.start.ss->dropped_before);
		return;
	}
	id = it->u.end.session_id;
	if (!(pid = item_pid(c, id, it->session)))
		return;
	slices_close_all(c, id, it->real_ns, "session end");
	reason = segname_end_reason(it->u.end.reason, rbuf, sizeof(rbuf));
	snprintf(name, sizeof(name), "SESSION END %s, %s", reason,
	         it->u.end.complete ? "complete" : "INCOMPLETE");
	marker_begin(c, name, it->real_ns, pid, pid);
	fprintf(out, ",\"args\":{\"session\":%" PRIu64 ",\"reason\":\"%s\",\"complete\":%s"
	        ",\"produced\":%" PRIu64 ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64
	        ",\"lost\":%" PRIu64 "}}", id, reason, it->u.end.complete ? "true" : "false",
	        it->u.end.produced, it->u.end.written, it->u.end.dropped, it->u.end.lost);
}

/* CORRUPT: a marker on the session's process. */
static void chrome_corrupt(struct chrome *c, const struct segread_item *it)
{
	const struct xtc_seg_corrupt *co = &it->u.corrupt;
	uint32_t pid = item_pid(c, co->session_id, it->session);
	char name[96], rbuf[24];
	const char *reason;

	if (!pid)
		return;
	reason = segname_corrupt_reason(co->reason, rbuf, sizeof(rbuf));
	snprintf(name, sizeof(name), "CORRUPT ring %" PRIu32 " (%s): no longer recorded", co->ring,
	         reason);
	marker_begin(c, name, c->x->last_real ? c->x->last_real : c->x->seg_real, pid, pid);
	fprintf(c->x->out, ",\"args\":{\"ring\":%" PRIu32 ",\"reason\":\"%s\"}}", co->ring, reason);
}

/* EVICTED: a global marker on pid 0, "xtcd". */
static void chrome_evicted(struct chrome *c, const struct segread_item *it)
{
	const struct xtc_seg_evicted *ev = &it->u.evicted.ev;
	char name[128];

	if (!c->xtcd_named) {
		ev_meta(c, "process_name", 0, 0, "xtcd");
		c->xtcd_named = 1;
	}
	c->markers++;
	snprintf(name, sizeof(name), "EVICTED segments %" PRIu64 "..%" PRIu64 " (%" PRIu64
	         " records deleted under the byte budget)", ev->first_seq, ev->last_seq, ev->records);
	ev_begin(c, name, strlen(name), 'i');
	fputs(",\"s\":\"g\"", c->x->out);
	put_ts(c, c->x->out, c->x->seg_real);
	fprintf(c->x->out, ",\"pid\":0,\"tid\":0,\"args\":{\"bytes\":%" PRIu64 ",\"records\":%"
	        PRIu64 "}}", ev->bytes, ev->records);
}

/* One item of the chrome export. */
static int chrome_item(struct export *x, const struct segread_item *it)
{
	struct chrome *c = x->fmt;

	switch (it->type) {
	case SEGREAD_EVENT:         chrome_event(c, it); break;
	case SEGREAD_DROP:          chrome_drop(c, it); break;
	case SEGREAD_SESSION_START:
	case SEGREAD_SESSION_END:   chrome_session(c, it); break;
	case SEGREAD_CORRUPT:       chrome_corrupt(c, it); break;
	case SEGREAD_EVICTED:       chrome_evicted(c, it); break;
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
	struct chrome *c = x->fmt;
	uint64_t t = it->has_real ? it->real_ns : x->seg_real;

	if (t && (!c->origin || t < c->origin))
		c->origin = t;
	return 0;
}

/* The "otherData" object: where ts 0 is. */
static void chrome_other(struct chrome *c, const char *dir)
{
	char local[64] = "";
	time_t sec = (time_t)(c->origin / EXPORT_NS_PER_S);
	struct tm tm;

	if (localtime_r(&sec, &tm))
		strftime(local, sizeof(local), "%Y-%m-%d %H:%M:%S %z", &tm);
	fprintf(c->x->out, ",\"otherData\":{\"generator\":\"xtcd %s\",\"dir\":", PACKAGE_VERSION);
	print_json_string(c->x->out, dir, strlen(dir));
	fprintf(c->x->out, ",\"origin\":\"%s\",\"origin_real_ns\":%" PRIu64 "}", local, c->origin);
}

/* One line on stderr: what was written. */
static void chrome_summary(const struct chrome *c)
{
	if (c->first_event) {
		fprintf(stderr, "xtcd: no records matched: the trace is empty\n");
		return;
	}
	fprintf(stderr, "xtcd: --export chrome: %" PRIu64 " slices, %" PRIu64 " instants, %"
	        PRIu64 " markers; %" PRIu64 " flows (%" PRIu64 " steps, %" PRIu64 " reach a RUN), %"
	        PRIu64 " unfinished chains with a verdict; %" PRIu64 " drops (%" PRIu64
	        " records)\n", c->slices, c->instants, c->markers, c->nflows, c->flow_steps,
	        c->flow_ends, c->nverdicts, c->drops, c->dropped);
}

/* Free what the export held. */
static void chrome_free(struct chrome *c)
{
	for (size_t i = 0; i < c->vcap; i++)
		free(c->verdicts[i].text);
	free(c->verdicts);
	free(c->tracks);
	free(c->procs);
	idmap_free(&c->pids);
	if (c->flows)
		fclose(c->flows);
}

/* --export chrome. */
int export_chrome(struct export *x, const char *dir, export_chains_fn chains)
{
	struct chrome c;
	int status;

	memset(&c, 0, sizeof(c));
	c.x = x;
	x->fmt = &c;
	x->item = origin_item;
	x->quiet = 1;
	status = export_read(x, dir);
	if (status < 0)
		return status;
	x->quiet = 0;
	c.origin -= c.origin % EXPORT_NS_PER_S;
	c.first_event = 1;
	fputs("{\"traceEvents\":[", x->out);
	if (chains && chrome_chains(&c, dir, chains) != 0) {
		chrome_free(&c);
		return x->fatal ? x->fatal : -EIO;
	}
	x->last_real = 0;
	x->item = chrome_item;
	status = export_read(x, dir);
	if (status >= 0) {
		slices_close_all(&c, 0, 0, "end of record");
		if (c.flows)
			flows_copy(&c);
		fputs("\n],\"displayTimeUnit\":\"ns\"", x->out);
		chrome_other(&c, dir);
		fputs("}\n", x->out);
		chrome_summary(&c);
	}
	chrome_free(&c);
	return status;
}
