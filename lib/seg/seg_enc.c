/*
 * lib/seg/seg_enc.c - the EVENTS body encoder xtcd drains with: records
 * straight from a shared-memory ring to their on-disk bytes, with the
 * tick-to-ns conversion on the way.
 *
 * The bytes are exactly those of seg_codec_begin() and seg_encode_rec()
 * (seg.c, the reference, which the tests hold this against); only the
 * work is less: each ring slot is read once as five 64-bit words into
 * registers (no intermediate record), the previous record's state stays
 * in registers across a whole block, the common one- and two-byte
 * varints are plain stores, and the varint length comparisons of the
 * detail field are one count of leading zeros each instead of loops.
 *
 * The ring is memory another process writes at any time: every slot is
 * read exactly once, through volatile loads, and only what was read is
 * encoded, so a producer changing a slot under us changes what we write
 * but never makes the bytes inconsistent with themselves.  Slots are
 * addressed as index & mask only.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "lib/seg/seg.h"

/* The flag bits of proto/xtc_seg.h's record encoding (as in seg.c). */
#define RF_SRC_VARINT 0x07u
#define RF_PID_SAME   0x08u
#define RF_LOOP_SAME  0x10u
#define RF_DET_DELTA  0x20u  /* DET_DELTA << 5 */
#define RF_DET_ZERO   0x40u  /* DET_ZERO << 5; DET_VARINT is 0 */
#define KIND_ESCAPE   255u

/* A 64-bit word of a slot, read as the bytes it is (any field type). */
typedef uint64_t __attribute__((may_alias)) enc_word;

static inline __attribute__((always_inline)) uint8_t *vput(uint8_t *p, uint64_t v)
{
	if (__builtin_expect(v < 0x80, 1)) {
		*p = (uint8_t)v;
		return p + 1;
	}
	if (v < 0x4000) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return p + 2;
	}
	do {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	} while (v >= 0x80);
	*p++ = (uint8_t)v;
	return p;
}

/* LEB128 length of v, 1..10: ceil(bits / 7) as (bits * 9 + 64) / 64. */
static inline unsigned vlen(uint64_t v)
{
	unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1);

	return (bits * 9u + 64u) >> 6;
}

static inline uint64_t zz(uint64_t d)
{
	return (d << 1) ^ (0 - (d >> 63));
}

/* Ticks to ns as struct seg_ticks says (before the jitter hold). */
static inline uint64_t tick_ns(const struct seg_ticks *t, uint64_t ts)
{
	uint64_t d;

	if (t->identity)
		return ts;
	if (ts >= t->anchor_ts)
		return t->anchor_ns + (uint64_t)(((unsigned __int128)(ts - t->anchor_ts) * t->mult) >> 32);
	d = (uint64_t)(((unsigned __int128)(t->anchor_ts - ts) * t->mult) >> 32);
	return d > t->anchor_ns ? 0 : t->anchor_ns - d;
}

/* The previous record, as the codec keeps it, in locals. */
struct enc_prev {
	uint64_t ts;
	uint64_t pid;     /* loop_id | local_id << 32, as the slot holds them */
	uint64_t gen;
	uint64_t detail;
};

