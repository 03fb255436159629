/*
 * xtcd/read/print.h - print segread items as text lines or JSON objects, one
 * per line.  Shared by the reading modes and the report.
 *
 * Text: one aligned line per item, wall-clock time in local time first:
 *
 *   2026-01-05 10:11:12.123450 ===== SESSION 3 START pid=4242 comm=demo uid=...
 *   2026-01-05 10:11:12.123456 s3    L0     WAKE           0.0.0            task=0x55d0c0a8
 *   2026-01-05 10:11:12.123458 s3    L-     RUN            -.4.1            12.345us
 *   2026-01-05 10:11:12.123470 s3    L0     ----- DROP count=17 ring=0 cause=ring_full ...
 *   2026-01-05 10:11:13.000000 ===== SESSION 3 END reason=detached produced=... complete=yes
 *
 * (session, the ring's loop or "-" for XTC_TAIL_LOOP_NONE, kind, the proc
 * loop.local.gen, the detail rendered per kind).  Items without a time
 * (EVICTED, CORRUPT) have a blank time column.
 *
 * JSON: one object per line, "type" first, every field by name (kinds,
 * reasons and causes as strings).  Strings from the segments (comm,
 * settings) are untrusted: text mode shows control and non-ASCII bytes as
 * \xHH, JSON as \u00XX, so neither can break a line or a terminal.
 */
#ifndef XTCD_READ_PRINT_H
#define XTCD_READ_PRINT_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/seg/segread.h"

/* Output state: where, how, and a cache of the last second formatted. */
struct printer {
	FILE  *out;
	int    json;
	int    tvalid;
	time_t tsec;
	char   tbuf[40];     /* "YYYY-MM-DD HH:MM:SS" of tsec */
};

/* Set up f to print to out, as JSON when json is nonzero. */
void print_init(struct printer *f, FILE *out, int json);

/* Print one item (SEGMENT_BEGIN prints nothing).  Returns 0, or -errno
 * when writing to the output failed. */
int print_item(struct printer *f, const struct segread_item *it);

/* "YYYY-MM-DD HH:MM:SS.uuuuuu" (local time) of real_ns into buf (>= 48
 * bytes). */
const char *print_time(struct printer *f, uint64_t real_ns, char *buf, size_t len);

/* s[0..len) as a JSON string literal, quotes included. */
void print_json_string(FILE *out, const char *s, size_t len);

/* A kind's detail as text ("task=0x...", "12.345us", "-EAGAIN", ...). */
void print_detail(char *buf, size_t len, uint32_t kind, uint64_t detail);

/* "-EAGAIN" for errno 11 (or "-11" for one glibc cannot name). */
void print_errno_name(char *buf, size_t len, int err);

/* ---- values as text: every mode, the report and --status use these ---- */

/* Wall-clock real_ns in local time: "YYYY-MM-DD HH:MM:SS.uuuuuu" (buf >=
 * 48 bytes), and its time of day "HH:MM:SS.uuuuuu".  print_time() is the
 * same, for a printer. */
const char *print_wall(char *buf, size_t len, uint64_t real_ns);
const char *print_wall_clock(char *buf, size_t len, uint64_t real_ns);

/* A duration in ns as "850ns", "1.250ms", "12.500s", "2m05s", "3h07m",
 * "2d04h". */
const char *print_duration(char *buf, size_t len, uint64_t ns);

/* A loop id, "-" for XTC_TAIL_LOOP_NONE; in JSON the id or -1. */
const char *print_loop(char *buf, size_t len, uint32_t loop_id);
long long print_loop_json(uint32_t loop_id);

/* A proc as "loop.local.gen" (buf >= 48 bytes). */
const char *print_pid(char *buf, size_t len, const xtc_pid_t *pid);

/* A byte count in powers of 1024: "812B", "63.9K", "212.0M", "1.02G". */
const char *print_bytes(char *buf, size_t len, uint64_t n);

/* An adapter's watcher kind (enum xtc_tail_watcher) by name: "io", ... */
const char *print_watcher_name(uint32_t wkind);

/* The pid of a CB_BEGIN, CB_END, WATCH_START or WATCH_STOP record as
 * "LOOP.KIND[:FD].cbN" in buf; 0 (buf untouched) for any other kind. */
int print_watcher_pid(char *buf, size_t len, const xtc_tail_rec_t *r);

#endif /* XTCD_READ_PRINT_H */
