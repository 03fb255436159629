/*
 * tests/check_dump.c - xtc_tail_dump, xtc_tail_dump_dial9 and
 * xtc_tail_spill_dial9 against the real recorder.
 *
 * The decoders here are written from the format descriptions (seed 000's
 * XTCL v3 in xtc_tail.h; dial9-trace-format/SPEC.md version 1) and share
 * no code with lib/dump.c, so a misreading in one is not hidden by the
 * same misreading in the other.  Every decoded field is compared with what
 * xtc_tail_read returns, and that with what the test emitted.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "xtc_tail.h"
#include "tests/check_run.h"

#define MAX_RECS 4096   /* xtc_tail_configure(4, 1024) */
#define TASK_A   0x00007f12deadbe00ull
#define TASK_B   0x00007f12deadc040ull

/* ---------------------------------------------------------------------
 * Recording and collecting
 */

/* What the test emits: one xtc_tail_emit call. */
struct emit {
	uint32_t  source;
	uint32_t  kind;
	xtc_pid_t pid;
	uint64_t  detail;
};

/* The known sequence: every kind, every source, the loop sentinel, and
 * values of many LEB128 lengths up to the 10 bytes of UINT64_MAX (a wider
 * spread comes from emit_many). */
static const struct emit known[] = {
	{ XTC_TAIL_SCHED, XTC_TAIL_SPAWN, { 3, 1, 1 }, 0 },
	{ XTC_TAIL_SCHED, XTC_TAIL_PARK_TASK, { 3, 1, 1 }, TASK_A },
	{ XTC_TAIL_SCHED, XTC_TAIL_PARK, { 3, 1, 1 }, 3 },
	{ XTC_TAIL_SCHED, XTC_TAIL_SUBMIT, { 3, 0, 0 }, TASK_A },
	{ XTC_TAIL_SCHED, XTC_TAIL_REAP, { 3, 0, 0 }, TASK_A },
	{ XTC_TAIL_SCHED, XTC_TAIL_WAKE, { 3, 0, 0 }, TASK_A },
	{ XTC_TAIL_SCHED, XTC_TAIL_RUN, { 3, 1, 1 }, 1500 },
	{ XTC_TAIL_MSG, XTC_TAIL_SEND, { 3, 1, 1 }, 64 },
	{ XTC_TAIL_MSG, XTC_TAIL_RECV, { 0, 2, 9 }, 64 },
	{ XTC_TAIL_MSG, XTC_TAIL_MBOX_HWM, { 0, 2, 9 }, 17 },
	{ XTC_TAIL_SCHED, XTC_TAIL_LOOP_POLL, { XTC_TAIL_LOOP_NONE, 0, 0 }, 0 },
	{ XTC_TAIL_SCHED, XTC_TAIL_SUBMIT_FAIL, { XTC_TAIL_LOOP_NONE, 0, 0 },
	  XTC_TAIL_SHORT_SUBMIT_BASE + 2 },
	{ XTC_TAIL_SCHED, XTC_TAIL_POLL_FULL, { 3, 0, 0 }, 256 },
	{ XTC_TAIL_SCHED, XTC_TAIL_LIFECYCLE_DROP, { UINT32_MAX - 1, UINT32_MAX, UINT64_MAX },
	  (uint64_t)-ENOMEM },
	{ XTC_TAIL_IO, XTC_TAIL_REAP, { 3, 0, 0 }, 0 },
	{ XTC_TAIL_OS, XTC_TAIL_WAKE, { 7, 0, 0 }, TASK_B },   /* no PARK_TASK: woken 0 */
	{ XTC_TAIL_SCHED, XTC_TAIL_EXIT, { 3, 1, 1 }, UINT64_MAX },
	{ XTC_TAIL_SCHED, XTC_TAIL_RUN, { 1u << 28, 1u << 21, 1ull << 63 }, 1ull << 35 },
	{ XTC_TAIL_SCHED, XTC_TAIL_LOOP_WAKE, { 2, 0, 0 }, 1234567 },
	{ XTC_TAIL_SCHED, XTC_TAIL_CB_END, { 2, 7, XTC_TAIL_CB_GEN(XTC_TAIL_W_IO, 3, 0x7f0012345678) },
	  4321 },
};
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

/* Records as xtc_tail_read hands them back. */
struct recs {
	xtc_tail_rec_t r[MAX_RECS];
	size_t         n;
};

static struct recs got;   /* static: too big for a thread's stack */

/*
 * How far a decoded timestamp may be from got's.  A dump takes its own
 * xtc_tail_read, and with the TSC clock the recorder converts ticks to ns
 * against an anchor taken at each read, so two reads of one record can
 * differ by some ns.  The "xtcl" and "dial9" cases record with
 * XTC_TAIL_CLOCK=mono, where reads are exact and so is the comparison;
 * the "tsc" case uses the default clock and this slack.
 */
static uint64_t ts_slack;

/* Assert that timestamp a is b, give or take ts_slack. */
#define assert_ts(a, b)                                                          \
	ck_assert_msg((a) + ts_slack >= (b) && (b) + ts_slack >= (a),              \
	              "timestamp %llu, want %llu", (unsigned long long)(a),        \
	              (unsigned long long)(b))

/* A fresh, empty recorder.  -EBUSY: the segment already exists (CK_FORK=no
 * runs every test in one process); the geometry and clock are then the
 * ones the first test chose. */
