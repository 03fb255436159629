/*
 * xtcd/read/print.c - text and JSON lines for segread items (see print.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* strerrorname_np */
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/seg/segname.h"
#include "xtcd/read/print.h"

#define TIME_WIDTH 26 /* "YYYY-MM-DD HH:MM:SS.uuuuuu" */
#define MAX_EVICTED_IDS_TEXT 16

/* Set up an output. */
void print_init(struct printer *f, FILE *out, int json)
{
	memset(f, 0, sizeof(*f));
	f->out = out;
	f->json = json;
}

/* "YYYY-MM-DD HH:MM:SS" (local time) of second sec, or "@<sec>" when the
 * C library cannot say. */
static void wall_seconds(char *buf, size_t len, time_t sec)
{
	struct tm tm;

	if (!localtime_r(&sec, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "@%lld", (long long)sec);
}

/* Local wall-clock time of real_ns, to the microsecond. */
const char *print_wall(char *buf, size_t len, uint64_t real_ns)
{
	char day[40];

	wall_seconds(day, sizeof(day), (time_t)(real_ns / 1000000000u));
	snprintf(buf, len, "%s.%06u", day, (unsigned)(real_ns % 1000000000u / 1000u));
	return buf;
}

/* The time of day part of print_wall(). */
const char *print_wall_clock(char *buf, size_t len, uint64_t real_ns)
{
	char full[64];
	const char *sp;

	print_wall(full, sizeof(full), real_ns);
	sp = strchr(full, ' ');
	snprintf(buf, len, "%s", sp ? sp + 1 : full);
	return buf;
}

/* print_wall(), formatting each second once: --cat prints many lines a
 * second. */
const char *print_time(struct printer *f, uint64_t real_ns, char *buf, size_t len)
{
	time_t sec = (time_t)(real_ns / 1000000000u);

	if (!f->tvalid || f->tsec != sec) {
		wall_seconds(f->tbuf, sizeof(f->tbuf), sec);
		f->tsec = sec;
		f->tvalid = 1;
	}
	snprintf(buf, len, "%s.%06u", f->tbuf, (unsigned)(real_ns % 1000000000u / 1000u));
	return buf;
}

/* The item's time column, or blanks when it has no time. */
static const char *time_col(struct printer *f, const struct segread_item *it, char *buf,
                            size_t len)
{
	if (it->has_real)
		return print_time(f, it->real_ns, buf, len);
	snprintf(buf, len, "%*s", TIME_WIDTH, "");
	return buf;
}

/* s[0..len) as a JSON string literal. */
void print_json_string(FILE *out, const char *s, size_t len)
{
	putc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '"':  fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		case '\r': fputs("\\r", out); break;
		default:
			if (c < 0x20 || c >= 0x7f)
				fprintf(out, "\\u%04x", c);
			else
				putc(c, out);
		}
	}
	putc('"', out);
}

/* s[0..len) for a text line: printable ASCII as is, the rest as \xHH. */
static void text_string(char *buf, size_t blen, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 5 < blen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c > 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, blen - o, "\\x%02x", c);
	}
	buf[o] = '\0';
}

/* The comm of a session start, up to its first NUL. */
static size_t comm_len(const struct xtc_seg_session_start *ss)
{
	size_t n = 0;

	while (n < sizeof(ss->comm) && ss->comm[n])
		n++;
	return n;
}

/* 16 bytes as 32 lowercase hex digits. */
static void hex16(char out[33], const uint8_t id[16])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 16; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[32] = '\0';
}

/* "-EAGAIN" for errno 11 (or "-11" for one glibc cannot name). */
void print_errno_name(char *buf, size_t len, int err)
{
	const char *name = NULL;

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	name = strerrorname_np(err);
#endif
	if (name)
		snprintf(buf, len, "-%s", name);
	else
		snprintf(buf, len, "-%d", err);
}

