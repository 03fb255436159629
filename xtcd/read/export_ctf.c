/*
 * xtcd/read/export_ctf.c - xtcd --export ctf DIR OUT: the event records as
 * a CTF 1.8 trace (https://diamon.org/ctf/v1.8.3/) that babeltrace2 and
 * Trace Compass read.
 *
 * OUT (created if missing, refused if not empty) gets:
 *
 *   metadata                          the TSDL description (plain text)
 *   session<S>-loop<L>-ring<R>        one binary stream per loop of each
 *                                     session (per ring, when a loop had
 *                                     several: a ring is what keeps one
 *                                     time order); "noloop" for L none
 *
 * One event class per named kind (SPAWN .. WATCH_STOP, by name, id = kind;
 * OTHER, id SEGNAME_NKINDS, with a kind field, for any kind past those), each with the
 * fields loop_id, local_id, gen (the proc) and detail.  Streams are
 * packets of at most PACKET_BYTES; the packet context says which session
 * (and OS pid), ring and loop the stream is.
 *
 * The clock is the recording host's CLOCK_MONOTONIC in ns, declared with
 * its real offset: the wall-clock time at its zero, from the session's
 * anchor.  Sessions of one host can differ by a little (the wall clock is
 * stepped between attaches, or a reboot), so the offset is the smallest of
 * the exported sessions' and the others' times are moved by the
 * difference: every event keeps its exact wall-clock time, and with one
 * session each timestamp is the recorded CLOCK_MONOTONIC value.
 *
 * A DROP record becomes what LTTng writes for a full ring buffer: the
 * packet ends before the loss and the next packet's context counts the
 * records in events_discarded (a per-stream running total), so
 * babeltrace2 says "Tracer discarded N events between [...] and [...]".
 * A loss after a stream's last event is carried by an empty packet.
 *
 * Two passes: the first finds the clock offset, the second writes.
 * Memory is one packet buffer per stream: it does not grow with the
 * record.  Each packet is appended to its file with its own open(2), so a
 * record of many sessions does not run out of descriptors.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/seg/segname.h"
#include "xtcd/read/export_int.h"

#define CTF_MAGIC     0xC1FC1FC1u
#define PACKET_BYTES  65536u        /* a packet's events, at most */
#define HDR_BYTES     (4 + 4 + 8)   /* packet.header */
#define CTX_BYTES     (6 * 8 + 8 + 4 + 4 + 4)  /* packet.context */
#define EV_BYTES      (2 + 8 + 4 + 4 + 8 + 8)  /* header + fields */
#define KIND_OTHER    SEGNAME_NKINDS /* the event class of kinds past the named */
#define LOOP_NONE     XTC_TAIL_LOOP_NONE

/* One stream: a (session, ring, loop) of the record. */
struct cstream {
	int      used;
	uint64_t session;
	uint32_t ring, loop;
	uint32_t os_pid;
	uint64_t instance;        /* stream_instance_id */
	uint8_t *buf;             /* the packet's events */
	size_t   len;
	uint64_t ts_begin, ts_end;      /* the packet's first and last event */
	uint64_t last_ts;         /* the stream's newest timestamp */
	uint64_t seq;             /* packets written */
	uint64_t discarded;       /* running total of records lost */
	uint64_t disc_written;    /* ... as the last packet said */
	uint64_t events;
};

struct ctf {
	struct export *x;
	const char *out_dir;
	int64_t  offset;          /* wall-clock ns at clock value 0 */
	int      have_offset;
	struct cstream *st;       /* open addressing on (session, ring, loop) */
	size_t   cap, n;
	uint64_t events, packets, drops, dropped, clamped;
	int      err;             /* -errno of a failed write (reported) */
};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }

static size_t st_slot(uint64_t session, uint32_t ring, uint32_t loop, size_t cap)
{
	uint64_t h = session * 0x9E3779B97F4A7C15ull ^ ((uint64_t)ring << 32 | loop) *
	             0xC2B2AE3D27D4EB4Full;

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* Double the stream table; 0 or -ENOMEM. */
static int st_grow(struct ctf *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 64;
	struct cstream *nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		struct cstream *s = &c->st[i];
		size_t j;

		if (!s->used)
			continue;
		for (j = st_slot(s->session, s->ring, s->loop, ncap); nt[j].used; j = (j + 1) & (ncap - 1))
			;
		nt[j] = *s;
	}
	free(c->st);
	c->st = nt;
	c->cap = ncap;
	return 0;
}