static void setup_recorder(void)
{
	int rc = xtc_tail_configure(4, 1024);

	ck_assert_msg(rc == XTC_OK || rc == -EBUSY, "configure: %d", rc);
	xtc_tail_enable(XTC_TAIL_ALL);
	ck_assert_int_eq(xtc_tail_reset(), XTC_OK);
	ck_assert_uint_eq(xtc_tail_count(), 0);
}

/* Checked fixture, run in each test's child: exact CLOCK_MONOTONIC stamps. */
static void setup(void)
{
	setenv("XTC_TAIL_CLOCK", "mono", 1);
	ts_slack = 0;
	setup_recorder();
}

/* Checked fixture of the "tsc" case: the default clock (TSC when the CPU
 * has an invariant one). */
static void setup_tsc(void)
{
	unsetenv("XTC_TAIL_CLOCK");
	ts_slack = 2000;
	setup_recorder();
}

/* xtc_tail_read visitor: keep a record. */
static int collect_cb(const xtc_tail_rec_t *rec, void *user)
{
	struct recs *rs = user;

	ck_assert_uint_lt(rs->n, MAX_RECS);
	rs->r[rs->n++] = *rec;
	return 0;
}

/* Read every buffered record into got. */
static void collect(void)
{
	int rc;

	got.n = 0;
	rc = xtc_tail_read(collect_cb, &got);
	ck_assert_int_eq(rc, (int)got.n);
}

/* Emit the known sequence from loop 3's ring. */
static void emit_known(void)
{
	ck_assert_int_eq(xtc_tail_loop_bind(3), XTC_OK);
	for (size_t i = 0; i < N_KNOWN; i++)
		xtc_tail_emit(known[i].source, known[i].kind, known[i].pid, known[i].detail);
}

/* Check that got holds exactly the known sequence. */
static void assert_got_known(void)
{
	ck_assert_uint_eq(got.n, N_KNOWN);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	for (size_t i = 0; i < N_KNOWN; i++) {
		ck_assert_uint_eq(got.r[i].source, known[i].source);
		ck_assert_uint_eq(got.r[i].kind, known[i].kind);
		ck_assert_uint_eq(got.r[i].pid.loop_id, known[i].pid.loop_id);
		ck_assert_uint_eq(got.r[i].pid.local_id, known[i].pid.local_id);
		ck_assert_uint_eq(got.r[i].pid.gen, known[i].pid.gen);
		ck_assert_uint_eq(got.r[i].detail, known[i].detail);
	}
}

/* A deterministic spread of values over every LEB128 length. */
static uint64_t spread(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return *state >> (*state & 63);
}

/* Emit n assorted records from the calling thread (bound to loop). */
static void emit_many(uint32_t loop, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		xtc_pid_t pid = { (uint32_t)spread(&seed), (uint32_t)spread(&seed), spread(&seed) };

		pid.loop_id = i % 5 == 0 ? XTC_TAIL_LOOP_NONE : loop;
		xtc_tail_emit(XTC_TAIL_SCHED, (uint32_t)(i % 15), pid, spread(&seed));
	}
}

/* ---------------------------------------------------------------------
 * Capturing a dump
 */

/* The bytes a dump wrote. */
struct buf {
	uint8_t *p;
	size_t   len;
};

/* Everything fd holds from offset 0. */
static struct buf slurp(int fd)
{
	struct buf b = { NULL, 0 };
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	b.p = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(b.p);
	while (b.len < (size_t)st.st_size) {
		ssize_t r = pread(fd, b.p + b.len, (size_t)st.st_size - b.len, (off_t)b.len);

		ck_assert_int_gt(r, 0);
		b.len += (size_t)r;
	}
	return b;
}

/* Run dump (xtc_tail_dump or xtc_tail_dump_dial9) into a memfd; rc
 * gets its return value. */
static struct buf capture(int (*dump)(int), int *rc)
{
	int fd = memfd_create("check_dump", MFD_CLOEXEC);
	struct buf b;

	ck_assert_int_ge(fd, 0);
	*rc = dump(fd);
	b = slurp(fd);
	close(fd);
	return b;
}

/* ---------------------------------------------------------------------
 * An independent XTCL v3 decoder
 */

struct xtcl_hdr {
	uint32_t version;
	uint32_t flags;
	uint32_t count;
	uint64_t base_ts_ns;
};

/* Little-endian u32 / u64 at p. */
static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Read a LEB128 u64 at *p, strictly: at most 10 bytes, no bits past 64. */
static uint64_t get_leb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		ck_assert_msg(*p < end, "LEB128 runs past the end");
		b = *(*p)++;
		ck_assert_msg(shift < 63 || (b & 0x7e) == 0, "LEB128 overflows 64 bits");
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	ck_abort_msg("LEB128 longer than 10 bytes");
	return 0;
}

/* Decode an XTCL dump into out[] (room for max); returns the event count
 * and checks that the bytes end exactly after the last event. */