/* SUBMIT_FAIL's detail: "-EAGAIN", "short submit: 3 left" or "err=0". */
static void submit_fail_detail(char *buf, size_t len, uint64_t d)
{
	uint64_t left;
	int err;

	if (segname_submit_fail(d, &err, &left))
		snprintf(buf, len, "short submit: %" PRIu64 " left", left);
	else if (err == 0)
		snprintf(buf, len, "err=0");
	else
		print_errno_name(buf, len, err);
}

/* A kind's detail as text. */
void print_detail(char *buf, size_t len, uint32_t kind, uint64_t d)
{
	char tmp[32];

	switch (kind) {
	case XTC_TAIL_SPAWN:
		if (d)
			snprintf(buf, len, "detail=%" PRIu64, d);
		else
			buf[0] = '\0';
		break;
	case XTC_TAIL_EXIT:      snprintf(buf, len, "reason=%" PRIu64, d); break;
	case XTC_TAIL_WAKE:
	case XTC_TAIL_PARK_TASK:
	case XTC_TAIL_REAP:
	case XTC_TAIL_SUBMIT:    snprintf(buf, len, "task=0x%" PRIx64, d); break;
	case XTC_TAIL_RUN:
		snprintf(buf, len, "%" PRIu64 ".%03uus", d / 1000, (unsigned)(d % 1000));
		break;
	case XTC_TAIL_PARK:      snprintf(buf, len, "op=%" PRIu64, d); break;
	case XTC_TAIL_SEND:
	case XTC_TAIL_RECV:      snprintf(buf, len, "%" PRIu64 " bytes", d); break;
	case XTC_TAIL_MBOX_HWM:  snprintf(buf, len, "depth=%" PRIu64, d); break;
	case XTC_TAIL_LOOP_POLL: snprintf(buf, len, "dispatched=%" PRIu64, d); break;
	case XTC_TAIL_SUBMIT_FAIL: submit_fail_detail(buf, len, d); break;
	case XTC_TAIL_POLL_FULL: snprintf(buf, len, "budget=%" PRIu64, d); break;
	case XTC_TAIL_LIFECYCLE_DROP: snprintf(buf, len, "err=%" PRId64, (int64_t)d); break;
	case XTC_TAIL_LOOP_WAKE:  print_duration(tmp, sizeof(tmp), d);
	                          snprintf(buf, len, "blocked=%s", tmp); break;
	case XTC_TAIL_LOOP_DISPATCH:
	case XTC_TAIL_CB_END:     print_duration(tmp, sizeof(tmp), d);
	                          snprintf(buf, len, "took=%s", tmp); break;
	case XTC_TAIL_CB_BEGIN:   print_duration(tmp, sizeof(tmp), d);
	                          snprintf(buf, len, "since_wake=%s", tmp); break;
	case XTC_TAIL_CB_FUNC:    snprintf(buf, len, "fn=0x%" PRIx64, d); break;
	case XTC_TAIL_WATCH_START: snprintf(buf, len, "arg=%" PRIu64, d); break;
	case XTC_TAIL_WATCH_STOP: buf[0] = '\0'; break;
	default:                 snprintf(buf, len, "detail=%" PRIu64, d); break;
	}
}

static const char *const watcher_names[] = {
	"?", "io", "timer", "periodic", "signal", "child", "stat", "idle", "prepare", "check",
	"embed", "fork", "cleanup", "async",
};

/* A watcher kind's name (enum xtc_tail_watcher), "?" for an unknown one. */
const char *print_watcher_name(uint32_t wkind)
{
	return wkind < sizeof(watcher_names) / sizeof(watcher_names[0]) ? watcher_names[wkind] : "?";
}

/* The pid of an adapter's callback or watcher record as
 * "LOOP.KIND[:FD].cbN": 1 when the record is one of those. */
