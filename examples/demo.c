/*
 * examples/demo.c - a toy event-loop runtime that records what it does.
 *
 * Each loop thread runs procs that park on I/O, get their completions
 * submitted, reaped and dispatched, and run again, with the event mix a
 * real io_uring runtime produces: PARK_TASK/PARK, SUBMIT, REAP, WAKE, RUN,
 * SEND/RECV, LOOP_POLL and the odd POLL_FULL.
 *
 * Run with XTC_TAIL_SHM=/path/to/xtcd.sock and xtcd records it; run
 * without and it prints what it recorded in-process.
 *
 *   xtc-demo [--loops N] [--events N] [--rate N]
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xtc_tail.h>

static unsigned loops = 4;
static unsigned long events = 20000;  /* per loop */
static unsigned long rate;            /* per loop per second, 0 = flat out */

static const char *kind_name[] = {
	"SPAWN", "EXIT", "WAKE", "RUN", "PARK", "SEND", "RECV", "MBOX_HWM", "LOOP_POLL",
	"PARK_TASK", "REAP", "SUBMIT", "SUBMIT_FAIL", "POLL_FULL", "LIFECYCLE_DROP",
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Sleep until `events_done` events fit the pace. */
static void pace(uint64_t start, unsigned long done)
{
	uint64_t due;

	if (rate == 0)
		return;
	due = start + done * 1000000000ull / rate;
	while (now_ns() < due) {
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	}
}

static void *loop_main(void *arg)
{
	uint32_t loop = (uint32_t)(uintptr_t)arg;
	uint64_t start = now_ns(), task_base = 0x7f3a00001000ull + ((uint64_t)loop << 24);
	unsigned long n = 0;
	uint32_t seed = loop * 2654435761u + 1;
	int err = xtc_tail_loop_bind(loop);

	if (err < 0)
		fprintf(stderr, "xtc-demo: loop %u: xtc_tail_loop_bind: %s\n", loop, strerror(-err));
	for (uint32_t p = 1; p <= 8; p++, n++)
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_SPAWN, ((xtc_pid_t){ loop, p, 1 }), 0);
	while (n < events) {
		uint32_t p = 1 + (seed >> 8) % 8;
		xtc_pid_t pid = { loop, p, 1 };
		xtc_pid_t lp = { loop, 0, 0 };
		uint64_t task = task_base + p * 0x140;

		seed = seed * 1103515245u + 12345u;
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_PARK_TASK, pid, task);
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_PARK, pid, 1 + seed % 3);
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_SUBMIT, lp, task);
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_REAP, lp, task);
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_WAKE, lp, task);
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_RUN, pid, 800 + seed % 20000);
		xtc_tail_emit(XTC_TAIL_MSG, XTC_TAIL_SEND, pid, 64 + seed % 512);
		xtc_tail_emit(XTC_TAIL_MSG, XTC_TAIL_RECV, ((xtc_pid_t){ loop, 1 + (p % 8), 1 }), 64);
		n += 8;
		if (seed % 16 == 0) {
			xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_LOOP_POLL, lp, 0);
			n++;
		}
		if (seed % 997 == 0) {
			xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_POLL_FULL, lp, 64);
			n++;
		}
		pace(start, n);
	}
	for (uint32_t p = 1; p <= 8; p++)
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_EXIT, ((xtc_pid_t){ loop, p, 1 }), 0);
	return NULL;
}

static int print_cb(const xtc_tail_rec_t *r, void *user)
{
	unsigned long *left = user;

	if (*left == 0)
		return 1;
	(*left)--;
	printf("  %llu.%09llu  loop %-3u %-10s pid %u.%u.%llu  detail %llu\n",
	       (unsigned long long)(r->ts_ns / 1000000000u), (unsigned long long)(r->ts_ns % 1000000000u),
	       r->pid.loop_id, r->kind < 15 ? kind_name[r->kind] : "?", r->pid.loop_id,
	       r->pid.local_id, (unsigned long long)r->pid.gen, (unsigned long long)r->detail);
	return 0;
}

static unsigned long arg_num(const char *flag, const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = s ? strtoul(s, &end, 10) : 0;
	if (s == NULL || errno || *end || *s == '-') {
		fprintf(stderr, "xtc-demo: %s needs a whole number\n", flag);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	const char *shm = getenv("XTC_TAIL_SHM");

	for (int i = 1; i < argc; i++) {
		const char *flag = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		i++;
		if (strcmp(flag, "--loops") == 0)
			loops = (unsigned)arg_num(flag, val);
		else if (strcmp(flag, "--events") == 0)
			events = arg_num(flag, val);
		else if (strcmp(flag, "--rate") == 0)
			rate = arg_num(flag, val);
		else {
			fprintf(stderr, "usage: xtc-demo [--loops N] [--events N] [--rate N]\n");
			return 2;
		}
	}
	if (loops == 0 || loops > 64) {
		fprintf(stderr, "xtc-demo: --loops must be from 1 to 64\n");
		return 2;
	}
	if (shm == NULL)
		xtc_tail_enable(XTC_TAIL_ALL); /* in-process: no daemon */
	for (unsigned i = 0; i < loops; i++)
		pthread_create(&th[i], NULL, loop_main, (void *)(uintptr_t)i);
	for (unsigned i = 0; i < loops; i++)
		pthread_join(th[i], NULL);
	if (shm != NULL) {
		printf("xtc-demo: %u loops emitted about %lu events each into xtcd at %s\n", loops,
		       events, shm);
		return 0;
	}
	{
		unsigned long show = 12;

		printf("xtc-demo: %zu records buffered in-process, %llu dropped; the first %lu:\n",
		       xtc_tail_count(), (unsigned long long)xtc_tail_dropped(), show);
		xtc_tail_read(print_cb, &show);
	}
	return 0;
}
