/*
 * fuzz/fuzz_segread.c - libFuzzer harness: any byte string as a segment
 * file (proto/xtc_seg.h), read the ways xtcd reads one.
 *
 * Each input is written to a scratch directory as segments 1 and 2 and
 * read by
 *   seg_scan_fd()       what recovery and the budget's eviction scan use;
 *   segread_run()       what xtcd --cat uses: segment 1 with a successor
 *                       (a bad tail is CORRUPT), segment 2 the newest
 *                       (TORN), sessions shared across both; every item
 *                       formatted as text and as JSON (lib/segfmt.c);
 *   segread_segment()   what xtcd --follow uses, SEGREAD_TAIL_QUIET, on a
 *                       copy of the file that grows in pieces, each call
 *                       resuming from the span's `next` as follow.c does.
 * Besides the sanitizers, it aborts when
 *   - a formatted line holds a byte outside printable ASCII, or an item
 *     prints other than exactly one line: untrusted strings must break
 *     neither a line nor a terminal (lib/segfmt.h);
 *   - the follower, fed the file in pieces, delivers other items than
 *     one read of the whole file: a record twice, or one lost;
 *   - the follower, once the whole file is there, finds more on a
 *     further call.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "seg.h"
#include "segfmt.h"
#include "segread.h"

#define FILE_HDR ((off_t)sizeof(struct xtc_seg_file_hdr))

static char dir_all[64], dir_follow[64];
static char path1[96], path2[96], path_follow[96];

/* Remove the scratch directories at exit. */
static void cleanup(void)
{
	unlink(path1);
	unlink(path2);
	unlink(path_follow);
	rmdir(dir_all);
	rmdir(dir_follow);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Scratch directories on a tmpfs when there is one. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc; (void)argv;
	snprintf(dir_all, sizeof dir_all, "%s/xtc-fuzz-XXXXXX", base);
	snprintf(dir_follow, sizeof dir_follow, "%s/xtc-fuzz-XXXXXX", base);
	if (!mkdtemp(dir_all) || !mkdtemp(dir_follow)) {
		perror("mkdtemp");
		abort();
	}
	seg_path(path1, sizeof path1, dir_all, 1);
	seg_path(path2, sizeof path2, dir_all, 2);
	seg_path(path_follow, sizeof path_follow, dir_follow, 1);
	atexit(cleanup);
	return 0;
}

/* Replace the file at path with data[0, n). */
static void put_file(const char *path, const uint8_t *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (n && write(fd, data, n) != (ssize_t)n) || close(fd) < 0) {
		perror(path);
		abort();
	}
}

/* Append data[0, n) to the file at path. */
static void append_file(const char *path, const uint8_t *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0 || (n && write(fd, data, n) != (ssize_t)n) || close(fd) < 0) {
		perror(path);
		abort();
	}
}

/* ---- seg_scan_fd: touch every payload byte it hands out ---- */

static int scan_cb(const struct xtc_seg_blk_hdr *h, const void *payload, off_t off, void *user)
{
	const volatile uint8_t *p = payload;
	uint64_t *sum = user;

	(void)off;
	for (uint32_t i = 0; i < h->len; i++)
		*sum += p[i];
	return 0;
}

static void run_scan(void)
{
	struct seg_scan scan;
	uint64_t sum = 0;
	int fd = open(path2, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		abort();
	if (seg_scan_fd(fd, scan_cb, &sum, &scan) == 0 &&
	    (scan.valid_end > scan.file_size || (scan.header_ok && scan.valid_end < FILE_HDR)))
		abort();
	close(fd);
}

/* ---- segread_run + segfmt: the --cat path ---- */

struct fmt_run {
	struct segfmt text, json;
	uint64_t lines;          /* lines the items must have printed */
};

static int fmt_item_cb(const struct segread_item *it, void *user)
{
	struct fmt_run *f = user;

	if (segfmt_item(&f->text, it) < 0 || segfmt_item(&f->json, it) < 0)
		abort();
	if (it->type != SEGREAD_SEGMENT_BEGIN)
		f->lines++;
	return 0;
}

static void problem_cb(const struct segread_problem *p, void *user)
{
	(void)user;
	if (!p->why || !p->path)
		abort();
}

/* Every byte printable ASCII or a newline, and exactly `lines` lines. */
static void check_lines(const char *buf, size_t len, uint64_t lines)
{
	uint64_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\n')
			n++;
		else if (c < 0x20 || c > 0x7e)
			abort();
	}
	if (n != lines || (len && buf[len - 1] != '\n'))
		abort();
}