/* Encode one slot's words after prev; returns the end of its bytes. */
static inline __attribute__((always_inline)) uint8_t *enc_one(struct enc_prev *pv, uint8_t *p, uint64_t ns, uint64_t w1,
                               uint64_t pid, uint64_t gen, uint64_t detail)
{
	uint32_t source = (uint32_t)w1, kind = (uint32_t)(w1 >> 32);
	uint8_t *flagp;
	unsigned flags;

	if (__builtin_expect(kind < KIND_ESCAPE, 1)) {
		*p++ = (uint8_t)kind;
	} else {
		*p++ = KIND_ESCAPE;
		p = vput(p, kind);
	}
	flagp = p++;
	if (__builtin_expect(source - 1u < 64u && (source & (source - 1u)) == 0, 1)) {
		flags = (unsigned)__builtin_ctz(source);
	} else {
		flags = RF_SRC_VARINT;
		p = vput(p, source);
	}
	p = vput(p, zz(ns - pv->ts));
	if (pid == pv->pid && gen == pv->gen) {
		flags |= RF_PID_SAME;
	} else {
		if ((uint32_t)pid == (uint32_t)pv->pid)
			flags |= RF_LOOP_SAME;
		else
			p = vput(p, (uint32_t)pid);
		p = vput(p, pid >> 32);
		p = vput(p, gen);
	}
	if (detail == 0) {
		flags |= RF_DET_ZERO;
	} else {
		uint64_t dz = zz(detail - pv->detail);

		/* The delta only when its varint is shorter: never for a
		 * one-byte detail, always for a one-byte delta of a longer
		 * one (the common case of a counter or an address nearby),
		 * else when the lengths say so. */
		if (detail < 0x80) {
			*p++ = (uint8_t)detail;
		} else if (dz < 0x80) {
			flags |= RF_DET_DELTA;
			*p++ = (uint8_t)dz;
		} else if (dz < detail && vlen(dz) < vlen(detail)) {
			flags |= RF_DET_DELTA;
			p = vput(p, dz);
		} else {
			p = vput(p, detail);
		}
	}
	*flagp = (uint8_t)flags;
	pv->ts = ns;
	pv->pid = pid;
	pv->gen = gen;
	pv->detail = detail;
	return p;
}

/* Slots [k, end) of one contiguous run of the ring.  Everything stays in
 * locals: the byte stores through p may alias any memory, and would
 * otherwise make the compiler reload *b after each of them. */
static uint8_t *enc_run(const struct xtc_shm_rec *slot, uint32_t n, const struct seg_ticks *tk,
                        uint64_t *floorp, struct enc_prev *pvp, uint8_t *p)
{
	const struct seg_ticks t = *tk;
	struct enc_prev pv = *pvp;
	uint64_t floor = *floorp;

	for (uint32_t k = 0; k < n; k++) {
		const volatile enc_word *w = (const volatile enc_word *)(const volatile void *)&slot[k];
		uint64_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
		uint64_t ns = tick_ns(&t, w0);

		/* Hold a record that converts a little before its predecessor
		 * (clock anchors of two drains differ by some ns) at the
		 * predecessor's time; anything more is what was written. */
		if (ns < floor && floor - ns < t.jitter)
			ns = floor;
		floor = ns;
		p = enc_one(&pv, p, ns, w1, w2, w3, w4);
	}
	*floorp = floor;
	*pvp = pv;
	return p;
}

size_t seg_encode_ring(struct seg_ring_batch *b, uint8_t *out)
{
	const struct xtc_shm_rec *recs = b->recs;
	uint64_t mask = b->mask, first = b->from & mask, floor = b->floor_ns;
	uint32_t n = b->n, run;
	struct enc_prev pv;
	uint8_t *p = out;
	uint64_t ns;

	if (n == 0)
		return 0;
	/* The first record starts the codec at its own time. */
	{
		const volatile enc_word *w = (const volatile enc_word *)(const volatile void *)&recs[first];
		uint64_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];

		ns = tick_ns(&b->ticks, w0);
		if (ns < floor && floor - ns < b->ticks.jitter)
			ns = floor;
		floor = ns;
		b->first_ns = ns;
		pv = (struct enc_prev){ .ts = ns, .pid = b->loop_id, .gen = 0, .detail = 0 };
		p = enc_one(&pv, p, ns, w1, w2, w3, w4);
	}
	first = (first + 1) & mask;
	n--;
	run = mask + 1 - first < n ? (uint32_t)(mask + 1 - first) : n;
	p = enc_run(recs + first, run, &b->ticks, &floor, &pv, p);
	p = enc_run(recs, n - run, &b->ticks, &floor, &pv, p);
	b->floor_ns = floor;
	b->last_ns = pv.ts;
	return (size_t)(p - out);
}
