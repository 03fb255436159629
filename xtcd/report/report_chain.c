/*
 * xtcd/report/report_chain.c - wakeup chains, and the events whose presence is a
 * fault (SUBMIT_FAIL, LIFECYCLE_DROP).
 *
 * A chain begins at a park: PARK_TASK (the task pointer a proc parks as)
 * and the PARK that follows it from the same proc.  It is followed on the
 * task pointer, which SUBMIT, REAP and WAKE carry in their detail, to the
 * proc's next RUN:
 *
 *   PARK_TASK  pid=P       task=T
 *   PARK       pid=P       op
 *   SUBMIT     loop=Ls     task=T     the request reached the kernel
 *   REAP       loop=Lr     task=T     its completion was consumed
 *   WAKE       loop=Ld     task=T     ... and dispatched to the task
 *   RUN        pid=P       latency    the proc ran
 *
 * A chain ends when its proc runs (after a WAKE: complete; before one: it
 * was resumed some other way, such as a timer or a message, which is not a
 * lost wakeup), parks again, or exits.  A chain still open at the end of
 * the session's record, for at least --stall after its last step, is a
 * finding classed by how far it got:
 *
 *   parked, no SUBMIT          never submitted (we never asked)
 *   SUBMIT, no REAP            submitted, never reaped (the kernel took the
 *                              request and nothing came back) - unless a
 *                              REAP with detail 0 on the submitting loop
 *                              answers no untagged SUBMIT after it: then
 *                              the completion came back untagged and was
 *                              consumed, which is "reaped, not handed on"
 *   REAP, no WAKE              reaped, not handed on (the reaper consumed
 *                              it and dropped it)
 *   WAKE, no RUN               woken, never run (dispatch ran; the loss is
 *                              after it)
 *
 * A SUBMIT seen before the park of its task (a runtime that submits then
 * parks) is kept for a moment and joined to the park that follows.
 * Completions for tasks with no open chain are counted as orphans: their
 * park is not in the record (dropped, evicted, or before the session).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

#define PRE_SUBMIT_NS 100000000ull   /* a SUBMIT this soon before its park joins it */

enum { RC_IDLE = 0, RC_PARKED, RC_SUBMITTED, RC_REAPED, RC_WOKEN };

struct rp_chain {
	uint64_t sess, task;
	uint32_t sidx;
	uint32_t proc;                 /* the parking proc, RP_NONE when idle */
	uint8_t  state, have_park, has_pre;
	uint32_t l_park, l_submit, l_reap, l_wake;
	uint64_t t_park, t_parkop, op, t_submit, t_reap, t_wake;
	uint64_t pre_t, pre_mark;      /* a SUBMIT seen while idle */
	uint32_t pre_l;
	uint64_t reap0_mark;           /* the submit loop's unexplained REAP 0s then */
	uint32_t watch;                /* the loop that should take the next step */
	uint64_t step_events, step_polls;
	uint64_t flow;                 /* its flow in --export chrome, 0: none */
};

/* The chain of task in s; with insert, created if new.  NULL if absent or
 * on -ENOMEM (then reported). */
static struct rp_chain *chain_get(struct report *rep, struct rp_sess *s, uint64_t task,
                                  int insert)
{
	uint32_t *slot = rp_map_get(&rep->task_map, s->id, task, 0, insert);
	struct rp_chain *c;

	if (!slot) {
		if (insert)
			report_oom(rep);
		return NULL;
	}
	if (*slot != RP_NONE)
		return &rep->chains[*slot];
	if (rp_grow(&rep->chains, &rep->chains_cap, rep->nchains + 1, sizeof(*rep->chains)) < 0 ||
	    rp_grow(&s->chain_ids, &s->chain_ids_cap, s->nchain_ids + 1, sizeof(*s->chain_ids)) < 0) {
		*slot = 0;
		report_oom(rep);
		return NULL;
	}
	*slot = (uint32_t)rep->nchains;
	s->chain_ids[s->nchain_ids++] = (uint32_t)rep->nchains;
	c = &rep->chains[rep->nchains++];
	memset(c, 0, sizeof(*c));
	c->sess = s->id;
	c->sidx = s->idx;
	c->task = task;
	c->proc = RP_NONE;
	return c;
}

/* Remember where the loop that should act next stands. */
static void chain_step(struct report *rep, struct rp_sess *s, struct rp_chain *c, uint32_t loop)
{
	struct rp_loop *l = report_loop(rep, s, loop);

	if (!l)
		return;
	c->watch = loop;
	c->step_events = l->events;
	c->step_polls = l->polls;
}

