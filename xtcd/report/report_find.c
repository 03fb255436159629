/*
 * xtcd/report/report_find.c - findings of xtcd --report: where they are kept,
 * the loss check that decides whether an absence may be believed, and how
 * they print.
 *
 * Honesty about loss.  Most findings rest on something NOT being in the
 * record (no SUBMIT for a parked task, no RUN after a WAKE, no record of a
 * loop for a while).  Such a verdict is printed only when, over the window
 * it depends on, nothing that could have held the missing record is known
 * to be missing:
 *   - no DROP of the session overlaps the window, on any ring when the
 *     missing record could come from any loop (SUBMIT, REAP, WAKE: the
 *     submitting, reaping or dispatching loop is not known in advance), or
 *     on the loop's own rings when it could only come from there (RUN of a
 *     proc, a loop's own records), counting drops of threads that had no
 *     ring at all against every loop;
 *   - no records of the session were lost to I/O or dropped unplaced
 *     (those have no time, so they could be anywhere);
 *   - no ring of the session was taken out of draining as corrupt;
 *   - no segment damage overlaps the window;
 *   - the window does not reach back before the first surviving record of
 *     a session whose older segments were deleted;
 *   - when the window runs to the end of the record, the session ended
 *     with a clean detach: otherwise what came after its last record is
 *     unknown.
 * If any fails, the finding says "cannot tell" and names the loss.
 * Findings that rest on a record being PRESENT (SUBMIT_FAIL,
 * LIFECYCLE_DROP) stand whatever was lost.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/read/print.h"

#include "xtcd/report/report_int.h"

#define RP_FIND_MAX 100000   /* findings kept; more are only counted */

static const struct {
	const char *key;         /* JSON */
	const char *name;        /* text */
	const char *missing;     /* what its absence verdict says is missing */
} classes[RF_NCLASS] = {
	[RF_NEVER_SUBMITTED] = { "never_submitted", "NEVER SUBMITTED", "SUBMIT, REAP or WAKE" },
	[RF_NEVER_REAPED]    = { "never_reaped", "SUBMITTED, NEVER REAPED", "REAP or WAKE" },
	[RF_NOT_HANDED_ON]   = { "not_handed_on", "REAPED, NOT HANDED ON", "WAKE" },
	[RF_NEVER_RUN]       = { "never_run", "WOKEN, NEVER RUN", "RUN" },
	[RF_SUBMIT_FAIL]     = { "submit_fail", "SUBMIT FAILED", NULL },
	[RF_LIFECYCLE_DROP]  = { "lifecycle_drop", "LIFECYCLE NOTIFICATION DROPPED", NULL },
	[RF_LOOP_STOPPED]    = { "loop_stopped", "LOOP STOPPED", "record" },
	[RF_LOOP_GAP]        = { "loop_gap", "LOOP GAP", "record" },
};

/* The JSON name of a class. */
const char *report_class_key(enum rp_class cls)
{
	return cls > 0 && cls < RF_NCLASS ? classes[cls].key : "unknown";
}

/* The text name of a class. */
const char *report_class_name(enum rp_class cls)
{
	return cls > 0 && cls < RF_NCLASS ? classes[cls].name : "UNKNOWN";
}

/* A new finding of s (zeroed but for what every finding has); NULL when
 * the cap is reached (it is counted) or on -ENOMEM. */
struct rp_finding *report_find_add(struct report *rep, enum rp_class cls, struct rp_sess *s)
{
	struct rp_finding *f;

	if (rep->nf >= RP_FIND_MAX) {
		rep->suppressed[cls]++;
		return NULL;
	}
	if (rp_grow(&rep->f, &rep->f_cap, rep->nf + 1, sizeof(*rep->f)) < 0) {
		report_oom(rep);
		return NULL;
	}
	f = &rep->f[rep->nf];
	memset(f, 0, sizeof(*f));
	f->id = (uint32_t)rep->nf++;
	f->cls = cls;
	f->verdict = RV_PROVEN;
	f->sidx = s->idx;
	f->sess = s->id;
	f->loop = XTC_TAIL_LOOP_NONE;
	f->watch_loop = RP_NONE;
	f->explained_by = RP_NONE;
	return f;
}

