/*
 * xtcd/report/report_adapter.c - what the LD_PRELOAD adapters recorded, in
 * xtcd --report: libxtctail-ev loops and callbacks, libxtctail-uring rings.
 *
 * Loops (LOOP_WAIT / LOOP_WAKE / LOOP_DISPATCH).  Over a loop's span, from
 * its first record to the end of the session: BLOCKED is the time inside
 * the backend wait (LOOP_WAKE details, plus a wait still open at the end),
 * BUSY the rest, DISPATCH the part of it spent running callbacks.  The
 * busy intervals (wake to the next wait) also feed the loops table and the
 * SVG timeline.  At the end of the record each loop is in one of three
 * states:
 *   idle in its wait   its last record is a LOOP_WAIT: alive, nothing to do
 *   in a callback      a CB_BEGIN with no CB_END: it stopped polling there
 *   busy               woken, not back in its wait: it stopped polling, if
 *                      for longer than --stall
 * "stopped polling" rests on an absence (no LOOP_WAIT, no CB_END), so a
 * loss on the loop's rings after its last record makes it CANNOT TELL.
 *
 * Callbacks (CB_BEGIN / CB_END / CB_FUNC).  Durations per watcher (kind,
 * fd or signal, callback number), the slowest few, and the head-of-line
 * delay: how long after the loop woke a callback started.
 *
 * liburing (SUBMIT / REAP / SUBMIT_FAIL from libxtctail-uring, source IO).
 * A REAP there means "the adapter saw this completion in the CQ ring at
 * time t", at an exported liburing call; per ring, tags submitted and
 * never seen are counted at the end, PROVEN only when nothing was lost on
 * the ring's loop after the submit and the session detached cleanly.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

#define RA_TOP      10          /* slowest callbacks kept per session */
#define RA_KEYS_MAX 2048        /* watcher keys with a histogram of their own */
#define RA_OPEN_MAX 8           /* callbacks open at once on a loop (nesting) */
#define RA_FN_MAX   4096        /* callback numbers (12 bits) */
#define RA_LEFT_MAX 5           /* unseen tags printed per ring */

struct ra_open {
	uint64_t gen, t, hol;
};

/* One adapter loop (or liburing ring) of a session. */
struct ra_loop {
	uint64_t sess;
	uint32_t sidx, loop;
	uint64_t first_t, last_t;
	uint64_t waits, wakes, blocked, dispatches, dispatch_ns, pending;
	uint64_t wait_t, wake_t;     /* the open wait / the last wake */
	int      in_wait;
	uint32_t last_kind;
	uint64_t cbs, cb_ns;
	struct ra_open open[RA_OPEN_MAX];
	unsigned nopen;
	/* liburing */
	uint64_t submits, reaps, fails, unseen;
	uint64_t first_unseen_t;
	uint64_t left[RA_LEFT_MAX];
	unsigned nleft;
	struct rp_map tags;          /* tag -> index into cnt */
	uint32_t *cnt;               /* outstanding per tag */
	size_t   ntags, cnt_cap;
};

/* One watcher key: kind, fd, callback number. */
struct ra_key {
	uint64_t sess;
	uint32_t wkind, fd, cbno;
	uint64_t n, total, max;
	struct rp_hist h;
};

struct ra_slow {
	uint64_t sess, t, took, hol;
	uint32_t loop, wkind, fd, cbno;
};

struct rp_adapter {
	struct ra_loop *loops;
	size_t nloops, loops_cap;
	struct rp_map loop_map;
	struct ra_key *keys;
	size_t nkeys, keys_cap;
	struct rp_map key_map;
	struct ra_slow slow[RA_TOP];
	size_t nslow;
	struct rp_hist hol;
	uint64_t fn_addr[RA_FN_MAX], fn_off[RA_FN_MAX];
	uint64_t fn_sess[RA_FN_MAX];
	uint64_t uring_events;
};

static struct rp_adapter *ra_get(struct report *rep)
{
	if (!rep->adapter && !(rep->adapter = calloc(1, sizeof(*rep->adapter)))) {
		report_oom(rep);
		return NULL;
	}
	return rep->adapter;
}

