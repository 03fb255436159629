/*
 * xtcd/report/report_flows.c - the report's wakeup chains (report_chain.c)
 * as the flow arrows of xtcd --export chrome.
 *
 * The export (xtcd/read/export_chrome.c) draws; the join is the report's
 * and is not written twice: report_export_chains() runs the report's pass
 * over the same records with a sink in its options.  report_chain.c hands
 * each step of each chain to report_flow_step() as it happens (after the
 * report's merge into time order, so a WAKE from another loop comes after
 * the PARK_TASK it answers), and once the record is read the chains that
 * never completed, judged as the report judges them (a verdict, or
 * "cannot tell" and the loss that hides the answer), go to the sink's
 * verdict().  So read/ never includes report/: main.c hands this function
 * to the export.
 *
 * A step is drawn when its record passes the export's filters; a chain is
 * drawn from its PARK_TASK on.  A SUBMIT that came just before the park
 * it joins (the report allows that) is not a step: a flow runs forward.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "xtcd/report/report_int.h"

uint64_t report_flow_step(struct report *rep, const struct rp_sess *s, uint64_t flow,
                          const struct rp_ev *e, const xtc_pid_t *pid, uint64_t task)
{
	const struct export_chain_sink *sink = rep->o->chains;
	struct export_chain_ev ev;

	if (!sink || !(e->view & RP_VIEW_MAIN) || (e->kind != XTC_TAIL_PARK_TASK && !flow))
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.session = s->id;
	ev.os_pid = s->os_pid;
	ev.comm = s->comm;
	ev.flow = flow;
	ev.real_ns = e->t;
	ev.loop = e->loop;
	ev.kind = e->kind;
	ev.pid = *pid;
	ev.task = task;
	return sink->step(sink->ctx, &ev);
}

/* The time of f's PARK, or 0. */
static uint64_t finding_park_t(const struct rp_finding *f)
{
	for (unsigned i = 0; i < f->nproof; i++)
		if (f->proof[i].kind == XTC_TAIL_PARK)
			return f->proof[i].t;
	return 0;
}

int report_flow_verdicts(struct report *rep)
{
	const struct export_chain_sink *sink = rep->o->chains;

	if (!sink)
		return 0;
	for (size_t i = 0; i < rep->nf; i++) {
		const struct rp_finding *f = &rep->f[i];
		struct export_chain_verdict v;
		char head[96], why[512] = "";

		if (f->cls < RF_NEVER_SUBMITTED || f->cls > RF_NEVER_RUN || !f->has_pid)
			continue;
		if (f->verdict == RV_CANNOT_TELL) {
			snprintf(head, sizeof(head), "CANNOT TELL (would be: %s)",
			         report_class_name(f->cls));
			report_loss_text(rep, &f->loss, why, sizeof(why));
		} else {
			snprintf(head, sizeof(head), "%s", report_class_name(f->cls));
		}
		memset(&v, 0, sizeof(v));
		v.session = f->sess;
		v.pid = f->pid;
		v.t_park = f->t;
		v.t_op = finding_park_t(f);
		v.verdict = head;
		v.key = report_class_key(f->cls);
		v.why = why;
		sink->verdict(sink->ctx, &v);
	}
	return 0;
}

int report_export_chains(const char *dir, const struct read_opts *o,
                         const struct export_chain_sink *sink)
{
	struct report_opts ro;

	report_opts_init(&ro);
	ro.export_format = RP_CHAINS_FORMAT;
	ro.chains = sink;
	return xtcd_report(dir, o, &ro, stdout);
}