/* Add a proving event. */
void report_find_proof_at(struct rp_finding *f, uint32_t kind, uint64_t t, uint32_t loop,
                          const xtc_pid_t *pid, uint64_t detail)
{
	struct rp_proof *p;

	if (f->nproof >= RP_PROOF)
		return;
	p = &f->proof[f->nproof++];
	p->kind = kind;
	p->t = t;
	p->loop = loop;
	p->pid = *pid;
	p->detail = detail;
}

/* Add a proving event from a record. */
void report_find_proof(struct rp_finding *f, const struct rp_ev *e)
{
	report_find_proof_at(f, e->kind, e->t, e->loop, &e->pid, e->detail);
}

/* ---- the loss check ---- */

/* Whether drop d could hide a record of scope/loop. */
static int drop_in_scope(const struct rp_drop *d, enum rp_scope scope, uint32_t loop)
{
	if (scope == RS_SESSION)
		return 1;
	return report_drop_on_loop(d, loop);
}

/* See the top of this file. */
int report_loss(const struct report *rep, const struct rp_sess *s, enum rp_scope scope,
                uint32_t loop, uint64_t from, uint64_t to, int to_end, struct rp_loss *loss)
{
	memset(loss, 0, sizeof(*loss));
	for (size_t i = 0; i < s->ndrops; i++) {
		const struct rp_drop *d = &s->drops[i];

		if (d->to < from || d->from > to || !drop_in_scope(d, scope, loop))
			continue;
		if (!loss->ndrops) {
			loss->kind = RL_DROP;
			loss->from = d->from;
			loss->to = d->to;
			loss->count = d->count;
			loss->ring = d->ring;
			loss->loop = d->loop;
			loss->cause = d->cause;
		}
		loss->ndrops++;
		loss->nrecords += d->count;
	}
	if (loss->ndrops)
		return 1;
	if (s->ended && s->end.lost) {
		loss->kind = RL_LOST;
		loss->count = s->end.lost;
		return 1;
	}
	if (s->ended && s->end.dropped > s->dropped_seen) {
		loss->kind = RL_UNLOCATED;
		loss->count = s->end.dropped - s->dropped_seen;
		return 1;
	}
	if (s->corrupt_rings) {
		loss->kind = RL_CORRUPT_RING;
		loss->count = s->corrupt_rings;
		return 1;
	}
	for (size_t i = 0; i < rep->ndamage; i++) {
		if (rep->damage[i].to < from || rep->damage[i].from > to)
			continue;
		loss->kind = RL_DAMAGE;
		loss->from = rep->damage[i].from;
		loss->to = rep->damage[i].to;
		return 1;
	}
	if (s->evicted && from < s->first_t) {
		loss->kind = RL_EVICTED;
		loss->from = s->first_t;
		return 1;
	}
	if (to_end && !report_sess_clean_end(s)) {
		loss->kind = RL_CUT;
		loss->from = s->last_t;
		loss->to = s->ended ? s->end_t : 0;
		loss->cause = s->ended ? s->end.reason : 0;
		return 1;
	}
	return 0;
}

/* The loss in words. */
void report_loss_text(const struct report *rep, const struct rp_loss *l, char *buf, size_t len)
{
	char a[64], b[64], c[32], lb[16];

	(void)rep;
	switch (l->kind) {
	case RL_DROP:
		snprintf(buf, len, "%" PRIu64 " DROP record%s (%" PRIu64 " records) overlap%s it; the "
		         "first: %" PRIu64 " records on loop %s (ring %" PRIu32 ", %s) between %s and %s",
		         l->ndrops, l->ndrops == 1 ? "" : "s", l->nrecords, l->ndrops == 1 ? "s" : "",
		         l->count, print_loop(lb, sizeof(lb), l->loop), l->ring,
		         segname_drop_cause(l->cause, c, sizeof(c)), print_wall(a, sizeof(a), l->from),
		         print_wall_clock(b, sizeof(b), l->to));
		break;
	case RL_CUT:
		if (l->to)
			snprintf(buf, len, "the session's record is cut short: it ended %s, so what "
			         "happened after its last record (%s) is unknown",
			         segname_end_reason(l->cause, c, sizeof(c)),
			         print_wall(a, sizeof(a), l->from));
		else
			snprintf(buf, len, "the session has no end in the record (still recording, or "
			         "xtcd stopped without closing it), so what happened after its last "
			         "record (%s) is unknown", print_wall(a, sizeof(a), l->from));
		break;
	case RL_LOST:
		snprintf(buf, len, "%" PRIu64 " records of the session were lost to I/O at unknown "
		         "times", l->count);
		break;
	case RL_UNLOCATED:
		snprintf(buf, len, "%" PRIu64 " dropped records of the session have no DROP record to "
		         "place them in time", l->count);
		break;
	case RL_CORRUPT_RING:
		snprintf(buf, len, "%" PRIu64 " ring%s of the session were taken out of draining as "
		         "corrupt", l->count, l->count == 1 ? "" : "s");
		break;
	case RL_DAMAGE:
		snprintf(buf, len, "damaged segment data: records may be missing from %s to %s",
		         print_wall(a, sizeof(a), l->from),
		         l->to == UINT64_MAX ? "the end" : print_wall_clock(b, sizeof(b), l->to));
		break;
	case RL_EVICTED:
		snprintf(buf, len, "older segments were deleted under the byte budget: nothing is "
		         "known of the session before %s", print_wall(a, sizeof(a), l->from));
		break;
	default:
		snprintf(buf, len, "nothing was lost");
		break;
	}
}