int print_watcher_pid(char *buf, size_t len, const xtc_tail_rec_t *r)
{
	uint32_t no = XTC_TAIL_CB_NO(r->pid.gen);
	char fd[16] = "", cb[16] = "";

	if (r->kind != XTC_TAIL_CB_BEGIN && r->kind != XTC_TAIL_CB_END &&
	    r->kind != XTC_TAIL_WATCH_START && r->kind != XTC_TAIL_WATCH_STOP)
		return 0;
	if (r->pid.local_id != XTC_TAIL_CB_NOFD)
		snprintf(fd, sizeof(fd), ":%" PRIu32, r->pid.local_id);
	if (no != 0xFFFu)
		snprintf(cb, sizeof(cb), ".cb%" PRIu32, no);
	snprintf(buf, len, "%" PRIu32 ".%s%s%s", r->pid.loop_id,
	         print_watcher_name(XTC_TAIL_CB_WKIND(r->pid.gen)), fd, cb);
	return 1;
}

/* A loop id, "-" for XTC_TAIL_LOOP_NONE. */
const char *print_loop(char *buf, size_t len, uint32_t loop_id)
{
	if (loop_id == XTC_TAIL_LOOP_NONE)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%" PRIu32, loop_id);
	return buf;
}

/* A loop id in JSON: the id, or -1 for XTC_TAIL_LOOP_NONE. */
long long print_loop_json(uint32_t loop_id)
{
	return loop_id == XTC_TAIL_LOOP_NONE ? -1 : (long long)loop_id;
}

/* A proc as "loop.local.gen", its loop "-" for none. */
const char *print_pid(char *buf, size_t len, const xtc_pid_t *pid)
{
	char l[16];

	snprintf(buf, len, "%s.%" PRIu32 ".%" PRIu64, print_loop(l, sizeof(l), pid->loop_id),
	         pid->local_id, pid->gen);
	return buf;
}

/* A byte count: "812B", "63.9K", "212.0M", "1.02G", "3.50T" (powers of
 * 1024). */
const char *print_bytes(char *buf, size_t len, uint64_t n)
{
	if (n < 1024)
		snprintf(buf, len, "%" PRIu64 "B", n);
	else if (n < (1u << 20))
		snprintf(buf, len, "%.1fK", (double)n / 1024.0);
	else if (n < (1u << 30))
		snprintf(buf, len, "%.1fM", (double)n / 1048576.0);
	else if (n < (1ULL << 40))
		snprintf(buf, len, "%.2fG", (double)n / 1073741824.0);
	else
		snprintf(buf, len, "%.2fT", (double)n / 1099511627776.0);
	return buf;
}

/* A duration, three decimals below a minute: "850ns", "1.250ms", "2m05s",
 * "3h07m", "2d04h". */
const char *print_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000u)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 1000000u)
		snprintf(buf, len, "%" PRIu64 ".%03uus", ns / 1000, (unsigned)(ns % 1000));
	else if (ns < 1000000000u)
		snprintf(buf, len, "%" PRIu64 ".%03ums", ns / 1000000, (unsigned)(ns / 1000 % 1000));
	else if (ns < 60 * 1000000000ull)
		snprintf(buf, len, "%" PRIu64 ".%03us", ns / 1000000000u,
		         (unsigned)(ns / 1000000 % 1000));
	else if (ns < 3600 * 1000000000ull)
		snprintf(buf, len, "%" PRIu64 "m%02us", ns / UINT64_C(60000000000),
		         (unsigned)(ns / 1000000000u % 60));
	else if (ns < 86400 * 1000000000ull)
		snprintf(buf, len, "%" PRIu64 "h%02um", ns / UINT64_C(3600000000000),
		         (unsigned)(ns / 60000000000ull % 60));
	else
		snprintf(buf, len, "%" PRIu64 "d%02uh", ns / UINT64_C(86400000000000),
		         (unsigned)(ns / 3600000000000ull % 24));
	return buf;
}