static size_t xtcl_decode(const struct buf *b, struct xtcl_hdr *h, xtc_tail_rec_t *out, size_t max)
{
	const uint8_t *p = b->p, *end = b->p + b->len;
	uint64_t ts;

	ck_assert_uint_ge(b->len, 24);
	ck_assert(memcmp(p, "XTCL", 4) == 0);
	h->version = (uint32_t)get_le(p + 4, 4);
	h->flags = (uint32_t)get_le(p + 8, 4);
	h->count = (uint32_t)get_le(p + 12, 4);
	h->base_ts_ns = get_le(p + 16, 8);
	ck_assert_uint_eq(h->version, 3);
	ck_assert_uint_eq(h->flags, 1);
	ck_assert_uint_le(h->count, max);
	p += 24;
	ts = h->base_ts_ns;
	for (uint32_t i = 0; i < h->count; i++) {
		xtc_tail_rec_t *r = &out[i];
		uint64_t v;

		ck_assert_int_ge(end - p, 2);
		r->kind = *p++;
		r->source = *p++;
		ts += get_leb(&p, end);
		r->ts_ns = ts;
		v = get_leb(&p, end);
		ck_assert_uint_le(v, UINT32_MAX);
		r->pid.loop_id = (uint32_t)v;
		v = get_leb(&p, end);
		ck_assert_uint_le(v, UINT32_MAX);
		r->pid.local_id = (uint32_t)v;
		r->pid.gen = get_leb(&p, end);
		r->detail = get_leb(&p, end);
	}
	ck_assert_msg(p == end, "%td bytes after the last event", end - p);
	return h->count;
}

/* Check an XTCL dump against got: every field; timestamps as the running
 * maximum (XTCL clamps a backwards step to a delta of 0). */
static void assert_xtcl_matches(const struct buf *b)
{
	static xtc_tail_rec_t dec[MAX_RECS];
	struct xtcl_hdr h;
	uint64_t max_ts = 0;
	size_t n = xtcl_decode(b, &h, dec, MAX_RECS);

	ck_assert_uint_eq(n, got.n);
	if (got.n == 0)
		ck_assert_uint_eq(h.base_ts_ns, 0);
	else
		assert_ts(h.base_ts_ns, got.r[0].ts_ns);
	for (size_t i = 0; i < n; i++) {
		max_ts = got.r[i].ts_ns > max_ts ? got.r[i].ts_ns : max_ts;
		assert_ts(dec[i].ts_ns, max_ts);
		ck_assert_uint_eq(dec[i].kind, got.r[i].kind);
		ck_assert_uint_eq(dec[i].source, got.r[i].source);
		ck_assert_uint_eq(dec[i].pid.loop_id, got.r[i].pid.loop_id);
		ck_assert_uint_eq(dec[i].pid.local_id, got.r[i].pid.local_id);
		ck_assert_uint_eq(dec[i].pid.gen, got.r[i].pid.gen);
		ck_assert_uint_eq(dec[i].detail, got.r[i].detail);
	}
}

/* ---------------------------------------------------------------------
 * An independent dial9 (TRC\0 v1) decoder, per SPEC.md
 */

#define D9_MAX_TYPES  65536
#define D9_MAX_FIELDS 16
#define D9_MAX_POOL   16
#define D9_NAME       64

struct d9_schema {
	int      defined;
	char     name[D9_NAME];
	int      has_ts;
	unsigned nf;
	char     fname[D9_MAX_FIELDS][D9_NAME];
	uint8_t  ftype[D9_MAX_FIELDS];
	char     unit[D9_MAX_FIELDS][8];
};

struct d9_event {
	const struct d9_schema *s;
	uint64_t ts;
	uint64_t num[D9_MAX_FIELDS];          /* numeric values */
	char     str[D9_MAX_FIELDS][D9_NAME]; /* resolved pooled strings */
};

struct d9_trace {
	struct d9_schema *types;              /* D9_MAX_TYPES of them */
	uint32_t pool_id[D9_MAX_POOL];
	char     pool[D9_MAX_POOL][D9_NAME];
	unsigned npool;
	struct d9_event *ev;
	size_t   nev, maxev;
	unsigned schemas, resets, annotations;
};

/* A cursor over the trace bytes that fails the test on overrun. */
struct cur {
	const uint8_t *p, *end;
};

/* Take n bytes. */
static const uint8_t *take(struct cur *c, size_t n)
{
	const uint8_t *p = c->p;

	ck_assert_msg((size_t)(c->end - c->p) >= n, "frame runs past the end");
	c->p += n;
	return p;
}

/* Take a little-endian integer of `bytes` bytes. */
static uint64_t take_le(struct cur *c, int bytes)
{
	return get_le(take(c, (size_t)bytes), bytes);
}

/* Take a u16-length-prefixed name into out. */
static void take_name16(struct cur *c, char *out)
{
	size_t n = (size_t)take_le(c, 2);

	ck_assert_uint_lt(n, D9_NAME);
	memcpy(out, take(c, n), n);
	out[n] = '\0';
}

/* The string of pool id, or fail. */
static const char *pool_lookup(const struct d9_trace *t, uint32_t id)
{
	for (unsigned i = 0; i < t->npool; i++)
		if (t->pool_id[i] == id)
			return t->pool[i];
	ck_abort_msg("pooled string %u used before its pool frame", id);
	return NULL;
}

/* Decode one value of field type ft (any type of SPEC "Field Types") into
 * ev's slot i: numbers into num, pooled strings resolved into str. */