/* ---- order and view ---- */

/* qsort: findings by session, time, class. */
static int find_cmp(const void *a, const void *b)
{
	const struct rp_finding *x = a, *y = b;

	if (x->sess != y->sess)
		return x->sess < y->sess ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->cls < y->cls ? -1 : x->cls > y->cls;
}

/* Sort by session and time; keep explained_by pointing at the same one. */
void report_find_sort(struct report *rep)
{
	uint32_t *inv;

	if (rep->nf < 2)
		return;
	qsort(rep->f, rep->nf, sizeof(*rep->f), find_cmp);
	inv = malloc(rep->nf * sizeof(*inv));
	if (!inv) {
		for (size_t i = 0; i < rep->nf; i++)
			rep->f[i].explained_by = RP_NONE;
		return;
	}
	for (size_t i = 0; i < rep->nf; i++)
		inv[rep->f[i].id] = (uint32_t)i;
	for (size_t i = 0; i < rep->nf; i++) {
		if (rep->f[i].explained_by != RP_NONE)
			rep->f[i].explained_by = inv[rep->f[i].explained_by];
		rep->f[i].id = (uint32_t)i;
	}
	free(inv);
}

/* --loop, --since, --until on a finding's loop and anchor time. */
int report_find_in_view(const struct report *rep, const struct rp_finding *f)
{
	const struct filter *flt = &rep->ro->filter;

	if (flt->has_loop && f->loop != flt->loop)
		return 0;
	if (flt->has_since && f->t < flt->since_ns)
		return 0;
	if (flt->has_until && f->t >= flt->until_ns)
		return 0;
	return 1;
}

/* Findings in view. */
size_t report_find_count(const struct report *rep)
{
	size_t n = 0;

	for (size_t i = 0; i < rep->nf; i++)
		n += report_find_in_view(rep, &rep->f[i]);
	return n;
}

/* ---- details ---- */

/* One line saying what f is. */
void report_find_summary(const struct report *rep, const struct rp_finding *f, char *buf,
                         size_t len)
{
	char pid[64], lb[16], d[32], e[32];
	int err;
	uint64_t left;

	print_pid(pid, sizeof(pid), &f->pid);
	print_loop(lb, sizeof(lb), f->loop);
	switch (f->cls) {
	case RF_SUBMIT_FAIL:
		if (segname_submit_fail(f->detail, &err, &left))
			snprintf(buf, len, "submit failed on loop %s: short submit, %" PRIu64 " SQE%s left "
			         "unsubmitted", lb, left, left == 1 ? "" : "s");
		else {
			print_errno_name(e, sizeof(e), err);
			snprintf(buf, len, "submit failed on loop %s: %s (%s)", lb, e,
			         err ? strerror(err) : "no errno");
		}
		break;
	case RF_LIFECYCLE_DROP:
		snprintf(buf, len, "lifecycle notification of proc %s dropped (err %" PRId64 ")", pid,
		         (int64_t)f->detail);
		break;
	case RF_LOOP_STOPPED:
		snprintf(buf, len, "loop %s stopped: silent for %s to the end of the record", lb,
		         print_duration(d, sizeof(d), f->detail));
		break;
	case RF_LOOP_GAP:
		snprintf(buf, len, "loop %s silent for %s", lb, print_duration(d, sizeof(d), f->detail));
		break;
	default:
		snprintf(buf, len, "%s%s: proc %s task 0x%" PRIx64 " on loop %s, waiting %s",
		         f->verdict == RV_CANNOT_TELL ? "cannot tell, would be " : "",
		         report_class_key(f->cls), pid, f->task, lb,
		         print_duration(d, sizeof(d), f->t_end > f->t_last ? f->t_end - f->t_last : 0));
		break;
	}
	(void)rep;
}