/* ---- text ---- */

/* An event line. */
static void fmt_event_text(struct printer *f, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	char t[48], loop[16], kbuf[24], pid[64], det[64];

	if (!print_watcher_pid(pid, sizeof(pid), r))
		print_pid(pid, sizeof(pid), &r->pid);
	print_detail(det, sizeof(det), r->kind, r->detail);
	fprintf(f->out, "%s s%-4" PRIu64 " L%-5s %-14s %-*s%s%s\n", time_col(f, it, t, sizeof(t)),
	        it->u.event.session_id, print_loop(loop, sizeof(loop), it->u.event.loop_id),
	        segname_kind(r->kind, kbuf, sizeof(kbuf)), det[0] ? 16 : 0, pid,
	        det[0] ? " " : "", det);
}

/* A DROP line. */
static void fmt_drop_text(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	char t[48], loop[16], cause[24], win[32];

	if (d->to_ts_ns >= d->from_ts_ns)
		print_duration(win, sizeof(win), d->to_ts_ns - d->from_ts_ns);
	else
		snprintf(win, sizeof(win), "?");
	fprintf(f->out, "%s s%-4" PRIu64 " L%-5s ----- DROP count=%" PRIu64 " ring=%" PRIu32
	        " cause=%s window=%s\n", time_col(f, it, t, sizeof(t)), d->session_id,
	        print_loop(loop, sizeof(loop), d->loop_id), d->count, d->ring,
	        segname_drop_cause(d->cause, cause, sizeof(cause)), win);
}

/* A SESSION START line. */
static void fmt_start_text(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_session_start *ss = it->u.start.ss;
	char t[48], comm[16 * 4 + 1], boot[33];

	text_string(comm, sizeof(comm), ss->comm, comm_len(ss));
	hex16(boot, ss->boot_id);
	fprintf(f->out, "%s ===== SESSION %" PRIu64 " START pid=%" PRIu32 " comm=%s uid=%" PRIu32
	        " gid=%" PRIu32 " rings=%" PRIu32 "x%" PRIu32 " attach=%" PRIu32
	        " dropped_before=%" PRIu64 " boot=%s%s\n", time_col(f, it, t, sizeof(t)),
	        ss->session_id, ss->pid, comm, ss->uid, ss->gid, ss->ring_count,
	        ss->ring_capacity, ss->attach_count, ss->dropped_before, boot,
	        it->u.start.restated ? " (restated)" : "");
}

/* A SESSION END line. */
static void fmt_end_text(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_session_end *e = &it->u.end;
	char t[48], reason[24];

	fprintf(f->out, "%s ===== SESSION %" PRIu64 " END reason=%s produced=%" PRIu64
	        " written=%" PRIu64 " dropped=%" PRIu64 " lost=%" PRIu64 " complete=%s\n",
	        time_col(f, it, t, sizeof(t)), e->session_id,
	        segname_end_reason(e->reason, reason, sizeof(reason)), e->produced,
	        e->written, e->dropped, e->lost, e->complete ? "yes" : "no");
}

/* An EVICTED line (at most MAX_EVICTED_IDS_TEXT session ids). */
static void fmt_evicted_text(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_evicted *ev = &it->u.evicted.ev;
	char t[48];
	uint32_t i;

	fprintf(f->out, "%s ----- EVICTED segments %" PRIu64 "..%" PRIu64 " bytes=%" PRIu64
	        " records=%" PRIu64 " sessions=", time_col(f, it, t, sizeof(t)), ev->first_seq,
	        ev->last_seq, ev->bytes, ev->records);
	for (i = 0; i < ev->session_count && i < MAX_EVICTED_IDS_TEXT; i++)
		fprintf(f->out, "%s%" PRIu64, i ? "," : "", it->u.evicted.ids[i]);
	if (ev->session_count == 0)
		fputs("none", f->out);
	else if (i < ev->session_count)
		fprintf(f->out, ",...(%" PRIu32 " in all)", ev->session_count);
	putc('\n', f->out);
}

