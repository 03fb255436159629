/*
 * xtcd/read/ship_rows.c - the ClickHouse schema of xtcd --ship, and one
 * JSONEachRow line per record.
 *
 * Three tables, all ReplacingMergeTree on a key that names the record for
 * good, so rows sent twice collapse (at merges, and at once under FINAL):
 *
 *   events    one row per event record.  ORDER BY (host, time, boot_id,
 *             seg_ns, seg, blk, idx): the questions are "this host (or all)
 *             in this window", so host and time lead and prune; the rest
 *             makes the key unique.  Partitioned by day, which is also
 *             what to drop when a fleet's history is too long.
 *   sessions  one row per session: its start (ended = 0), replaced by its
 *             end (ended = 1, the version column) when that comes.
 *   drops     what is missing from events and why: ring drops ('drop'),
 *             corrupt rings ('corrupt'), history xtcd deleted under the
 *             byte budget ('evicted', count = the event records it held)
 *             and segments deleted before this shipper sent them
 *             ('unshipped': the loss in ClickHouse that the host's disk
 *             does not show).
 *
 * ClickHouse 18.16 (Debian 12) has no DateTime64 and no insert
 * deduplication outside replicated tables: times are UInt64 ns next to a
 * DateTime second for partitions and windows, and deduplication is the
 * table engine's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/seg/segname.h"
#include "xtcd/read/print.h"
#include "xtcd/read/ship.h"

#define NS UINT64_C(1000000000)

static const char *const names[SHIP_NTABLES] = { "events", "sessions", "drops" };

static const char *const sql[SHIP_NTABLES] = {
	[SHIP_EVENTS] =
	"CREATE TABLE IF NOT EXISTS events ("
	"host String, boot_id String, seg_ns UInt64, seg UInt64, blk UInt64, idx UInt32, "
	"session UInt64, pid UInt32, uid UInt32, comm String, "
	"ring UInt32, ring_loop UInt32, loop UInt32, local_id UInt32, gen UInt64, "
	"time DateTime, wall_ns UInt64, ts_ns UInt64, "
	"kind String, source UInt32, detail UInt64"
	") ENGINE = ReplacingMergeTree PARTITION BY toYYYYMMDD(time) "
	"ORDER BY (host, time, boot_id, seg_ns, seg, blk, idx)",
	[SHIP_SESSIONS] =
	"CREATE TABLE IF NOT EXISTS sessions ("
	"host String, boot_id String, session UInt64, pid UInt32, uid UInt32, comm String, "
	"start DateTime, start_ns UInt64, end_ns UInt64, reason String, "
	"produced UInt64, written UInt64, dropped UInt64, lost UInt64, "
	"complete UInt8, ended UInt8"
	") ENGINE = ReplacingMergeTree(ended) PARTITION BY toYYYYMM(start) "
	"ORDER BY (host, boot_id, session)",
	[SHIP_DROPS] =
	"CREATE TABLE IF NOT EXISTS drops ("
	"host String, boot_id String, seg_ns UInt64, seg UInt64, blk UInt64, what String, "
	"session UInt64, pid UInt32, comm String, ring UInt32, ring_loop UInt32, "
	"count UInt64, time DateTime, from_ns UInt64, to_ns UInt64, cause String, "
	"first_seq UInt64, last_seq UInt64, bytes UInt64"
	") ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(time) "
	"ORDER BY (host, boot_id, seg_ns, seg, blk, what)",
};

const char *ship_table_name(enum ship_table t)
{
	return names[t];
}

const char *ship_table_sql(enum ship_table t)
{
	return sql[t];
}

/* A NUL-padded field as a JSON string. */
static void json_field(FILE *out, const char *s, size_t max)
{
	print_json_string(out, s, strnlen(s, max));
}

static void hex16(char *out, const uint8_t *id)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* The key columns every events and drops row starts with. */
static void key_cols(FILE *out, const struct ship_key *k)
{
	fputs("{\"host\":", out);
	print_json_string(out, k->host, strlen(k->host));
	fprintf(out, ",\"boot_id\":\"%s\",\"seg_ns\":%" PRIu64 ",\"seg\":%" PRIu64
	        ",\"blk\":%" PRIu64, k->boot, k->seg_ns, k->seg, k->blk);
}