/* ---- text ---- */

/* One proving event. */
static void text_proof(struct report *rep, const struct rp_proof *p, int first)
{
	char t[64], lb[16], pid[64], det[64];

	print_detail(det, sizeof(det), p->kind, p->detail);
	fprintf(rep->out, "      %s %s  %-10s L%-4s %-14s %s\n", first ? "proof" : "     ",
	        print_wall_clock(t, sizeof(t), p->t), rp_kind(p->kind), print_loop(lb, sizeof(lb), p->loop),
	        print_pid(pid, sizeof(pid), &p->pid), det);
}

/* What the finding's watched loop did after the last proving event. */
static void text_loop_after(struct report *rep, const struct rp_finding *f)
{
	char lb[16], t[64];

	if (f->watch_loop == RP_NONE)
		return;
	print_loop(lb, sizeof(lb), f->watch_loop);
	if (f->loop_stopped)
		fprintf(rep->out, "      loop %s recorded %" PRIu64 " records after it and none after %s: "
		        "the task is stranded with a loop that stopped\n", lb, f->loop_events_after,
		        print_wall_clock(t, sizeof(t), f->loop_last_t));
	else if (f->loop_events_after)
		fprintf(rep->out, "      loop %s kept working after it: %" PRIu64 " records, %" PRIu64
		        " idle polls, the last at %s - the loop is alive and %s\n", lb,
		        f->loop_events_after, f->loop_polls_after,
		        print_wall_clock(t, sizeof(t), f->loop_last_t),
		        f->cls == RF_NEVER_RUN ? "skipped this task" :
		        f->cls == RF_NEVER_SUBMITTED ? "never submitted this task's request" :
		        f->cls == RF_NEVER_REAPED ? "its ring never returned the completion" :
		        "dropped the completion");
	else
		fprintf(rep->out, "      loop %s recorded nothing after it: the task is stranded with "
		        "a loop that stopped (see the loop findings)\n", lb);
}

/* The body of a chain finding. */
static void text_chain(struct report *rep, const struct rp_finding *f)
{
	const struct rp_sess *s = rep->sess[f->sidx];
	char t[64], d[32], lb[16], pid[64], what[96], loss[512];

	print_pid(pid, sizeof(pid), &f->pid);
	if (f->cls == RF_NEVER_RUN)
		snprintf(what, sizeof(what), "RUN of proc %s", pid);
	else if (f->form == RFF_UNTAGGED)
		snprintf(what, sizeof(what), "REAP or WAKE of task 0x%" PRIx64, f->task);
	else
		snprintf(what, sizeof(what), "%s of task 0x%" PRIx64, classes[f->cls].missing, f->task);
	fprintf(rep->out, "      parked %s", print_wall(t, sizeof(t), f->t));
	if (f->op)
		fprintf(rep->out, " (op %" PRIu64 ")", f->op);
	fprintf(rep->out, "; no %s in the %s from its last step to the %s\n", what,
	        print_duration(d, sizeof(d), f->t_end - f->t_last),
	        report_sess_clean_end(s) ? "end of the session" : "last record of the session");
	for (unsigned i = 0; i < f->nproof; i++)
		text_proof(rep, &f->proof[i], i == 0);
	if (f->form == RFF_UNTAGGED)
		fprintf(rep->out, "      an untagged REAP (detail 0) on loop %s after the submit "
		        "answers no untagged SUBMIT: the completion most likely came back with no tag "
		        "(its registration torn down) and was consumed there\n",
		        print_loop(lb, sizeof(lb), f->proof[f->nproof - 1].loop));
	if (f->verdict == RV_CANNOT_TELL) {
		report_loss_text(rep, &f->loss, loss, sizeof(loss));
		fprintf(rep->out, "      CANNOT TELL: %s; the missing %s may be among what was lost\n",
		        loss, what);
	} else {
		fprintf(rep->out, "      nothing the %s could be in was dropped or lost in that "
		        "window, and the session %s\n", what,
		        report_sess_clean_end(s) ? "detached cleanly" : "record reaches past it");
	}
	text_loop_after(rep, f);
	if (f->explained_by != RP_NONE)
		fprintf(rep->out, "      likely cause: #%" PRIu32 ", %s\n", f->explained_by + 1,
		        rep->f[f->explained_by].cls == RF_SUBMIT_FAIL ?
		        "a SUBMIT_FAIL on its loop after it parked" : "its loop stopped");
}