static struct ra_loop *ra_loop(struct report *rep, struct rp_adapter *a, struct rp_sess *s,
                               uint32_t loop)
{
	uint32_t *v = rp_map_get(&a->loop_map, s->id, loop, 0, 1);
	struct ra_loop *l;

	if (!v) {
		report_oom(rep);
		return NULL;
	}
	if (*v != RP_NONE)
		return &a->loops[*v];
	if (rp_grow(&a->loops, &a->loops_cap, a->nloops + 1, sizeof(*a->loops)) < 0) {
		report_oom(rep);
		return NULL;
	}
	*v = (uint32_t)a->nloops;
	l = &a->loops[a->nloops++];
	memset(l, 0, sizeof(*l));
	l->sess = s->id;
	l->sidx = s->idx;
	l->loop = loop;
	return l;
}

static struct ra_key *ra_key(struct report *rep, struct rp_adapter *a, uint64_t sess,
                             uint32_t wkind, uint32_t fd, uint32_t cbno)
{
	uint32_t *v;
	struct ra_key *k;

	if (a->nkeys >= RA_KEYS_MAX)
		fd = XTC_TAIL_CB_NOFD - 1; /* past the cap: "other fds" of this callback */
	v = rp_map_get(&a->key_map, sess, (uint64_t)wkind << 32 | fd, cbno, 1);
	if (!v) {
		report_oom(rep);
		return NULL;
	}
	if (*v != RP_NONE)
		return &a->keys[*v];
	if (rp_grow(&a->keys, &a->keys_cap, a->nkeys + 1, sizeof(*a->keys)) < 0) {
		report_oom(rep);
		return NULL;
	}
	k = &a->keys[a->nkeys];
	memset(k, 0, sizeof(*k));
	*v = (uint32_t)a->nkeys++;
	k->sess = sess;
	k->wkind = wkind;
	k->fd = fd;
	k->cbno = cbno;
	return k;
}

/* Keep the RA_TOP slowest callbacks. */
static void ra_slow_add(struct rp_adapter *a, const struct ra_slow *c)
{
	size_t i, min = 0;

	if (a->nslow < RA_TOP) {
		a->slow[a->nslow++] = *c;
		return;
	}
	for (i = 1; i < RA_TOP; i++)
		if (a->slow[i].took < a->slow[min].took)
			min = i;
	if (c->took > a->slow[min].took)
		a->slow[min] = *c;
}

static void ra_cb_end(struct report *rep, struct rp_adapter *a, struct rp_sess *s,
                      struct ra_loop *l, const struct rp_ev *e)
{
	uint64_t gen = e->pid.gen;
	struct ra_slow c;
	struct ra_key *k;
	unsigned i = l->nopen;

	while (i > 0 && l->open[i - 1].gen != gen)
		i--;
	c.hol = i > 0 ? l->open[i - 1].hol : 0;
	if (i > 0)
		l->nopen = i - 1; /* and any inner one left open was lost */
	l->cbs++;
	l->cb_ns += e->detail;
	if (!(k = ra_key(rep, a, s->id, XTC_TAIL_CB_WKIND(gen), e->pid.local_id, XTC_TAIL_CB_NO(gen))))
		return;
	k->n++;
	k->total += e->detail;
	if (e->detail > k->max)
		k->max = e->detail;
	if (rp_hist_add(&k->h, e->detail) < 0)
		report_oom(rep);
	c.sess = s->id;
	c.t = e->t;
	c.took = e->detail;
	c.loop = e->pid.loop_id;
	c.wkind = XTC_TAIL_CB_WKIND(gen);
	c.fd = e->pid.local_id;
	c.cbno = XTC_TAIL_CB_NO(gen);
	ra_slow_add(a, &c);
}

/* liburing: one more (or one fewer) outstanding submission of tag. */
static void ra_tag(struct report *rep, struct ra_loop *l, uint64_t tag, int delta, uint64_t t)
{
	uint32_t *v = rp_map_get(&l->tags, tag, 0, 0, delta > 0);

	if (!v)
		return; /* a REAP of a tag never submitted in the record */
	if (*v == RP_NONE) {
		if (rp_grow(&l->cnt, &l->cnt_cap, l->ntags + 1, sizeof(*l->cnt)) < 0) {
			report_oom(rep);
			return;
		}
		*v = (uint32_t)l->ntags;
		l->cnt[l->ntags++] = 0;
	}
	if (delta > 0)
		l->cnt[*v]++;
	else if (l->cnt[*v] > 0)
		l->cnt[*v]--;
	(void)t;
}

