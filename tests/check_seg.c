/*
 * tests/check_seg.c - the segment codec (lib/seg/seg.c) and the directory
 * reader (lib/seg/segread.c).
 *
 * Buffers handed to decoders are malloc'ed at their exact size, so an
 * ASan build (./configure --enable-sanitizers) turns any read past the
 * end into a failure.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/seg/seg.h"
#include "lib/seg/segread.h"
#include "tests/check_run.h"

/* ---- helpers ---- */

static uint64_t rng_state;

/* xorshift64*: a fixed-seed generator so failures reproduce. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

/* A copy of buf in a buffer of exactly len bytes (ASan-bounded). */
static uint8_t *exact(const void *buf, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	if (len)
		memcpy(p, buf, len);
	return p;
}

/* A growing byte buffer that segment files are built in. */
struct bytes {
	uint8_t *p;
	size_t len, cap;
};

/* Append len bytes. */
static void bytes_put(struct bytes *b, const void *src, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->len, src, len);
	b->len += len;
}

/* Append a sealed block made of a fixed part and an optional tail; returns
 * its offset. */
static size_t put_block(struct bytes *b, uint16_t type, uint16_t flags, const void *fixed,
                        size_t flen, const void *tail, size_t tlen)
{
	size_t off = b->len, len = sizeof(struct xtc_seg_blk_hdr) + flen + tlen;
	uint8_t *blk = calloc(1, len + 8);
	/* seal in an aligned buffer, then copy in */
	struct xtc_seg_blk_hdr *h = (struct xtc_seg_blk_hdr *)(void *)blk;

	ck_assert_ptr_nonnull(blk);
	memcpy(blk + sizeof(*h), fixed, flen);
	if (tlen)
		memcpy(blk + sizeof(*h) + flen, tail, tlen);
	seg_blk_seal(h, type, flags, (uint32_t)(flen + tlen));
	bytes_put(b, blk, len);
	free(blk);
	return off;
}

/* Start a segment: the file header. */
static void put_file_hdr(struct bytes *b, uint64_t seq)
{
	struct xtc_seg_file_hdr h;
	uint8_t boot[16] = { 1, 2, 3 };

	seg_file_hdr_init(&h, seq, 100, 5000000000000ULL, 1000000000ULL, boot, "testhost");
	bytes_put(b, &h, sizeof(h));
}

/* A SESSION_START payload. */
static size_t put_session_start(struct bytes *b, uint64_t id, uint32_t pid, int restated,
                                const char *settings)
{
	struct xtc_seg_session_start ss;

	memset(&ss, 0, sizeof(ss));
	ss.session_id = id;
	ss.start_mono_ns = 2000000000ULL;
	ss.anchor_mono_ns = 1000000000ULL * id;
	ss.anchor_real_ns = 1700000000000000000ULL + id * 1000;
	ss.pid = pid;
	ss.uid = 1000;
	ss.gid = 1000;
	ss.ring_count = 4;
	ss.ring_capacity = 1024;
	ss.ts_unit = 1;
	ss.ts_hz = 1000000000ULL;
	memcpy(ss.comm, "demo", 4);
	ss.settings_len = (uint32_t)strlen(settings);
	return put_block(b, XTC_BLK_SESSION_START, restated ? XTC_SEG_F_RESTATED : 0, &ss,
	                 sizeof(ss), settings, ss.settings_len);
}

/* An EVENTS block of n records with ts first_ts, first_ts + 10, ... */
static size_t put_events(struct bytes *b, uint64_t session, uint32_t ring, uint64_t first_ts,
                         uint32_t n)
{
	struct xtc_seg_events ev;
	uint8_t body[64 * SEG_MAX_REC_BYTES];
	struct seg_codec c;
	size_t len = 0;

	ck_assert_uint_le(n, 64);
	memset(&ev, 0, sizeof(ev));
	ev.session_id = session;
	ev.ring = ring;
	ev.loop_id = ring;
	ev.first_index = 1000;
	ev.first_ts_ns = first_ts;
	ev.count = n;
	seg_codec_begin(&c, ring, first_ts);
	for (uint32_t i = 0; i < n; i++) {
		xtc_tail_rec_t r = {
			.ts_ns = first_ts + 10 * i, .source = XTC_TAIL_SCHED,
			.kind = XTC_TAIL_WAKE, .pid = { ring, i, 1 }, .detail = 0x1000 + i,
		};

		len += seg_encode_rec(&c, body + len, &r);
	}
	ev.body_len = (uint32_t)len;
	return put_block(b, XTC_BLK_EVENTS, 0, &ev, sizeof(ev), body, len);
}

/* A DROP block. */
static size_t put_drop(struct bytes *b, uint64_t session, uint64_t count)
{
	struct xtc_seg_drop d = {
		.session_id = session, .ring = 0, .loop_id = 0, .count = count,
		.from_ts_ns = 5000, .to_ts_ns = 6000, .cause = 1,
	};

	return put_block(b, XTC_BLK_DROP, 0, &d, sizeof(d), NULL, 0);
}

/* A SESSION_END block. */
static size_t put_session_end(struct bytes *b, uint64_t session)
{
	struct xtc_seg_session_end e = {
		.session_id = session, .end_mono_ns = 9000, .reason = XTC_END_DETACHED,
		.complete = 1, .produced = 3, .written = 3,
	};

	return put_block(b, XTC_BLK_SESSION_END, 0, &e, sizeof(e), NULL, 0);
}

/* A SEGMENT_END block. */
static size_t put_segment_end(struct bytes *b, uint64_t next, uint64_t blocks)
{
	struct xtc_seg_segment_end e = { .end_mono_ns = 9999, .next_seq = next, .blocks = blocks };

	return put_block(b, XTC_BLK_SEGMENT_END, 0, &e, sizeof(e), NULL, 0);
}

static char tmpdir[64];

/* Fixture: a fresh temporary directory. */
static void tmpdir_setup(void)
{
	strcpy(tmpdir, "/tmp/check_seg.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

/* Fixture: remove the temporary directory and what is in it. */
static void tmpdir_teardown(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	char path[512];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmpdir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(tmpdir);
}

/* Write b as segment seq in tmpdir; returns its path in a static buffer. */
static const char *write_seg(const struct bytes *b, uint64_t seq)
{
	static char path[512];
	int fd;

	seg_path(path, sizeof(path), tmpdir, seq);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b->p, b->len), (ssize_t)b->len);
	close(fd);
	return path;
}

/* ---- varints ---- */

static const uint64_t edge_values[] = {
	0, 1, 2, 63, 64, 127, 128, 129, 255, 256, 16383, 16384, 2097151, 2097152,
	0x7fffffffULL, 0xffffffffULL, 0x100000000ULL, (1ULL << 35) - 1, 1ULL << 35,
	(1ULL << 56) - 1, 1ULL << 56, (1ULL << 63) - 1, 1ULL << 63, UINT64_MAX - 1, UINT64_MAX,
};

START_TEST(test_varint_round_trip)
{
	for (size_t i = 0; i < sizeof(edge_values) / sizeof(edge_values[0]); i++) {
		uint8_t buf[10];
		uint64_t v = edge_values[i], back = 0;
		size_t n = seg_varint_put(buf, v), want = 1;
		uint8_t *p;

		for (uint64_t x = v; x >= 0x80; x >>= 7)
			want++;
		ck_assert_uint_eq(n, want);
		ck_assert_uint_le(n, 10);
		p = exact(buf, n);
		ck_assert_uint_eq(seg_varint_get(p, p + n, &back), n);
		ck_assert_uint_eq(back, v);
		/* every truncation is refused */
		for (size_t k = 0; k < n; k++)
			ck_assert_uint_eq(seg_varint_get(p, p + k, &back), 0);
		free(p);
	}
}
END_TEST