static void take_value(struct cur *c, struct d9_trace *t, struct d9_event *ev, unsigned i,
                       uint8_t ft)
{
	if (ft & 0x80) {   /* optional: presence byte */
		uint8_t present = *take(c, 1);

		ck_assert_uint_le(present, 1);
		if (!present)
			return;
		ft &= 0x7f;
	}
	switch (ft) {
	case 1: case 2: ev->num[i] = take_le(c, 8); break;          /* I64, F64 */
	case 3: case 11: ev->num[i] = take_le(c, 1); break;         /* Bool, U8 */
	case 12: ev->num[i] = take_le(c, 2); break;                 /* U16 */
	case 13: case 6: ev->num[i] = take_le(c, 4); break;         /* U32, PooledStackFrames */
	case 9: ev->num[i] = get_leb(&c->p, c->end); break;         /* Varint */
	case 4: case 5: take(c, (size_t)take_le(c, 4)); break;      /* String, Bytes */
	case 7:                                                     /* PooledString */
		ev->num[i] = take_le(c, 4);
		snprintf(ev->str[i], D9_NAME, "%s", pool_lookup(t, (uint32_t)ev->num[i]));
		break;
	case 8: take(c, 8 * (size_t)take_le(c, 4)); break;          /* StackFrames */
	case 10:                                                    /* StringMap */
		for (uint64_t k = take_le(c, 4); k > 0; k--) {
			take(c, (size_t)take_le(c, 4));
			take(c, (size_t)take_le(c, 4));
		}
		break;
	default:
		ck_abort_msg("unexpected field type %u", ft);
	}
}

/* Schema frame (tag already taken). */
static void d9_schema_frame(struct cur *c, struct d9_trace *t)
{
	struct d9_schema s;
	unsigned id = (unsigned)take_le(c, 2);

	memset(&s, 0, sizeof(s));
	s.defined = 1;
	take_name16(c, s.name);
	s.has_ts = *take(c, 1);
	s.nf = (unsigned)take_le(c, 2);
	ck_assert_uint_le(s.nf, D9_MAX_FIELDS);
	for (unsigned i = 0; i < s.nf; i++) {
		take_name16(c, s.fname[i]);
		s.ftype[i] = *take(c, 1);
	}
	/* SPEC: re-registering a type_id is allowed only with an identical schema. */
	if (t->types[id].defined)
		ck_assert(memcmp(&t->types[id], &s, sizeof(s)) == 0);
	t->types[id] = s;
	t->schemas++;
}

/* Event frame (tag already taken); *base is the running timestamp base. */
static void d9_event_frame(struct cur *c, struct d9_trace *t, uint64_t *base)
{
	unsigned id = (unsigned)take_le(c, 2);
	const struct d9_schema *s = &t->types[id];
	struct d9_event *ev;

	ck_assert_msg(s->defined, "event of type %u before its schema", id);
	ck_assert_uint_lt(t->nev, t->maxev);
	ev = &t->ev[t->nev++];
	memset(ev, 0, sizeof(*ev));
	ev->s = s;
	if (s->has_ts)
		*base += take_le(c, 3);
	ev->ts = *base;
	for (unsigned i = 0; i < s->nf; i++)
		take_value(c, t, ev, i, s->ftype[i]);
}

/* String pool frame (tag already taken). */
static void d9_pool_frame(struct cur *c, struct d9_trace *t)
{
	for (uint64_t k = take_le(c, 4); k > 0; k--) {
		size_t len;

		ck_assert_uint_lt(t->npool, D9_MAX_POOL);
		t->pool_id[t->npool] = (uint32_t)take_le(c, 4);
		len = (size_t)take_le(c, 4);
		ck_assert_uint_lt(len, D9_NAME);
		memcpy(t->pool[t->npool], take(c, len), len);
		t->pool[t->npool][len] = '\0';
		t->npool++;
	}
}

/* Schema annotations frame (tag already taken). */
static void d9_annotation_frame(struct cur *c, struct d9_trace *t)
{
	uint64_t id = get_leb(&c->p, c->end);
	struct d9_schema *s;

	ck_assert_uint_lt(id, D9_MAX_TYPES);
	s = &t->types[id];
	ck_assert_msg(s->defined, "annotation for type %u before its schema", (unsigned)id);
	for (uint64_t k = take_le(c, 2); k > 0; k--) {
		unsigned field = (unsigned)take_le(c, 2);
		char key[D9_NAME];
		size_t vlen;

		take_name16(c, key);
		vlen = (size_t)take_le(c, 4);
		ck_assert_uint_lt(field, s->nf);
		if (strcmp(key, "unit") == 0) {
			ck_assert_uint_lt(vlen, sizeof(s->unit[field]));
			memcpy(s->unit[field], take(c, vlen), vlen);
		} else {
			take(c, vlen);
		}
	}
	t->annotations++;
}

/* Decode a whole trace: header, then frames until the bytes end exactly. */
static void d9_decode(const struct buf *b, struct d9_trace *t)
{
	struct cur c = { b->p, b->p + b->len };
	uint64_t base = 0;   /* SPEC: the timestamp base starts at 0 */

	memset(t, 0, sizeof(*t));
	t->types = calloc(D9_MAX_TYPES, sizeof(*t->types));
	t->maxev = MAX_RECS + 1;
	t->ev = calloc(t->maxev, sizeof(*t->ev));
	ck_assert(t->types != NULL && t->ev != NULL);
	ck_assert(memcmp(take(&c, 4), "TRC\0", 4) == 0);
	ck_assert_uint_eq(*take(&c, 1), 1);
	while (c.p < c.end) {
		uint8_t tag = *take(&c, 1);

		switch (tag) {
		case 0x01: d9_schema_frame(&c, t); break;
		case 0x02: d9_event_frame(&c, t, &base); break;
		case 0x03: d9_pool_frame(&c, t); break;
		case 0x05: base = take_le(&c, 8); t->resets++; break;
		case 0x06: d9_annotation_frame(&c, t); break;
		default: ck_abort_msg("unknown frame tag 0x%02x", tag);
		}
	}
}