static void ra_uring_event(struct report *rep, struct ra_loop *l, const struct rp_ev *e)
{
	switch (e->kind) {
	case XTC_TAIL_SUBMIT:
		l->submits++;
		ra_tag(rep, l, e->detail, 1, e->t);
		break;
	case XTC_TAIL_REAP:
		l->reaps++;
		ra_tag(rep, l, e->detail, -1, e->t);
		break;
	case XTC_TAIL_SUBMIT_FAIL:
		l->fails++;
		break;
	}
}

/* One record, in time order. */
void report_adapter_event(struct report *rep, struct rp_sess *s, const struct rp_ev *e)
{
	struct rp_adapter *a;
	struct ra_loop *l;
	int uring = e->source == XTC_TAIL_IO &&
	            (e->kind == XTC_TAIL_SUBMIT || e->kind == XTC_TAIL_REAP || e->kind == XTC_TAIL_SUBMIT_FAIL);

	if (!(e->view & RP_VIEW_MAIN))
		return;
	if (!uring && (e->kind < XTC_TAIL_LOOP_WAIT || e->kind >= XTC_TAIL_NKINDS))
		return;
	if (!(a = ra_get(rep)) || !(l = ra_loop(rep, a, s, e->pid.loop_id)))
		return;
	if (!l->first_t)
		l->first_t = e->t;
	l->last_t = e->t;
	l->last_kind = e->kind;
	if (uring) {
		a->uring_events++;
		ra_uring_event(rep, l, e);
		return;
	}
	switch (e->kind) {
	case XTC_TAIL_LOOP_WAIT:
		l->waits++;
		if (l->wake_t && e->t > l->wake_t && !l->in_wait)
			report_loops_busy(rep, s, e->loop, l->wake_t, e->t);
		l->in_wait = 1;
		l->wait_t = e->t;
		break;
	case XTC_TAIL_LOOP_WAKE:
		l->wakes++;
		l->blocked += e->detail;
		l->in_wait = 0;
		l->wake_t = e->t;
		break;
	case XTC_TAIL_LOOP_DISPATCH:
		l->dispatches++;
		l->dispatch_ns += e->detail;
		l->pending += e->pid.local_id;
		break;
	case XTC_TAIL_CB_BEGIN:
		if (l->nopen < RA_OPEN_MAX)
			l->open[l->nopen++] = (struct ra_open){ e->pid.gen, e->t, e->detail };
		if (e->detail && rp_hist_add(&a->hol, e->detail) < 0)
			report_oom(rep);
		break;
	case XTC_TAIL_CB_END:
		ra_cb_end(rep, a, s, l, e);
		break;
	case XTC_TAIL_CB_FUNC:
		if (e->pid.local_id < RA_FN_MAX) {
			a->fn_addr[e->pid.local_id] = e->detail;
			a->fn_off[e->pid.local_id] = e->pid.gen;
			a->fn_sess[e->pid.local_id] = s->id;
		}
		break;
	}
}

/* Tags of l still outstanding: count them, keep a few. */
static void ra_unseen(struct ra_loop *l)
{
	for (size_t i = 0; i < l->tags.cap; i++) {
		uint32_t v = l->tags.vals[i];

		if (v == RP_NONE || !l->cnt[v])
			continue;
		l->unseen += l->cnt[v];
		if (l->nleft < RA_LEFT_MAX)
			l->left[l->nleft++] = l->tags.keys[3 * i];
	}
}

void report_adapter_finish(struct report *rep, struct rp_sess *s)
{
	struct rp_adapter *a = rep->adapter;

	for (size_t i = 0; a && i < a->nloops; i++)
		if (a->loops[i].sess == s->id && a->loops[i].submits)
			ra_unseen(&a->loops[i]);
}

/* ---- text ---- */