/* The body of a loop finding. */
static void text_loopf(struct report *rep, const struct rp_finding *f)
{
	char a[64], b[64], lb[16], loss[512];

	print_loop(lb, sizeof(lb), f->loop);
	fprintf(rep->out, "      loop %s recorded nothing from %s to %s%s, while %" PRIu32 " other "
	        "loop%s recorded %" PRIu64 " records; it had %" PRIu64 " live procs and %" PRIu64
	        " chains waiting\n", lb, print_wall(a, sizeof(a), f->t), print_wall_clock(b, sizeof(b), f->t_end),
	        f->cls == RF_LOOP_STOPPED ? " (the end of the record)" : "", f->loops_active,
	        f->loops_active == 1 ? "" : "s", f->others_events, f->procs_live, f->chains_open);
	for (unsigned i = 0; i < f->nproof; i++)
		text_proof(rep, &f->proof[i], i == 0);
	if (f->verdict == RV_CANNOT_TELL) {
		report_loss_text(rep, &f->loss, loss, sizeof(loss));
		fprintf(rep->out, "      CANNOT TELL: %s; loop %s may have recorded then\n", loss, lb);
	}
	if (f->explains)
		fprintf(rep->out, "      %" PRIu32 " parked task%s stranded with it (they name this "
		        "finding as their likely cause)\n",
		        f->explains, f->explains == 1 ? " is" : "s are");
}

/* The body of a SUBMIT_FAIL or LIFECYCLE_DROP finding. */
static void text_fault(struct report *rep, const struct rp_finding *f)
{
	for (unsigned i = 0; i < f->nproof; i++)
		text_proof(rep, &f->proof[i], i == 0);
	if (f->cls == RF_SUBMIT_FAIL) {
		fprintf(rep->out, "      its presence is the fault: a fiber is parked on a request the "
		        "kernel never accepted\n");
		if (f->explains)
			fprintf(rep->out, "      %" PRIu32 " task%s parked on this loop before it never "
			        "submitted (they name this finding as their likely cause)\n", f->explains,
			        f->explains == 1 ? "" : "s");
	} else {
		fprintf(rep->out, "      its presence is the fault: a watcher will never learn of this "
		        "exit\n");
	}
}

/* The heading of the FINDINGS section. */
static void text_findings_head(struct report *rep, size_t shown)
{
	size_t proven = 0, cannot = 0, explained = 0;
	uint64_t inflight = 0, suppressed = 0;
	char d[32];

	for (size_t i = 0; i < rep->nf; i++) {
		if (!report_find_in_view(rep, &rep->f[i]))
			continue;
		if (rep->f[i].verdict == RV_PROVEN)
			proven++;
		else
			cannot++;
		explained += rep->f[i].explained_by != RP_NONE;
	}
	for (size_t i = 0; i < rep->nsess; i++)
		inflight += rep->sess[i]->chains_inflight;
	for (int c = 0; c < RF_NCLASS; c++)
		suppressed += rep->suppressed[c];
	if (!shown && !rep->view_events)
		fprintf(rep->out, "\nFINDINGS: no data: no records match, so there is nothing to "
		        "judge\n");
	else if (!shown)
		fprintf(rep->out, "\nFINDINGS: none: every wakeup chain completed or was still within "
		        "--stall (%s) of its last step, no submit failed, no lifecycle notification "
		        "was dropped, and no loop went silent while others kept recording\n",
		        print_duration(d, sizeof(d), rep->o->stall_ns));
	else if (explained)
		fprintf(rep->out, "\nFINDINGS: %zu (%zu proven, %zu cannot tell; %zu follow from "
		        "another finding)\n", shown, proven, cannot, explained);
	else
		fprintf(rep->out, "\nFINDINGS: %zu (%zu proven, %zu cannot tell)\n", shown, proven,
		        cannot);
	if (inflight)
		fprintf(rep->out, "  %" PRIu64 " chain%s still in flight at the end of the record, "
		        "waiting less than %s: not judged\n", inflight, inflight == 1 ? "" : "s",
		        print_duration(d, sizeof(d), rep->o->stall_ns));
	if (suppressed)
		fprintf(rep->out, "  %" PRIu64 " more findings were counted but not kept\n", suppressed);
}