/* pid, uid and comm of the item's session (zeros when it was never seen). */
static void who_cols(FILE *out, const struct segread_session *s, int uid)
{
	fprintf(out, ",\"pid\":%" PRIu32, s ? s->start.pid : 0);
	if (uid)
		fprintf(out, ",\"uid\":%" PRIu32, s ? s->start.uid : 0);
	fputs(",\"comm\":", out);
	json_field(out, s ? s->start.comm : "", sizeof(s->start.comm));
}

static void event_row(FILE *out, const struct ship_key *k, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	uint64_t wall = it->has_real ? it->real_ns : 0;
	char kb[24];

	key_cols(out, k);
	fprintf(out, ",\"idx\":%" PRIu32 ",\"session\":%" PRIu64, k->idx, it->u.event.session_id);
	who_cols(out, it->session, 1);
	fprintf(out, ",\"ring\":%" PRIu32 ",\"ring_loop\":%" PRIu32 ",\"loop\":%" PRIu32
	        ",\"local_id\":%" PRIu32 ",\"gen\":%" PRIu64 ",\"time\":%" PRIu64
	        ",\"wall_ns\":%" PRIu64 ",\"ts_ns\":%" PRIu64 ",\"kind\":\"%s\",\"source\":%" PRIu32
	        ",\"detail\":%" PRIu64 "}\n", it->u.event.ring, it->u.event.loop_id, r->pid.loop_id,
	        r->pid.local_id, r->pid.gen, wall / NS, wall, r->ts_ns,
	        segname_kind(r->kind, kb, sizeof(kb)), r->source, r->detail);
}

/* The columns a session's start and end rows share. */
static void session_cols(FILE *out, const struct ship_key *k, uint64_t id,
                         const struct xtc_seg_session_start *ss, const uint8_t *boot)
{
	uint64_t start = 0;
	char b[33];

	hex16(b, boot);
	if (ss)
		start = ss->anchor_real_ns + (ss->start_mono_ns - ss->anchor_mono_ns);
	fputs("{\"host\":", out);
	print_json_string(out, k->host, strlen(k->host));
	fprintf(out, ",\"boot_id\":\"%s\",\"session\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"uid\":%"
	        PRIu32 ",\"comm\":", b, id, ss ? ss->pid : 0, ss ? ss->uid : 0);
	json_field(out, ss ? ss->comm : "", 16);
	fprintf(out, ",\"start\":%" PRIu64 ",\"start_ns\":%" PRIu64, start / NS, start);
}

static void start_row(FILE *out, const struct ship_key *k, const struct segread_item *it)
{
	const struct xtc_seg_session_start *ss = it->u.start.ss;

	session_cols(out, k, ss->session_id, ss, ss->boot_id);
	fputs(",\"end_ns\":0,\"reason\":\"\",\"produced\":0,\"written\":0,\"dropped\":0,"
	      "\"lost\":0,\"complete\":0,\"ended\":0}\n", out);
}

static void end_row(FILE *out, const struct ship_key *k, const struct segread_item *it)
{
	const struct xtc_seg_session_end *e = &it->u.end;
	const struct segread_session *s = it->session;
	uint8_t boot[16];
	char rb[24];

	/* The session's own boot, as its start row has it; without a start
	 * (evicted), the segment's, which is the same host's. */
	if (s)
		memcpy(boot, s->start.boot_id, 16);
	else
		for (int i = 0; i < 16; i++)
			sscanf(k->boot + 2 * i, "%2hhx", &boot[i]);
	session_cols(out, k, e->session_id, s ? &s->start : NULL, boot);
	fprintf(out, ",\"end_ns\":%" PRIu64 ",\"reason\":\"%s\",\"produced\":%" PRIu64
	        ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"lost\":%" PRIu64
	        ",\"complete\":%d,\"ended\":1}\n", it->has_real ? it->real_ns : 0,
	        segname_end_reason(e->reason, rb, sizeof(rb)), e->produced, e->written,
	        e->dropped, e->lost, e->complete ? 1 : 0);
}

