/*
 * lib/common/trace_enc.c - the XTCL v3 and dial9 encoders over an array of
 * records (see trace_enc.h).  One encoder for both sides, so xtcd --export
 * writes exactly what xtc_tail_dump and xtc_tail_dump_dial9 do.
 *
 * Every multi-byte value is written as explicit little-endian bytes, never
 * as a struct image, so the output is the same whatever the host's
 * endianness and padding.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/common/trace_enc.h"

/* ---------------------------------------------------------------------
 * Output: a buffered writer over an fd
 */

#define OUT_BUFSZ 8192

/* Buffered output; the first error sticks and later output is dropped. */
struct out {
	int      fd;
	int      err;
	size_t   len;
	uint8_t *buf;   /* OUT_BUFSZ bytes, on the heap: we may run on a
	                 * fiber's small stack */
};

/* Wait until fd takes more bytes.  POLLERR/POLLHUP also end the wait:
 * the next write() then reports the error.  Returns 0 or -errno. */
static int wait_writable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Write all n bytes: resume after short writes and EINTR, and wait
 * (rather than spin or fail) when a non-blocking fd is full.  Returns 0
 * or -errno. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
	int rc;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w == 0) {
			return -EIO;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if ((rc = wait_writable(fd)) < 0)
				return rc;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

/* Hand the buffered bytes to the fd. */
static void out_flush(struct out *o)
{
	if (o->err == 0 && o->len > 0)
		o->err = write_all(o->fd, o->buf, o->len);
	o->len = 0;
}

/* Append n bytes. */
static void out_put(struct out *o, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0 && o->err == 0) {
		size_t k = OUT_BUFSZ - o->len;

		if (k == 0) {
			out_flush(o);
			continue;
		}
		if (k > n)
			k = n;
		memcpy(o->buf + o->len, b, k);
		o->len += k;
		b += k;
		n -= k;
	}
}

/* Append one byte. */
static void out_u8(struct out *o, uint8_t v)
{
	out_put(o, &v, 1);
}

/* Append the low `bytes` bytes of v, least significant first. */
static void out_le(struct out *o, uint64_t v, size_t bytes)
{
	uint8_t b[8];

	for (size_t i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	out_put(o, b, bytes);
}

/* Append v as unsigned LEB128: 7 bits a byte, low group first, the top
 * bit set on every byte but the last (1 to 10 bytes for a u64). */
static void out_leb128(struct out *o, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n] = v & 0x7f;
		v >>= 7;
		if (v != 0)
			b[n] |= 0x80;
		n++;
	} while (v != 0);
	out_put(o, b, n);
}

/* Start writing to fd: 0 or -ENOMEM. */
static int out_open(struct out *o, int fd)
{
	memset(o, 0, sizeof(*o));
	o->fd = fd;
	o->buf = malloc(OUT_BUFSZ);
	return o->buf != NULL ? 0 : -ENOMEM;
}

/* Flush, free the buffer, and return the first error (or 0). */
static int out_close(struct out *o)
{
	out_flush(o);
	free(o->buf);
	o->buf = NULL;
	return o->err;
}

/* ---------------------------------------------------------------------
 * XTCL v3 (seed 000; see xtc_tail.h):
 *
 *   "XTCL" version=3 flags=1 count base_ts_ns     (LE u32 x3, LE u64)
 *   per event: kind u8, source u8, then LEB128 ts_delta, loop_id,
 *              local_id, gen, detail
 */

#define XTCL_HDR_MAGIC "XTCL"   /* the bytes of XTC_TAIL_MAGIC, big end first */

/*
 * Refuse records that XTCL cannot carry, before writing a byte: kind
 * and source are one byte each on the wire.  Kinds are below 256 by
 * design and a source is one bit of a 4-bit mask, so only a caller that
 * emitted values outside the contract gets -ERANGE; silently truncating
 * them would turn one kind into another.  More than UINT32_MAX records
 * does not fit the count: -EOVERFLOW.
 */
