/*
 * tests/segwrite.c - xtc-segwrite [--seq N] [--no-end] DIR: write one
 * segment (DIR/xtc-000001.seg, or number N) whose blocks a script on stdin
 * gives, one a line, so that a test can put a DROP exactly where it wants
 * it (first in a stream, after the last event, two in a row, in no ring),
 * or shape a segment as xtcd leaves it mid-write or after a cut back,
 * without racing a real producer:
 *
 *   start SESSION PID                 SESSION_START (4 rings, anchor at 0)
 *   events SESSION RING LOOP TS N     N records of ring RING (bound to LOOP),
 *                                     at TS, TS + 1000, ... ns
 *   drop SESSION RING LOOP COUNT TS   COUNT records lost at TS (ring_full;
 *                                     RING "none" for XTC_SEG_RING_NONE)
 *   end SESSION                       SESSION_END, a clean detach
 *
 * The segment ends with a SEGMENT_END naming N + 1, unless --no-end (as
 * xtcd leaves the segment it is writing).  Exit 0, or 2 with one line on
 * stderr naming the bad line.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/seg/seg.h"

#define REAL_AT_ZERO 1700000000000000000ull /* the wall clock at CLOCK_MONOTONIC 0 */
#define MAX_EVENTS   64                     /* records in one EVENTS block */

static int seg_fd = -1;
static uint64_t blocks;

/* Append a sealed block of a fixed part and an optional tail. */
static void put_block(uint16_t type, const void *fixed, size_t flen, const void *tail,
                      size_t tlen)
{
	size_t len = sizeof(struct xtc_seg_blk_hdr) + flen + tlen;
	uint8_t *blk = calloc(1, len);

	if (!blk) {
		fprintf(stderr, "xtc-segwrite: out of memory\n");
		exit(2);
	}
	memcpy(blk + sizeof(struct xtc_seg_blk_hdr), fixed, flen);
	if (tlen)
		memcpy(blk + sizeof(struct xtc_seg_blk_hdr) + flen, tail, tlen);
	seg_blk_seal_bytes(blk, type, 0, (uint32_t)(flen + tlen));
	if (write(seg_fd, blk, len) != (ssize_t)len) {
		fprintf(stderr, "xtc-segwrite: write: %s\n", strerror(errno));
		exit(2);
	}
	free(blk);
	blocks++;
}

static void put_start(uint64_t session, uint32_t pid)
{
	struct xtc_seg_session_start ss;

	memset(&ss, 0, sizeof(ss));
	ss.session_id = session;
	ss.start_mono_ns = 1000;
	ss.anchor_mono_ns = 1000;
	ss.anchor_real_ns = REAL_AT_ZERO + 1000;
	ss.pid = pid;
	ss.ring_count = 4;
	ss.ring_capacity = 1024;
	ss.ts_unit = 1;
	ss.ts_hz = 1000000000ull;
	memcpy(ss.comm, "segwrite", 8);
	put_block(XTC_BLK_SESSION_START, &ss, sizeof(ss), NULL, 0);
}

static void put_events(uint64_t session, uint32_t ring, uint32_t loop, uint64_t ts, uint32_t n)
{
	static uint64_t index;
	struct xtc_seg_events ev;
	uint8_t body[MAX_EVENTS * SEG_MAX_REC_BYTES];
	struct seg_codec c;
	size_t len = 0;

	memset(&ev, 0, sizeof(ev));
	ev.session_id = session;
	ev.ring = ring;
	ev.loop_id = loop;
	ev.first_index = index;
	ev.first_ts_ns = ts;
	ev.count = n;
	seg_codec_begin(&c, loop, ts);
	for (uint32_t i = 0; i < n; i++) {
		xtc_tail_rec_t r = {
			.ts_ns = ts + 1000 * i, .source = XTC_TAIL_SCHED, .kind = XTC_TAIL_WAKE,
			.pid = { loop, i + 1, 1 }, .detail = index + i,
		};

		len += seg_encode_rec(&c, body + len, &r);
	}
	index += n;
	ev.body_len = (uint32_t)len;
	put_block(XTC_BLK_EVENTS, &ev, sizeof(ev), body, len);
}