/* The stream of (session, ring, loop), made if new; NULL on -ENOMEM. */
static struct cstream *st_get(struct ctf *c, uint64_t session, uint32_t ring, uint32_t loop,
                              const struct segread_session *ss)
{
	struct cstream *s;
	size_t i;

	if (c->cap)
		for (i = st_slot(session, ring, loop, c->cap); c->st[i].used; i = (i + 1) & (c->cap - 1))
			if (c->st[i].session == session && c->st[i].ring == ring && c->st[i].loop == loop)
				return &c->st[i];
	if ((c->n + 1) * 2 > c->cap && st_grow(c) < 0)
		return NULL;
	for (i = st_slot(session, ring, loop, c->cap); c->st[i].used; i = (i + 1) & (c->cap - 1))
		;
	s = &c->st[i];
	memset(s, 0, sizeof(*s));
	if (!(s->buf = malloc(PACKET_BYTES)))
		return NULL;
	s->used = 1;
	s->session = session;
	s->ring = ring;
	s->loop = loop;
	s->os_pid = ss ? ss->start.pid : 0;
	s->instance = c->n++;
	return s;
}

/* The stream's file name. */
static void st_path(const struct ctf *c, const struct cstream *s, char *buf, size_t len)
{
	char lb[16];

	if (s->loop == LOOP_NONE)
		snprintf(lb, sizeof(lb), "noloop");
	else
		snprintf(lb, sizeof(lb), "loop%" PRIu32, s->loop);
	snprintf(buf, len, "%s/session%" PRIu64 "-%s-ring%" PRIu32, c->out_dir, s->session, lb,
	         s->ring);
}

