/*
 * lib/common/clock.c - tick source selection and calibration.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/common/clock.h"

int clock_use_tsc;
static int clock_ready;
static uint64_t clock_rate = 1000000000u;

/* Whether /proc/cpuinfo promises a TSC that ticks at one rate, always. */
static int tsc_invariant(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[4096];
	int constant = 0, nonstop = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

/* Take an anchor whose tick sits within a tight bracket of CLOCK_MONOTONIC
 * reads, so calibration error comes from the clock, not from preemption. */
void clock_anchor_take(struct clock_anchor *a)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t m0 = clock_ns(CLOCK_MONOTONIC);
		uint64_t ts = clock_now();
		uint64_t m1 = clock_ns(CLOCK_MONOTONIC);

		if (m1 - m0 < best) {
			best = m1 - m0;
			a->ts = ts;
			a->mono_ns = m0 + (m1 - m0) / 2;
		}
		if (best < 200)
			break;
	}
	a->real_ns = clock_ns(CLOCK_REALTIME);
}

#ifdef XTC_HAVE_TSC
/* Measure TSC ticks per second against CLOCK_MONOTONIC over ~2 ms. */
static uint64_t tsc_calibrate(void)
{
	struct clock_anchor a, b;

	clock_anchor_take(&a);
	do
		clock_anchor_take(&b);
	while (b.mono_ns - a.mono_ns < 2000000);
	return (uint64_t)((unsigned __int128)(b.ts - a.ts) * 1000000000u /
	                  (b.mono_ns - a.mono_ns));
}
#endif

void clock_setup(void)
{
	const char *env;

	if (clock_ready)
		return;
	env = getenv("XTC_TAIL_CLOCK");
#ifdef XTC_HAVE_TSC
	if ((env == NULL || strcmp(env, "mono") != 0) && tsc_invariant()) {
		clock_use_tsc = 1;
		clock_rate = tsc_calibrate();
		if (clock_rate < 1000000) { /* nonsense: fall back */
			clock_use_tsc = 0;
			clock_rate = 1000000000u;
		}
	}
#else
	(void)env;
#endif
	clock_ready = 1;
}

uint32_t clock_unit(void)
{
	return clock_use_tsc ? XTC_SHM_TS_TSC : XTC_SHM_TS_MONO_NS;
}

uint64_t clock_hz(void)
{
	return clock_rate;
}

uint64_t clock_to_ns(uint64_t ts, const struct clock_anchor *a, uint64_t hz)
{
	unsigned __int128 d;

	if (hz == 0)
		return a->mono_ns;
	if (ts >= a->ts) {
		d = (unsigned __int128)(ts - a->ts) * 1000000000u / hz;
		return a->mono_ns + (uint64_t)d;
	}
	d = (unsigned __int128)(a->ts - ts) * 1000000000u / hz;
	return d > a->mono_ns ? 0 : a->mono_ns - (uint64_t)d;
}

/* 16 bytes from the hex digits of a boot id text. */
void clock_boot_id_parse(const char *text, size_t len, uint8_t out[16])
{
	int k = 0;

	memset(out, 0, 16);
	for (size_t i = 0; i < len && k < 32; i++) {
		char c = text[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			continue;
		out[k / 2] |= (uint8_t)(k % 2 ? v : v << 4);
		k++;
	}
}

/* The kernel's boot id as 16 bytes (zeros if unreadable). */
void clock_boot_id(uint8_t out[16])
{
	char text[64];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof text) : -1;

	if (fd >= 0)
		close(fd);
	clock_boot_id_parse(text, n > 0 ? (size_t)n : 0, out);
}
