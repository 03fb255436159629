/*
 * fuzz/fuzz_segread.c - libFuzzer harness: any byte string as a segment
 * file (proto/xtc_seg.h), read the ways xtcd reads one.
 *
 * Each input is read twice: as it is, and with every CRC made right (the
 * file header's, and each block's as far as the blocks' lengths chain),
 * so that mutations get past the CRCs into the payload decoders.  Each
 * version is written to a scratch directory as segments 1 and 2 and
 * read by
 *   seg_scan_fd()       what recovery and the budget's eviction scan use;
 *   segread_run()       what xtcd --cat uses: segment 1 with a successor
 *                       (a bad tail is CORRUPT), segment 2 the newest
 *                       (TORN), sessions shared across both; every item
 *                       formatted as text and as JSON (xtcd/read/print.c);
 *   segread_segment()   what xtcd --follow uses, SEGREAD_TAIL_QUIET, on a
 *                       copy of the file that grows in pieces, each call
 *                       resuming from the span's `next` as follow.c does.
 * Besides the sanitizers, it aborts when
 *   - a formatted line holds a byte outside printable ASCII, or an item
 *     prints other than exactly one line: untrusted strings must break
 *     neither a line nor a terminal (xtcd/read/print.h);
 *   - the follower, fed the file in pieces, delivers other items than
 *     one read of the whole file: a record twice, or one lost;
 *   - the follower, once the whole file is there, finds more on a
 *     further call.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/seg/seg.h"
#include "xtcd/read/print.h"
#include "lib/seg/segread.h"

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

/* ---- segread_run + print: the --cat path ---- */

struct fmt_run {
	struct printer text, json;
	uint64_t lines;          /* lines the items must have printed */
};

static int fmt_item_cb(const struct segread_item *it, void *user)
{
	struct fmt_run *f = user;

	if (print_item(&f->text, it) < 0 || print_item(&f->json, it) < 0)
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
	print_init(&f.text, t, 0);
	print_init(&f.json, j, 1);
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
};

/* Everything about an item a reader could act on, as fixed-size bytes. */
struct trace_rec {
	int32_t  type;
	int32_t  has_session, has_real, first;
	uint64_t seq, offset, real_ns, session_id;
	uint8_t  u[256];    /* the item's struct, or the one it points to */
};

_Static_assert(sizeof(((struct segread_item *)0)->u) <= 256, "item union");
_Static_assert(sizeof(struct xtc_seg_file_hdr) <= 256, "file header");
_Static_assert(sizeof(struct xtc_seg_session_start) <= 256, "session start");

static int trace_item_cb(const struct segread_item *it, void *user)
{
	struct trace *t = user;
	struct trace_rec r;

	memset(&r, 0, sizeof r);
	r.type = (int32_t)it->type;
	r.has_session = it->session != NULL;
	r.session_id = it->session ? it->session->id : 0;
	r.has_real = it->has_real;
	r.seq = it->seq;
	r.offset = (uint64_t)it->offset;
	r.real_ns = it->real_ns;
	switch (it->type) {
	case SEGREAD_EVENT:
		memcpy(r.u, &it->u.event, sizeof it->u.event);
		break;
	case SEGREAD_SESSION_START:
		r.first = it->u.start.first;
		memcpy(r.u, it->u.start.ss, sizeof *it->u.start.ss);
		break;
	case SEGREAD_EVICTED:
		memcpy(r.u, &it->u.evicted.ev, sizeof it->u.evicted.ev);
		break;
	case SEGREAD_SEGMENT_BEGIN:
		memcpy(r.u, it->u.seg_begin, sizeof *it->u.seg_begin);
		break;
	default: /* the plain structs */
		memcpy(r.u, &it->u, sizeof it->u);
		break;
	}
	fwrite(&r, sizeof r, 1, t->out);
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
		size_t k = 0;

		while (k < wlen && k < plen && wbuf[k] == pbuf[k])
			k++;
		fprintf(stderr, "fuzz_segread: the follower fed in pieces delivered other items than "
		        "one read of the whole file: %zu and %zu items, first difference in item %zu\n",
		        wlen / sizeof(struct trace_rec), plen / sizeof(struct trace_rec),
		        k / sizeof(struct trace_rec));
		abort();
	}
	free(wbuf);
	free(pbuf);
}

/* Make the file header's CRC and every chained block's CRC right.
 * Returns whether anything changed. */
static int fix_crcs(uint8_t *buf, size_t n)
{
	struct xtc_seg_file_hdr fh;
	struct xtc_seg_blk_hdr h;
	size_t off = sizeof fh;
	int changed = 0;

	if (n < sizeof fh)
		return 0;
	memcpy(&fh, buf, sizeof fh);
	if (fh.crc != seg_crc32c(0, &fh, offsetof(struct xtc_seg_file_hdr, crc))) {
		fh.crc = seg_crc32c(0, &fh, offsetof(struct xtc_seg_file_hdr, crc));
		memcpy(buf, &fh, sizeof fh);
		changed = 1;
	}
	while (off + sizeof h <= n) {
		uint32_t crc;

		memcpy(&h, buf + off, sizeof h);
		if (h.len > n - off - sizeof h)
			break;
		crc = h.crc;
		h.crc = 0;
		h.crc = seg_crc32c(seg_crc32c(0, &h, sizeof h), buf + off + sizeof h, h.len);
		if (h.crc != crc) {
			memcpy(buf + off, &h, sizeof h);
			changed = 1;
		}
		off += sizeof h + h.len;
	}
	return changed;
}

/* Everything, for one version of the input. */
static void run_all(const uint8_t *data, size_t size)
{
	put_file(path1, data, size);
	put_file(path2, data, size);
	run_scan();
	run_cat();
	run_follow(data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	if (size > (8u << 20))
		return 0;
	run_all(data, size);
	fixed = malloc(size ? size : 1);
	if (!fixed)
		abort();
	memcpy(fixed, data, size);
	if (fix_crcs(fixed, size))
		run_all(fixed, size);
	free(fixed);
	return 0;
}