START_TEST(test_varint_rejects_long)
{
	uint8_t eleven[11], ten_big[10], nc[2] = { 0x80, 0x00 };
	uint64_t v = 0;
	uint8_t *p;

	memset(eleven, 0x80, sizeof(eleven));
	eleven[10] = 0x01;
	p = exact(eleven, sizeof(eleven));
	ck_assert_uint_eq(seg_varint_get(p, p + sizeof(eleven), &v), 0);
	free(p);

	memset(ten_big, 0xff, sizeof(ten_big));
	ten_big[9] = 0x02; /* bit 64: overflow */
	p = exact(ten_big, sizeof(ten_big));
	ck_assert_uint_eq(seg_varint_get(p, p + sizeof(ten_big), &v), 0);
	free(p);

	ten_big[9] = 0x01;
	p = exact(ten_big, sizeof(ten_big));
	ck_assert_uint_eq(seg_varint_get(p, p + sizeof(ten_big), &v), 10);
	ck_assert_uint_eq(v, UINT64_MAX);
	free(p);

	/* a non-minimal encoding is still a valid LEB128 value */
	ck_assert_uint_eq(seg_varint_get(nc, nc + 2, &v), 2);
	ck_assert_uint_eq(v, 0);
	ck_assert_uint_eq(seg_varint_get(nc, nc, &v), 0);
	ck_assert_uint_eq(seg_varint_get(NULL, NULL, &v), 0);
}
END_TEST

/* ---- CRC-32C ---- */

/* Bit-at-a-time CRC-32C, the reference for the sliced one. */
static uint32_t crc_ref(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
	}
	return ~crc;
}

START_TEST(test_crc_known_vector)
{
	ck_assert_uint_eq(seg_crc32c(0, "123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(seg_crc32c(0, "", 0), 0);
	/* chaining equals one pass */
	ck_assert_uint_eq(seg_crc32c(seg_crc32c(0, "12345", 5), "6789", 4), 0xE3069283u);
}
END_TEST

START_TEST(test_crc_matches_reference)
{
	uint8_t buf[300];

	rng_state = 0x1234567;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; off + len <= sizeof(buf); len += 7)
			ck_assert_uint_eq(seg_crc32c(0, buf + off, len), crc_ref(buf + off, len));
}
END_TEST

/* Both implementations behind seg_crc32c() give the reference's CRC, on
 * every alignment and length and when chained at any split. */
START_TEST(test_crc_table_and_instruction_agree)
{
	uint8_t buf[600];

	rng_state = 0x7777123;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; off + len <= sizeof(buf); len += 5) {
			uint32_t want = crc_ref(buf + off, len);
			size_t cut = len ? (size_t)rnd() % len : 0;

			ck_assert_uint_eq(seg_crc32c_table(0, buf + off, len), want);
			ck_assert_uint_eq(seg_crc32c(0, buf + off, len), want);
			ck_assert_uint_eq(seg_crc32c(seg_crc32c_table(0, buf + off, cut), buf + off + cut,
			                             len - cut), want);
		}
#if defined(__x86_64__)
	ck_assert_int_eq(seg_crc32c_has_hw(), __builtin_cpu_supports("sse4.2") ? 1 : 0);
#endif
}
END_TEST

/* ---- the record codec ---- */

/* Encode recs[0..n), decode from an exact-size copy, compare. */
static void round_trip(const xtc_tail_rec_t *recs, size_t n, uint32_t loop, uint64_t first_ts)
{
	uint8_t *body = malloc(n * SEG_MAX_REC_BYTES + 1), *copy;
	struct seg_codec enc, dec;
	size_t len = 0, off = 0;

	ck_assert_ptr_nonnull(body);
	seg_codec_begin(&enc, loop, first_ts);
	for (size_t i = 0; i < n; i++) {
		size_t k = seg_encode_rec(&enc, body + len, &recs[i]);

		ck_assert_uint_ge(k, 3);
		ck_assert_uint_le(k, SEG_MAX_REC_BYTES);
		len += k;
	}
	copy = exact(body, len);
	seg_codec_begin(&dec, loop, first_ts);
	for (size_t i = 0; i < n; i++) {
		xtc_tail_rec_t r;
		size_t k = seg_decode_rec(&dec, copy + off, copy + len, &r);

		ck_assert_uint_gt(k, 0);
		ck_assert_uint_eq(r.ts_ns, recs[i].ts_ns);
		ck_assert_uint_eq(r.source, recs[i].source);
		ck_assert_uint_eq(r.kind, recs[i].kind);
		ck_assert_uint_eq(r.pid.loop_id, recs[i].pid.loop_id);
		ck_assert_uint_eq(r.pid.local_id, recs[i].pid.local_id);
		ck_assert_uint_eq(r.pid.gen, recs[i].pid.gen);
		ck_assert_uint_eq(r.detail, recs[i].detail);
		off += k;
	}
	ck_assert_uint_eq(off, len);
	free(copy);
	free(body);
}

/* A random value biased towards small numbers and edges. */
static uint64_t rnd_val(void)
{
	switch (rnd() % 6) {
	case 0:  return 0;
	case 1:  return rnd() % 128;
	case 2:  return rnd() % 100000;
	case 3:  return UINT64_MAX - rnd() % 3;
	default: return rnd();
	}
}

START_TEST(test_codec_random_round_trip)
{
	enum { N = 20000 };
	xtc_tail_rec_t *recs = calloc(N, sizeof(*recs));
	uint64_t ts = 1000;

	ck_assert_ptr_nonnull(recs);
	rng_state = 0xfeedface12345ULL;
	for (size_t i = 0; i < N; i++) {
		xtc_tail_rec_t *r = &recs[i];
		int same = rnd() % 3 == 0 && i > 0;

		ts += rnd() % 4 == 0 ? (uint64_t)-(int64_t)(rnd() % 5000) : rnd() % 100000;
		r->ts_ns = rnd() % 50 == 0 ? rnd() : ts;
		r->source = rnd() % 5 == 0 ? (uint32_t)rnd() : 1u << (rnd() % 8);
		r->kind = rnd() % 20 == 0 ? (uint32_t)rnd() : (uint32_t)(rnd() % 15);
		r->pid.loop_id = same ? recs[i - 1].pid.loop_id :
		                 rnd() % 7 == 0 ? XTC_TAIL_LOOP_NONE : (uint32_t)rnd_val();
		r->pid.local_id = same ? recs[i - 1].pid.local_id : (uint32_t)rnd_val();
		r->pid.gen = same ? recs[i - 1].pid.gen : rnd_val();
		r->detail = rnd() % 4 == 0 && i > 0 ? recs[i - 1].detail + rnd() % 9 - 4 : rnd_val();
	}
	round_trip(recs, N, 3, 1000);
	free(recs);
}
END_TEST

/* ---- the ring encoder (seg_encode_ring) against the reference ---- */

/* What session.c did before seg_encode_ring: convert, hold, then
 * seg_codec_begin() and seg_encode_rec() record by record. */
static uint64_t ref_tick_ns(const struct seg_ticks *t, uint64_t ts)
{
	uint64_t d;

	if (t->identity)
		return ts;
	if (ts >= t->anchor_ts)
		return t->anchor_ns + (uint64_t)(((unsigned __int128)(ts - t->anchor_ts) * t->mult) >> 32);
	d = (uint64_t)(((unsigned __int128)(t->anchor_ts - ts) * t->mult) >> 32);
	return d > t->anchor_ns ? 0 : t->anchor_ns - d;
}

static size_t ref_encode_ring(const struct seg_ring_batch *b, uint8_t *out, uint64_t *floor,
                              uint64_t *first)
{
	struct seg_codec c;
	size_t len = 0;

	for (uint32_t k = 0; k < b->n; k++) {
		const struct xtc_shm_rec *s = &b->recs[(b->from + k) & b->mask];
		xtc_tail_rec_t r = { .ts_ns = ref_tick_ns(&b->ticks, s->ts), .source = s->source,
		                     .kind = s->kind, .pid = { s->loop_id, s->local_id, s->gen },
		                     .detail = s->detail };

		if (r.ts_ns < *floor && *floor - r.ts_ns < b->ticks.jitter)
			r.ts_ns = *floor;
		*floor = r.ts_ns;
		if (k == 0) {
			seg_codec_begin(&c, b->loop_id, r.ts_ns);
			*first = r.ts_ns;
		}
		len += seg_encode_rec(&c, out + len, &r);
	}
	return len;
}

