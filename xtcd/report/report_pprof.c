/*
 * xtcd/report/report_pprof.c - xtcd --report --export pprof|collapsed: the
 * off-CPU table of report_offcpu.c as a profile for flame graph tools.
 *
 * pprof: a gzip-compressed perftools.profiles.Profile (report/profile.proto,
 * encoded by protobuf-c, compressed by zlib), one Sample per proc with
 * data, its stack (root first) "<comm> pid <N>" > "loop <L>" >
 * "proc <L.l.g>", and the five values seed 004 lists:
 *
 *   idle nanoseconds, busy nanoseconds, scheduled nanoseconds,
 *   polls count, wakes count
 *
 * idle is the default sample type: someone reaching for an off-CPU profile
 * asks what is WAITING; opening on busy time would show the CPU profile
 * they already have.  Labels carry the session (a number), the loop and
 * the task (the proc id) as strings: pprof treats a numeric label of 0 as
 * absent, so a numeric loop 0 would vanish from -tags and -tagfocus.  The
 * loop label of a proc with no loop is "-".
 *
 * collapsed: "frame;frame;frame idle_ns" lines, heaviest first, for
 * flamegraph.pl, inferno and speedscope.  The format has no escapes, so a
 * ';' inside a frame would forge a frame: frames never contain one (comm
 * is sanitised when read).
 *
 * Neither is written when no proc has any data: an empty profile and an
 * idle program look the same, so "no data" is said on stderr (exit 3).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xtcd/report/report_int.h"
#if HAVE_PPROF
#include <zlib.h>

#include "xtcd/report/profile.pb-c.h"
#endif

#define NVALUES 5
#define NFRAMES 3

/* The three frames of a proc, root first, into buf[3][len]. */
static void proc_frames(const struct report *rep, const struct rp_proc *p, char frames[NFRAMES][96])
{
	const struct rp_sess *s = rep->sess[p->sidx];
	char lb[16], pid[64];

	snprintf(frames[0], 96, "%s pid %" PRIu32, s->comm, s->os_pid);
	snprintf(frames[1], 96, "loop %s", print_loop(lb, sizeof(lb), p->loop));
	snprintf(frames[2], 96, "proc %s", print_pid(pid, sizeof(pid), &p->pid));
}

#if HAVE_PPROF

/* ---- the string table and the frames ---- */

#define NLABELS 4   /* session, loop (a string), loop (a number with a unit), task */

struct pb_sample {
	Perftools__Profiles__Sample s;
	uint64_t locs[NFRAMES];
	int64_t  vals[NVALUES];
	Perftools__Profiles__Label lab[NLABELS];
	Perftools__Profiles__Label *labp[NLABELS];
};

struct pb_frame {
	Perftools__Profiles__Function fn;
	Perftools__Profiles__Location loc;
	Perftools__Profiles__Line line;
	Perftools__Profiles__Line *linep;
};

struct pb {
	char   **str;
	size_t   nstr, str_cap;
	struct rp_map str_map;
	struct pb_frame *fr;
	size_t   nfr, fr_cap;
	struct rp_map fr_map;               /* string index -> frame index */
	struct pb_sample *smp;
	size_t   nsmp;
};

/* Two independent 64-bit hashes of s (FNV-1a and a multiply-xorshift). */
static void str_hash(const char *s, uint64_t *h1, uint64_t *h2)
{
	uint64_t a = 0xcbf29ce484222325ull, b = 0x9e3779b97f4a7c15ull;

	for (; *s; s++) {
		a = (a ^ (unsigned char)*s) * 0x100000001b3ull;
		b = (b + (unsigned char)*s) * 0xff51afd7ed558ccdull;
		b ^= b >> 29;
	}
	*h1 = a;
	*h2 = b;
}

/* The string table index of s, added if new; -1 on -ENOMEM. */
static int64_t pb_str(struct pb *pb, const char *s)
{
	uint64_t h1, h2;
	uint32_t *slot;

	str_hash(s, &h1, &h2);
	if (!(slot = rp_map_get(&pb->str_map, h1, h2, strlen(s), 1)))
		return -1;
	if (*slot != RP_NONE)
		return *slot;
	if (rp_grow(&pb->str, &pb->str_cap, pb->nstr + 1, sizeof(*pb->str)) < 0 ||
	    !(pb->str[pb->nstr] = strdup(s))) {
		*slot = 0;
		return -1;
	}
	*slot = (uint32_t)pb->nstr;
	return (int64_t)pb->nstr++;
}

