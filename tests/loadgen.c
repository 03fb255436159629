/*
 * tests/loadgen.c - a producer the end-to-end tests can reason about.
 *
 * N threads, each bound to loop i, emit M events each: kind RUN, pid
 * {i, 1, seq}, detail = seq (0, 1, 2, ... per loop), so a reader can check
 * that every loop's records are complete and in order.  It attaches
 * through XTC_TAIL_SHM like any app.
 *
 *   xtc-loadgen LOOPS EVENTS [RATE_PER_LOOP] [HOLD_MS]
 *
 * RATE_PER_LOOP 0 means flat out; HOLD_MS keeps the process alive (and
 * attached) that long after the last emit.  It prints "emitted N" when
 * done and "dropped D" as the library counts them.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xtc_tail.h"

static unsigned long events, rate;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *producer(void *arg)
{
	uint32_t loop = (uint32_t)(uintptr_t)arg;
	uint64_t start = now_ns();

	if (xtc_tail_loop_bind(loop) < 0) {
		fprintf(stderr, "xtc-loadgen: cannot bind loop %u\n", loop);
		exit(1);
	}
	for (unsigned long i = 0; i < events; i++) {
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_RUN, ((xtc_pid_t){ loop, 1, i }), i);
		if (rate != 0 && (i & 63) == 63) {
			uint64_t due = start + (i + 1) * 1000000000ull / rate;

			while (now_ns() < due) {
				struct timespec ts = { 0, 100000 };

				nanosleep(&ts, NULL);
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned loops;
	unsigned long hold_ms = 0;
	pthread_t th[64];

	if (argc < 3) {
		fprintf(stderr, "usage: xtc-loadgen LOOPS EVENTS [RATE_PER_LOOP] [HOLD_MS]\n");
		return 2;
	}
	loops = (unsigned)strtoul(argv[1], NULL, 10);
	events = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		rate = strtoul(argv[3], NULL, 10);
	if (argc > 4)
		hold_ms = strtoul(argv[4], NULL, 10);
	if (loops == 0 || loops > 64)
		return 2;
	if (getenv("XTC_TAIL_SHM") == NULL)
		xtc_tail_enable(XTC_TAIL_ALL);
	for (unsigned i = 0; i < loops; i++)
		pthread_create(&th[i], NULL, producer, (void *)(uintptr_t)i);
	for (unsigned i = 0; i < loops; i++)
		pthread_join(th[i], NULL);
	printf("emitted %lu\n", (unsigned long)loops * events);
	printf("dropped %llu\n", (unsigned long long)xtc_tail_dropped());
	fflush(stdout);
	if (hold_ms) {
		struct timespec ts = { (time_t)(hold_ms / 1000), (long)(hold_ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	return 0;
}