static const char *ra_watcher(char *buf, size_t len, uint32_t wkind, uint32_t fd, uint32_t cbno)
{
	if (fd == XTC_TAIL_CB_NOFD)
		snprintf(buf, len, "%s cb%" PRIu32, print_watcher_name(wkind), cbno);
	else if (fd == XTC_TAIL_CB_NOFD - 1)
		snprintf(buf, len, "%s:other cb%" PRIu32, print_watcher_name(wkind), cbno);
	else
		snprintf(buf, len, "%s:%" PRIu32 " cb%" PRIu32, print_watcher_name(wkind), fd, cbno);
	return buf;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? (double)part * 100.0 / (double)whole : 0.0;
}

/* The state of l at the end of its session, in words. */
static void ra_state(struct report *rep, const struct ra_loop *l, char *buf, size_t len)
{
	const struct rp_sess *s = rep->sess[l->sidx];
	uint64_t end = report_sess_end(s);
	char d[32], c[32], w[48], lossbuf[160];
	struct rp_loss loss;
	uint64_t since = l->in_wait ? l->wait_t : l->nopen ? l->open[l->nopen - 1].t : l->last_t;

	print_duration(d, sizeof(d), end > since ? end - since : 0);
	print_wall_clock(c, sizeof(c), since);
	if (l->in_wait) {
		snprintf(buf, len, "idle in its wait since %s (%s): alive", c, d);
		return;
	}
	if (l->nopen == 0 && end - since < rep->o->stall_ns) {
		snprintf(buf, len, "running at the end");
		return;
	}
	if (report_loss(rep, s, RS_LOOP, l->loop, since, end, 1, &loss)) {
		report_loss_text(rep, &loss, lossbuf, sizeof(lossbuf));
		snprintf(buf, len, "CANNOT TELL whether it stopped polling at %s: %s", c, lossbuf);
		return;
	}
	if (l->nopen) {
		const struct ra_open *o = &l->open[l->nopen - 1];

		snprintf(buf, len, "STOPPED POLLING: in %s since %s (%s)",
		         ra_watcher(w, sizeof(w), XTC_TAIL_CB_WKIND(o->gen), UINT32_MAX,
		                    XTC_TAIL_CB_NO(o->gen)), c, d);
	} else {
		snprintf(buf, len, "STOPPED POLLING: busy since %s (%s), never back in its wait", c, d);
	}
}

static int key_cmp(const void *x, const void *y)
{
	const struct ra_key *a = x, *b = y;

	if (a->sess != b->sess)
		return a->sess < b->sess ? -1 : 1;
	return a->total > b->total ? -1 : a->total < b->total;
}

static int slow_cmp(const void *x, const void *y)
{
	const struct ra_slow *a = x, *b = y;

	return a->took > b->took ? -1 : a->took < b->took;
}

static void ra_loops_text(struct report *rep, struct rp_adapter *a)
{
	char st[256], b[32], hp50[32], hp99[32];
	uint64_t sess = UINT64_MAX;

	for (size_t i = 0; i < a->nloops; i++) {
		const struct ra_loop *l = &a->loops[i];
		const struct rp_sess *s = rep->sess[l->sidx];
		uint64_t end = report_sess_end(s), span = end > l->first_t ? end - l->first_t : 0;
		uint64_t blocked = l->blocked + (l->in_wait && end > l->wait_t ? end - l->wait_t : 0);

		if (!l->waits && !l->cbs)
			continue;
		if (l->sess != sess) {
			sess = l->sess;
			fprintf(rep->out, "  session %" PRIu64 " (%s pid %" PRIu32 "):%s\n", s->id,
			        s->comm, s->os_pid, s->dropped_seen ?
			        " records were dropped: shares are of what was recorded" : "");
			fprintf(rep->out, "    %-6s %9s %7s %8s %9s %9s %10s  %s\n", "LOOP", "WAITS",
			        "BUSY", "BLOCKED", "DISPATCH", "CALLBACKS", "PENDING/IT", "AT THE END");
		}
		ra_state(rep, l, st, sizeof(st));
		fprintf(rep->out, "    %-6s %9" PRIu64 " %6.1f%% %7.1f%% %8.1f%% %9" PRIu64 " %10.1f  %s\n",
		        print_loop(b, sizeof(b), l->loop), l->waits, 100.0 - pct(blocked, span),
		        pct(blocked, span), pct(l->dispatch_ns, span), l->cbs,
		        l->dispatches ? (double)l->pending / (double)l->dispatches : 0.0, st);
	}
	if (a->hol.n)
		fprintf(rep->out, "  head-of-line delay (a callback's start after its loop woke): "
		        "p50 %s, p99 %s, max %s, %" PRIu64 " callbacks\n",
		        print_duration(hp50, sizeof(hp50), rp_hist_quantile(&a->hol, 0.5)),
		        print_duration(hp99, sizeof(hp99), rp_hist_quantile(&a->hol, 0.99)),
		        print_duration(b, sizeof(b), a->hol.max), a->hol.n);
}