/* The location id (= function id) of a frame named s; 0 on -ENOMEM. */
static uint64_t pb_frame(struct pb *pb, const char *s)
{
	int64_t si = pb_str(pb, s);
	uint32_t *slot;
	struct pb_frame *f;

	if (si < 0 || !(slot = rp_map_get(&pb->fr_map, (uint64_t)si, 0, 0, 1)))
		return 0;
	if (*slot != RP_NONE)
		return *slot + 1;
	if (rp_grow(&pb->fr, &pb->fr_cap, pb->nfr + 1, sizeof(*pb->fr)) < 0) {
		*slot = 0;
		return 0;
	}
	*slot = (uint32_t)pb->nfr;
	f = &pb->fr[pb->nfr++];
	memset(f, 0, sizeof(*f));
	perftools__profiles__function__init(&f->fn);
	perftools__profiles__location__init(&f->loc);
	perftools__profiles__line__init(&f->line);
	f->fn.id = pb->nfr;
	f->fn.name = si;
	f->fn.system_name = si;
	f->line.function_id = pb->nfr;
	f->loc.id = pb->nfr;
	return pb->nfr;
}

/* A count as a pprof int64. */
static int64_t clamp64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* One sample per proc; 0 or -ENOMEM. */
static int pb_samples(struct report *rep, struct pb *pb, const uint32_t *idx, long n)
{
	int64_t k_session = pb_str(pb, "session"), k_loop = pb_str(pb, "loop"),
	        k_task = pb_str(pb, "task"), u_loop = pb_str(pb, "loop");

	if (k_session < 0 || k_loop < 0 || k_task < 0 || u_loop < 0 ||
	    !(pb->smp = calloc((size_t)(n ? n : 1), sizeof(*pb->smp))))
		return -ENOMEM;
	for (long i = 0; i < n; i++) {
		const struct rp_proc *p = &rep->procs[idx[i]];
		struct pb_sample *sm = &pb->smp[pb->nsmp];
		char frames[NFRAMES][96], pid[64], lb[16];
		int64_t task, loop;

		proc_frames(rep, p, frames);
		perftools__profiles__sample__init(&sm->s);
		for (int f = 0; f < NFRAMES; f++)      /* leaf first */
			if (!(sm->locs[NFRAMES - 1 - f] = pb_frame(pb, frames[f])))
				return -ENOMEM;
		if ((task = pb_str(pb, print_pid(pid, sizeof(pid), &p->pid))) < 0 ||
		    (loop = pb_str(pb, print_loop(lb, sizeof(lb), p->loop))) < 0)
			return -ENOMEM;
		sm->vals[0] = clamp64(p->idle);
		sm->vals[1] = clamp64(p->busy);
		sm->vals[2] = clamp64(p->sched);
		sm->vals[3] = clamp64(p->polls);
		sm->vals[4] = clamp64(p->wakes);
		for (int l = 0; l < NLABELS; l++) {
			perftools__profiles__label__init(&sm->lab[l]);
			sm->labp[l] = &sm->lab[l];
		}
		sm->lab[0].key = k_session;
		sm->lab[0].num = clamp64(p->sess);
		sm->lab[1].key = k_loop;
		sm->lab[1].str = loop;
		sm->lab[2].key = k_loop;
		sm->lab[2].num = print_loop_json(p->loop);
		sm->lab[2].num_unit = u_loop;   /* pprof keeps a 0 only with a unit */
		sm->lab[3].key = k_task;
		sm->lab[3].str = task;
		sm->s.n_location_id = NFRAMES;
		sm->s.location_id = sm->locs;
		sm->s.n_value = NVALUES;
		sm->s.value = sm->vals;
		sm->s.n_label = NLABELS;
		sm->s.label = sm->labp;
		pb->nsmp++;
	}
	return 0;
}