/* Free a decoded trace. */
static void d9_free(struct d9_trace *t)
{
	free(t->types);
	free(t->ev);
}

/* Index of field name in ev's schema, or -1. */
static int d9_field(const struct d9_event *ev, const char *name)
{
	for (unsigned i = 0; i < ev->s->nf; i++)
		if (strcmp(ev->s->fname[i], name) == 0)
			return (int)i;
	return -1;
}

/* The numeric value of field name, which must exist with type ft. */
static uint64_t d9_num(const struct d9_event *ev, const char *name, uint8_t ft)
{
	int i = d9_field(ev, name);

	ck_assert_msg(i >= 0, "%s has no field %s", ev->s->name, name);
	ck_assert_msg(ev->s->ftype[i] == ft, "%s.%s has type %u, want %u", ev->s->name, name,
	              ev->s->ftype[i], ft);
	return ev->num[i];
}

/* The schema name dial9 should carry for kind: the viewer's Tokio names
 * where there is an analogue, Xtc* otherwise (written from the brief, not
 * from dump.c's table). */
static const char *d9_expected_name(uint32_t kind)
{
	static const char *const names[] = {
		"TaskSpawnEvent", "TaskTerminateEvent", "WakeEventEvent", "PollStartEvent",
		"PollEndEvent", "XtcSendEvent", "XtcRecvEvent", "XtcMboxHwmEvent",
		"XtcLoopPollEvent", "XtcParkTaskEvent", "XtcReapEvent", "XtcSubmitEvent",
		"XtcSubmitFailEvent", "XtcPollFullEvent", "XtcLifecycleDropEvent",
		"XtcLoopWaitEvent", "XtcLoopWakeEvent", "XtcLoopDispatchEvent",
		"XtcCallbackBeginEvent", "XtcCallbackEndEvent", "XtcCallbackFuncEvent",
		"XtcWatchStartEvent", "XtcWatchStopEvent",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "XtcEvent";
}

/* The task id of a pid as the viewer sees it. */
static uint64_t task_id_of(xtc_pid_t pid)
{
	return (uint64_t)pid.loop_id << 32 | pid.local_id;
}

/* woken_task_id for a WAKE at index i of got: the pid of the latest
 * PARK_TASK before it with the same task pointer, else 0. */
static uint64_t expected_woken(size_t i)
{
	uint64_t task = got.r[i].detail;

	while (task != 0 && i-- > 0)
		if (got.r[i].kind == XTC_TAIL_PARK_TASK && got.r[i].detail == task)
			return task_id_of(got.r[i].pid);
	return 0;
}

/* The Tokio fields a viewer-named event must carry, and their values. */
static void assert_d9_tokio_fields(const struct d9_event *ev, size_t i)
{
	const xtc_tail_rec_t *r = &got.r[i];
	uint32_t loop = r->pid.loop_id;
	int sl, dt;

	switch (r->kind) {
	case XTC_TAIL_SPAWN:
		ck_assert_uint_eq(d9_num(ev, "task_id", 9), task_id_of(r->pid));
		ck_assert_uint_eq(d9_num(ev, "instrumented", 3), 0);
		break;
	case XTC_TAIL_EXIT:
		ck_assert_uint_eq(d9_num(ev, "task_id", 9), task_id_of(r->pid));
		break;
	case XTC_TAIL_WAKE:
		ck_assert_uint_eq(d9_num(ev, "waker_task_id", 9), 0);
		ck_assert_uint_eq(d9_num(ev, "woken_task_id", 9), expected_woken(i));
		ck_assert_uint_eq(d9_num(ev, "target_worker", 11), loop < 255 ? loop : 255);
		break;
	case XTC_TAIL_RUN:
		ck_assert_uint_eq(d9_num(ev, "local_queue", 11), 0);
		ck_assert_uint_eq(d9_num(ev, "task_id", 9), task_id_of(r->pid));
		dt = d9_field(ev, "detail");
		ck_assert_int_ge(dt, 0);
		ck_assert_str_eq(ev->s->unit[dt], "ns");
		break;
	}
	sl = d9_field(ev, "spawn_loc");
	if (r->kind == XTC_TAIL_SPAWN || r->kind == XTC_TAIL_RUN) {
		ck_assert_int_ge(sl, 0);
		ck_assert_uint_eq(ev->s->ftype[sl], 7);
		ck_assert_str_eq(ev->str[sl], "xtc");
	}
}

/* Check a dial9 trace against got: one event per record, in order, with
 * the exact timestamp and every field. */
static void assert_d9_matches(const struct buf *b)
{
	struct d9_trace t;

	d9_decode(b, &t);
	ck_assert_uint_eq(t.nev, got.n);
	for (size_t i = 0; i < t.nev; i++) {
		const struct d9_event *ev = &t.ev[i];
		const xtc_tail_rec_t *r = &got.r[i];

		ck_assert_str_eq(ev->s->name, d9_expected_name(r->kind));
		ck_assert_int_eq(ev->s->has_ts, 1);
		assert_ts(ev->ts, r->ts_ns);
		ck_assert_uint_eq(d9_num(ev, "worker_id", 9), r->pid.loop_id);
		ck_assert_uint_eq(d9_num(ev, "local_id", 9), r->pid.local_id);
		ck_assert_uint_eq(d9_num(ev, "gen", 9), r->pid.gen);
		ck_assert_uint_eq(d9_num(ev, "detail", 9), r->detail);
		ck_assert_uint_eq(d9_num(ev, "source", 9), r->source);
		if (r->kind >= XTC_TAIL_NKINDS)
			ck_assert_uint_eq(d9_num(ev, "kind", 9), r->kind);
		else
			ck_assert_int_lt(d9_field(ev, "kind"), 0);
		assert_d9_tokio_fields(ev, i);
	}
	d9_free(&t);
}

/* ---------------------------------------------------------------------
 * XTCL tests
 */

/* The known sequence round-trips field for field. */
START_TEST(test_dump_known_sequence)
{
	struct buf b;
	int rc;

	emit_known();
	collect();
	assert_got_known();
	b = capture(xtc_tail_dump, &rc);
	ck_assert_int_eq(rc, XTC_OK);
	assert_xtcl_matches(&b);
	free(b.p);
}
END_TEST

/* The exact bytes of one event, against the seed's layout. */
START_TEST(test_dump_bytes)
{
	static const uint8_t want_ev[] = {
		XTC_TAIL_PARK, XTC_TAIL_SCHED, 0x00,     /* kind, source, ts_delta 0 */
		0xff, 0xff, 0xff, 0xff, 0x0f,           /* loop_id 0xFFFFFFFF */
		0x96, 0x01,                             /* local_id 150 */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* gen */
		0x00,                                   /* detail 0 */
	};
	xtc_pid_t pid = { XTC_TAIL_LOOP_NONE, 150, UINT64_MAX };
	struct buf b;
	int rc;

	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_PARK, pid, 0);
	collect();
	ck_assert_uint_eq(got.n, 1);
	b = capture(xtc_tail_dump, &rc);
	ck_assert_int_eq(rc, XTC_OK);
	ck_assert_uint_eq(b.len, 24 + sizeof(want_ev));
	ck_assert(memcmp(b.p, "XTCL\3\0\0\0\1\0\0\0\1\0\0\0", 16) == 0);
	assert_ts(get_le(b.p + 16, 8), got.r[0].ts_ns);
	ck_assert(memcmp(b.p + 24, want_ev, sizeof(want_ev)) == 0);
	free(b.p);
}
END_TEST

