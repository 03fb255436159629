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
 * Where the CPU has BMI2 (x86-64, asked once at run time) the longer
 * varints are one pdep and one 8-byte store each, with no branch on
 * their length, and the detail's delta-or-value choice is branch-free:
 * fewer mispredicted branches on records whose shapes vary.  Building
 * with -DENC_NO_BMI leaves the portable path alone, for comparisons.
 * Ring lines are prefetched a few dozen slots ahead, since another core
 * wrote them.
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

/* Slots ahead to prefetch: 128 (5 KiB, 80 lines) cost xtcd the least CPU
 * at 1M events/s of 16, 32, 64 and 128 on a 2-core Xeon VM. */
#ifndef ENC_PREFETCH
#define ENC_PREFETCH 128
#endif

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

/* The detail's varint when neither it nor its delta takes one byte: the
 * delta when its varint is shorter. */
static inline __attribute__((always_inline)) uint8_t *det_long(uint8_t *p, uint64_t detail, uint64_t dz,
                                                               unsigned *flags)
{
	if (dz < detail && vlen(dz) < vlen(detail)) {
		*flags |= RF_DET_DELTA;
		return vput(p, dz);
	}
	return vput(p, detail);
}

/* enc_one: one slot's words after prev; returns the end of its bytes. */
#define ENC_ONE    enc_one
#define ENC_TARGET
#define ENC_VPUT   vput
#define ENC_DET    det_long
#include "lib/seg/seg_enc_one.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(ENC_NO_BMI)
#define ENC_BMI 1
#define ENC_BMI_TARGET __attribute__((target("bmi,bmi2,lzcnt")))
#include <cpuid.h>
#include <immintrin.h>

/*
 * The same record with BMI2, without a branch on any varint's length: a
 * value below 2^56 is spread into 7-bit groups by one pdep, the
 * continuation bits come from a table indexed by its leading zeros, and
 * all eight bytes are stored at once, of which the varint's length count.
 * The bytes past it are scratch that the next field or record overwrites:
 * a field starts at most 50 bytes into its record (SEG_MAX_REC_BYTES 64),
 * so the store stays inside the room the caller gave.
 */

/* Indexed by the leading zeros of v | 1: the varint's length, and the
 * continuation bit of each of its bytes but the last. */
static const uint8_t vlen_lz[64] = {
	10, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7,
	6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4,
	3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
};
/* the top bit of each byte but the last of an n-byte varint, n <= 8 (those
 * of 9 and 10 bytes, from lz < 8, are never stored from here) */
#define CONT(n) (0x0080808080808080ull >> ((8 * (8 - (n))) & 63))
static const uint64_t vcont_lz[64] = {
#define C8(a, b, c, d, e, f, g, h) CONT(a), CONT(b), CONT(c), CONT(d), CONT(e), CONT(f), CONT(g), CONT(h)
	C8(10, 9, 9, 9, 9, 9, 9, 9), C8(8, 8, 8, 8, 8, 8, 8, 7), C8(7, 7, 7, 7, 7, 7, 6, 6),
	C8(6, 6, 6, 6, 6, 5, 5, 5), C8(5, 5, 5, 5, 4, 4, 4, 4), C8(4, 4, 4, 3, 3, 3, 3, 3),
	C8(3, 3, 2, 2, 2, 2, 2, 2), C8(2, 1, 1, 1, 1, 1, 1, 1),
#undef C8
};
#undef CONT

/* A varint of v < 2^56, given lz = clz(v | 1). */
static inline __attribute__((always_inline)) ENC_BMI_TARGET uint8_t *vput_bmi_lz(uint8_t *p, uint64_t v, unsigned lz)
{
	uint64_t x = _pdep_u64(v, 0x7f7f7f7f7f7f7f7full) | vcont_lz[lz];

	__builtin_memcpy(p, &x, 8);
	return p + vlen_lz[lz];
}

/* A varint of any v: one byte the plain way (the commonest, and the
 * cheapest), 2 to 8 bytes with pdep, 9 and 10 in the loop. */
static inline __attribute__((always_inline)) ENC_BMI_TARGET uint8_t *vput_bmi(uint8_t *p, uint64_t v)
{
	if (__builtin_expect(v < 0x80, 1)) {
		*p = (uint8_t)v;
		return p + 1;
	}
	if (__builtin_expect(v >> 56 != 0, 0))
		return vput(p, v);
	return vput_bmi_lz(p, v, (unsigned)__builtin_clzll(v));
}

/* As det_long, the choice made without a branch (the lengths are table
 * entries). */
static inline __attribute__((always_inline)) ENC_BMI_TARGET uint8_t *
det_long_bmi(uint8_t *p, uint64_t detail, uint64_t dz, unsigned *flags)
{
	unsigned lzd = (unsigned)__builtin_clzll(detail), lzz = (unsigned)__builtin_clzll(dz);
	int delta = vlen_lz[lzz] < vlen_lz[lzd];
	uint64_t v = delta ? dz : detail;

	*flags |= (unsigned)delta << 5;
	if (__builtin_expect(v >> 56 != 0, 0))
		return vput(p, v);
	return vput_bmi_lz(p, v, delta ? lzz : lzd);
}

/* enc_one_bmi: enc_one with the BMI2 varints. */
#define ENC_ONE    enc_one_bmi
#define ENC_TARGET ENC_BMI_TARGET
#define ENC_VPUT   vput_bmi
#define ENC_DET    det_long_bmi
#include "lib/seg/seg_enc_one.h"
#endif