/* gzip buf into out; 0 or -errno. */
static int write_gzip(const uint8_t *buf, size_t len, FILE *out)
{
	z_stream z;
	uint8_t *gz;
	size_t cap;
	int ret;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)len) + 64;
	if (!(gz = malloc(cap))) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)(uintptr_t)buf;
	z.avail_in = (uInt)len;
	z.next_out = gz;
	z.avail_out = (uInt)cap;
	ret = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(gz);
		return -EIO;
	}
	ret = fwrite(gz, 1, cap - z.avail_out, out) == cap - z.avail_out ? 0 : -EIO;
	free(gz);
	return ret;
}

/* Build, pack and write the profile; 0 or -errno. */
static int pb_write(struct report *rep, struct pb *pb, FILE *out)
{
	static const char *types[NVALUES][2] = {
		{ "idle", "nanoseconds" }, { "busy", "nanoseconds" }, { "scheduled", "nanoseconds" },
		{ "polls", "count" }, { "wakes", "count" },
	};
	Perftools__Profiles__Profile prof;
	Perftools__Profiles__ValueType vt[NVALUES], *vtp[NVALUES];
	Perftools__Profiles__Sample **sp = NULL;
	Perftools__Profiles__Location **lp = NULL;
	Perftools__Profiles__Function **fp = NULL;
	char comment[512];
	int64_t cidx;
	uint8_t *buf = NULL;
	size_t len;
	int ret = -ENOMEM;

	perftools__profiles__profile__init(&prof);
	for (int i = 0; i < NVALUES; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = pb_str(pb, types[i][0]);
		vt[i].unit = pb_str(pb, types[i][1]);
		if (vt[i].type < 0 || vt[i].unit < 0)
			return -ENOMEM;
		vtp[i] = &vt[i];
	}
	snprintf(comment, sizeof(comment), "xtcd --report: off-CPU time per proc of %s",
	         segread_dir(rep->r));
	if ((cidx = pb_str(pb, comment)) < 0)
		return -ENOMEM;
	sp = malloc((pb->nsmp ? pb->nsmp : 1) * sizeof(*sp));
	lp = malloc((pb->nfr ? pb->nfr : 1) * sizeof(*lp));
	fp = malloc((pb->nfr ? pb->nfr : 1) * sizeof(*fp));
	if (!sp || !lp || !fp)
		goto out;
	for (size_t i = 0; i < pb->nsmp; i++)
		sp[i] = &pb->smp[i].s;
	for (size_t i = 0; i < pb->nfr; i++) {
		struct pb_frame *f = &pb->fr[i];

		f->linep = &f->line;
		f->loc.n_line = 1;
		f->loc.line = &f->linep;
		lp[i] = &f->loc;
		fp[i] = &f->fn;
	}
	prof.n_sample_type = NVALUES;
	prof.sample_type = vtp;
	prof.n_sample = pb->nsmp;
	prof.sample = sp;
	prof.n_location = pb->nfr;
	prof.location = lp;
	prof.n_function = pb->nfr;
	prof.function = fp;
	prof.n_string_table = pb->nstr;
	prof.string_table = pb->str;
	prof.time_nanos = clamp64(rep->view_first);
	prof.duration_nanos = clamp64(rep->view_last - rep->view_first);
	prof.n_comment = 1;
	prof.comment = &cidx;
	prof.default_sample_type = vt[0].type;
	len = perftools__profiles__profile__get_packed_size(&prof);
	if (!(buf = malloc(len ? len : 1)))
		goto out;
	perftools__profiles__profile__pack(&prof, buf);
	ret = write_gzip(buf, len, out);
out:
	free(buf);
	free(sp);
	free(lp);
	free(fp);
	return ret;
}

/* Free the builder. */
static void pb_free(struct pb *pb)
{
	for (size_t i = 0; i < pb->nstr; i++)
		free(pb->str[i]);
	free(pb->str);
	free(pb->fr);
	free(pb->smp);
	rp_map_free(&pb->str_map);
	rp_map_free(&pb->fr_map);
}