static void ra_cbs_text(struct report *rep, struct rp_adapter *a)
{
	char w[48], p50[32], p99[32], mx[32], tot[32], fn[64], c[32];
	uint64_t sess = UINT64_MAX;
	unsigned shown = 0;

	if (!a->nkeys)
		return;
	qsort(a->keys, a->nkeys, sizeof(*a->keys), key_cmp);
	rp_map_free(&a->key_map); /* the order changed: no more lookups */
	fprintf(rep->out, "  callbacks by watcher (most total time first; cbN is the function "
	        "a CB_FUNC record names):\n");
	for (size_t i = 0; i < a->nkeys; i++) {
		const struct ra_key *k = &a->keys[i];

		if (k->sess != sess) {
			sess = k->sess;
			shown = 0;
			fprintf(rep->out, "    %-20s %9s %10s %10s %10s %11s  %s\n", "WATCHER", "RUNS", "P50",
			        "P99", "MAX", "TOTAL", "FUNCTION");
		}
		if (shown++ >= rep->o->top)
			continue;
		if (k->cbno < RA_FN_MAX && a->fn_addr[k->cbno] && a->fn_sess[k->cbno] == k->sess)
			snprintf(fn, sizeof(fn), "0x%" PRIx64 " (+0x%" PRIx64 " in its file)",
			         a->fn_addr[k->cbno], a->fn_off[k->cbno]);
		else
			snprintf(fn, sizeof(fn), "-");
		fprintf(rep->out, "    %-20s %9" PRIu64 " %10s %10s %10s %11s  %s\n",
		        ra_watcher(w, sizeof(w), k->wkind, k->fd, k->cbno), k->n,
		        print_duration(p50, sizeof(p50), rp_hist_quantile(&k->h, 0.5)),
		        print_duration(p99, sizeof(p99), rp_hist_quantile(&k->h, 0.99)),
		        print_duration(mx, sizeof(mx), k->max),
		        print_duration(tot, sizeof(tot), k->total), fn);
	}
	qsort(a->slow, a->nslow, sizeof(*a->slow), slow_cmp);
	fprintf(rep->out, "  slowest callbacks:\n");
	for (size_t i = 0; i < a->nslow; i++) {
		const struct ra_slow *sl = &a->slow[i];

		fprintf(rep->out, "    %s s%-3" PRIu64 " L%-4" PRIu32 " %-20s took %s, started %s after "
		        "its loop woke\n", print_wall_clock(c, sizeof(c), sl->t), sl->sess, sl->loop,
		        ra_watcher(w, sizeof(w), sl->wkind, sl->fd, sl->cbno),
		        print_duration(mx, sizeof(mx), sl->took),
		        print_duration(p50, sizeof(p50), sl->hol));
	}
}

static void ra_uring_text(struct report *rep, struct rp_adapter *a)
{
	char b[16], lossbuf[160];

	if (!a->uring_events)
		return;
	fprintf(rep->out, "  liburing rings (REAP = the adapter saw the completion in the CQ ring "
	        "at an exported liburing call):\n");
	for (size_t i = 0; i < a->nloops; i++) {
		const struct ra_loop *l = &a->loops[i];
		const struct rp_sess *s = rep->sess[l->sidx];
		struct rp_loss loss;
		int cannot;

		if (!l->submits && !l->fails)
			continue;
		cannot = report_loss(rep, s, RS_LOOP, l->loop, l->first_t, report_sess_end(s), 1, &loss);
		fprintf(rep->out, "    s%-3" PRIu64 " L%-6s submitted %" PRIu64 ", seen %" PRIu64
		        ", failed submits %" PRIu64 ", submitted and never seen %" PRIu64 "%s",
		        l->sess, print_loop(b, sizeof(b), l->loop), l->submits, l->reaps, l->fails,
		        l->unseen, l->unseen && !cannot ? " (PROVEN: nothing was lost on this loop; still in flight or lost at the end)" : "");
		for (unsigned k = 0; k < l->nleft; k++)
			fprintf(rep->out, "%s0x%" PRIx64, k ? " " : ": tags ", l->left[k]);
		fputc('\n', rep->out);
		if (l->unseen && cannot) {
			report_loss_text(rep, &loss, lossbuf, sizeof(lossbuf));
			fprintf(rep->out, "      CANNOT TELL: %s; the REAPs may be among what was lost\n",
			        lossbuf);
		}
	}
}