/* The columns of a drops row after the key and what. */
static void loss_cols(FILE *out, uint64_t session, const struct segread_session *s,
                      uint32_t ring, uint32_t loop, uint64_t count, uint64_t from, uint64_t to,
                      const char *cause)
{
	fprintf(out, ",\"session\":%" PRIu64, session);
	who_cols(out, s, 0);
	fprintf(out, ",\"ring\":%" PRIu32 ",\"ring_loop\":%" PRIu32 ",\"count\":%" PRIu64
	        ",\"time\":%" PRIu64 ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64 ",\"cause\":\"%s\"",
	        ring, loop, count, from / NS, from, to, cause);
}

static void drop_row(FILE *out, const struct ship_key *k, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	const struct segread_session *s = it->session;
	uint64_t from = it->has_real ? it->real_ns : k->seg_ns;
	uint64_t to = s ? segread_wall(s, d->to_ts_ns) : from;
	char cb[24];

	key_cols(out, k);
	fputs(",\"what\":\"drop\"", out);
	loss_cols(out, d->session_id, s, d->ring, d->loop_id, d->count, from, to,
	          segname_drop_cause(d->cause, cb, sizeof(cb)));
	fputs(",\"first_seq\":0,\"last_seq\":0,\"bytes\":0}\n", out);
}

/* EVICTED and CORRUPT carry no time: they are placed at their segment's
 * creation, which is as deterministic as the rest of the key. */
static void evicted_row(FILE *out, const struct ship_key *k, const struct segread_item *it)
{
	const struct xtc_seg_evicted *ev = &it->u.evicted.ev;

	key_cols(out, k);
	fputs(",\"what\":\"evicted\"", out);
	loss_cols(out, 0, NULL, 0, 0, ev->records, k->seg_ns, k->seg_ns, "byte_budget");
	fprintf(out, ",\"first_seq\":%" PRIu64 ",\"last_seq\":%" PRIu64 ",\"bytes\":%" PRIu64 "}\n",
	        ev->first_seq, ev->last_seq, ev->bytes);
}

static void corrupt_row(FILE *out, const struct ship_key *k, const struct segread_item *it)
{
	const struct xtc_seg_corrupt *c = &it->u.corrupt;
	char rb[24];

	key_cols(out, k);
	fputs(",\"what\":\"corrupt\"", out);
	loss_cols(out, c->session_id, it->session, c->ring, 0, 0, k->seg_ns, k->seg_ns,
	          segname_corrupt_reason(c->reason, rb, sizeof(rb)));
	fputs(",\"first_seq\":0,\"last_seq\":0,\"bytes\":0}\n", out);
}

int ship_row_table(const struct segread_item *it)
{
	switch (it->type) {
	case SEGREAD_EVENT:
		return SHIP_EVENTS;
	case SEGREAD_SESSION_START: case SEGREAD_SESSION_END:
		return SHIP_SESSIONS;
	case SEGREAD_DROP: case SEGREAD_EVICTED: case SEGREAD_CORRUPT:
		return SHIP_DROPS;
	default:
		return -1;
	}
}

int ship_row(FILE *out, const struct ship_key *k, const struct segread_item *it)
{
	switch (it->type) {
	case SEGREAD_EVENT:
		event_row(out, k, it);
		return SHIP_EVENTS;
	case SEGREAD_SESSION_START:
		start_row(out, k, it);
		return SHIP_SESSIONS;
	case SEGREAD_SESSION_END:
		end_row(out, k, it);
		return SHIP_SESSIONS;
	case SEGREAD_DROP:
		drop_row(out, k, it);
		return SHIP_DROPS;
	case SEGREAD_EVICTED:
		evicted_row(out, k, it);
		return SHIP_DROPS;
	case SEGREAD_CORRUPT:
		corrupt_row(out, k, it);
		return SHIP_DROPS;
	default:
		return -1;
	}
}

void ship_row_unshipped(FILE *out, const char *host, uint64_t first, uint64_t last,
                        uint64_t at, uint64_t real_ns)
{
	struct ship_key k = { .host = host, .boot = "", .seg = first, .blk = at };

	key_cols(out, &k);
	fputs(",\"what\":\"unshipped\"", out);
	loss_cols(out, 0, NULL, 0, 0, last - first + 1, real_ns, real_ns, "deleted_before_shipped");
	fprintf(out, ",\"first_seq\":%" PRIu64 ",\"last_seq\":%" PRIu64 ",\"bytes\":0}\n", first, last);
}