/* --export pprof */
static int export_pprof(struct report *rep, const uint32_t *idx, long n, FILE *out)
{
	struct pb pb;
	int ret;

	memset(&pb, 0, sizeof(pb));
	if (pb_str(&pb, "") != 0)         /* string_table[0] must be "" */
		ret = -ENOMEM;
	else if ((ret = pb_samples(rep, &pb, idx, n)) == 0)
		ret = pb_write(rep, &pb, out);
	pb_free(&pb);
	return ret;
}

#else /* !HAVE_PPROF */

/* Built with configure --without-pprof: no protobuf-c to encode with. */
static int export_pprof(struct report *rep, const uint32_t *idx, long n, FILE *out)
{
	return -ENOTSUP;
}

#endif /* HAVE_PPROF */

/* ---- collapsed ---- */

struct folded {
	char    *stack;
	uint64_t idle;
};

/* qsort: heaviest stack first, then by name. */
static int folded_cmp(const void *a, const void *b)
{
	const struct folded *x = a, *y = b;

	if (x->idle != y->idle)
		return x->idle > y->idle ? -1 : 1;
	return strcmp(x->stack, y->stack);
}

/* --export collapsed: idle-weighted stacks; 0, -ENODATA or -errno. */
static int export_collapsed(struct report *rep, const uint32_t *idx, long n, FILE *out)
{
	struct folded *rows = calloc((size_t)(n ? n : 1), sizeof(*rows));
	size_t nrows = 0;
	int ret = 0;

	if (!rows)
		return -ENOMEM;
	for (long i = 0; i < n; i++) {
		const struct rp_proc *p = &rep->procs[idx[i]];
		char frames[NFRAMES][96], line[3 * 96 + 4];

		if (!p->idle)
			continue;
		proc_frames(rep, p, frames);
		snprintf(line, sizeof(line), "%s;%s;%s", frames[0], frames[1], frames[2]);
		if (!(rows[nrows].stack = strdup(line))) {
			ret = -ENOMEM;
			goto out;
		}
		rows[nrows++].idle = p->idle;
	}
	if (!nrows) {
		ret = -ENODATA;
		goto out;
	}
	qsort(rows, nrows, sizeof(*rows), folded_cmp);
	for (size_t i = 0; i < nrows; i++)
		fprintf(out, "%s %" PRIu64 "\n", rows[i].stack, rows[i].idle);
out:
	for (size_t i = 0; i < nrows; i++)
		free(rows[i].stack);
	free(rows);
	return ret;
}

/* Write the export; 0, 2 (cannot write) or 3 (no data). */
int report_export(struct report *rep, const char *format, FILE *out)
{
	uint32_t *idx = NULL;
	long n;
	int ret, pprof = strcmp(format, "pprof") == 0;

	if (strcmp(format, RP_CHAINS_FORMAT) == 0)
		return report_flow_verdicts(rep);
	if (pprof && !HAVE_PPROF) {
		fprintf(stderr, "xtcd: --export pprof: this xtcd was built without pprof support "
		        "(configure --without-pprof); use --export collapsed, or rebuild with "
		        "libprotobuf-c-dev and protobuf-c-compiler installed\n");
		return 2;
	}
	if (pprof && isatty(fileno(out))) {
		fprintf(stderr, "xtcd: --export pprof writes a binary profile: redirect it to a file, "
		        "such as > profile.pb.gz\n");
		return 2;
	}
	if ((n = report_offcpu_sorted(rep, &idx)) < 0) {
		fprintf(stderr, "xtcd: --export %s: %s\n", format, strerror(ENOMEM));
		return 2;
	}
	if (n == 0) {
		ret = -ENODATA;
	} else {
		ret = pprof ? export_pprof(rep, idx, n, out) : export_collapsed(rep, idx, n, out);
	}
	free(idx);
	if (ret == -ENODATA) {
		fprintf(stderr, "xtcd: --export %s: no data: the record holds no PARK or RUN records "
		        "%sto time a proc by, over the records selected. Either nothing ran, or the "
		        "SCHED source is off: an empty profile and an idle program look identical, so "
		        "this is reported rather than drawn\n", format,
		        pprof ? "" : "with idle time ");
		return 3;
	}
	if (ret < 0) {
		fprintf(stderr, "xtcd: --export %s: %s\n", format, strerror(-ret));
		return 2;
	}
	return 0;
}