/* Every finding in view, numbered. */
void report_find_text(struct report *rep)
{
	size_t shown = report_find_count(rep);

	text_findings_head(rep, shown);
	for (size_t i = 0; i < rep->nf; i++) {
		const struct rp_finding *f = &rep->f[i];
		const struct rp_sess *s = rep->sess[f->sidx];
		char pid[64], lb[16], head[160];

		if (!report_find_in_view(rep, f))
			continue;
		if (f->verdict == RV_CANNOT_TELL)
			snprintf(head, sizeof(head), "CANNOT TELL (would be: %s)", report_class_name(f->cls));
		else
			snprintf(head, sizeof(head), "%s", report_class_name(f->cls));
		fprintf(rep->out, "\n  #%-3zu %s  session %" PRIu64 " (%s pid %" PRIu32 "), loop %s", i + 1,
		        head, s->id, s->comm, s->os_pid, print_loop(lb, sizeof(lb), f->loop));
		if (f->has_pid)
			fprintf(rep->out, ", proc %s", print_pid(pid, sizeof(pid), &f->pid));
		if (f->has_task)
			fprintf(rep->out, ", task 0x%" PRIx64, f->task);
		fputc('\n', rep->out);
		if (f->cls == RF_SUBMIT_FAIL || f->cls == RF_LIFECYCLE_DROP) {
			report_find_summary(rep, f, head, sizeof(head));
			fprintf(rep->out, "      %s\n", head);
			text_fault(rep, f);
		} else if (f->cls == RF_LOOP_STOPPED || f->cls == RF_LOOP_GAP) {
			text_loopf(rep, f);
		} else {
			text_chain(rep, f);
		}
	}
}

/* ---- JSON ---- */

/* The loss as a JSON object. */
static void json_loss(struct report *rep, const struct rp_loss *l)
{
	static const char *kinds[] = { "none", "drop", "cut_short", "lost", "unlocated_drops",
	                               "corrupt_ring", "damaged", "evicted" };
	char cause[32], text[512];

	report_loss_text(rep, l, text, sizeof(text));
	fprintf(rep->out, "{\"kind\":\"%s\",\"from_real_ns\":%" PRIu64 ",\"to_real_ns\":%" PRIu64
	        ",\"count\":%" PRIu64, kinds[l->kind], l->from, l->to == UINT64_MAX ? 0 : l->to,
	        l->count);
	if (l->kind == RL_DROP)
		fprintf(rep->out, ",\"loop\":%lld,\"ring\":%" PRIu32 ",\"cause\":\"%s\",\"drops\":%"
		        PRIu64 ",\"records\":%" PRIu64, print_loop_json(l->loop), l->ring,
		        segname_drop_cause(l->cause, cause, sizeof(cause)), l->ndrops, l->nrecords);
	if (l->kind == RL_CUT && l->to)
		fprintf(rep->out, ",\"reason\":\"%s\"", segname_end_reason(l->cause, cause,
		                                                                 sizeof(cause)));
	fputs(",\"text\":", rep->out);
	print_json_string(rep->out, text, strlen(text));
	fputc('}', rep->out);
}