/* Append the stream's packet (maybe empty) to its file. */
static void st_flush(struct ctf *c, struct cstream *s)
{
	uint8_t hdr[HDR_BYTES + CTX_BYTES], *p = hdr;
	uint64_t bits = (uint64_t)(sizeof(hdr) + s->len) * 8;
	char path[4200];
	ssize_t w1 = -1, w2 = 0;
	int fd;

	if (c->err)
		return;
	put32(p, CTF_MAGIC); p += 4;
	put32(p, 0); p += 4;                    /* stream class 0 */
	put64(p, s->instance); p += 8;
	put64(p, s->ts_begin); p += 8;
	put64(p, s->ts_end); p += 8;
	put64(p, bits); p += 8;                 /* content_size */
	put64(p, bits); p += 8;                 /* packet_size */
	put64(p, s->seq); p += 8;
	put64(p, s->discarded); p += 8;
	put64(p, s->session); p += 8;
	put32(p, s->os_pid); p += 4;
	put32(p, s->ring); p += 4;
	put32(p, s->loop);
	st_path(c, s, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	if (fd >= 0) {
		w1 = write(fd, hdr, sizeof(hdr));
		if (w1 == (ssize_t)sizeof(hdr) && s->len)
			w2 = write(fd, s->buf, s->len);
		if (close(fd) != 0)
			w1 = -1;
	}
	if (fd < 0 || w1 != (ssize_t)sizeof(hdr) || w2 != (ssize_t)s->len) {
		c->err = errno ? -errno : -EIO;
		fprintf(stderr, "xtcd: --export ctf: writing %s failed: %s\n", path, strerror(-c->err));
		return;
	}
	c->packets++;
	s->seq++;
	s->disc_written = s->discarded;
	s->len = 0;
	s->ts_begin = s->ts_end = s->last_ts;
}

/* A wall-clock time as a clock value, kept in the stream's order. */
static uint64_t st_time(struct ctf *c, struct cstream *s, uint64_t real)
{
	int64_t v = (int64_t)(real - (uint64_t)c->offset);

	if (v < 0)
		v = 0;
	if ((uint64_t)v < s->last_ts) {
		c->clamped++;
		v = (int64_t)s->last_ts;
	}
	return (uint64_t)v;
}

/* An event record. */
static void ctf_event(struct ctf *c, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	struct cstream *s = st_get(c, it->u.event.session_id, it->u.event.ring,
	                           filter_event_loop(it), it->session);
	uint32_t kind = r->kind < KIND_OTHER ? r->kind : KIND_OTHER;
	uint64_t ts;
	uint8_t *p;

	if (!s) {
		c->x->fatal = -ENOMEM;
		return;
	}
	if (s->len + EV_BYTES + 4 > PACKET_BYTES)
		st_flush(c, s);
	ts = st_time(c, s, it->real_ns);
	if (!s->len)
		s->ts_begin = ts;
	s->ts_end = s->last_ts = ts;
	p = s->buf + s->len;
	put16(p, (uint16_t)kind); p += 2;
	put64(p, ts); p += 8;
	put32(p, r->pid.loop_id); p += 4;
	put32(p, r->pid.local_id); p += 4;
	put64(p, r->pid.gen); p += 8;
	put64(p, r->detail); p += 8;
	if (kind == KIND_OTHER) {
		put32(p, r->kind);
		p += 4;
	}
	s->len = (size_t)(p - s->buf);
	s->events++;
	c->events++;
}

/* A DROP: end the packet before the loss; the next one counts it. */
static void ctf_drop(struct ctf *c, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	struct cstream *s = st_get(c, d->session_id, d->ring, d->loop_id, it->session);

	if (!s) {
		c->x->fatal = -ENOMEM;
		return;
	}
	if (s->len || !s->seq) {
		if (!s->len)      /* nothing yet: an empty first packet, so the loss shows */
			s->ts_begin = s->ts_end = s->last_ts = st_time(c, s, it->real_ns);
		st_flush(c, s);
	}
	s->discarded += d->count;
	c->drops++;
	c->dropped += d->count;
}

static int ctf_item(struct export *x, const struct segread_item *it)
{
	struct ctf *c = x->fmt;

	if (it->type == SEGREAD_EVENT)
		ctf_event(c, it);
	else if (it->type == SEGREAD_DROP)
		ctf_drop(c, it);
	return x->fatal || c->err ? 1 : 0;
}

/* The pre-pass: the smallest wall-minus-monotonic offset of the events. */
static int offset_item(struct export *x, const struct segread_item *it)
{
	struct ctf *c = x->fmt;
	int64_t off;

	if (it->type != SEGREAD_EVENT || !it->has_real)
		return 0;
	off = (int64_t)(it->real_ns - it->u.event.rec.ts_ns);
	if (!c->have_offset || off < c->offset) {
		c->offset = off;
		c->have_offset = 1;
	}
	return 0;
}

/* The TSDL metadata. */
static int ctf_metadata(struct ctf *c, const char *dir)
{
	char path[4200], kb[24];
	int64_t sec = c->offset / (int64_t)EXPORT_NS_PER_S, ns = c->offset % (int64_t)EXPORT_NS_PER_S;
	FILE *m;

	if (ns < 0) {
		ns += (int64_t)EXPORT_NS_PER_S;
		sec--;
	}
	snprintf(path, sizeof(path), "%s/metadata", c->out_dir);
	if (!(m = fopen(path, "we")))
		return -errno;
	fprintf(m, "/* CTF 1.8 */\n\n"
	        "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	        "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	        "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	        "typealias integer { size = 64; align = 8; signed = false; base = 16; } := uint64x_t;\n\n"
	        "trace {\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = le;\n"
	        "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint32_t stream_id;\n"
	        "\t\tuint64_t stream_instance_id;\n\t};\n};\n\n"
	        "env {\n\ttracer_name = \"xtcd\";\n\ttracer_version = \"%s\";\n\txtcd_dir = \"",
	        PACKAGE_VERSION);
	for (const char *p = dir; *p; p++)
		if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			fputc(*p, m);
	fprintf(m, "\";\n};\n\n"
	        "clock {\n\tname = \"monotonic\";\n"
	        "\tdescription = \"CLOCK_MONOTONIC of the recording host; offset: its wall-clock "
	        "time at zero\";\n\tfreq = 1000000000;\n\tprecision = 1;\n"
	        "\toffset_s = %" PRId64 ";\n\toffset = %" PRId64 ";\n\tabsolute = true;\n};\n\n"
	        "typealias integer { size = 64; align = 8; signed = false; "
	        "map = clock.monotonic.value; } := uint64_clock_t;\n\n"
	        "stream {\n\tid = 0;\n\tpacket.context := struct {\n"
	        "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
	        "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
	        "\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
	        "\t\tuint64_t session;\n\t\tuint32_t os_pid;\n\t\tuint32_t ring;\n"
	        "\t\tuint32_t loop;\n\t};\n"
	        "\tevent.header := struct {\n\t\tuint16_t id;\n\t\tuint64_clock_t timestamp;\n\t};\n"
	        "};\n", sec, ns);
	for (uint32_t k = 0; k <= KIND_OTHER; k++)
		fprintf(m, "\nevent {\n\tname = \"%s\";\n\tid = %" PRIu32 ";\n\tstream_id = 0;\n"
		        "\tfields := struct {\n\t\tuint32_t loop_id;\n\t\tuint32_t local_id;\n"
		        "\t\tuint64_t gen;\n\t\tuint64_t detail;\n%s\t};\n};\n",
		        k == KIND_OTHER ? "OTHER" : segname_kind(k, kb, sizeof(kb)), k,
		        k == KIND_OTHER ? "\t\tuint32_t kind;\n" : "");
	if (ferror(m)) {
		fclose(m);
		return -EIO;
	}
	return fclose(m) == 0 ? 0 : -errno;
}

/* Make out_dir, or check that it is an empty directory; 0 or -errno
 * (reported). */
static int ctf_out_dir(const char *out_dir)
{
	struct dirent *de;
	DIR *d;

	if (mkdir(out_dir, 0777) == 0)
		return 0;
	if (errno != EEXIST) {
		fprintf(stderr, "xtcd: --export ctf: cannot make %s: %s\n", out_dir, strerror(errno));
		return -errno;
	}
	if (!(d = opendir(out_dir))) {
		fprintf(stderr, "xtcd: --export ctf: %s: %s: give a new or empty directory\n", out_dir,
		        strerror(errno));
		return -ENOTDIR;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			break;
	closedir(d);
	if (de) {
		fprintf(stderr, "xtcd: --export ctf: %s is not empty: give a new or empty directory, "
		        "so that no other trace's streams mix with this one\n", out_dir);
		return -ENOTEMPTY;
	}
	return 0;
}

/* Flush what every stream holds, then free them. */
static void ctf_finish(struct ctf *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		struct cstream *s = &c->st[i];

		if (!s->used)
			continue;
		if (s->len || !s->seq || s->discarded != s->disc_written)
			st_flush(c, s);
		free(s->buf);
	}
	free(c->st);
}

int export_ctf(struct export *x, const char *dir, const char *out_dir)
{
	struct ctf c;
	int status, ret;

	memset(&c, 0, sizeof(c));
	c.x = x;
	c.out_dir = out_dir;
	x->fmt = &c;
	x->item = offset_item;
	x->quiet = 1;
	if ((status = export_read(x, dir)) < 0)
		return status;
	x->quiet = 0;
	if ((ret = ctf_out_dir(out_dir)) < 0)
		return ret;
	if ((ret = ctf_metadata(&c, dir)) < 0) {
		fprintf(stderr, "xtcd: --export ctf: writing %s/metadata failed: %s\n", out_dir,
		        strerror(-ret));
		return ret;
	}
	x->item = ctf_item;
	status = export_read(x, dir);
	ctf_finish(&c);
	if (c.err)
		return c.err;
	if (status < 0)
		return status;
	if (c.events == 0) {
		fprintf(stderr, "xtcd: no event records matched: the ctf trace in %s holds its metadata "
		        "and no events\n", out_dir);
		return status;
	}
	fprintf(stderr, "xtcd: --export ctf: %" PRIu64 " events in %zu streams (%" PRIu64
	        " packets) in %s; %" PRIu64 " drops (%" PRIu64 " records) as discarded-event "
	        "counts%s\n", c.events, c.n, c.packets, out_dir, c.drops, c.dropped,
	        c.clamped ? "; some records of one ring went back in time and were given its "
	        "last time" : "");
	return status;
}