/* A slot's time in ns, held at the previous record's (prev) when it
 * converts a little before it: clock anchors of two drains differ by some
 * ns; anything more is what was written.  `identity` is a constant in
 * each caller, so that ns clocks skip the conversion and TSC clocks its
 * test. */
static inline __attribute__((always_inline)) uint64_t
enc_ns(const uint64_t w0, uint64_t prev, uint64_t ats, uint64_t ans, uint64_t mult, uint64_t jitter,
       const int identity)
{
	uint64_t ns;

	if (identity) {
		ns = w0;
	} else if (__builtin_expect(w0 >= ats, 1)) {
		ns = ans + (uint64_t)(((unsigned __int128)(w0 - ats) * mult) >> 32);
	} else {
		uint64_t d = (uint64_t)(((unsigned __int128)(ats - w0) * mult) >> 32);

		ns = d > ans ? 0 : ans - d;
	}
	if (ns < prev && prev - ns < jitter)
		ns = prev;
	return ns;
}

/*
 * Slots [0, n) of one contiguous run of the ring, after the record in
 * *pvp, with `one` the per-record step.  Everything stays in locals: the
 * byte stores through p may alias any memory, and would otherwise make
 * the compiler reload *tk after each of them.  The lines were written by
 * another core: they are asked for well ahead; past the run's end that
 * touches nothing (a prefetch never faults and reads nothing we use).
 */
#define ENC_SLOTS(one, identity)                                                                   \
	do {                                                                                       \
		const uint64_t ats = tk->anchor_ts, ans = tk->anchor_ns, mult = tk->mult;           \
		const uint64_t jitter = tk->jitter;                                                \
		struct enc_prev pv = *pvp;                                                         \
                                                                                                   \
		for (uint32_t k = 0; k < n; k++) {                                                 \
			const volatile enc_word *w =                                               \
				(const volatile enc_word *)(const volatile void *)&slot[k];         \
			uint64_t w0, w1, w2, w3, w4;                                               \
                                                                                                   \
			__builtin_prefetch((const void *)((uintptr_t)w + ENC_PREFETCH * sizeof *slot), \
			                   0, 3);                                                  \
			w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];                     \
			p = one(&pv, p, enc_ns(w0, pv.ts, ats, ans, mult, jitter, identity), w1,   \
			        w2, w3, w4);                                                       \
		}                                                                                  \
		*pvp = pv;                                                                         \
		return p;                                                                          \
	} while (0)

#define ENC_RUN_ARGS const struct xtc_shm_rec *slot, uint32_t n, const struct seg_ticks *tk, \
	struct enc_prev *pvp, uint8_t *p

static uint8_t *enc_run_ns(ENC_RUN_ARGS)
{
	ENC_SLOTS(enc_one, 1);
}

static uint8_t *enc_run_tsc(ENC_RUN_ARGS)
{
	ENC_SLOTS(enc_one, 0);
}

#ifdef ENC_BMI
static ENC_BMI_TARGET uint8_t *enc_run_ns_bmi(ENC_RUN_ARGS)
{
	ENC_SLOTS(enc_one_bmi, 1);
}

static ENC_BMI_TARGET uint8_t *enc_run_tsc_bmi(ENC_RUN_ARGS)
{
	ENC_SLOTS(enc_one_bmi, 0);
}

static int enc_bmi = -1; /* the CPU has BMI2 and LZCNT; -1: not asked yet */

/* LZCNT is CPUID 0x80000001 ECX bit 5 (not every compiler's
 * __builtin_cpu_supports knows its name). */
static int enc_has_lzcnt(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 5)) != 0;
}

int seg_encode_has_bmi(void)
{
	if (__atomic_load_n(&enc_bmi, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&enc_bmi, __builtin_cpu_supports("bmi2") && enc_has_lzcnt(), __ATOMIC_RELAXED);
	return enc_bmi;
}
#else
int seg_encode_has_bmi(void)
{
	return 0;
}
#endif

static uint8_t *enc_run(const struct xtc_shm_rec *slot, uint32_t n, const struct seg_ticks *tk,
                        struct enc_prev *pvp, uint8_t *p, int bmi)
{
	if (n == 0)
		return p;
#ifdef ENC_BMI
	if (bmi)
		return tk->identity ? enc_run_ns_bmi(slot, n, tk, pvp, p) : enc_run_tsc_bmi(slot, n, tk, pvp, p);
#else
	(void)bmi;
#endif
	return tk->identity ? enc_run_ns(slot, n, tk, pvp, p) : enc_run_tsc(slot, n, tk, pvp, p);
}

static size_t encode_ring(struct seg_ring_batch *b, uint8_t *out, int bmi)
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
		b->first_ns = ns;
		pv = (struct enc_prev){ .ts = ns, .pid = b->loop_id, .gen = 0, .detail = 0 };
		p = enc_one(&pv, p, ns, w1, w2, w3, w4);
	}
	first = (first + 1) & mask;
	n--;
	run = mask + 1 - first < n ? (uint32_t)(mask + 1 - first) : n;
	p = enc_run(recs + first, run, &b->ticks, &pv, p, bmi);
	p = enc_run(recs, n - run, &b->ticks, &pv, p, bmi);
	b->floor_ns = pv.ts;
	b->last_ns = pv.ts;
	return (size_t)(p - out);
}

size_t seg_encode_ring(struct seg_ring_batch *b, uint8_t *out)
{
	return encode_ring(b, out, seg_encode_has_bmi());
}

size_t seg_encode_ring_portable(struct seg_ring_batch *b, uint8_t *out)
{
	return encode_ring(b, out, 0);
}