static void put_drop(uint64_t session, uint32_t ring, uint32_t loop, uint64_t count, uint64_t ts)
{
	struct xtc_seg_drop d = {
		.session_id = session, .ring = ring, .loop_id = loop, .count = count,
		.from_ts_ns = ts, .to_ts_ns = ts + 1, .cause = ring == XTC_SEG_RING_NONE ?
		XTC_DROP_NO_FREE_RING : XTC_DROP_RING_FULL,
	};

	put_block(XTC_BLK_DROP, &d, sizeof(d), NULL, 0);
}

static void put_end(uint64_t session)
{
	struct xtc_seg_session_end e = {
		.session_id = session, .end_mono_ns = 999999999, .reason = XTC_END_DETACHED,
	};

	put_block(XTC_BLK_SESSION_END, &e, sizeof(e), NULL, 0);
}

/* One script line; 0, or -1 if it is not one. */
static int run_line(const char *l)
{
	uint64_t s, a, b;
	uint32_t ring, loop, n;
	char rs[16];

	if (sscanf(l, "start %" SCNu64 " %" SCNu32, &s, &n) == 2)
		put_start(s, n);
	else if (sscanf(l, "events %" SCNu64 " %" SCNu32 " %" SCNu32 " %" SCNu64 " %" SCNu32,
	                &s, &ring, &loop, &a, &n) == 5 && n >= 1 && n <= MAX_EVENTS)
		put_events(s, ring, loop, a, n);
	else if (sscanf(l, "drop %" SCNu64 " %15s %" SCNu32 " %" SCNu64 " %" SCNu64, &s, rs, &loop,
	                &a, &b) == 5)
		put_drop(s, strcmp(rs, "none") == 0 ? XTC_SEG_RING_NONE : (uint32_t)strtoul(rs, NULL, 10),
		         loop, a, b);
	else if (sscanf(l, "end %" SCNu64, &s) == 1)
		put_end(s);
	else if (l[0] != '\n' && l[0] != '#')
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct xtc_seg_file_hdr h;
	struct xtc_seg_segment_end e = { .end_mono_ns = 999999999 };
	uint8_t boot[16] = { 1, 2, 3 };
	char path[4200], line[256];
	unsigned lineno = 0;
	uint64_t seq = 1;
	int with_end = 1, a = 1;

	for (; a + 1 < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "--no-end") == 0)
			with_end = 0;
		else if (strcmp(argv[a], "--seq") == 0 && a + 2 < argc)
			seq = strtoull(argv[++a], NULL, 10);
		else
			break;
	}
	if (a + 1 != argc || seq == 0) {
		fprintf(stderr, "usage: xtc-segwrite [--seq N] [--no-end] DIR < script (see tests/segwrite.c)\n");
		return 2;
	}
	seg_path(path, sizeof(path), argv[a], seq);
	if ((seg_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "xtc-segwrite: %s: %s\n", path, strerror(errno));
		return 2;
	}
	seg_file_hdr_init(&h, seq, 100, REAL_AT_ZERO, 0, boot, "segwrite");
	if (write(seg_fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		fprintf(stderr, "xtc-segwrite: write: %s\n", strerror(errno));
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		lineno++;
		if (run_line(line) < 0) {
			fprintf(stderr, "xtc-segwrite: line %u is not a block: %s", lineno, line);
			return 2;
		}
	}
	e.blocks = blocks;
	e.next_seq = seq + 1;
	if (with_end)
		put_block(XTC_BLK_SEGMENT_END, &e, sizeof(e), NULL, 0);
	return close(seg_fd) == 0 ? 0 : 2;
}
