/*
 * xtcd/report/report_model.c - what the report knows, as every analysis
 * sees it: the sessions, their loops and procs (found or created by id),
 * where a session's record ends, and which times and loops the filters
 * keep in view.  The driver (report.c) fills the model as it reads; the
 * analyses (report_chain.c, report_loops.c, ...) read and extend it
 * through these functions and never call back into the driver.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/report/report_int.h"

/* ---- the pass ---- */

/* Remember that the pass cannot go on. */
void report_oom(struct report *rep)
{
	if (!rep->fatal)
		rep->fatal = -ENOMEM;
}

/* ---- sessions, loops, procs ---- */

/* The session with this id, created if new; NULL on -ENOMEM. */
struct rp_sess *report_sess(struct report *rep, uint64_t id)
{
	struct rp_sess *s = NULL;
	uint64_t at;

	if (rep->nsess && rep->sess[rep->last_sess]->id == id)
		return rep->sess[rep->last_sess];
	/* by index: a directory may hold hundreds of thousands of sessions */
	if (idmap_get(&rep->sess_index, id, &at)) {
		rep->last_sess = (size_t)at;
		return rep->sess[at];
	}
	if (rp_grow(&rep->sess, &rep->sess_cap, rep->nsess + 1, sizeof(*rep->sess)) < 0 ||
	    idmap_put(&rep->sess_index, id, rep->nsess) < 0 ||
	    !(s = calloc(1, sizeof(*s)))) {
		report_oom(rep);
		return NULL;
	}
	s->id = id;
	s->idx = (uint32_t)rep->nsess;
	s->horizon = 1000000000ull;
	s->slack = 70000000ull;
	snprintf(s->comm, sizeof(s->comm), "?");
	rep->last_sess = rep->nsess;
	rep->sess[rep->nsess++] = s;
	return s;
}

/* Free a loop's arrays. */
static void loop_free(struct rp_loop *l)
{
	free(l->reap0_t);
	rp_hist_free(&l->lat);
	rp_tl_free(&l->tl);
}

/* The loop of a session, created if new; NULL on -ENOMEM. */
struct rp_loop *report_loop(struct report *rep, struct rp_sess *s, uint32_t loop)
{
	struct rp_loop *l;
	uint32_t *slot;

	if (s->nloops && s->loops[s->last_loop].loop == loop)
		return &s->loops[s->last_loop];
	/* a map, not a scan: a session may name any number of loops */
	slot = rp_map_get(&rep->loop_map, s->idx, loop, 0, 1);
	if (!slot) {
		report_oom(rep);
		return NULL;
	}
	if (*slot != RP_NONE) {
		s->last_loop = *slot;
		return &s->loops[*slot];
	}
	if (rp_grow(&s->loops, &s->loops_cap, s->nloops + 1, sizeof(*s->loops)) < 0) {
		*slot = 0; /* the key is in the map: give it a value nobody reads */
		report_oom(rep);
		return NULL;
	}
	*slot = (uint32_t)s->nloops;
	l = &s->loops[s->nloops];
	memset(l, 0, sizeof(*l));
	l->loop = loop;
	s->last_loop = s->nloops;
	return &s->loops[s->nloops++];
}

/* Sort s's loops by id, for output; lookups go on finding them. */
void report_loops_sort(struct report *rep, struct rp_sess *s,
                       int (*cmp)(const void *, const void *))
{
	if (s->nloops > 1) /* a session with no records has no loops array */
		qsort(s->loops, s->nloops, sizeof(*s->loops), cmp);
	s->last_loop = 0;
	for (size_t i = 0; i < s->nloops; i++) {
		uint32_t *slot = rp_map_get(&rep->loop_map, s->idx, s->loops[i].loop, 0, 0);

		if (slot)
			*slot = (uint32_t)i;
	}
}

/* The proc of a session, created if new; NULL on -ENOMEM.  The pointer
 * lasts until the next proc is created. */