/* A slot as a producer might fill it: runs of the same pid, counters,
 * nearby addresses, edges, and now and then anything at all. */
static void rnd_slot(struct xtc_shm_rec *s, const struct xtc_shm_rec *prev, uint64_t *ts)
{
	int same = rnd() % 3 == 0;

	*ts += rnd() % 8 == 0 ? (uint64_t)-(int64_t)(rnd() % 3000) : rnd() % 200;
	s->ts = rnd() % 60 == 0 ? rnd_val() : *ts;
	s->source = rnd() % 6 == 0 ? (uint32_t)rnd_val() : 1u << (rnd() % 8);
	s->kind = rnd() % 15 == 0 ? (uint32_t)rnd_val() : (uint32_t)(rnd() % 16) + (rnd() % 9 == 0) * 250;
	s->loop_id = same ? prev->loop_id : rnd() % 2 ? prev->loop_id : (uint32_t)rnd_val();
	s->local_id = same ? prev->local_id : (uint32_t)rnd_val();
	s->gen = same ? prev->gen : rnd_val();
	s->detail = rnd() % 3 == 0 ? prev->detail + rnd() % 301 - 150 : rnd() % 4 == 0 ? rnd() % 200
	          : rnd_val();
}

/* Both encoder paths on one batch: the bytes of the reference, within
 * the room of n * SEG_MAX_REC_BYTES (a canary after it must stay). */
static void check_both_paths(const struct seg_ring_batch *in, const uint8_t *want, size_t wlen,
                             uint64_t first, uint64_t floor)
{
	enum { CANARY = 16 };
	size_t room = (size_t)in->n * SEG_MAX_REC_BYTES;
	uint8_t *got = malloc(room + CANARY);

	ck_assert_ptr_nonnull(got);
	for (int path = 0; path < 2; path++) {
		struct seg_ring_batch b = *in;
		size_t glen;

		memset(got + room, 0xa5, CANARY);
		glen = path ? seg_encode_ring(&b, got) : seg_encode_ring_portable(&b, got);
		ck_assert_uint_le(glen, room);
		ck_assert_uint_eq(glen, wlen);
		ck_assert_mem_eq(got, want, wlen);
		for (size_t k = 0; k < CANARY; k++)
			ck_assert_uint_eq(got[room + k], 0xa5);
		ck_assert_uint_eq(b.first_ns, first);
		ck_assert_uint_eq(b.floor_ns, floor);
		ck_assert_uint_eq(b.last_ns, floor);
	}
	free(got);
}

START_TEST(test_ring_encoder_equals_reference)
{
	enum { CAP = 1024 };
	struct xtc_shm_rec *ring = calloc(CAP, sizeof(*ring));
	uint8_t *want = malloc(CAP * SEG_MAX_REC_BYTES);
	uint64_t ts = 5000000;

	ck_assert_ptr_nonnull(ring);
	ck_assert_ptr_nonnull(want);
#if defined(__x86_64__)
	/* on this machine's CPU, whose BMI2 the path needs */
	ck_assert_int_le(seg_encode_has_bmi(), __builtin_cpu_supports("bmi2") ? 1 : 0);
#endif
	rng_state = 0xabcdef0123ULL;
	for (int round = 0; round < 400; round++) {
		struct seg_ring_batch b = { .recs = ring, .mask = CAP - 1 };
		uint64_t floor, first = 0;
		size_t wlen;

		for (uint32_t i = 0; i < CAP; i++)
			rnd_slot(&ring[i], &ring[(i + CAP - 1) % CAP], &ts);
		b.from = rnd();                        /* any index: slots wrap */
		b.n = 1 + (uint32_t)(rnd() % CAP);
		b.loop_id = rnd() % 2 ? ring[b.from & (CAP - 1)].loop_id : (uint32_t)rnd_val();
		switch (round % 4) {
		case 0:
			b.ticks.identity = 1;
			b.ticks.jitter = round % 8 ? 0 : 1000;
			break;
		default:
			b.ticks.anchor_ts = round % 4 == 1 ? ts : rnd_val();
			b.ticks.anchor_ns = round % 4 == 3 ? rnd() % 1000 : rnd_val();
			b.ticks.mult = round % 4 == 2 ? rnd() : (1ull << 32) * 10 / 26;
			b.ticks.jitter = round % 2 ? 1000 : 0;
			break;
		}
		b.floor_ns = floor = rnd() % 5 == 0 ? rnd_val() : ref_tick_ns(&b.ticks, ts);
		wlen = ref_encode_ring(&b, want, &floor, &first);
		check_both_paths(&b, want, wlen, first, floor);
	}
	free(want);
	free(ring);
}
END_TEST

/* Every varint length of every field, one field at a time: each value
 * 2^k - 1, 2^k and 2^k + 1 for k up to 64 in ts deltas, ids, gen and
 * detail (both its plain and its delta form), each path against the
 * reference. */
START_TEST(test_ring_encoder_every_length)
{
	enum { N = 1024 }; /* a ring for the 4 * 65 * 3 records */
	struct xtc_shm_rec *ring = calloc(N, sizeof(*ring));
	uint8_t *want = malloc(N * SEG_MAX_REC_BYTES);
	struct seg_ring_batch b = { .recs = ring, .mask = N - 1 };
	uint64_t floor = 0, first = 0, ts = 0;
	uint32_t i = 0;

	ck_assert_ptr_nonnull(ring);
	ck_assert_ptr_nonnull(want);
	for (uint32_t field = 0; field < 4; field++)
		for (uint32_t k = 0; k <= 64; k++)
			for (int d = -1; d <= 1; d++) {
				uint64_t v = (k == 64 ? 0 : 1ull << k) + (uint64_t)(int64_t)d;
				struct xtc_shm_rec *r = &ring[i];

				*r = i ? ring[i - 1] : (struct xtc_shm_rec){ .source = 1, .kind = 3,
				                                               .loop_id = 1 };
				r->ts = ts;
				switch (field) {
				case 0: r->ts = ts += v; break;
				case 1: r->local_id = (uint32_t)v; r->loop_id = (uint32_t)(v >> 3); break;
				case 2: r->gen = v; break;
				default: r->detail = i % 2 ? v : ring[i - 1].detail + v; break;
				}
				i++;
			}
	b.n = i;
	b.ticks.identity = 1;
	b.loop_id = 1;
	b.from = 0;
	b.floor_ns = floor;
	{
		size_t wlen = ref_encode_ring(&b, want, &floor, &first);

		check_both_paths(&b, want, wlen, first, floor);
	}
	free(want);
	free(ring);
}
END_TEST

/* Every slot's worst: escaped kinds, varint sources, fresh pids and the
 * longest details, in a ring of the smallest capacity. */
START_TEST(test_ring_encoder_extremes)
{
	struct xtc_shm_rec ring[64];
	uint8_t want[64 * SEG_MAX_REC_BYTES], got[64 * SEG_MAX_REC_BYTES];
	struct seg_ring_batch b = { .recs = ring, .mask = 63, .from = 60, .n = 64, .loop_id = 7,
	                            .ticks = { .identity = 1 } };
	uint64_t floor = 0, first = 0;
	size_t wlen;

	for (uint32_t i = 0; i < 64; i++)
		ring[i] = (struct xtc_shm_rec){
			.ts = i % 2 ? UINT64_MAX - i : i, .source = i % 3 ? UINT32_MAX : 0,
			.kind = UINT32_MAX - i, .loop_id = UINT32_MAX - i, .local_id = UINT32_MAX,
			.gen = UINT64_MAX - i, .detail = i % 2 ? UINT64_MAX : 1ull << 63 };
	b.floor_ns = 0;
	wlen = ref_encode_ring(&b, want, &floor, &first);
	ck_assert_uint_eq(seg_encode_ring(&b, got), wlen);
	ck_assert_mem_eq(got, want, wlen);
	ck_assert_uint_le(wlen, 64 * SEG_MAX_REC_BYTES);
	b.floor_ns = 0;
	check_both_paths(&b, want, wlen, first, floor);
}
END_TEST