/* A SEGMENT END line. */
static void fmt_seg_end_text(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_segment_end *e = &it->u.seg_end;
	char t[48], next[32];

	if (e->next_seq)
		snprintf(next, sizeof(next), "%" PRIu64, e->next_seq);
	else
		snprintf(next, sizeof(next), "none (daemon shutdown)");
	fprintf(f->out, "%s ----- SEGMENT %" PRIu64 " END blocks=%" PRIu64 " next=%s\n",
	        time_col(f, it, t, sizeof(t)), it->seq, e->blocks, next);
}

/* A CORRUPT (ring) line. */
static void fmt_corrupt_text(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_corrupt *c = &it->u.corrupt;
	char t[48], reason[24];

	fprintf(f->out, "%s s%-4" PRIu64 " ----- CORRUPT ring=%" PRIu32 " reason=%s head=%" PRIu64
	        " tail=%" PRIu64 " (no longer drained)\n", time_col(f, it, t, sizeof(t)),
	        c->session_id, c->ring,
	        segname_corrupt_reason(c->reason, reason, sizeof(reason)), c->head, c->tail);
}

/* ---- JSON ---- */

/* An event object. */
static void fmt_event_json(struct printer *f, const struct segread_item *it)
{
	const xtc_tail_rec_t *r = &it->u.event.rec;
	char kbuf[24];

	fprintf(f->out, "{\"type\":\"event\",\"session\":%" PRIu64 ",\"ts_ns\":%" PRIu64
	        ",\"source\":%" PRIu32 ",\"kind\":\"%s\",\"loop_id\":%" PRIu32
	        ",\"local_id\":%" PRIu32 ",\"gen\":%" PRIu64 ",\"detail\":%" PRIu64 "}\n",
	        it->u.event.session_id, r->ts_ns, r->source,
	        segname_kind(r->kind, kbuf, sizeof(kbuf)), r->pid.loop_id, r->pid.local_id,
	        r->pid.gen, r->detail);
}

/* A drop object. */
static void fmt_drop_json(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_drop *d = &it->u.drop;
	char cause[24];

	fprintf(f->out, "{\"type\":\"drop\",\"session\":%" PRIu64 ",\"loop_id\":%" PRIu32
	        ",\"ring\":%" PRIu32 ",\"count\":%" PRIu64 ",\"from_ts_ns\":%" PRIu64
	        ",\"to_ts_ns\":%" PRIu64 ",\"cause\":\"%s\"}\n", d->session_id, d->loop_id,
	        d->ring, d->count, d->from_ts_ns, d->to_ts_ns,
	        segname_drop_cause(d->cause, cause, sizeof(cause)));
}

/* A session_start object. */
static void fmt_start_json(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_session_start *ss = it->u.start.ss;
	char boot[33];

	hex16(boot, ss->boot_id);
	fprintf(f->out, "{\"type\":\"session_start\",\"session\":%" PRIu64 ",\"pid\":%" PRIu32
	        ",\"uid\":%" PRIu32 ",\"gid\":%" PRIu32 ",\"comm\":", ss->session_id, ss->pid,
	        ss->uid, ss->gid);
	print_json_string(f->out, ss->comm, comm_len(ss));
	fprintf(f->out, ",\"boot_id\":\"%s\",\"ring_count\":%" PRIu32 ",\"ring_capacity\":%" PRIu32
	        ",\"start_ts_ns\":%" PRIu64 ",\"anchor_mono_ns\":%" PRIu64
	        ",\"anchor_real_ns\":%" PRIu64 ",\"dropped_before\":%" PRIu64
	        ",\"attach_count\":%" PRIu32 ",\"restated\":%s,\"settings\":", boot,
	        ss->ring_count, ss->ring_capacity, ss->start_mono_ns, ss->anchor_mono_ns,
	        ss->anchor_real_ns, ss->dropped_before, ss->attach_count,
	        it->u.start.restated ? "true" : "false");
	print_json_string(f->out, it->u.start.settings, it->u.start.settings_len);
	fputs("}\n", f->out);
}