int trace_enc_xtcl_check(const xtc_tail_rec_t *rec, size_t n)
{
	if (n > UINT32_MAX)
		return -EOVERFLOW;
	for (size_t i = 0; i < n; i++)
		if (rec[i].kind > UINT8_MAX || rec[i].source > UINT8_MAX)
			return -ERANGE;
	return 0;
}

/* The 24-byte header. */
static void xtcl_header(struct out *o, uint32_t count, uint64_t base_ts_ns)
{
	out_put(o, XTCL_HDR_MAGIC, 4);
	out_le(o, XTC_TAIL_VERSION, 4);
	out_le(o, XTC_TAIL_FLAG_LE, 4);
	out_le(o, count, 4);
	out_le(o, base_ts_ns, 8);
}

/*
 * One event.  *cur is the timestamp a reader reconstructs for the event
 * before (the base for the first).
 *
 * ts_delta is unsigned, and nothing guarantees ts_ns never goes backwards
 * from one record to the next: records come from several rings merged by
 * time, stamped on different CPUs.  A backwards step is clamped to a delta
 * of 0, so the reader sees that event at the previous event's time.  *cur
 * follows what the reader reconstructs (the running maximum), not the raw
 * stamp, so one clamped event does not shift any later one.
 */
static void xtcl_event(struct out *o, const xtc_tail_rec_t *r, uint64_t *cur)
{
	uint64_t delta = r->ts_ns > *cur ? r->ts_ns - *cur : 0;

	*cur += delta;
	out_u8(o, (uint8_t)r->kind);
	out_u8(o, (uint8_t)r->source);
	out_leb128(o, delta);
	out_leb128(o, r->pid.loop_id);
	out_leb128(o, r->pid.local_id);
	out_leb128(o, r->pid.gen);
	out_leb128(o, r->detail);
}

/* Write the XTCL dump of rec[0..n), checked by trace_enc_xtcl_check(). */
int trace_enc_xtcl_write(int fd, const xtc_tail_rec_t *rec, size_t n)
{
	uint64_t cur = n > 0 ? rec[0].ts_ns : 0;
	struct out o;
	int rc;

	if ((rc = out_open(&o, fd)) < 0)
		return rc;
	xtcl_header(&o, (uint32_t)n, cur);
	for (size_t i = 0; i < n; i++)
		xtcl_event(&o, &rec[i], &cur);
	return out_close(&o);
}

/* ---------------------------------------------------------------------
 * The dial9 trace format, version 1.
 *
 * Followed: dial9-trace-format/SPEC.md ("Version: 1") of the dial9 project
 * (github.com/dial9-rs/dial9), cross-checked against its Rust codec
 * (dial9-trace-format/src/codec.rs, types.rs) and its JS decoder
 * (js/decode.js).  Sections used:
 *
 *   Header            "TRC\0" then the version byte 0x01: 5 bytes.
 *   Frames            a 1-byte tag: 0x01 schema, 0x02 event, 0x03 string
 *                     pool, 0x05 timestamp reset, 0x06 schema annotations.
 *   Schema Frame      type_id u16, name_len u16, name, has_timestamp u8,
 *                     field_count u16, then per field name_len u16, name,
 *                     field_type u8.  It must come before the first event
 *                     of its type_id; we write it just before that event.
 *   Event Frame       type_id u16, timestamp_delta_ns u24 (every schema
 *                     here has has_timestamp = 1), then the values in
 *                     schema order.
 *   String Pool       count u32, then per entry pool_id u32, data_len u32,
 *                     data.
 *   Timestamp Reset   timestamp_ns u64.  "Timestamp Encoding": the base
 *                     starts at 0 and advances to each event's time; a
 *                     reset precedes any event whose delta would exceed
 *                     0xFFFFFF ns or go backwards.  So, unlike XTCL,
 *                     dial9 keeps a backwards step exactly.
 *   Schema Annotations  type_id LEB128, count u16, then per entry
 *                     field_index u16, key_len u16, key, value_len u32,
 *                     value; key "unit", values ns / bytes.
 *   Field Types       3 Bool (1 byte), 7 PooledString (u32 pool id),
 *                     9 Varint (unsigned LEB128), 11 U8.
 *   All multi-byte integers are little-endian.
 *
 * Names.  dial9's viewer (trace_parser.js) and its Rust analysis pick out
 * PollStartEvent, PollEndEvent, TaskSpawnEvent, TaskTerminateEvent and
 * WakeEventEvent by name and read their fields by name; the viewer fails
 * on a missing numeric field, and older Rust decoders read by position.
 * So those events carry Tokio's fields first, in Tokio's order and types
 * (dial9-tokio-telemetry src/telemetry/format.rs), then ours.  The other
 * kinds are Xtc*Event, which the viewer lists as custom events with all
 * their fields.  Our fields: worker_id (pid.loop_id), local_id, gen,
 * detail, source; XtcEvent, for a kind this table does not know, adds kind.
 */