START_TEST(test_codec_extremes)
{
	const xtc_tail_rec_t recs[] = {
		{ 0, 1, 0, { XTC_TAIL_LOOP_NONE, 0, 0 }, UINT64_MAX },
		{ UINT64_MAX, 64, 14, { XTC_TAIL_LOOP_NONE, UINT32_MAX, UINT64_MAX }, 0 },
		{ 0, 0, 255, { 0, 0, 0 }, 1 },                          /* backwards by 2^64-1 */
		{ 5, 128, 256, { 0, 0, 0 }, UINT64_MAX - 1 },
		{ 4, UINT32_MAX, UINT32_MAX, { 1, 2, 3 }, UINT64_MAX },
		{ 3, 2, 254, { 1, 2, 3 }, 1ULL << 63 },
		{ 1ULL << 63, 4, 2, { UINT32_MAX, 0, 1 }, (1ULL << 63) - 1 },
		{ 0, 8, 3, { 0, 0, 0 }, 0 },
	};

	round_trip(recs, sizeof(recs) / sizeof(recs[0]), XTC_TAIL_LOOP_NONE, UINT64_MAX);
	round_trip(recs, sizeof(recs) / sizeof(recs[0]), 0, 0);
}
END_TEST

START_TEST(test_codec_cheapest_flags)
{
	struct seg_codec c;
	uint8_t out[SEG_MAX_REC_BYTES];
	xtc_tail_rec_t r = { 100, XTC_TAIL_SCHED, XTC_TAIL_WAKE, { 7, 0, 0 }, 0 };

	/* same ts, pid {loop, 0, 0}, detail 0: kind, flags, ts */
	seg_codec_begin(&c, 7, 100);
	ck_assert_uint_eq(seg_encode_rec(&c, out, &r), 3);
	ck_assert_uint_eq(out[0], XTC_TAIL_WAKE);
	ck_assert_uint_eq(out[1], 0x08 | (2 << 5));
	ck_assert_uint_eq(out[2], 0);

	/* new local_id, same loop: loop_id left out */
	r.pid.local_id = 5;
	r.pid.gen = 1;
	r.detail = 1000000;
	ck_assert_uint_eq(seg_encode_rec(&c, out, &r), 1 + 1 + 1 + 1 + 1 + 3);
	ck_assert_uint_eq(out[1], 0x10 | (0 << 5));

	/* detail close to the previous one: a one-byte zigzag delta */
	r.detail = 1000003;
	ck_assert_uint_eq(seg_encode_rec(&c, out, &r), 4);
	ck_assert_uint_eq(out[1], 0x08 | (1 << 5));
	ck_assert_uint_eq(out[3], 6);

	/* a source that is not one bit 1..64 goes in a varint */
	r.source = 3;
	ck_assert_uint_eq(seg_encode_rec(&c, out, &r), 5);
	ck_assert_uint_eq(out[1] & 7, 7);

	/* a kind >= 255 is escaped */
	r.source = XTC_TAIL_SCHED;
	r.kind = 300;
	ck_assert_uint_eq(seg_encode_rec(&c, out, &r), 6);
	ck_assert_uint_eq(out[0], 255);
}
END_TEST

START_TEST(test_codec_truncation_and_bad_flags)
{
	xtc_tail_rec_t r = { 123456789, 3, 300, { 1, 2, 3 }, 99999 }, got;
	struct seg_codec c, d;
	uint8_t out[SEG_MAX_REC_BYTES];
	size_t n;

	seg_codec_begin(&c, 0, 0);
	n = seg_encode_rec(&c, out, &r);
	for (size_t k = 0; k < n; k++) {
		uint8_t *p = exact(out, k);

		seg_codec_begin(&d, 0, 0);
		ck_assert_uint_eq(seg_decode_rec(&d, p, p + k, &got), 0);
		ck_assert_uint_eq(d.ts, 0); /* a failed decode leaves the state alone */
		free(p);
	}
	/* reserved flag bit, detail mode 3, escaped short kind */
	{
		uint8_t bad1[] = { 2, 0x80, 0 }, bad2[] = { 2, 0x60, 0 }, bad3[] = { 255, 7, 0, 0 };

		seg_codec_begin(&d, 0, 0);
		ck_assert_uint_eq(seg_decode_rec(&d, bad1, bad1 + 3, &got), 0);
		ck_assert_uint_eq(seg_decode_rec(&d, bad2, bad2 + 3, &got), 0);
		ck_assert_uint_eq(seg_decode_rec(&d, bad3, bad3 + 4, &got), 0);
	}
	/* a loop_id varint over 32 bits */
	{
		uint8_t big[] = { 2, 0x40, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0 };

		seg_codec_begin(&d, 0, 0);
		ck_assert_uint_eq(seg_decode_rec(&d, big, big + sizeof(big), &got), 0);
	}
}
END_TEST

START_TEST(test_codec_garbage_is_safe)
{
	rng_state = 0xabcdef987654321ULL;
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = (size_t)(rnd() % 80), off = 0;
		uint8_t *p = malloc(len ? len : 1);
		struct seg_codec c;
		xtc_tail_rec_t r;

		ck_assert_ptr_nonnull(p);
		for (size_t i = 0; i < len; i++)
			p[i] = (uint8_t)(rnd() % 4 ? rnd() : rnd() % 3 == 0 ? 0xff : 0x80);
		seg_codec_begin(&c, (uint32_t)rnd(), rnd());
		while (off < len) {
			size_t n = seg_decode_rec(&c, p + off, p + len, &r);

			if (!n)
				break;
			ck_assert_uint_le(n, len - off);
			off += n;
		}
		free(p);
	}
	/* every two-byte input */
	for (unsigned a = 0; a < 256; a++) {
		for (unsigned b = 0; b < 256; b++) {
			uint8_t *p = malloc(2);
			struct seg_codec c;
			xtc_tail_rec_t r;

			p[0] = (uint8_t)a;
			p[1] = (uint8_t)b;
			seg_codec_begin(&c, 0, 0);
			ck_assert_uint_le(seg_decode_rec(&c, p, p + 2, &r), 2);
			ck_assert_uint_eq(seg_decode_rec(&c, p, p + 1, &r), 0);
			free(p);
		}
	}
}
END_TEST

/* ---- blocks and file headers ---- */

START_TEST(test_block_seal_verify)
{
	uint64_t mem[8] = { 0 };
	struct xtc_seg_blk_hdr *h = (struct xtc_seg_blk_hdr *)(void *)mem;
	uint8_t *payload = (uint8_t *)(h + 1);

	memcpy(payload, "0123456789abcdef", 16);
	seg_blk_seal(h, XTC_BLK_DROP, 0, 16);
	ck_assert_int_eq(seg_blk_verify(h), 0);
	payload[3] ^= 1;
	ck_assert_int_eq(seg_blk_verify(h), -EBADMSG);
	payload[3] ^= 1;
	h->flags = 1;
	ck_assert_int_eq(seg_blk_verify(h), -EBADMSG);
	seg_blk_seal(h, 0, 0, 16);
	ck_assert_int_eq(seg_blk_verify(h), -EBADMSG);
	seg_blk_seal(h, 8, 0, 16);
	ck_assert_int_eq(seg_blk_verify(h), -EBADMSG);
	seg_blk_seal(h, XTC_BLK_CORRUPT, 0, 0);
	ck_assert_int_eq(seg_blk_verify(h), 0);
}
END_TEST