/* A session_end object. */
static void fmt_end_json(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_session_end *e = &it->u.end;
	char reason[24];

	fprintf(f->out, "{\"type\":\"session_end\",\"session\":%" PRIu64 ",\"reason\":\"%s\""
	        ",\"produced\":%" PRIu64 ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64
	        ",\"lost\":%" PRIu64 ",\"complete\":%s,\"end_ts_ns\":%" PRIu64 "}\n",
	        e->session_id, segname_end_reason(e->reason, reason, sizeof(reason)),
	        e->produced, e->written, e->dropped, e->lost, e->complete ? "true" : "false",
	        e->end_mono_ns);
}

/* An evicted object. */
static void fmt_evicted_json(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_evicted *ev = &it->u.evicted.ev;

	fprintf(f->out, "{\"type\":\"evicted\",\"first_seq\":%" PRIu64 ",\"last_seq\":%" PRIu64
	        ",\"bytes\":%" PRIu64 ",\"records\":%" PRIu64 ",\"sessions\":[", ev->first_seq,
	        ev->last_seq, ev->bytes, ev->records);
	for (uint32_t i = 0; i < ev->session_count; i++)
		fprintf(f->out, "%s%" PRIu64, i ? "," : "", it->u.evicted.ids[i]);
	fputs("]}\n", f->out);
}

/* A segment_end object. */
static void fmt_seg_end_json(struct printer *f, const struct segread_item *it)
{
	fprintf(f->out, "{\"type\":\"segment_end\",\"seq\":%" PRIu64 ",\"next_seq\":%" PRIu64
	        ",\"blocks\":%" PRIu64 "}\n", it->seq, it->u.seg_end.next_seq,
	        it->u.seg_end.blocks);
}

/* A corrupt object. */
static void fmt_corrupt_json(struct printer *f, const struct segread_item *it)
{
	const struct xtc_seg_corrupt *c = &it->u.corrupt;
	char reason[24];

	fprintf(f->out, "{\"type\":\"corrupt\",\"session\":%" PRIu64 ",\"ring\":%" PRIu32
	        ",\"reason\":\"%s\",\"head\":%" PRIu64 ",\"tail\":%" PRIu64 "}\n", c->session_id,
	        c->ring, segname_corrupt_reason(c->reason, reason, sizeof(reason)), c->head,
	        c->tail);
}

typedef void (*fmt_fn)(struct printer *f, const struct segread_item *it);

/* Formatters by item type: [type][json]. */
static const fmt_fn formatters[][2] = {
	[SEGREAD_EVENT]         = { fmt_event_text, fmt_event_json },
	[SEGREAD_DROP]          = { fmt_drop_text, fmt_drop_json },
	[SEGREAD_SESSION_START] = { fmt_start_text, fmt_start_json },
	[SEGREAD_SESSION_END]   = { fmt_end_text, fmt_end_json },
	[SEGREAD_EVICTED]       = { fmt_evicted_text, fmt_evicted_json },
	[SEGREAD_SEGMENT_END]   = { fmt_seg_end_text, fmt_seg_end_json },
	[SEGREAD_CORRUPT]       = { fmt_corrupt_text, fmt_corrupt_json },
};

/* Print one item; 0 or -errno of a failed write. */
int print_item(struct printer *f, const struct segread_item *it)
{
	size_t t = (size_t)it->type;

	if (t < sizeof(formatters) / sizeof(formatters[0]) && formatters[t][0])
		formatters[t][f->json ? 1 : 0](f, it);
	if (ferror(f->out))
		return errno ? -errno : -EIO;
	return 0;
}