/* End a chain: done (it ran after a WAKE) or resumed another way. */
static void chain_close(struct report *rep, struct rp_sess *s, struct rp_chain *c, int done)
{
	struct rp_loop *l = report_loop(rep, s, c->l_park);

	if (l && l->open_chains)
		l->open_chains--;
	if (c->proc != RP_NONE && rep->procs[c->proc].chain == (uint32_t)(c - rep->chains))
		rep->procs[c->proc].chain = RP_NONE;
	if (done)
		s->chains_done++;
	else
		s->chains_resumed++;
	c->state = RC_IDLE;
	c->proc = RP_NONE;
}

/* PARK_TASK: a chain begins. */
static void on_park_task(struct report *rep, struct rp_sess *s, const struct rp_ev *e,
                         struct rp_proc *p)
{
	struct rp_chain *c = chain_get(rep, s, e->detail, 1);
	struct rp_loop *l;
	uint32_t pi = (uint32_t)(p - rep->procs);

	if (!c)
		return;
	if (c->state != RC_IDLE)
		chain_close(rep, s, c, 0);        /* parked again: it ran */
	if (p->chain != RP_NONE && p->chain != (uint32_t)(c - rep->chains))
		chain_close(rep, s, &rep->chains[p->chain], 0);
	c->proc = pi;
	c->state = RC_PARKED;
	c->have_park = 0;
	c->t_park = e->t;
	c->l_park = e->loop;
	c->op = 0;
	p->chain = (uint32_t)(c - rep->chains);
	s->parks++;
	if ((l = report_loop(rep, s, e->loop)))
		l->open_chains++;
	if (c->has_pre && e->t >= c->pre_t && e->t - c->pre_t <= PRE_SUBMIT_NS) {
		c->state = RC_SUBMITTED;
		c->t_submit = c->pre_t;
		c->l_submit = c->pre_l;
		c->reap0_mark = c->pre_mark;
		chain_step(rep, s, c, c->l_submit);
	} else {
		chain_step(rep, s, c, c->l_park);
	}
	c->has_pre = 0;
	c->flow = report_flow_step(rep, s, 0, e, &p->pid, c->task);
}

/* The next step of c's flow, if it has one. */
static void chain_flow(struct report *rep, struct rp_sess *s, const struct rp_chain *c,
                       const struct rp_ev *e)
{
	if (c->flow)
		report_flow_step(rep, s, c->flow, e, &rep->procs[c->proc].pid, c->task);
}

/* PARK: the op of the chain just begun, or a park with no PARK_TASK. */
static void on_park(struct report *rep, struct rp_sess *s, const struct rp_ev *e,
                    struct rp_proc *p)
{
	struct rp_chain *c;

	if (p->chain == RP_NONE)
		return;
	c = &rep->chains[p->chain];
	if (c->have_park) {
		chain_close(rep, s, c, 0);        /* it ran and parked again */
		return;
	}
	c->have_park = 1;
	c->op = e->detail;
	c->t_parkop = e->t;
}

/* SUBMIT, REAP and WAKE of a task. */
static void on_task(struct report *rep, struct rp_sess *s, const struct rp_ev *e)
{
	struct rp_chain *c = chain_get(rep, s, e->detail, e->kind == XTC_TAIL_SUBMIT);
	struct rp_loop *l;

	if (!c || c->state == RC_IDLE) {
		if (e->kind == XTC_TAIL_SUBMIT && c && (l = report_loop(rep, s, e->loop))) {
			c->has_pre = 1;
			c->pre_t = e->t;
			c->pre_l = e->loop;
			c->pre_mark = l->reap0_unexplained;
		} else if (e->kind == XTC_TAIL_REAP) {
			s->orphan_reap++;
		} else if (e->kind == XTC_TAIL_WAKE) {
			s->orphan_wake++;
		}
		return;
	}
	switch (e->kind) {
	case XTC_TAIL_SUBMIT:
		if (c->state != RC_PARKED || !(l = report_loop(rep, s, e->loop)))
			return;                   /* a second SUBMIT: keep the first */
		c->state = RC_SUBMITTED;
		c->t_submit = e->t;
		c->l_submit = e->loop;
		c->reap0_mark = l->reap0_unexplained;
		chain_step(rep, s, c, e->loop);
		chain_flow(rep, s, c, e);
		break;
	case XTC_TAIL_REAP:
		if (c->state != RC_PARKED && c->state != RC_SUBMITTED)
			return;
		c->state = RC_REAPED;
		c->t_reap = e->t;
		c->l_reap = e->loop;
		chain_step(rep, s, c, e->loop);
		chain_flow(rep, s, c, e);
		break;
	case XTC_TAIL_WAKE:
		if (report_time_in_view(rep, e->t))
			rep->procs[c->proc].wakes++;
		if (c->state == RC_WOKEN)
			return;
		c->state = RC_WOKEN;
		c->t_wake = e->t;
		c->l_wake = e->loop;
		chain_step(rep, s, c, c->l_park);
		chain_flow(rep, s, c, e);
		break;
	}
}