/* An empty buffer: a header with count 0 and base 0, nothing else. */
START_TEST(test_dump_empty)
{
	static const uint8_t want[24] = { 'X', 'T', 'C', 'L', 3, 0, 0, 0, 1, 0, 0, 0 };
	struct buf b;
	int rc;

	b = capture(xtc_tail_dump, &rc);
	ck_assert_int_eq(rc, XTC_OK);
	ck_assert_uint_eq(b.len, sizeof(want));
	ck_assert(memcmp(b.p, want, sizeof(want)) == 0);
	free(b.p);
}
END_TEST

/* A producer thread of test_dump_many_rings. */
struct producer {
	uint32_t           loop;
	pthread_barrier_t *emitted, *dumped;
};

/* Thread: bind, emit, and stay alive (keeping the ring) until dumped. */
static void *producer_main(void *arg)
{
	struct producer *p = arg;

	ck_assert_int_eq(xtc_tail_loop_bind(p->loop), XTC_OK);
	emit_many(p->loop, 400, p->loop);
	pthread_barrier_wait(p->emitted);
	pthread_barrier_wait(p->dumped);
	return NULL;
}

/* Records from several rings (threads bound to different loops), merged
 * by the recorder, in both formats. */
START_TEST(test_dump_many_rings)
{
	pthread_barrier_t emitted, dumped;
	struct producer p[3];
	pthread_t th[3];
	struct buf x, d;
	int rx, rd;

	pthread_barrier_init(&emitted, NULL, 4);
	pthread_barrier_init(&dumped, NULL, 4);
	for (int i = 0; i < 3; i++) {
		p[i] = (struct producer){ (uint32_t)i + 10, &emitted, &dumped };
		ck_assert_int_eq(pthread_create(&th[i], NULL, producer_main, &p[i]), 0);
	}
	pthread_barrier_wait(&emitted);
	collect();
	x = capture(xtc_tail_dump, &rx);
	d = capture(xtc_tail_dump_dial9, &rd);
	pthread_barrier_wait(&dumped);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(got.n, 1200);
	ck_assert_int_eq(rx, XTC_OK);
	ck_assert_int_eq(rd, XTC_OK);
	assert_xtcl_matches(&x);
	assert_d9_matches(&d);
	free(x.p);
	free(d.p);
}
END_TEST

/* A kind that does not fit XTCL's byte is refused before any output;
 * dial9 carries it as XtcEvent with its kind. */