#define D9_VERSION          1
#define D9_TAG_SCHEMA       0x01
#define D9_TAG_EVENT        0x02
#define D9_TAG_STRING_POOL  0x03
#define D9_TAG_TS_RESET     0x05
#define D9_TAG_ANNOTATIONS  0x06
#define D9_MAX_DELTA        0xFFFFFFu

#define D9_FT_BOOL          3
#define D9_FT_POOLED_STRING 7
#define D9_FT_VARINT        9
#define D9_FT_U8            11

#define D9_POOL_SPAWN_LOC   0        /* pool id of the spawn_loc we report */
#define D9_SPAWN_LOC        "xtc"
#define D9_WORKER_UNKNOWN   255      /* Tokio's u8 "unknown worker" */

struct d9_field {
	const char *name;
	uint8_t     type;
};

/* The Tokio-shaped fields that lead a viewer-recognised event. */
enum d9_lead { LEAD_NONE, LEAD_SPAWN, LEAD_TERMINATE, LEAD_WAKE, LEAD_POLL_START, LEAD_POLL_END };

static const struct d9_field lead_spawn[] = {
	{ "task_id", D9_FT_VARINT }, { "spawn_loc", D9_FT_POOLED_STRING },
	{ "instrumented", D9_FT_BOOL },
};
static const struct d9_field lead_terminate[] = {
	{ "task_id", D9_FT_VARINT },
};
static const struct d9_field lead_wake[] = {
	{ "waker_task_id", D9_FT_VARINT }, { "woken_task_id", D9_FT_VARINT },
	{ "target_worker", D9_FT_U8 },
};
static const struct d9_field lead_poll_start[] = {
	{ "worker_id", D9_FT_VARINT }, { "local_queue", D9_FT_U8 },
	{ "task_id", D9_FT_VARINT }, { "spawn_loc", D9_FT_POOLED_STRING },
};
static const struct d9_field lead_poll_end[] = {
	{ "worker_id", D9_FT_VARINT },
};

static const struct {
	const struct d9_field *f;
	uint16_t               n;
	uint16_t               has_worker;   /* leads with worker_id */
} d9_leads[] = {
	[LEAD_NONE]       = { NULL, 0, 0 },
	[LEAD_SPAWN]      = { lead_spawn, 3, 0 },
	[LEAD_TERMINATE]  = { lead_terminate, 1, 0 },
	[LEAD_WAKE]       = { lead_wake, 3, 0 },
	[LEAD_POLL_START] = { lead_poll_start, 4, 1 },
	[LEAD_POLL_END]   = { lead_poll_end, 1, 1 },
};

/* Our fields, after the lead; worker_id is left out when the lead has it. */
static const struct d9_field d9_own[] = {
	{ "worker_id", D9_FT_VARINT }, { "local_id", D9_FT_VARINT },
	{ "gen", D9_FT_VARINT }, { "detail", D9_FT_VARINT },
	{ "source", D9_FT_VARINT },
};
#define D9_OWN_N      5
#define D9_OWN_DETAIL 3
static const struct d9_field d9_kind_field = { "kind", D9_FT_VARINT };

#define D9_GENERIC XTC_TAIL_NKINDS   /* type id of XtcEvent */

/*
 * One schema per kind; its type_id is the kind (D9_GENERIC for any kind
 * past the table).  RUN is a proc starting to run on its loop and PARK is
 * it stopping, which is what a Tokio poll start/end is to the viewer.
 */