START_TEST(test_file_hdr)
{
	struct xtc_seg_file_hdr h, g;
	uint8_t boot[16] = { 0xde, 0xad };

	seg_file_hdr_init(&h, 42, 7, 1, 2, boot, "a-very-long-host-name-that-goes-on-and-on-and-on-"
	                  "beyond-56-bytes");
	ck_assert_int_eq(seg_file_hdr_check(&h), 0);
	ck_assert_uint_eq(h.seq, 42);
	ck_assert_uint_eq(h.hdr_size, 128);
	ck_assert_int_eq(h.host[55], 0);
	for (size_t i = 0; i < sizeof(h); i++) {
		g = h;
		((uint8_t *)&g)[i] ^= 0x10;
		ck_assert_int_eq(seg_file_hdr_check(&g), -EBADMSG);
	}
	seg_file_hdr_init(&h, 1, 1, 1, 1, NULL, NULL);
	ck_assert_int_eq(seg_file_hdr_check(&h), 0);
	h.version = 2;
	ck_assert_int_eq(seg_file_hdr_check(&h), -EBADMSG);
}
END_TEST

/* ---- names and listing ---- */

START_TEST(test_name_parse)
{
	static const struct { const char *name; int ok; uint64_t seq; } cases[] = {
		{ "xtc-000001.seg", 1, 1 },
		{ "xtc-000000.seg", 1, 0 },
		{ "xtc-999999.seg", 1, 999999 },
		{ "xtc-1000000.seg", 1, 1000000 },
		{ "xtc-18446744073709551615.seg", 1, UINT64_MAX },
		{ "xtc-18446744073709551616.seg", 0, 0 },   /* overflows */
		{ "xtc-99999999999999999999.seg", 0, 0 },
		{ "xtc-000000000000000000001.seg", 0, 0 },  /* 21 digits */
		{ "xtc-1.seg", 0, 0 },                      /* not as seg_path writes it */
		{ "xtc-0000001.seg", 0, 0 },
		{ "xtc-0001000000.seg", 0, 0 },
		{ "xtc-.seg", 0, 0 },
		{ "xtc-00000a.seg", 0, 0 },
		{ "xtc-+00001.seg", 0, 0 },
		{ "xtc- 00001.seg", 0, 0 },
		{ "xtc-000001.seg.tmp", 0, 0 },
		{ "xtc-000001.se", 0, 0 },
		{ "xtc-000001", 0, 0 },
		{ "XTC-000001.seg", 0, 0 },
		{ "xtc000001.seg", 0, 0 },
		{ ".xtc-000001.seg", 0, 0 },
		{ "", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t seq = 12345;
		int ok = seg_name_parse(cases[i].name, &seq);

		ck_assert_msg(ok == cases[i].ok, "%s: %d", cases[i].name, ok);
		if (ok)
			ck_assert_uint_eq(seq, cases[i].seq);
		else
			ck_assert_uint_eq(seq, 12345);
	}
}
END_TEST

START_TEST(test_seg_path)
{
	char buf[64];
	uint64_t seq;

	ck_assert_int_eq(seg_path(buf, sizeof(buf), "/d", 42), 17);
	ck_assert_str_eq(buf, "/d/xtc-000042.seg");
	seg_path(buf, sizeof(buf), "d", 12345678);
	ck_assert_str_eq(buf, "d/xtc-12345678.seg");
	ck_assert_int_eq(seg_name_parse(buf + 2, &seq), 1);
	ck_assert_uint_eq(seq, 12345678);
}
END_TEST

START_TEST(test_seg_list_sorts)
{
	static const char *names[] = {
		"xtc-000010.seg", "xtc-000002.seg", "xtc-1000000.seg", "xtc-000003.seg",
		"xtc-3.seg", "junk", "xtc-000004.seg.tmp", "xtc-000005.SEG",
	};
	uint64_t *seqs;
	size_t n;
	char path[512];

	ck_assert_int_eq(seg_list(tmpdir, &seqs, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(seqs);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		close(open(path, O_WRONLY | O_CREAT, 0644));
	}
	ck_assert_int_eq(seg_list(tmpdir, &seqs, &n), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(seqs[0], 2);
	ck_assert_uint_eq(seqs[1], 3);
	ck_assert_uint_eq(seqs[2], 10);
	ck_assert_uint_eq(seqs[3], 1000000);
	free(seqs);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	ck_assert_int_eq(seg_list(path, &seqs, &n), -ENOENT);
}
END_TEST

/* ---- scanning one segment ---- */

struct scan_log {
	int      n;
	uint16_t types[16];
	off_t    offs[16];
};

/* seg_scan_fd callback: remember the block types and offsets. */
static int scan_log_cb(const struct xtc_seg_blk_hdr *h, const void *payload, off_t offset,
                       void *user)
{
	struct scan_log *l = user;

	ck_assert_uint_eq((uintptr_t)payload & 7, 0);
	if (l->n < 16) {
		l->types[l->n] = h->type;
		l->offs[l->n] = offset;
	}
	l->n++;
	return 0;
}

/* Write b as segment 1 and scan it into log (cleared first) and sc. */
static void scan_segment(const struct bytes *b, struct scan_log *log, struct seg_scan *sc)
{
	int fd = open(write_seg(b, 1), O_RDONLY);

	ck_assert_int_ge(fd, 0);
	memset(log, 0, sizeof(*log));
	ck_assert_int_eq(seg_scan_fd(fd, scan_log_cb, log, sc), 0);
	close(fd);
}

/* A whole segment: file header, start, events, drop, end, segment end.
 * offs[] gets the block offsets. */
static void build_segment(struct bytes *b, uint64_t seq, size_t offs[5])
{
	put_file_hdr(b, seq);
	offs[0] = put_session_start(b, 1, 4242, 0, "rings=4\nring_records=1024\n");
	offs[1] = put_events(b, 1, 0, 1000, 3);
	offs[2] = put_drop(b, 1, 17);
	offs[3] = put_session_end(b, 1);
	offs[4] = put_segment_end(b, seq + 1, 4);
}

/* build_segment() into b, written as segment 1: its fd, read-write. */
static int built_segment_fd(struct bytes *b, size_t offs[5])
{
	int fd;

	build_segment(b, 1, offs);
	fd = open(write_seg(b, 1), O_RDWR);
	ck_assert_int_ge(fd, 0);
	return fd;
}

START_TEST(test_scan_whole)
{
	struct bytes b = { 0 };
	struct scan_log log;
	struct seg_scan sc;
	size_t offs[5];

	build_segment(&b, 1, offs);
	scan_segment(&b, &log, &sc);
	ck_assert_int_eq(sc.header_ok, 1);
	ck_assert_uint_eq(sc.hdr.seq, 1);
	ck_assert_uint_eq(sc.blocks, 5);
	ck_assert_int_eq(log.n, 5);
	ck_assert_int_eq((int)sc.valid_end, (int)b.len);
	ck_assert_int_eq((int)sc.file_size, (int)b.len);
	ck_assert_int_eq(sc.clean_end, 1);
	ck_assert_int_eq(sc.torn, 0);
	ck_assert_uint_eq(log.types[0], XTC_BLK_SESSION_START);
	ck_assert_uint_eq(log.types[4], XTC_BLK_SEGMENT_END);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq((int)log.offs[i], (int)offs[i]);
	free(b.p);
}
END_TEST

START_TEST(test_scan_truncated_everywhere)
{
	struct bytes b = { 0 };
	struct seg_scan sc;
	size_t offs[5];
	int fd = built_segment_fd(&b, offs);

	for (size_t k = b.len; k-- > offs[4];) {
		ck_assert_int_eq(ftruncate(fd, (off_t)k), 0);
		ck_assert_int_eq(seg_scan_fd(fd, NULL, NULL, &sc), 0);
		ck_assert_int_eq(sc.header_ok, 1);
		ck_assert_int_eq((int)sc.valid_end, (int)offs[4]);
		ck_assert_uint_eq(sc.blocks, 4);
		ck_assert_int_eq(sc.torn, k != offs[4]);
		ck_assert_int_eq(sc.clean_end, 0);
	}
	/* shorter than the file header */
	for (size_t k = 0; k < sizeof(struct xtc_seg_file_hdr); k += 9) {
		ck_assert_int_eq(ftruncate(fd, (off_t)k), 0);
		ck_assert_int_eq(seg_scan_fd(fd, NULL, NULL, &sc), 0);
		ck_assert_int_eq(sc.header_ok, 0);
		ck_assert_int_eq((int)sc.valid_end, 0);
		ck_assert_int_eq(sc.torn, k != 0);
	}
	close(fd);
	free(b.p);
}
END_TEST

START_TEST(test_scan_flipped_byte_stops)
{
	struct bytes b = { 0 };
	struct scan_log log;
	struct seg_scan sc;
	size_t offs[5];

	build_segment(&b, 1, offs);
	/* in the EVENTS block's payload, then in its header's len */
	for (int which = 0; which < 2; which++) {
		struct bytes c = { 0 };

		bytes_put(&c, b.p, b.len);
		c.p[which ? offs[1] + 5 : offs[1] + 16 + 20] ^= 0x40;
		scan_segment(&c, &log, &sc);
		ck_assert_int_eq((int)sc.valid_end, (int)offs[1]);
		ck_assert_uint_eq(sc.blocks, 1);
		ck_assert_int_eq(log.n, 1);
		ck_assert_int_eq(sc.torn, 1);
		ck_assert_int_eq(sc.clean_end, 0);
		free(c.p);
	}
	/* a bad file header: nothing is trusted */
	b.p[3] ^= 1;
	scan_segment(&b, &log, &sc);
	ck_assert_int_eq(sc.header_ok, 0);
	ck_assert_int_eq(log.n, 0);
	ck_assert_int_eq(sc.torn, 1);
	free(b.p);
}
END_TEST

START_TEST(test_blocks_resume)
{
	struct bytes b = { 0 };
	struct segread_span sp;
	size_t offs[5];
	int fd = built_segment_fd(&b, offs);

	/* mid-way through the DROP block: partial, retry from its start */
	ck_assert_int_eq(ftruncate(fd, (off_t)offs[2] + 20), 0);
	ck_assert_int_eq(segread_blocks(fd, 128, NULL, NULL, &sp), 0);
	ck_assert_int_eq(sp.stop, SEGREAD_PARTIAL);
	ck_assert_int_eq((int)sp.next, (int)offs[2]);
	ck_assert_uint_eq(sp.blocks, 2);
	ck_assert_uint_eq(sp.last_type, XTC_BLK_EVENTS);
	/* the writer finishes: the rest arrives */
	ck_assert_int_eq(pwrite(fd, b.p + offs[2], b.len - offs[2], (off_t)offs[2]),
	                 (ssize_t)(b.len - offs[2]));
	ck_assert_int_eq(segread_blocks(fd, sp.next, NULL, NULL, &sp), 0);
	ck_assert_int_eq(sp.stop, SEGREAD_END);
	ck_assert_uint_eq(sp.blocks, 3);
	ck_assert_int_eq((int)sp.next, (int)b.len);
	ck_assert_uint_eq(sp.last_type, XTC_BLK_SEGMENT_END);
	/* the file shrank under the reader */
	ck_assert_int_eq(ftruncate(fd, 100), 0);
	ck_assert_int_eq(segread_blocks(fd, sp.next, NULL, NULL, &sp), 0);
	ck_assert_int_eq(sp.stop, SEGREAD_SHRUNK);
	close(fd);
	free(b.p);
}
END_TEST

START_TEST(test_blocks_misaligned_and_big)
{
	struct bytes b = { 0 };
	struct scan_log log;
	struct seg_scan sc;
	uint8_t *big = calloc(1, 3u << 20);
	uint8_t odd[5] = { 1, 2, 3, 4, 5 };

	/* odd-length blocks put the following payloads off 8-byte alignment;
	 * a 3 MiB block is bigger than one read chunk */
	put_file_hdr(&b, 1);
	for (int i = 0; i < 40; i++)
		put_block(&b, XTC_BLK_CORRUPT, 0, odd, (size_t)(i % 5) + 1, NULL, 0);
	put_block(&b, XTC_BLK_EVICTED, 0, big, 3u << 20, NULL, 0);
	put_block(&b, XTC_BLK_CORRUPT, 0, odd, 3, NULL, 0);
	scan_segment(&b, &log, &sc);
	ck_assert_uint_eq(sc.blocks, 42);
	ck_assert_int_eq((int)sc.valid_end, (int)b.len);
	ck_assert_int_eq(sc.torn, 0);
	free(big);
	free(b.p);
}
END_TEST

/* ---- the directory reader ---- */

struct rlog {
	int n;
	struct {
		enum segread_type type;
		uint64_t seq, session, ts, real, index;
		int has_real, first, restated;
		uint32_t pid;
	} it[64];
	int nprob;
	struct segread_problem prob[8];
	int stop_at;          /* stop with 7 at this item (1-based), 0 never */
};

/* segread item callback: log what came. */
static int rlog_item(const struct segread_item *it, void *user)
{
	struct rlog *l = user;
	int i = l->n++;

	ck_assert_int_lt(i, 64);
	l->it[i].type = it->type;
	l->it[i].seq = it->seq;
	l->it[i].real = it->real_ns;
	l->it[i].has_real = it->has_real;
	l->it[i].pid = it->session ? it->session->start.pid : 0;
	switch (it->type) {
	case SEGREAD_EVENT:
		l->it[i].session = it->u.event.session_id;
		l->it[i].ts = it->u.event.rec.ts_ns;
		l->it[i].index = it->u.event.index;
		break;
	case SEGREAD_SESSION_START:
		l->it[i].session = it->u.start.ss->session_id;
		l->it[i].first = it->u.start.first;
		l->it[i].restated = it->u.start.restated;
		ck_assert_uint_eq(strlen(it->u.start.settings), it->u.start.settings_len);
		break;
	case SEGREAD_SESSION_END:
		l->it[i].session = it->u.end.session_id;
		break;
	default:
		break;
	}
	return l->stop_at && l->n == l->stop_at ? 7 : 0;
}

/* segread problem callback: log it. */
static void rlog_problem(const struct segread_problem *p, void *user)
{
	struct rlog *l = user;

	ck_assert_int_lt(l->nprob, 8);
	l->prob[l->nprob++] = *p;
}

/* Two segments: 1 is complete, 2 restates session 1, starts session 2 and
 * ends in a torn block.  *torn_at gets the torn block's offset. */
static void build_dir(size_t *torn_at)
{
	struct bytes a = { 0 }, b = { 0 };

	put_file_hdr(&a, 1);
	put_session_start(&a, 1, 4242, 0, "k=v\n");
	put_events(&a, 1, 0, 1000000000ULL + 500, 2);
	put_drop(&a, 1, 5);
	put_segment_end(&a, 2, 3);
	write_seg(&a, 1);

	put_file_hdr(&b, 2);
	put_session_start(&b, 1, 4242, 1, "k=v\n");
	put_events(&b, 1, 1, 1000000000ULL + 900, 1);
	put_session_start(&b, 2, 5151, 0, "");
	put_events(&b, 2, 0, 2000000000ULL + 7, 1);
	put_session_end(&b, 1);
	*torn_at = put_events(&b, 2, 0, 3000000000ULL, 3);
	b.len -= 4;
	write_seg(&b, 2);
	free(a.p);
	free(b.p);
}

START_TEST(test_reader_order_wall_dedupe)
{
	struct segread *r;
	struct rlog *l = calloc(1, sizeof(*l));
	size_t torn_at;
	static const enum segread_type want[] = {
		SEGREAD_SEGMENT_BEGIN, SEGREAD_SESSION_START, SEGREAD_EVENT, SEGREAD_EVENT,
		SEGREAD_DROP, SEGREAD_SEGMENT_END,
		SEGREAD_SEGMENT_BEGIN, SEGREAD_SESSION_START, SEGREAD_EVENT, SEGREAD_SESSION_START,
		SEGREAD_EVENT, SEGREAD_SESSION_END,
	};

	build_dir(&torn_at);
	ck_assert_int_eq(segread_open(&r, tmpdir, rlog_item, rlog_problem, l), 0);
	ck_assert_int_eq(segread_run(r), 0);
	ck_assert_int_eq(l->n, (int)(sizeof(want) / sizeof(want[0])));
	for (int i = 0; i < l->n; i++)
		ck_assert_int_eq(l->it[i].type, want[i]);
	/* session 1's anchor: real = 1.7e18 + 1000 + (ts - 1e9) */
	ck_assert_uint_eq(l->it[2].ts, 1000000500ULL);
	ck_assert_uint_eq(l->it[2].real, 1700000000000001000ULL + 500);
	ck_assert_uint_eq(l->it[3].real, 1700000000000001000ULL + 510);
	ck_assert_uint_eq(l->it[3].index, 1001);
	ck_assert_uint_eq(l->it[2].pid, 4242);
	/* the restatement in segment 2 is not a first appearance */
	ck_assert_int_eq(l->it[1].first, 1);
	ck_assert_int_eq(l->it[1].restated, 0);
	ck_assert_int_eq(l->it[7].first, 0);
	ck_assert_int_eq(l->it[7].restated, 1);
	ck_assert_int_eq(l->it[9].first, 1);
	ck_assert_uint_eq(l->it[9].session, 2);
	/* session 2's anchor: real = 1.7e18 + 2000 + (ts - 2e9) */
	ck_assert_uint_eq(l->it[10].real, 1700000000000002000ULL + 7);
	ck_assert_uint_eq(l->it[10].pid, 5151);
	ck_assert_uint_eq(l->it[10].seq, 2);
	/* the torn tail of the newest segment */
	ck_assert_int_eq(l->nprob, 1);
	ck_assert_int_eq(l->prob[0].kind, SEGREAD_TORN_TAIL);
	ck_assert_uint_eq(l->prob[0].seq, 2);
	ck_assert_int_eq((int)l->prob[0].offset, (int)torn_at);
	ck_assert_str_eq(strrchr(l->prob[0].path, '/'), "/xtc-000002.seg");
	ck_assert_uint_eq(segread_stats(r)->listed, 2);
	ck_assert_uint_eq(segread_stats(r)->segments, 2);
	ck_assert_uint_eq(segread_stats(r)->events, 4);
	ck_assert_uint_eq(segread_stats(r)->torn, 1);
	ck_assert_uint_eq(segread_stats(r)->corrupt, 0);
	ck_assert_ptr_nonnull(segread_session_find(r, 2));
	ck_assert_int_eq(segread_session_find(r, 1)->ended, 1);
	ck_assert_ptr_null(segread_session_find(r, 3));
	segread_close(r);
	free(l);
}
END_TEST

START_TEST(test_reader_evicted_original)
{
	struct segread *r;
	struct rlog *l = calloc(1, sizeof(*l));
	char path[512];
	size_t torn_at;

	build_dir(&torn_at);
	seg_path(path, sizeof(path), tmpdir, 1);
	unlink(path);
	ck_assert_int_eq(segread_open(&r, tmpdir, rlog_item, rlog_problem, l), 0);
	ck_assert_int_eq(segread_run(r), 0);
	ck_assert_int_eq(l->it[1].type, SEGREAD_SESSION_START);
	ck_assert_int_eq(l->it[1].first, 1);
	ck_assert_int_eq(l->it[1].restated, 1);
	ck_assert_uint_eq(l->it[2].real, 1700000000000001000ULL + 900);
	segread_close(r);
	free(l);
}
END_TEST

START_TEST(test_reader_corrupt_older_and_bad_header)
{
	struct segread *r;
	struct rlog *l = calloc(1, sizeof(*l));
	struct bytes c = { 0 };
	size_t torn_at, drop_at;
	int fd;
	char path[512];

	build_dir(&torn_at);
	/* damage segment 1's DROP block */
	put_file_hdr(&c, 1);
	put_session_start(&c, 1, 4242, 0, "k=v\n");
	put_events(&c, 1, 0, 1000000000ULL + 500, 2);
	drop_at = put_drop(&c, 1, 5);
	put_segment_end(&c, 2, 3);
	c.p[drop_at + 16 + 8] ^= 1;
	write_seg(&c, 1);
	/* segment 0 has a bad header */
	c.p[0] = 'Y';
	write_seg(&c, 0);
	/* segment 3 is just created: empty */
	seg_path(path, sizeof(path), tmpdir, 3);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	close(fd);

	ck_assert_int_eq(segread_open(&r, tmpdir, rlog_item, rlog_problem, l), 0);
	ck_assert_int_eq(segread_run(r), 0);
	ck_assert_int_eq(l->nprob, 3);
	ck_assert_int_eq(l->prob[0].kind, SEGREAD_BAD_FILE_HEADER);
	ck_assert_uint_eq(l->prob[0].seq, 0);
	ck_assert_int_eq(l->prob[1].kind, SEGREAD_CORRUPT_TAIL);
	ck_assert_uint_eq(l->prob[1].seq, 1);
	ck_assert_int_eq((int)l->prob[1].offset, (int)drop_at);
	/* segment 2's tail is not the newest any more */
	ck_assert_int_eq(l->prob[2].kind, SEGREAD_CORRUPT_TAIL);
	ck_assert_uint_eq(l->prob[2].seq, 2);
	ck_assert_uint_eq(segread_stats(r)->corrupt, 3);
	/* segment 2 was still read after segment 1's damage; the empty
	 * segment 3 (being created) yields nothing and is no problem */
	ck_assert_int_eq(l->it[l->n - 1].type, SEGREAD_SESSION_END);
	ck_assert_uint_eq(l->it[l->n - 1].seq, 2);
	ck_assert_uint_eq(segread_stats(r)->listed, 4);
	ck_assert_uint_eq(segread_stats(r)->segments, 2);
	segread_close(r);
	free(l);
	free(c.p);
}
END_TEST

START_TEST(test_reader_follow_resume)
{
	struct segread *r;
	struct rlog *l = calloc(1, sizeof(*l));
	struct segread_span sp;
	struct bytes b = { 0 };
	size_t cut;
	int fd, n0;
	char path[512];

	put_file_hdr(&b, 5);
	put_session_start(&b, 9, 1, 0, "");
	cut = put_events(&b, 9, 0, 9000000000ULL, 2);
	seg_path(path, sizeof(path), tmpdir, 5);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, b.p, cut + 10), (ssize_t)(cut + 10));

	ck_assert_int_eq(segread_open(&r, tmpdir, rlog_item, rlog_problem, l), 0);
	ck_assert_int_eq(segread_segment(r, 5, 0, SEGREAD_TAIL_QUIET, &sp), 0);
	ck_assert_int_eq(sp.stop, SEGREAD_PARTIAL);
	ck_assert_int_eq((int)sp.next, (int)cut);
	ck_assert_int_eq(l->nprob, 0);
	n0 = l->n;
	ck_assert_int_eq(n0, 2); /* SEGMENT_BEGIN, SESSION_START */

	ck_assert_int_eq(pwrite(fd, b.p + cut + 10, b.len - cut - 10, (off_t)cut + 10),
	                 (ssize_t)(b.len - cut - 10));
	ck_assert_int_eq(segread_segment(r, 5, sp.next, SEGREAD_TAIL_QUIET, &sp), 0);
	ck_assert_int_eq(sp.stop, SEGREAD_END);
	ck_assert_int_eq(l->n, 4); /* just the two events, no second BEGIN */
	ck_assert_int_eq(l->it[2].type, SEGREAD_EVENT);
	ck_assert_uint_eq(l->it[2].pid, 1);
	close(fd);

	/* the segment is deleted under the follower */
	unlink(path);
	ck_assert_int_eq(segread_segment(r, 5, sp.next, SEGREAD_TAIL_QUIET, &sp), -ENOENT);
	ck_assert_int_eq(l->nprob, 1);
	ck_assert_int_eq(l->prob[0].kind, SEGREAD_VANISHED);
	segread_close(r);
	free(l);
	free(b.p);
}
END_TEST

START_TEST(test_reader_stop_and_unknown_session)
{
	struct segread *r;
	struct rlog *l = calloc(1, sizeof(*l));
	struct bytes b = { 0 };

	put_file_hdr(&b, 1);
	put_events(&b, 77, 0, 1000000000ULL + 42, 3);  /* its SESSION_START is lost */
	put_segment_end(&b, 0, 1);
	write_seg(&b, 1);
	ck_assert_int_eq(segread_open(&r, tmpdir, rlog_item, rlog_problem, l), 0);
	ck_assert_int_eq(segread_run(r), 0);
	ck_assert_int_eq(l->n, 5);
	ck_assert_int_eq(l->it[1].type, SEGREAD_EVENT);
	ck_assert_uint_eq(l->it[1].pid, 0); /* no session known */
	/* the segment header's anchor: 5e12 + (ts - 1e9) */
	ck_assert_int_eq(l->it[1].has_real, 1);
	ck_assert_uint_eq(l->it[1].real, 5000000000000ULL + 42);
	segread_close(r);

	memset(l, 0, sizeof(*l));
	l->stop_at = 3;
	ck_assert_int_eq(segread_open(&r, tmpdir, rlog_item, rlog_problem, l), 0);
	ck_assert_int_eq(segread_run(r), 7);
	ck_assert_int_eq(l->n, 3);
	segread_close(r);
	free(l);
	free(b.p);
}
END_TEST

START_TEST(test_reader_bad_payload)
{
	struct segread *r;
	struct rlog *l = calloc(1, sizeof(*l));
	struct bytes b = { 0 };
	struct xtc_seg_events ev = { .session_id = 1, .count = 5, .body_len = 3 };
	uint8_t body[3] = { 2, 0x48, 0 };   /* one record, then nothing */
	struct xtc_seg_evicted evd = { .session_count = 1000 };

	put_file_hdr(&b, 1);
	put_block(&b, XTC_BLK_EVENTS, 0, &ev, sizeof(ev), body, sizeof(body));
	put_block(&b, XTC_BLK_EVICTED, 0, &evd, sizeof(evd), NULL, 0);
	put_block(&b, XTC_BLK_DROP, 0, body, 3, NULL, 0);
	put_block(&b, XTC_BLK_SESSION_START, 0, body, 3, NULL, 0);
	put_segment_end(&b, 0, 4);
	write_seg(&b, 1);
	ck_assert_int_eq(segread_open(&r, tmpdir, rlog_item, rlog_problem, l), 0);
	ck_assert_int_eq(segread_run(r), 0);
	ck_assert_int_eq(l->n, 3);          /* BEGIN, the one record, SEGMENT_END */
	ck_assert_int_eq(l->it[1].type, SEGREAD_EVENT);
	ck_assert_int_eq(l->nprob, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(l->prob[i].kind, SEGREAD_BAD_PAYLOAD);
	ck_assert_uint_eq(segread_stats(r)->corrupt, 4);
	segread_close(r);
	free(l);
	free(b.p);
}
END_TEST

/* item callback: every event's session is the one its pid says. */
static int many_item(const struct segread_item *it, void *user)
{
	int *events = user;

	if (it->type == SEGREAD_EVENT) {
		ck_assert_ptr_nonnull(it->session);
		ck_assert_uint_eq(it->session->id, it->u.event.session_id);
		ck_assert_uint_eq(it->session->start.pid, 10000 + it->u.event.session_id);
		ck_assert_uint_eq(it->real_ns, 1700000000000000000ULL + it->session->id * 1000 +
		                  (it->u.event.rec.ts_ns - 1000000000ULL * it->session->id));
		(*events)++;
	}
	return 0;
}

START_TEST(test_reader_many_sessions)
{
	struct segread *r;
	struct bytes b = { 0 };
	int events = 0;

	put_file_hdr(&b, 1);
	for (uint64_t id = 1; id <= 500; id++)
		put_session_start(&b, id * 7919, (uint32_t)(10000 + id * 7919), 0, "x=1\n");
	for (uint64_t id = 500; id >= 1; id--)
		put_events(&b, id * 7919, 0, 1000000000ULL * id * 7919 + id, 2);
	write_seg(&b, 1);
	ck_assert_int_eq(segread_open(&r, tmpdir, many_item, NULL, &events), 0);
	ck_assert_int_eq(segread_run(r), 0);
	ck_assert_int_eq(events, 1000);
	for (uint64_t id = 1; id <= 500; id++)
		ck_assert_ptr_nonnull(segread_session_find(r, id * 7919));
	ck_assert_ptr_null(segread_session_find(r, 7918));
	segread_close(r);
	free(b.p);
}
END_TEST

START_TEST(test_reader_missing_dir)
{
	struct segread *r;
	struct rlog *l = calloc(1, sizeof(*l));
	char path[512];

	snprintf(path, sizeof(path), "%s/nope/", tmpdir);
	ck_assert_int_eq(segread_open(&r, path, rlog_item, NULL, l), 0);
	ck_assert_int_eq(segread_run(r), -ENOENT);
	ck_assert_str_eq(segread_dir(r) + strlen(tmpdir), "/nope");
	segread_close(r);
	ck_assert_int_eq(segread_open(&r, tmpdir, NULL, NULL, l), -EINVAL);
	free(l);
}
END_TEST

/* The suite: one TCase per feature. */
static Suite *seg_suite(void)
{
	const struct check_case cases[] = {
		{ .name = "varint",
		  .tests = CHECK_TESTS(test_varint_round_trip, test_varint_rejects_long) },
		{ .name = "crc",
		  .tests = CHECK_TESTS(test_crc_known_vector, test_crc_matches_reference,
		                       test_crc_table_and_instruction_agree) },
		{ .name = "codec", .timeout = 60,
		  .tests = CHECK_TESTS(test_codec_random_round_trip, test_codec_extremes,
		                       test_ring_encoder_equals_reference, test_ring_encoder_extremes,
		                       test_ring_encoder_every_length,
		                       test_codec_cheapest_flags, test_codec_truncation_and_bad_flags,
		                       test_codec_garbage_is_safe) },
		{ .name = "headers",
		  .tests = CHECK_TESTS(test_block_seal_verify, test_file_hdr) },
		{ .name = "names", .setup = tmpdir_setup, .teardown = tmpdir_teardown,
		  .tests = CHECK_TESTS(test_name_parse, test_seg_path, test_seg_list_sorts) },
		{ .name = "scan", .setup = tmpdir_setup, .teardown = tmpdir_teardown, .timeout = 60,
		  .tests = CHECK_TESTS(test_scan_whole, test_scan_truncated_everywhere,
		                       test_scan_flipped_byte_stops, test_blocks_resume,
		                       test_blocks_misaligned_and_big) },
		{ .name = "reader", .setup = tmpdir_setup, .teardown = tmpdir_teardown,
		  .tests = CHECK_TESTS(test_reader_order_wall_dedupe, test_reader_evicted_original,
		                       test_reader_corrupt_older_and_bad_header,
		                       test_reader_follow_resume, test_reader_stop_and_unknown_session,
		                       test_reader_bad_payload, test_reader_many_sessions,
		                       test_reader_missing_dir) },
	};

	return check_suite("seg", cases, sizeof(cases) / sizeof(cases[0]));
}

int main(void)
{
	return check_run(seg_suite());
}
