/*
 * lib/common/clock.h - the recorder's timestamp source.
 *
 * On x86 with an invariant TSC (constant_tsc and nonstop_tsc) an event is
 * stamped with rdtsc, about 10 ns on a VM against about 23 ns for
 * clock_gettime.  Everywhere else, or with XTC_TAIL_CLOCK=mono, it is
 * stamped with CLOCK_MONOTONIC nanoseconds.  The segment header records the
 * unit, an anchor pair and the calibrated tick rate, so any reader converts
 * ticks to CLOCK_MONOTONIC nanoseconds.
 */
#ifndef XTC_LIB_CLOCK_H
#define XTC_LIB_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define XTC_HAVE_TSC 1
#endif

#include "proto/xtc_shm.h"

/* One anchor: the same instant on the tick clock and on the OS clocks. */
struct clock_anchor {
	uint64_t ts;
	uint64_t mono_ns;
	uint64_t real_ns;
};

extern int clock_use_tsc;

/* CLOCK_x in nanoseconds. */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The OS clocks, for code that does not stamp records. */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

/* The current tick, in the unit clock_unit() names. */
static inline uint64_t clock_now(void)
{
#ifdef XTC_HAVE_TSC
	if (__builtin_expect(clock_use_tsc, 1))
		return __rdtsc();
#endif
	return clock_ns(CLOCK_MONOTONIC);
}

/* Choose the tick source and calibrate it (about 2 ms with a TSC).
 * Idempotent. */
void clock_setup(void);

/* enum xtc_shm_ts_unit of clock_now(). */
uint32_t clock_unit(void);

/* Ticks per second of clock_now(): calibrated, refined by later anchors. */
uint64_t clock_hz(void);

/* Take an anchor now. */
void clock_anchor_take(struct clock_anchor *a);

/* Convert tick `ts` to CLOCK_MONOTONIC ns using anchor `a` and rate hz. */
uint64_t clock_to_ns(uint64_t ts, const struct clock_anchor *a, uint64_t hz);

/* The boot whose CLOCK_MONOTONIC the timestamps count, as the 16 bytes of
 * /proc/sys/kernel/random/boot_id (zeros when it cannot be read).  The
 * recorder puts it in its shm header and xtcd in every segment header. */
void clock_boot_id(uint8_t out[16]);

/* The first 32 hex digits of text[0..len) as 16 bytes, skipping anything
 * else (the dashes of "6f0c1e4a-..."); missing digits read as zero. */
void clock_boot_id_parse(const char *text, size_t len, uint8_t out[16]);

#endif /* XTC_LIB_CLOCK_H */
