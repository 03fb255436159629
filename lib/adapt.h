/*
 * lib/adapt.h - what the LD_PRELOAD adapters (lib/ev, lib/uring) share:
 * a cheap interval clock in nanoseconds and their environment switches.
 * Internal; never installed.
 */
#ifndef XTC_LIB_ADAPT_H
#define XTC_LIB_ADAPT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/common/clock.h"

/* Ticks of clock_now() to nanoseconds: ns = ticks * adapt_mult >> 32. */
extern uint64_t adapt_mult;

/* Calibrate once (clock_setup takes about 2 ms with a TSC). */
static inline void adapt_clock_setup(void)
{
	uint64_t hz;

	clock_setup();
	hz = clock_hz();
	if (clock_unit() != XTC_SHM_TS_TSC || hz == 0)
		adapt_mult = (uint64_t)1 << 32;
	else
		adapt_mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / hz);
}

static inline uint64_t adapt_ns(uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * adapt_mult) >> 32);
}

/* A 0/1 switch from the environment: unset or empty gives dflt. */
static inline int adapt_env_flag(const char *name, int dflt)
{
	const char *s = getenv(name);

	if (s == NULL || *s == '\0')
		return dflt;
	return !(strcmp(s, "0") == 0 || strcasecmp(s, "off") == 0 || strcasecmp(s, "no") == 0);
}

/* One line on stderr under XTC_DEBUG (adapt.c). */
void adapt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* XTC_LIB_ADAPT_H */