static const struct {
	const char *name;
	uint8_t     lead;
	const char *detail_unit;   /* "unit" annotation of detail, or NULL */
} d9_types[] = {
	[XTC_TAIL_SPAWN]          = { "TaskSpawnEvent", LEAD_SPAWN, NULL },
	[XTC_TAIL_EXIT]           = { "TaskTerminateEvent", LEAD_TERMINATE, NULL },
	[XTC_TAIL_WAKE]           = { "WakeEventEvent", LEAD_WAKE, NULL },
	[XTC_TAIL_RUN]            = { "PollStartEvent", LEAD_POLL_START, "ns" },
	[XTC_TAIL_PARK]           = { "PollEndEvent", LEAD_POLL_END, NULL },
	[XTC_TAIL_SEND]           = { "XtcSendEvent", LEAD_NONE, "bytes" },
	[XTC_TAIL_RECV]           = { "XtcRecvEvent", LEAD_NONE, "bytes" },
	[XTC_TAIL_MBOX_HWM]       = { "XtcMboxHwmEvent", LEAD_NONE, NULL },
	[XTC_TAIL_LOOP_POLL]      = { "XtcLoopPollEvent", LEAD_NONE, NULL },
	[XTC_TAIL_PARK_TASK]      = { "XtcParkTaskEvent", LEAD_NONE, NULL },
	[XTC_TAIL_REAP]           = { "XtcReapEvent", LEAD_NONE, NULL },
	[XTC_TAIL_SUBMIT]         = { "XtcSubmitEvent", LEAD_NONE, NULL },
	[XTC_TAIL_SUBMIT_FAIL]    = { "XtcSubmitFailEvent", LEAD_NONE, NULL },
	[XTC_TAIL_POLL_FULL]      = { "XtcPollFullEvent", LEAD_NONE, NULL },
	[XTC_TAIL_LIFECYCLE_DROP] = { "XtcLifecycleDropEvent", LEAD_NONE, NULL },
	[XTC_TAIL_LOOP_WAIT]      = { "XtcLoopWaitEvent", LEAD_NONE, NULL },
	[XTC_TAIL_LOOP_WAKE]      = { "XtcLoopWakeEvent", LEAD_NONE, "ns" },
	[XTC_TAIL_LOOP_DISPATCH]  = { "XtcLoopDispatchEvent", LEAD_NONE, "ns" },
	[XTC_TAIL_CB_BEGIN]       = { "XtcCallbackBeginEvent", LEAD_NONE, "ns" },
	[XTC_TAIL_CB_END]         = { "XtcCallbackEndEvent", LEAD_NONE, "ns" },
	[XTC_TAIL_CB_FUNC]        = { "XtcCallbackFuncEvent", LEAD_NONE, NULL },
	[XTC_TAIL_WATCH_START]    = { "XtcWatchStartEvent", LEAD_NONE, NULL },
	[XTC_TAIL_WATCH_STOP]     = { "XtcWatchStopEvent", LEAD_NONE, NULL },
	[D9_GENERIC]              = { "XtcEvent", LEAD_NONE, NULL },
};

_Static_assert(sizeof(d9_types) / sizeof(d9_types[0]) == D9_GENERIC + 1,
               "every kind needs a dial9 schema name");
_Static_assert(D9_GENERIC < 32, "the registered set is a 32-bit mask");

/*
 * WAKE carries a task pointer, not a pid (see xtc_tail.h); the PARK_TASK
 * a fiber emits before parking pairs that pointer with its pid.  The
 * viewer links a wake to the task it woke by woken_task_id, so the dump
 * performs that join: task pointer -> task id of the proc that last
 * parked as it, earlier in the records.  Open addressing, at most half
 * full.
 */
struct join {
	struct join_slot {
		uint64_t task;      /* 0: empty (0 is never a task) */
		uint64_t task_id;
	} *slot;
	size_t mask;
};

/* Size the join for the PARK_TASKs of rec[0..count).  Returns 0 or
 * -ENOMEM. */