struct rp_proc *report_proc(struct report *rep, struct rp_sess *s, const xtc_pid_t *pid,
                            uint32_t loop)
{
	uint32_t *slot = rp_map_get(&rep->proc_map, s->id,
	                            (uint64_t)pid->loop_id << 32 | pid->local_id, pid->gen, 1);
	struct rp_proc *p;

	if (!slot) {
		report_oom(rep);
		return NULL;
	}
	if (*slot != RP_NONE)
		return &rep->procs[*slot];
	if (rp_grow(&rep->procs, &rep->procs_cap, rep->nprocs + 1, sizeof(*rep->procs)) < 0 ||
	    rp_grow(&s->proc_ids, &s->proc_ids_cap, s->nproc_ids + 1, sizeof(*s->proc_ids)) < 0) {
		/* the key is in the map: give it a value nobody reads */
		*slot = 0;
		report_oom(rep);
		return NULL;
	}
	*slot = (uint32_t)rep->nprocs;
	s->proc_ids[s->nproc_ids++] = (uint32_t)rep->nprocs;
	p = &rep->procs[rep->nprocs++];
	memset(p, 0, sizeof(*p));
	p->sess = s->id;
	p->sidx = s->idx;
	p->pid = *pid;
	p->loop = loop;
	p->chain = RP_NONE;
	s->nprocs++;
	return p;
}

/* ---- how far a session's record reaches ---- */

/* The end of what is known of s. */
uint64_t report_sess_end(const struct rp_sess *s)
{
	return s->ended && s->end_t > s->last_t ? s->end_t : s->last_t;
}

/* Whether s ended with a clean detach (its record runs to its end). */
int report_sess_clean_end(const struct rp_sess *s)
{
	return s->ended && s->end.reason == XTC_END_DETACHED;
}

/* ---- what the filters keep in view ---- */

/* Whether [from, to) of loop passes --loop/--since/--until, and how much. */
uint64_t report_view_overlap(const struct report *rep, uint32_t loop, uint64_t from, uint64_t to)
{
	const struct filter *f = &rep->ro->filter;

	if (f->has_loop && loop != f->loop)
		return 0;
	if (f->has_since && from < f->since_ns)
		from = f->since_ns;
	if (f->has_until && to > f->until_ns)
		to = f->until_ns;
	return to > from ? to - from : 0;
}

/* Whether t passes --since/--until. */
int report_time_in_view(const struct report *rep, uint64_t t)
{
	const struct filter *f = &rep->ro->filter;

	return (!f->has_since || t >= f->since_ns) && (!f->has_until || t < f->until_ns);
}

/* ---- losses ---- */

/* Whether DROP d may have taken records of loop: its ring's loop, or a
 * thread's with no ring or no loop (whose loop is unknown). */
int report_drop_on_loop(const struct rp_drop *d, uint32_t loop)
{
	return d->loop == loop || d->loop == XTC_TAIL_LOOP_NONE ||
	       d->cause == XTC_DROP_NO_FREE_RING;
}

/* ---- freeing ---- */

/* Free the sessions, their loops and the procs. */
void report_model_free(struct report *rep)
{
	for (size_t i = 0; i < rep->nsess; i++) {
		struct rp_sess *s = rep->sess[i];

		for (size_t k = 0; k < s->nrings; k++)
			free(s->rings[k].q);
		for (size_t k = 0; k < s->nloops; k++)
			loop_free(&s->loops[k]);
		free(s->rings);
		free(s->heap);
		free(s->drops);
		free(s->loops);
		rp_hist_free(&s->lat);
		free(s->proc_ids);
		free(s->chain_ids);
		free(s->gap_ids);
		free(s);
	}
	free(rep->sess);
	idmap_free(&rep->sess_index);
	free(rep->procs);
	rp_map_free(&rep->proc_map);
	rp_map_free(&rep->loop_map);
}