static void run_cat(void)
{
	struct fmt_run f;
	struct segread *r;
	char *tbuf = NULL, *jbuf = NULL;
	size_t tlen = 0, jlen = 0;
	FILE *t = open_memstream(&tbuf, &tlen), *j = open_memstream(&jbuf, &jlen);

	if (!t || !j)
		abort();
	segfmt_init(&f.text, t, 0);
	segfmt_init(&f.json, j, 1);
	f.lines = 0;
	if (segread_open(&r, dir_all, fmt_item_cb, problem_cb, &f) < 0)
		abort();
	if (segread_run(r) < 0)
		abort();
	segread_close(r);
	fclose(t);
	fclose(j);
	check_lines(tbuf, tlen, f.lines);
	check_lines(jbuf, jlen, f.lines);
	free(tbuf);
	free(jbuf);
}

/* ---- segread_segment over a growing file: the --follow path ---- */

struct trace {
	FILE *out;
	struct segfmt json;
};

/* Everything about an item a reader could act on, one line each. */
static int trace_item_cb(const struct segread_item *it, void *user)
{
	struct trace *t = user;

	fprintf(t->out, "%d %llu %lld %d %llu %d ", (int)it->type, (unsigned long long)it->seq,
	        (long long)it->offset, it->session != NULL, (unsigned long long)it->real_ns,
	        it->has_real);
	if (it->type == SEGREAD_EVENT)
		fprintf(t->out, "@%llu ", (unsigned long long)it->u.event.index);
	if (it->type == SEGREAD_SESSION_START)
		fprintf(t->out, "first=%d ", it->u.start.first);
	if (segfmt_item(&t->json, it) < 0)
		abort();
	if (it->type == SEGREAD_SEGMENT_BEGIN)
		fputc('\n', t->out);
	return 0;
}

/* One follower step as follow.c takes it: resume from *off. */
static void follow_step(struct segread *r, off_t *off)
{
	struct segread_span sp;
	int ret = segread_segment(r, 1, *off, SEGREAD_TAIL_QUIET, &sp);

	if (ret == -ENOMEM)
		abort();
	if (ret == 0 && sp.stop != SEGREAD_SHRUNK)
		*off = sp.next;
}

/* Read the whole file once, then again fed in pieces; compare. */
static void run_follow(const uint8_t *data, size_t size)
{
	struct trace whole, pieces;
	struct segread *r;
	char *wbuf = NULL, *pbuf = NULL;
	size_t wlen = 0, plen = 0, done = 0;
	uint32_t rnd = 2166136261u;
	off_t off = 0;

	for (size_t i = 0; i < size; i++)
		rnd = (rnd ^ data[i]) * 16777619u;
	whole.out = open_memstream(&wbuf, &wlen);
	pieces.out = open_memstream(&pbuf, &plen);
	if (!whole.out || !pieces.out)
		abort();
	segfmt_init(&whole.json, whole.out, 1);
	segfmt_init(&pieces.json, pieces.out, 1);

	put_file(path_follow, data, size);
	if (segread_open(&r, dir_follow, trace_item_cb, NULL, &whole) < 0)
		abort();
	follow_step(r, &off);
	segread_close(r);

	off = 0;
	put_file(path_follow, data, 0);
	if (segread_open(&r, dir_follow, trace_item_cb, NULL, &pieces) < 0)
		abort();
	follow_step(r, &off);
	while (done < size) {
		/* pieces of 1 byte to 4 KiB, cut anywhere: in the file header,
		 * a block header, a payload */
		size_t n;

		rnd = rnd * 1103515245u + 12345u;
		n = (rnd >> 16) % ((rnd & 0x100) ? 4096 : 64) + 1;
		if (n > size - done)
			n = size - done;
		append_file(path_follow, data + done, n);
		done += n;
		follow_step(r, &off);
	}
	fflush(pieces.out);
	{
		size_t before = plen;

		follow_step(r, &off); /* nothing new may come */
		fflush(pieces.out);
		if (plen != before)
			abort();
	}
	segread_close(r);
	fclose(whole.out);
	fclose(pieces.out);
	if (wlen != plen || memcmp(wbuf, pbuf, wlen) != 0) {
		fprintf(stderr, "fuzz_segread: the follower fed in pieces delivered other items "
		        "than one read of the whole file\n--- whole\n%.*s--- pieces\n%.*s",
		        (int)(wlen < 4000 ? wlen : 4000), wbuf, (int)(plen < 4000 ? plen : 4000), pbuf);
		abort();
	}
	free(wbuf);
	free(pbuf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (8u << 20))
		return 0;
	put_file(path1, data, size);
	put_file(path2, data, size);
	run_scan();
	run_cat();
	run_follow(data, size);
	return 0;
}