/* A fault by its presence. */
static void on_fault(struct report *rep, struct rp_sess *s, const struct rp_ev *e)
{
	struct rp_finding *f = report_find_add(rep, e->kind == XTC_TAIL_SUBMIT_FAIL ?
	                                       RF_SUBMIT_FAIL : RF_LIFECYCLE_DROP, s);

	if (!f)
		return;
	f->loop = e->loop;
	f->t = f->t_last = f->t_end = e->t;
	f->detail = e->detail;
	if (e->kind == XTC_TAIL_LIFECYCLE_DROP) {
		f->pid = e->pid;
		f->has_pid = 1;
	}
	report_find_proof(f, e);
}

/* One record, in time order. */
void report_chain_event(struct report *rep, struct rp_sess *s, const struct rp_ev *e,
                        struct rp_proc *p)
{
	switch (e->kind) {
	case XTC_TAIL_PARK_TASK:
		if (e->detail)
			on_park_task(rep, s, e, p);
		break;
	case XTC_TAIL_PARK:
		on_park(rep, s, e, p);
		break;
	case XTC_TAIL_SUBMIT:
	case XTC_TAIL_REAP:
	case XTC_TAIL_WAKE:
		if (e->detail)
			on_task(rep, s, e);
		break;
	case XTC_TAIL_RUN:
		if (p->chain != RP_NONE) {
			struct rp_chain *c = &rep->chains[p->chain];

			chain_flow(rep, s, c, e);
			chain_close(rep, s, c, c->state == RC_WOKEN);
		}
		break;
	case XTC_TAIL_EXIT:
		if (p->chain != RP_NONE)
			chain_close(rep, s, &rep->chains[p->chain], 0);
		break;
	case XTC_TAIL_SUBMIT_FAIL:
	case XTC_TAIL_LIFECYCLE_DROP:
		on_fault(rep, s, e);
		break;
	default:
		break;
	}
}

/* ---- the end of a session ---- */

/* When the chain took its last step. */
static uint64_t chain_step_t(const struct rp_chain *c)
{
	switch (c->state) {
	case RC_WOKEN:     return c->t_wake;
	case RC_REAPED:    return c->t_reap;
	case RC_SUBMITTED: return c->t_submit;
	default:           return c->t_park;
	}
}

/* qsort_r: chain indexes by the time of their last step. */
static int open_cmp(const void *a, const void *b, void *user)
{
	const struct rp_chain *ch = user;
	uint64_t x = chain_step_t(&ch[*(const uint32_t *)a]), y = chain_step_t(&ch[*(const uint32_t *)b]);

	return x < y ? -1 : x > y;
}

/* Class, form and the window of an open chain. */
static void chain_classify(struct report *rep, struct rp_sess *s, const struct rp_chain *c,
                           struct rp_finding *f, enum rp_scope *scope, uint64_t *from)
{
	struct rp_loop *l;
	size_t idx;

	*scope = RS_SESSION;
	switch (c->state) {
	case RC_PARKED:
		f->cls = RF_NEVER_SUBMITTED;
		*from = c->t_park;
		break;
	case RC_SUBMITTED:
		f->cls = RF_NEVER_REAPED;
		*from = c->t_submit;
		l = report_loop(rep, s, c->l_submit);
		idx = l ? (size_t)(c->reap0_mark > l->reap0_next ? c->reap0_mark : l->reap0_next) : 0;
		if (l && idx < l->reap0_unexplained) {
			xtc_pid_t lp = { c->l_submit, 0, 0 };

			f->cls = RF_NOT_HANDED_ON;
			f->form = RFF_UNTAGGED;
			l->reap0_next = idx + 1;
			if (idx < l->nreap0_t)
				report_find_proof_at(f, XTC_TAIL_REAP, l->reap0_t[idx], c->l_submit, &lp, 0);
		}
		break;
	case RC_REAPED:
		f->cls = RF_NOT_HANDED_ON;
		*from = c->t_reap;
		break;
	default:
		f->cls = RF_NEVER_RUN;
		*from = c->t_wake;
		*scope = RS_LOOP;              /* only the proc's loop runs it */
		break;
	}
}