void report_adapter_text(struct report *rep)
{
	struct rp_adapter *a = rep->adapter;

	if (!a || !a->nloops)
		return;
	fprintf(rep->out, "\nADAPTERS (libxtctail-ev loops and callbacks, libxtctail-uring rings; "
	        "BUSY = not in the backend wait, DISPATCH = running callbacks)\n");
	ra_loops_text(rep, a);
	ra_cbs_text(rep, a);
	ra_uring_text(rep, a);
}

void report_adapter_json(struct report *rep)
{
	struct rp_adapter *a = rep->adapter;

	for (size_t i = 0; a && i < a->nloops; i++) {
		const struct ra_loop *l = &a->loops[i];
		const struct rp_sess *s = rep->sess[l->sidx];
		uint64_t end = report_sess_end(s), span = end > l->first_t ? end - l->first_t : 0;
		uint64_t blocked = l->blocked + (l->in_wait && end > l->wait_t ? end - l->wait_t : 0);
		char st[256];

		ra_state(rep, l, st, sizeof(st));
		fprintf(rep->out, "{\"type\":\"adapter_loop\",\"session\":%" PRIu64 ",\"loop\":%lld,"
		        "\"span_ns\":%" PRIu64 ",\"blocked_ns\":%" PRIu64 ",\"dispatch_ns\":%" PRIu64
		        ",\"waits\":%" PRIu64 ",\"callbacks\":%" PRIu64 ",\"in_wait_at_end\":%s,"
		        "\"submits\":%" PRIu64 ",\"reaps\":%" PRIu64 ",\"submit_fails\":%" PRIu64
		        ",\"unseen\":%" PRIu64 ",\"state\":", l->sess, print_loop_json(l->loop), span,
		        blocked, l->dispatch_ns, l->waits, l->cbs, l->in_wait ? "true" : "false",
		        l->submits, l->reaps, l->fails, l->unseen);
		print_json_string(rep->out, st, strlen(st));
		fputs("}\n", rep->out);
	}
	for (size_t i = 0; a && i < a->nkeys; i++) {
		const struct ra_key *k = &a->keys[i];

		fprintf(rep->out, "{\"type\":\"adapter_callback\",\"session\":%" PRIu64 ",\"watcher\":\"%s\""
		        ",\"fd\":%lld,\"cb\":%" PRIu32 ",\"runs\":%" PRIu64 ",\"p50_ns\":%" PRIu64
		        ",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",\"total_ns\":%" PRIu64 "}\n",
		        k->sess, print_watcher_name(k->wkind),
		        k->fd >= XTC_TAIL_CB_NOFD - 1 ? -1LL : (long long)k->fd, k->cbno, k->n,
		        rp_hist_quantile(&k->h, 0.5), rp_hist_quantile(&k->h, 0.99), k->max, k->total);
	}
}

void report_adapter_free(struct report *rep)
{
	struct rp_adapter *a = rep->adapter;

	if (!a)
		return;
	for (size_t i = 0; i < a->nloops; i++) {
		rp_map_free(&a->loops[i].tags);
		free(a->loops[i].cnt);
	}
	for (size_t i = 0; i < a->nkeys; i++)
		rp_hist_free(&a->keys[i].h);
	rp_map_free(&a->loop_map);
	rp_map_free(&a->key_map);
	free(a->loops);
	free(a->keys);
	rp_hist_free(&a->hol);
	free(a);
	rep->adapter = NULL;
}
