/*
 * bench/bench_emit.c - what one xtc_tail_emit costs at the call site.
 *
 * Prints the median (and min/max over the batches) of ns per call for:
 * a disabled source, an enabled source with room in the ring, an enabled
 * flight recorder that overwrites its oldest records, and a full ring in
 * drop-new mode (the path taken while xtcd is attached but behind).
 * Figures, not a test: nothing here passes or fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xtc_tail.h"

#define BATCH   (1u << 20)
#define BATCHES 21

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ns per call of BATCH emits (the loop itself included). */
static double batch(uint32_t source)
{
	uint64_t t0 = now_ns();

	for (uint32_t i = 0; i < BATCH; i++) {
		xtc_pid_t pid = { 1, i & 1023, 1 };

		xtc_tail_emit(source, XTC_TAIL_RUN, pid, i);
	}
	return (double)(now_ns() - t0) / BATCH;
}

/* ns per call of BATCH call sites guarded by xtc_tail_on(). */
static double batch_guarded(uint32_t source)
{
	uint64_t t0 = now_ns();

	for (uint32_t i = 0; i < BATCH; i++) {
		xtc_pid_t pid = { 1, i & 1023, 1 };

		if (xtc_tail_on(source))
			xtc_tail_emit(source, XTC_TAIL_RUN, pid, i);
		__asm__ volatile("" ::: "memory");
	}
	return (double)(now_ns() - t0) / BATCH;
}

static void report(const char *what, double *v)
{
	qsort(v, BATCHES, sizeof *v, cmp_double);
	printf("  %-44s %7.2f ns   (min %.2f, max %.2f)\n", what, v[BATCHES / 2], v[0],
	       v[BATCHES - 1]);
}

int main(void)
{
	double v[BATCHES];

	/* A ring large enough that each timed batch fits after a reset. */
	if (xtc_tail_configure(4, 1u << 21) != 0) {
		fprintf(stderr, "bench_emit: xtc_tail_configure failed\n");
		return 1;
	}
	xtc_tail_enable(XTC_TAIL_SCHED);
	xtc_tail_loop_bind(1);
	printf("xtc_tail_emit cost, median of %d batches of %u calls, one thread\n", BATCHES, BATCH);
	printf("timestamps: %s\n", getenv("XTC_TAIL_CLOCK") ? "CLOCK_MONOTONIC (XTC_TAIL_CLOCK set)"
	       : "rdtsc where the TSC is invariant, else CLOCK_MONOTONIC; the segment header "
	         "carries ts_unit, ts_hz and a (tick, monotonic ns, realtime ns) anchor, and "
	         "ns = anchor_mono + (tick - anchor_tick) * 1e9 / ts_hz");

	for (int i = 0; i < BATCHES; i++)
		v[i] = batch(XTC_TAIL_MSG);
	report("disabled source (call into the library)", v);
	for (int i = 0; i < BATCHES; i++)
		v[i] = batch_guarded(XTC_TAIL_MSG);
	report("disabled source (xtc_tail_on guard inline)", v);

	/* The first pass through a fresh ring pays a page fault every ~100
	 * records; later passes reuse the same pages, as a drained ring does. */
	v[0] = batch(XTC_TAIL_SCHED);
	v[1] = batch(XTC_TAIL_SCHED);
	printf("  %-44s %7.2f ns   (mean of the first 2 batches)\n",
	       "enabled, first fill (page faults included)", (v[0] + v[1]) / 2);
	for (int i = 0; i < BATCHES; i++)
		v[i] = batch(XTC_TAIL_SCHED);
	report("enabled, flight recorder overwriting", v);
	printf("    buffered %zu, dropped (overwritten) %llu\n", xtc_tail_count(),
	       (unsigned long long)xtc_tail_dropped());

	/* Drop-new mode with nobody draining: every call finds the ring full. */
	xtc_tail_attach("/nonexistent/xtcd-bench.sock");
	for (int i = 0; i < BATCHES; i++)
		v[i] = batch(XTC_TAIL_SCHED);
	report("enabled, ring full, drop-new (drop path)", v);
	xtc_tail_detach();
	return 0;
}