START_TEST(test_dump_kind_out_of_range)
{
	xtc_pid_t pid = { 2, 5, 1 };
	struct buf b;
	int rc;

	ck_assert_int_eq(xtc_tail_loop_bind(2), XTC_OK);
	xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_RUN, pid, 7);
	xtc_tail_emit(XTC_TAIL_SCHED, 300, pid, 8);
	collect();
	ck_assert_uint_eq(got.n, 2);
	b = capture(xtc_tail_dump, &rc);
	ck_assert_int_eq(rc, -ERANGE);
	ck_assert_uint_eq(b.len, 0);
	free(b.p);
	b = capture(xtc_tail_dump_dial9, &rc);
	ck_assert_int_eq(rc, XTC_OK);
	assert_d9_matches(&b);
	free(b.p);
}
END_TEST

/* A bad fd: negative, closed, or not open for writing. */
START_TEST(test_dump_bad_fd)
{
	int fd;

	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	emit_many(1, 10, 1);
	ck_assert_int_eq(xtc_tail_dump(-1), -EBADF);
	ck_assert_int_eq(xtc_tail_dump_dial9(-1), -EBADF);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(xtc_tail_dump(fd), -EBADF);
	ck_assert_int_eq(xtc_tail_dump_dial9(fd), -EBADF);
	close(fd);
	ck_assert_int_eq(xtc_tail_dump(fd), -EBADF);
	ck_assert_int_eq(xtc_tail_dump_dial9(fd), -EBADF);
}
END_TEST

/* A pipe with no reader: -EPIPE, and the process is not killed by SIGPIPE
 * (nor is one left pending). */
START_TEST(test_dump_broken_pipe)
{
	sigset_t pending;
	int p[2];

	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	emit_many(1, 10, 1);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	close(p[0]);
	ck_assert_int_eq(xtc_tail_dump(p[1]), -EPIPE);
	ck_assert_int_eq(xtc_tail_dump_dial9(p[1]), -EPIPE);
	close(p[1]);
	sigemptyset(&pending);
	ck_assert_int_eq(sigpending(&pending), 0);
	ck_assert_int_eq(sigismember(&pending, SIGPIPE), 0);
}
END_TEST

/* A slow reader of a small pipe, so the dump sees short writes. */
struct reader {
	int      fd;
	uint8_t *buf;
	size_t   len, cap;
};

/* Thread: read the pipe in small chunks, slowly, until EOF. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);   /* SIGALRM is for the writer */
	for (;;) {
		ssize_t n;

		if (r->len + 512 > r->cap) {
			r->cap = 2 * r->cap + 512;
			r->buf = realloc(r->buf, r->cap);
		}
		n = read(r->fd, r->buf + r->len, 512);
		if (n == 0)
			return NULL;
		if (n < 0 && errno == EAGAIN) {
			usleep(100);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			abort();
		r->len += (size_t)n;
		usleep(200);
	}
}

static volatile sig_atomic_t alarms;

/* SIGALRM: count, and interrupt the blocked write (no SA_RESTART). */
static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* Loop test: 0 = blocking pipe with SIGALRM every 100 us interrupting
 * the writer (EINTR and short writes), 1 = non-blocking pipe (EAGAIN). */
START_TEST(test_dump_short_writes)
{
	struct itimerval on = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	struct reader rd = { 0 };
	struct buf b;
	pthread_t th;
	int p[2], rc;

	ck_assert_int_eq(xtc_tail_loop_bind(4), XTC_OK);
	emit_many(4, 1000, 42);
	collect();
	ck_assert_int_eq(pipe2(p, O_CLOEXEC | (_i == 1 ? O_NONBLOCK : 0)), 0);
	(void)fcntl(p[1], F_SETPIPE_SZ, 4096);   /* best effort: smaller is harder */
	rd.fd = p[0];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, reader_main, &rd), 0);
	if (_i == 0)
		setitimer(ITIMER_REAL, &on, NULL);
	rc = xtc_tail_dump(p[1]);
	setitimer(ITIMER_REAL, &off, NULL);
	close(p[1]);
	pthread_join(th, NULL);
	close(p[0]);
	ck_assert_int_eq(rc, XTC_OK);
	if (_i == 0)
		ck_assert_int_gt(alarms, 0);
	b.p = rd.buf;
	b.len = rd.len;
	ck_assert_uint_gt(b.len, 8192);   /* more than one pipe's worth */
	assert_xtcl_matches(&b);
	free(rd.buf);
}
END_TEST

/* ---------------------------------------------------------------------
 * dial9 tests
 */

/* The known sequence: framing, names, timestamps and every field. */
START_TEST(test_dial9_known_sequence)
{
	struct d9_trace t;
	struct buf b;
	int rc;

	emit_known();
	collect();
	assert_got_known();
	b = capture(xtc_tail_dump_dial9, &rc);
	ck_assert_int_eq(rc, XTC_OK);
	assert_d9_matches(&b);
	d9_decode(&b, &t);
	/* One schema per kind present (17 distinct kinds in known[]), the
	 * first event needs a reset (the base starts at 0), and the wake
	 * of TASK_A resolved to the proc that parked as it. */
	ck_assert_uint_eq(t.schemas, 17);
	ck_assert_uint_ge(t.resets, 1);
	ck_assert_uint_ge(t.annotations, 1);
	ck_assert_uint_eq(d9_num(&t.ev[5], "woken_task_id", 9), task_id_of(known[0].pid));
	ck_assert_uint_eq(d9_num(&t.ev[15], "woken_task_id", 9), 0);
	d9_free(&t);
	free(b.p);
}
END_TEST