/* The events that prove how far a chain got. */
static void chain_proof(const struct report *rep, const struct rp_chain *c, struct rp_finding *f)
{
	const xtc_pid_t *pid = &rep->procs[c->proc].pid;
	xtc_pid_t lp = { 0, 0, 0 };
	struct rp_proof untagged;
	int has_untagged = f->nproof > 0;

	if (has_untagged)
		untagged = f->proof[0];
	f->nproof = 0;
	report_find_proof_at(f, XTC_TAIL_PARK_TASK, c->t_park, c->l_park, pid, c->task);
	if (c->have_park)
		report_find_proof_at(f, XTC_TAIL_PARK, c->t_parkop, c->l_park, pid, c->op);
	if (c->state >= RC_SUBMITTED && c->t_submit) {
		lp.loop_id = c->l_submit;
		report_find_proof_at(f, XTC_TAIL_SUBMIT, c->t_submit, c->l_submit, &lp, c->task);
	}
	if (c->state >= RC_REAPED && c->t_reap) {
		lp.loop_id = c->l_reap;
		report_find_proof_at(f, XTC_TAIL_REAP, c->t_reap, c->l_reap, &lp, c->task);
	}
	if (c->state >= RC_WOKEN) {
		lp.loop_id = c->l_wake;
		report_find_proof_at(f, XTC_TAIL_WAKE, c->t_wake, c->l_wake, &lp, c->task);
	}
	if (has_untagged && f->nproof < RP_PROOF)
		f->proof[f->nproof++] = untagged;
}

/* Judge one chain still open at the end of s. */
static void chain_judge(struct report *rep, struct rp_sess *s, uint32_t ci, uint64_t end)
{
	struct rp_finding *f;
	struct rp_loop *l;
	enum rp_scope scope;
	uint64_t from, step_t = chain_step_t(&rep->chains[ci]);
	const struct rp_chain *c;

	if (end < step_t || end - step_t < rep->o->stall_ns) {
		c = &rep->chains[ci];
		if (report_time_in_view(rep, c->t_park) &&
		    (!rep->ro->filter.has_loop || c->l_park == rep->ro->filter.loop))
			s->chains_inflight++;
		return;
	}
	if (!(f = report_find_add(rep, RF_NEVER_SUBMITTED, s)))
		return;
	c = &rep->chains[ci];
	chain_classify(rep, s, c, f, &scope, &from);
	chain_proof(rep, c, f);
	f->loop = c->l_park;
	f->pid = rep->procs[c->proc].pid;
	f->has_pid = f->has_task = 1;
	f->task = c->task;
	f->op = c->op;
	f->t = c->t_park;
	f->t_last = step_t;
	f->t_end = end;
	if (report_loss(rep, s, scope, c->l_park, from, end, 1, &f->loss))
		f->verdict = RV_CANNOT_TELL;
	if ((l = report_loop(rep, s, c->watch))) {
		f->watch_loop = c->watch;
		f->loop_events_after = l->events - c->step_events;
		f->loop_polls_after = l->polls - c->step_polls;
		f->loop_last_t = l->last_t;
		f->loop_stopped = end > l->last_t && end - l->last_t >= rep->o->stall_ns;
	}
}

/* Judge every chain of s still open. */
void report_chain_finish(struct report *rep, struct rp_sess *s)
{
	uint64_t end = report_sess_end(s);
	uint32_t *open;
	size_t n = 0;

	open = malloc((s->nchain_ids ? s->nchain_ids : 1) * sizeof(*open));
	if (!open) {
		report_oom(rep);
		return;
	}
	for (size_t i = 0; i < s->nchain_ids; i++)
		if (rep->chains[s->chain_ids[i]].state != RC_IDLE)
			open[n++] = s->chain_ids[i];
	qsort_r(open, n, sizeof(*open), open_cmp, rep->chains);
	for (size_t i = 0; i < n && !rep->fatal; i++)
		chain_judge(rep, s, open[i], end);
	free(open);
}

/* The finding that most likely explains chain finding f: for a task never
 * submitted, the first SUBMIT_FAIL on its loop after it parked; for any
 * chain, its next step's loop stopping for good after its last step. */
static struct rp_finding *chain_cause(struct report *rep, const struct rp_finding *f)
{
	struct rp_finding *best = NULL;

	for (size_t k = 0; k < rep->nf; k++) {
		struct rp_finding *g = &rep->f[k];

		if (g->sess != f->sess || g->t > f->t_end)
			continue;
		if (g->cls == RF_SUBMIT_FAIL && f->cls == RF_NEVER_SUBMITTED && g->loop == f->loop &&
		    g->t >= f->t && (!best || best->cls != RF_SUBMIT_FAIL || g->t < best->t))
			best = g;
		else if (g->cls == RF_LOOP_STOPPED && g->loop == f->watch_loop && g->t >= f->t_last &&
		         !best)
			best = g;
	}
	return best;
}

/* Tie chain findings to the fault or stopped loop that explains them. */
void report_chain_link(struct report *rep)
{
	for (size_t i = 0; i < rep->nf; i++) {
		struct rp_finding *f = &rep->f[i], *g;

		if (f->cls < RF_NEVER_SUBMITTED || f->cls > RF_NEVER_RUN || !(g = chain_cause(rep, f)))
			continue;
		f->explained_by = g->id;
		g->explains++;
	}
}

/* Free the chain table. */
void report_chain_free(struct report *rep)
{
	free(rep->chains);
	rp_map_free(&rep->task_map);
}