/* Class-specific JSON fields. */
static void json_detail(struct report *rep, const struct rp_finding *f)
{
	int err;
	uint64_t left;
	char e[32];

	if (f->cls == RF_SUBMIT_FAIL) {
		if (segname_submit_fail(f->detail, &err, &left))
			fprintf(rep->out, ",\"short_submit_left\":%" PRIu64, left);
		else {
			print_errno_name(e, sizeof(e), err);
			fprintf(rep->out, ",\"errno\":%d,\"error\":\"%s\"", err, e);
		}
		fprintf(rep->out, ",\"explains\":%" PRIu32, f->explains);
	} else if (f->cls == RF_LIFECYCLE_DROP) {
		fprintf(rep->out, ",\"error\":%" PRId64, (int64_t)f->detail);
	} else if (f->cls == RF_LOOP_STOPPED || f->cls == RF_LOOP_GAP) {
		fprintf(rep->out, ",\"explains\":%" PRIu32, f->explains);
		fprintf(rep->out, ",\"silent_ns\":%" PRIu64 ",\"other_loops_active\":%" PRIu32
		        ",\"other_records\":%" PRIu64 ",\"procs_live\":%" PRIu64 ",\"chains_open\":%"
		        PRIu64, f->detail, f->loops_active, f->others_events, f->procs_live,
		        f->chains_open);
	} else {
		fprintf(rep->out, ",\"op\":%" PRIu64 ",\"waiting_ns\":%" PRIu64 ",\"form\":\"%s\"",
		        f->op, f->t_end - f->t_last, f->form == RFF_UNTAGGED ? "untagged_reap" : "plain");
		fprintf(rep->out, ",\"loop_stopped\":%s", f->loop_stopped ? "true" : "false");
		if (f->explained_by != RP_NONE)
			fprintf(rep->out, ",\"explained_by\":%" PRIu32, f->explained_by + 1);
		if (f->watch_loop != RP_NONE)
			fprintf(rep->out, ",\"loop_after\":{\"loop\":%lld,\"records\":%" PRIu64
			        ",\"idle_polls\":%" PRIu64 ",\"last_real_ns\":%" PRIu64 ",\"alive\":%s}",
			        print_loop_json(f->watch_loop), f->loop_events_after, f->loop_polls_after,
			        f->loop_last_t, f->loop_events_after ? "true" : "false");
	}
}

/* One JSON line per finding in view. */
void report_find_json(struct report *rep)
{
	for (size_t i = 0; i < rep->nf; i++) {
		const struct rp_finding *f = &rep->f[i];
		const struct rp_sess *s = rep->sess[f->sidx];
		char pid[64], text[256];

		if (!report_find_in_view(rep, f))
			continue;
		fprintf(rep->out, "{\"type\":\"finding\",\"n\":%zu,\"class\":\"%s\",\"verdict\":\"%s\""
		        ",\"session\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"loop\":%lld", i + 1,
		        report_class_key(f->cls), f->verdict == RV_PROVEN ? "proven" : "cannot_tell",
		        s->id, s->os_pid, print_loop_json(f->loop));
		if (f->has_pid)
			fprintf(rep->out, ",\"proc\":\"%s\"", print_pid(pid, sizeof(pid), &f->pid));
		if (f->has_task)
			fprintf(rep->out, ",\"task\":\"0x%" PRIx64 "\"", f->task);
		fprintf(rep->out, ",\"real_ns\":%" PRIu64 ",\"last_real_ns\":%" PRIu64
		        ",\"window_end_real_ns\":%" PRIu64, f->t, f->t_last, f->t_end);
		json_detail(rep, f);
		fputs(",\"proof\":[", rep->out);
		for (unsigned k = 0; k < f->nproof; k++) {
			const struct rp_proof *p = &f->proof[k];

			fprintf(rep->out, "%s{\"kind\":\"%s\",\"real_ns\":%" PRIu64 ",\"loop\":%lld"
			        ",\"proc\":\"%s\",\"detail\":%" PRIu64 "}", k ? "," : "", rp_kind(p->kind),
			        p->t, print_loop_json(p->loop), print_pid(pid, sizeof(pid), &p->pid),
			        p->detail);
		}
		fputs("],\"loss\":", rep->out);
		if (f->verdict == RV_CANNOT_TELL)
			json_loss(rep, &f->loss);
		else
			fputs("null", rep->out);
		report_find_summary(rep, f, text, sizeof(text));
		fputs(",\"text\":", rep->out);
		print_json_string(rep->out, text, strlen(text));
		fputs("}\n", rep->out);
	}
}