/* Timestamps more than 16.7 ms apart need a reset frame each; decoding
 * still gives every timestamp exactly. */
START_TEST(test_dial9_timestamp_resets)
{
	xtc_pid_t pid = { 1, 2, 3 };
	struct timespec gap = { 0, 20 * 1000 * 1000 };
	struct d9_trace t;
	struct buf b;
	int rc;

	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	for (int i = 0; i < 3; i++) {
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_RUN, pid, (uint64_t)i);
		nanosleep(&gap, NULL);
	}
	collect();
	b = capture(xtc_tail_dump_dial9, &rc);
	ck_assert_int_eq(rc, XTC_OK);
	assert_d9_matches(&b);
	d9_decode(&b, &t);
	ck_assert_uint_eq(t.resets, 3);
	ck_assert_uint_eq(t.schemas, 1);
	d9_free(&t);
	free(b.p);
}
END_TEST

/* An empty buffer: a valid trace with no events. */
START_TEST(test_dial9_empty)
{
	struct d9_trace t;
	struct buf b;
	int rc;

	b = capture(xtc_tail_dump_dial9, &rc);
	ck_assert_int_eq(rc, XTC_OK);
	got.n = 0;
	d9_decode(&b, &t);
	ck_assert_uint_eq(t.nev, 0);
	ck_assert_uint_eq(t.schemas, 0);
	d9_free(&t);
	free(b.p);
}
END_TEST

/* The one file spill created in dir: its name, checked against the
 * pattern xtc-tail-<pid>-<ns>.d9.  Returns a malloc'd path. */
static char *spilled_file(const char *dir)
{
	struct dirent *e;
	char *path = NULL;
	int files = 0;
	DIR *d = opendir(dir);

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		unsigned long long ns = 0;
		long pid = 0;
		int end = 0;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		files++;
		ck_assert_int_eq(sscanf(e->d_name, "xtc-tail-%ld-%llu.d9%n", &pid, &ns, &end), 2);
		ck_assert_uint_eq(strlen(e->d_name), (size_t)end);
		ck_assert_int_eq(pid, (long)getpid());
		ck_assert_uint_gt(ns, 0);
		ck_assert_int_ne(asprintf(&path, "%s/%s", dir, e->d_name), -1);
	}
	closedir(d);
	ck_assert_int_eq(files, 1);
	return path;
}

/* spill_dial9 creates one 0644 file named by pid and time, holding the
 * trace; bad directories are refused. */
START_TEST(test_spill_dial9)
{
	const char *tmp = getenv("TMPDIR");
	char *dir, *path, *bad;
	struct stat st;
	struct buf b;
	int fd;

	ck_assert_int_ne(asprintf(&dir, "%s/check_dump.XXXXXX", tmp ? tmp : "/tmp"), -1);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	umask(0);   /* so the file's mode is exactly what spill asked for */
	emit_known();
	collect();
	ck_assert_int_eq(xtc_tail_spill_dial9(dir), XTC_OK);
	path = spilled_file(dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	b = slurp(fd);
	close(fd);
	assert_d9_matches(&b);
	free(b.p);

	ck_assert_int_ne(asprintf(&bad, "%s/missing", dir), -1);
	ck_assert_int_eq(xtc_tail_spill_dial9(bad), -ENOENT);
	ck_assert_int_eq(xtc_tail_spill_dial9(path), -ENOTDIR);
	ck_assert_int_eq(xtc_tail_spill_dial9(""), -ENOENT);
	ck_assert_int_eq(xtc_tail_spill_dial9(NULL), -EINVAL);
	free(spilled_file(dir));   /* still exactly one file */
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
	free(dir);
	free(bad);
	free(path);
}
END_TEST

/* The suite: one TCase per output, and the main cases again on the
 * default (TSC) clock. */
static Suite *dump_suite(void)
{
	Suite *s = suite_create("dump");
	TCase *x = tcase_create("xtcl");
	TCase *d = tcase_create("dial9");
	TCase *t = tcase_create("tsc");

	tcase_add_checked_fixture(x, setup, NULL);
	tcase_set_timeout(x, 30);
	tcase_add_test(x, test_dump_known_sequence);
	tcase_add_test(x, test_dump_bytes);
	tcase_add_test(x, test_dump_empty);
	tcase_add_test(x, test_dump_many_rings);
	tcase_add_test(x, test_dump_kind_out_of_range);
	tcase_add_test(x, test_dump_bad_fd);
	tcase_add_test(x, test_dump_broken_pipe);
	tcase_add_loop_test(x, test_dump_short_writes, 0, 2);
	suite_add_tcase(s, x);

	tcase_add_checked_fixture(d, setup, NULL);
	tcase_set_timeout(d, 30);
	tcase_add_test(d, test_dial9_known_sequence);
	tcase_add_test(d, test_dial9_timestamp_resets);
	tcase_add_test(d, test_dial9_empty);
	tcase_add_test(d, test_spill_dial9);
	suite_add_tcase(s, d);

	tcase_add_checked_fixture(t, setup_tsc, NULL);
	tcase_set_timeout(t, 30);
	tcase_add_test(t, test_dump_known_sequence);
	tcase_add_test(t, test_dump_many_rings);
	tcase_add_test(t, test_dial9_known_sequence);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_run(dump_suite());
}
