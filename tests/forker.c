/*
 * tests/forker.c - an app that forks while it records, and whose threads
 * exit and are replaced, for tests/e2e_fork.sh.
 *
 *   xtc-forker CHILDREN EVENTS [CHILD_MS]
 *
 * The parent's main thread binds loop 1 and emits EVENTS records; along
 * the way it forks CHILDREN children, evenly spaced.  Meanwhile a chain
 * of worker threads in the parent produces loop 2: each binds loop 2,
 * emits its share and exits, and the next one takes over where it left
 * off (so a ring is released and bound again, never shared); unbound
 * threads come and go too (loop XTC_TAIL_LOOP_NONE, on the free rings).
 *
 * A child binds loop 1 in its own session and emits EVENTS/10 records on
 * its main thread, while two threads of its own bind loops 10 and 11 and
 * emit as many; it stays at least CHILD_MS ms (default 300) and exits
 * normally.  Every record's detail is its index in its (process, loop)
 * stream, so a reader checks per (session, loop) that details run 0, 1,
 * 2, ... with no gap and no repeat: a ring written by two processes or
 * two threads at once could not pass.  It prints one line per process,
 * "pid P loop L emitted N", for the test to compare.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xtc_tail.h"

#define WORKER_GENERATIONS 8
#define UNBOUND_THREADS    6
#define UNBOUND_EVENTS     500

static unsigned long events;
static unsigned child_ms = 300;

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Emit n records of loop `loop`, details from..from+n-1. */
static void emit_run(uint32_t loop, unsigned long from, unsigned long n)
{
	for (unsigned long i = from; i < from + n; i++) {
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_RUN, ((xtc_pid_t){ loop, 1, i }), i);
		if ((i & 255) == 255)
			sched_yield();
	}
}

struct share {
	uint32_t loop;
	unsigned long from, n;
};

/* A thread that binds its loop (unless LOOP_NONE), emits its share, exits. */
static void *share_thread(void *arg)
{
	const struct share *s = arg;

	if (s->loop != XTC_TAIL_LOOP_NONE && xtc_tail_loop_bind(s->loop) < 0) {
		fprintf(stderr, "xtc-forker: pid %d cannot bind loop %u\n", (int)getpid(), s->loop);
		exit(1);
	}
	emit_run(s->loop, s->from, s->n);
	return NULL;
}

/* Loop 2 in the parent: generations of threads, one after the other. */
static void *worker_chain(void *arg)
{
	unsigned long per = events / WORKER_GENERATIONS;

	(void)arg;
	for (unsigned g = 0; g < WORKER_GENERATIONS; g++) {
		struct share s = { 2, g * per, per };
		pthread_t t;

		pthread_create(&t, NULL, share_thread, &s);
		pthread_join(t, NULL);
	}
	printf("pid %d loop 2 emitted %lu\n", (int)getpid(), per * WORKER_GENERATIONS);
	return NULL;
}

/* Unbound threads that come and go: each takes a fresh unbound ring. */
static void *unbound_chain(void *arg)
{
	(void)arg;
	for (unsigned g = 0; g < UNBOUND_THREADS; g++) {
		struct share s = { XTC_TAIL_LOOP_NONE, g * UNBOUND_EVENTS, UNBOUND_EVENTS };
		pthread_t t;

		pthread_create(&t, NULL, share_thread, &s);
		pthread_join(t, NULL);
	}
	return NULL;
}

/* A forked child: loop 1 of its own, loops 10 and 11 on two threads. */
static void child_main(void)
{
	unsigned long n = events / 10;
	struct share s[2] = { { 10, 0, n }, { 11, 0, n } };
	pthread_t t[2];
	uint64_t start = now_ms();

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, share_thread, &s[i]);
	if (xtc_tail_loop_bind(1) < 0) {
		fprintf(stderr, "xtc-forker: child %d cannot bind loop 1\n", (int)getpid());
		exit(1);
	}
	emit_run(1, 0, n);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	while (now_ms() < start + child_ms)
		usleep(10000);
	printf("pid %d loop 1 emitted %lu\npid %d loop 10 emitted %lu\npid %d loop 11 emitted %lu\n",
	       (int)getpid(), n, (int)getpid(), n, (int)getpid(), n);
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	unsigned children;
	unsigned long step, done = 0;
	pthread_t worker, unbound;
	int failed = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: xtc-forker CHILDREN EVENTS [CHILD_MS]\n");
		return 2;
	}
	children = (unsigned)strtoul(argv[1], NULL, 10);
	events = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		child_ms = (unsigned)strtoul(argv[3], NULL, 10);
	if (events < 100 || children > 64)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (xtc_tail_loop_bind(1) < 0) {
		fprintf(stderr, "xtc-forker: cannot bind loop 1 (is XTC_TAIL_SHM set?)\n");
		return 1;
	}
	pthread_create(&worker, NULL, worker_chain, NULL);
	pthread_create(&unbound, NULL, unbound_chain, NULL);
	step = events / (children + 1);
	for (unsigned c = 0; c < children; c++) {
		pid_t pid;

		emit_run(1, done, step);
		done += step;
		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			child_main();
	}
	emit_run(1, done, events - done);
	printf("pid %d loop 1 emitted %lu\n", (int)getpid(), events);
	pthread_join(worker, NULL);
	pthread_join(unbound, NULL);
	for (unsigned c = 0; c < children; c++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	printf("dropped %llu\n", (unsigned long long)xtc_tail_dropped());
	return failed;
}