static int join_init(struct join *j, const xtc_tail_rec_t *rec, size_t count)
{
	size_t n = 0, cap = 16;

	for (size_t i = 0; i < count; i++)
		n += rec[i].kind == XTC_TAIL_PARK_TASK;
	while (cap < 2 * n) {
		if (cap > SIZE_MAX / 2 / sizeof(*j->slot))
			return -ENOMEM;
		cap *= 2;
	}
	j->slot = calloc(cap, sizeof(*j->slot));
	j->mask = cap - 1;
	return j->slot != NULL ? 0 : -ENOMEM;
}

/* The slot of task: where it is, or the empty slot it would go in. */
static struct join_slot *join_slot(const struct join *j, uint64_t task)
{
	uint64_t h = task * 0x9E3779B97F4A7C15u;
	size_t i = (size_t)(h ^ (h >> 32)) & j->mask;

	while (j->slot[i].task != 0 && j->slot[i].task != task)
		i = (i + 1) & j->mask;
	return &j->slot[i];
}

/* Remember that the proc with task_id parked as task. */
static void join_put(struct join *j, uint64_t task, uint64_t task_id)
{
	struct join_slot *e;

	if (task == 0)
		return;
	e = join_slot(j, task);
	e->task = task;
	e->task_id = task_id;
}

/* The task id that parked as task, or 0 when the records do not say. */
static uint64_t join_find(const struct join *j, uint64_t task)
{
	return task != 0 ? join_slot(j, task)->task_id : 0;
}

/* The encoder's state over one trace. */
struct d9 {
	struct out  *o;
	uint64_t     base;         /* timestamp base, as the decoder has it */
	uint32_t     registered;   /* type ids whose schema is written */
	struct join  join;
};

/* The task id the viewer keys a proc by: its loop and slot.  Exact as a
 * u64; the viewer's JS numbers keep 53 bits of it.  gen is not in it (it
 * has its own field), so a reused slot reads as the same task there. */
static uint64_t d9_task_id(xtc_pid_t pid)
{
	return (uint64_t)pid.loop_id << 32 | pid.local_id;
}

/* A u16-length-prefixed string. */
static void d9_str16(struct out *o, const char *s)
{
	size_t n = strlen(s);

	out_le(o, n, 2);
	out_put(o, s, n);
}

/* One FieldDef of a schema frame. */
static void d9_fielddef(struct out *o, const struct d9_field *f)
{
	d9_str16(o, f->name);
	out_u8(o, f->type);
}

/* The file header and the string pool holding our one spawn location. */
static void d9_header(struct out *o)
{
	static const uint8_t magic[4] = { 'T', 'R', 'C', '\0' };

	out_put(o, magic, sizeof(magic));
	out_u8(o, D9_VERSION);
	out_u8(o, D9_TAG_STRING_POOL);
	out_le(o, 1, 4);
	out_le(o, D9_POOL_SPAWN_LOC, 4);
	out_le(o, strlen(D9_SPAWN_LOC), 4);
	out_put(o, D9_SPAWN_LOC, strlen(D9_SPAWN_LOC));
}

/* A schema annotations frame with one "unit" entry. */
static void d9_unit(struct out *o, unsigned id, unsigned field, const char *unit)
{
	out_u8(o, D9_TAG_ANNOTATIONS);
	out_leb128(o, id);
	out_le(o, 1, 2);
	out_le(o, field, 2);
	d9_str16(o, "unit");
	out_le(o, strlen(unit), 4);
	out_put(o, unit, strlen(unit));
}

/* The schema frame of type id (and its annotations). */
static void d9_schema(struct d9 *d, unsigned id)
{
	unsigned lead = d9_types[id].lead;
	unsigned skip = d9_leads[lead].has_worker;   /* of d9_own */
	unsigned nf = d9_leads[lead].n + D9_OWN_N - skip + (id == D9_GENERIC);
	struct out *o = d->o;

	out_u8(o, D9_TAG_SCHEMA);
	out_le(o, id, 2);
	d9_str16(o, d9_types[id].name);
	out_u8(o, 1);   /* has_timestamp */
	out_le(o, nf, 2);
	for (unsigned i = 0; i < d9_leads[lead].n; i++)
		d9_fielddef(o, &d9_leads[lead].f[i]);
	for (unsigned i = skip; i < D9_OWN_N; i++)
		d9_fielddef(o, &d9_own[i]);
	if (id == D9_GENERIC)
		d9_fielddef(o, &d9_kind_field);
	if (d9_types[id].detail_unit != NULL)
		d9_unit(o, id, d9_leads[lead].n + D9_OWN_DETAIL - skip, d9_types[id].detail_unit);
	d->registered |= 1u << id;
}

/* The u24 delta of an event at ts, after a timestamp reset frame when
 * the delta would not fit or would go backwards. */
static uint32_t d9_delta(struct d9 *d, uint64_t ts)
{
	uint64_t delta;

	if (ts < d->base || ts - d->base > D9_MAX_DELTA) {
		out_u8(d->o, D9_TAG_TS_RESET);
		out_le(d->o, ts, 8);
		d->base = ts;
	}
	delta = ts - d->base;
	d->base = ts;
	return (uint32_t)delta;
}

/* The Tokio-shaped leading values of r. */
static void d9_lead_values(struct d9 *d, unsigned lead, const xtc_tail_rec_t *r)
{
	struct out *o = d->o;
	uint32_t loop = r->pid.loop_id;

	switch (lead) {
	case LEAD_SPAWN:
		out_leb128(o, d9_task_id(r->pid));
		out_le(o, D9_POOL_SPAWN_LOC, 4);
		out_u8(o, 0);   /* instrumented: not a dial9-wrapped future */
		break;
	case LEAD_TERMINATE:
		out_leb128(o, d9_task_id(r->pid));
		break;
	case LEAD_WAKE:
		out_leb128(o, 0);   /* waker: dispatch holds no task */
		out_leb128(o, join_find(&d->join, r->detail));
		out_u8(o, loop < D9_WORKER_UNKNOWN ? (uint8_t)loop : D9_WORKER_UNKNOWN);
		break;
	case LEAD_POLL_START:
		out_leb128(o, loop);
		out_u8(o, 0);   /* local_queue: not recorded */
		out_leb128(o, d9_task_id(r->pid));
		out_le(o, D9_POOL_SPAWN_LOC, 4);
		break;
	case LEAD_POLL_END:
		out_leb128(o, loop);
		break;
	}
}

/* One record: its schema if it is the first of its type, then the event. */
static void d9_event(struct d9 *d, const xtc_tail_rec_t *r)
{
	unsigned id = r->kind < D9_GENERIC ? r->kind : D9_GENERIC;
	unsigned lead = d9_types[id].lead;
	struct out *o = d->o;
	uint32_t delta;

	if (!(d->registered & (1u << id)))
		d9_schema(d, id);
	if (r->kind == XTC_TAIL_PARK_TASK)
		join_put(&d->join, r->detail, d9_task_id(r->pid));
	delta = d9_delta(d, r->ts_ns);
	out_u8(o, D9_TAG_EVENT);
	out_le(o, id, 2);
	out_le(o, delta, 3);
	d9_lead_values(d, lead, r);
	if (!d9_leads[lead].has_worker)
		out_leb128(o, r->pid.loop_id);
	out_leb128(o, r->pid.local_id);
	out_leb128(o, r->pid.gen);
	out_leb128(o, r->detail);
	out_leb128(o, r->source);
	if (id == D9_GENERIC)
		out_leb128(o, r->kind);
}

/* Write the dial9 trace of rec[0..n). */
int trace_enc_dial9_write(int fd, const xtc_tail_rec_t *rec, size_t n)
{
	struct out o;
	struct d9 d = { .o = &o };
	int rc;

	if ((rc = join_init(&d.join, rec, n)) < 0)
		return rc;
	if ((rc = out_open(&o, fd)) < 0) {
		free(d.join.slot);
		return rc;
	}
	d9_header(&o);
	for (size_t i = 0; i < n; i++)
		d9_event(&d, &rec[i]);
	free(d.join.slot);
	return out_close(&o);
}
