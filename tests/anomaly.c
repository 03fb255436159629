/*
 * tests/anomaly.c - a toy runtime that plants one known problem in its
 * record, for tests/e2e_report.sh.  It attaches through XTC_TAIL_SHM like
 * any app and exits with a clean detach (or, with --die, is killed).
 *
 *   xtc-anomaly SCENARIO [--die]
 *
 * Each loop thread runs for 3 s (3.6 s for loop-stall and degrade) four
 * procs through the chain a real io_uring runtime records, about once a
 * millisecond:
 *
 *   SUBMIT T, REAP T, WAKE T, RUN p   (the completion of p's last park)
 *   ... p runs for ~150us, sends a message now and then ...
 *   PARK_TASK p T, PARK p op          (it parks again)
 *   LOOP_POLL                         (an idle poll)
 *   SUBMIT 0, REAP 0 every 8th time   (the wakeup pipe: untagged, balanced)
 *
 * and at the end exits every proc it still owns.  At 400 ms the scenario
 * plants (proc 9 and 10 of a loop are spare procs for it):
 *
 *   clean        nothing
 *   no-submit    loop 0: proc 9 parks; nothing is ever submitted for it
 *   no-reap      loop 0: proc 9 parks, its request is submitted, no REAP
 *   reap-drop    loop 0: proc 9 parks, SUBMIT, REAP of its task, no WAKE;
 *                loop 1: proc 9 parks, SUBMIT, then an untagged REAP (0)
 *                that answers no untagged SUBMIT, no WAKE
 *   wake-no-run  loop 0: proc 9 is woken (WAKE) and never runs, while the
 *                loop keeps polling
 *   loop-stall   3 loops: loop 0 records nothing for 2.2 s and resumes;
 *                loop 2 stops for good (its procs alive); loop 1 goes on
 *   submit-fail  loop 0: proc 9 parks, SUBMIT_FAIL -EAGAIN; loop 1: procs 9
 *                and 10 park, a short submit leaves 2 SQEs behind
 *   lifecycle    loop 0: a LIFECYCLE_DROP for proc 0.3.1
 *   drops        one slow loop; proc 9 parks and is never submitted, then
 *                a burst of 50000 records floods the ring (run it with
 *                XTC_TAIL_RING_RECORDS=64) with proc 10's whole chain in
 *                the middle of it
 *   degrade      2 loops; from 1 s on, wake-to-run latency is ~100x and
 *                sends 5x, and at 1.1 s loop 1's proc 9 is woken and never
 *                runs.  Prints the two windows as "window A @FROM..@TO"
 *                and "window B ..." for --diff.
 *
 * --die: SIGKILL itself at the end instead of exiting (the session then
 * ends producer_died).  Prints "pid N" first.  With XTC_ANOMALY_GO=FILE
 * in the environment it then waits (up to 60 s) for FILE to exist before
 * it starts, so a test can first see every run attached.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xtc_tail.h"

#define PLANT_MS  400u
#define NPROCS    4u

enum scenario {
	SC_CLEAN, SC_NO_SUBMIT, SC_NO_REAP, SC_REAP_DROP, SC_WAKE_NO_RUN, SC_LOOP_STALL,
	SC_SUBMIT_FAIL, SC_LIFECYCLE, SC_DROPS, SC_DEGRADE,
};

static const char *names[] = {
	"clean", "no-submit", "no-reap", "reap-drop", "wake-no-run", "loop-stall", "submit-fail",
	"lifecycle", "drops", "degrade",
};

static enum scenario sc;
static uint64_t t0_mono;
static unsigned run_ms = 3000;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t elapsed_ms(void)
{
	return (now_ns() - t0_mono) / 1000000u;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void spin_us(unsigned us)
{
	uint64_t end = now_ns() + us * 1000ull;

	while (now_ns() < end)
		;
}

static uint64_t task_of(uint32_t loop, uint32_t p)
{
	return 0x7f0000000000ull | (uint64_t)loop << 24 | (uint64_t)p << 8;
}

#define EMIT(kind, pid, detail) xtc_tail_emit(XTC_TAIL_SCHED, (kind), (pid), (detail))
#define MSG(kind, pid, detail)  xtc_tail_emit(XTC_TAIL_MSG, (kind), (pid), (detail))

/* Proc p of loop parks as its task. */
static void park(uint32_t loop, uint32_t p, uint64_t op)
{
	xtc_pid_t pid = { loop, p, 1 };

	EMIT(XTC_TAIL_PARK_TASK, pid, task_of(loop, p));
	EMIT(XTC_TAIL_PARK, pid, op);
}

/* The rest of the chain: submit, reap, wake, run. */
static void complete(uint32_t loop, uint32_t p, uint64_t lat)
{
	xtc_pid_t pid = { loop, p, 1 }, lp = { loop, 0, 0 };
	uint64_t task = task_of(loop, p);

	EMIT(XTC_TAIL_SUBMIT, lp, task);
	EMIT(XTC_TAIL_REAP, lp, task);
	EMIT(XTC_TAIL_WAKE, lp, task);
	EMIT(XTC_TAIL_RUN, pid, lat);
}

/* Proc p parks and is woken, and never runs. */
static void wake_only(uint32_t loop, uint32_t p)
{
	xtc_pid_t lp = { loop, 0, 0 };

	park(loop, p, 2);
	EMIT(XTC_TAIL_SUBMIT, lp, task_of(loop, p));
	EMIT(XTC_TAIL_REAP, lp, task_of(loop, p));
	EMIT(XTC_TAIL_WAKE, lp, task_of(loop, p));
}

/* What loop plants at PLANT_MS. */
static void plant(uint32_t loop)
{
	xtc_pid_t lp = { loop, 0, 0 };

	switch (sc) {
	case SC_NO_SUBMIT:
		if (loop == 0)
			park(loop, 9, 3);
		break;
	case SC_NO_REAP:
		if (loop == 0) {
			park(loop, 9, 1);
			EMIT(XTC_TAIL_SUBMIT, lp, task_of(loop, 9));
		}
		break;
	case SC_REAP_DROP:
		park(loop, 9, 1);
		EMIT(XTC_TAIL_SUBMIT, lp, task_of(loop, 9));
		EMIT(XTC_TAIL_REAP, lp, loop == 0 ? task_of(loop, 9) : 0);
		break;
	case SC_WAKE_NO_RUN:
		if (loop == 0)
			wake_only(loop, 9);
		break;
	case SC_SUBMIT_FAIL:
		park(loop, 9, 1);
		if (loop == 0) {
			EMIT(XTC_TAIL_SUBMIT_FAIL, lp, (uint64_t)-(int64_t)EAGAIN);
		} else {
			park(loop, 10, 1);
			EMIT(XTC_TAIL_SUBMIT_FAIL, lp, XTC_TAIL_SHORT_SUBMIT_BASE + 2);
		}
		break;
	case SC_LIFECYCLE:
		if (loop == 0)
			EMIT(XTC_TAIL_LIFECYCLE_DROP, ((xtc_pid_t){ loop, 3, 1 }), (uint64_t)-(int64_t)105);
		break;
	case SC_DROPS:
		park(loop, 9, 3);
		for (unsigned i = 0; i < 50000; i++) {
			if (i == 25000) {
				park(loop, 10, 1);
				complete(loop, 10, 5000);
			}
			EMIT(XTC_TAIL_LOOP_POLL, lp, 0);
		}
		break;
	default:
		break;
	}
}

/* One loop thread. */
static void *loop_main(void *arg)
{
	uint32_t loop = (uint32_t)(uintptr_t)arg, seed = loop * 2654435761u + 7;
	xtc_pid_t lp = { loop, 0, 0 };
	unsigned tick_us = sc == SC_DROPS ? 100000 : 800;
	int planted = 0;

	if (xtc_tail_loop_bind(loop) < 0)
		fprintf(stderr, "xtc-anomaly: loop %u: cannot bind\n", loop);
	for (uint32_t p = 1; p <= 10; p++)
		EMIT(XTC_TAIL_SPAWN, ((xtc_pid_t){ loop, p, 1 }), 0);
	for (uint32_t p = 1; p <= NPROCS; p++)
		park(loop, p, 1);
	for (uint64_t i = 0; elapsed_ms() < run_ms; i++) {
		uint32_t p = 1 + (uint32_t)(i % NPROCS);
		xtc_pid_t pid = { loop, p, 1 };
		int slow = sc == SC_DEGRADE && elapsed_ms() >= 1000;
		uint64_t lat;

		seed = seed * 1103515245u + 12345u;
		if (!planted && elapsed_ms() >= PLANT_MS) {
			planted = 1;
			plant(loop);
			if (sc == SC_LOOP_STALL && loop == 2)
				break;                            /* stops for good */
			if (sc == SC_LOOP_STALL && loop == 0)
				sleep_us(2200000);                /* stuck, then resumes */
		}
		if (sc == SC_DEGRADE && loop == 1 && planted == 1 && elapsed_ms() >= 1100) {
			planted = 2;
			wake_only(loop, 9);
		}
		lat = slow ? 200000 + seed % 300000 : 2000 + seed % 3000;
		complete(loop, p, lat);
		spin_us(sc == SC_DROPS ? 50 : 150);
		for (int m = 0; m < (slow ? 5 : 1); m++) {
			if (i % 4 == 0 || slow) {
				MSG(XTC_TAIL_SEND, pid, 64 + seed % 256);
				MSG(XTC_TAIL_RECV, ((xtc_pid_t){ loop, 1 + p % NPROCS, 1 }), 64);
			}
		}
		if (i % 64 == 0)
			MSG(XTC_TAIL_MBOX_HWM, pid, 1 + (i / 64) % 12);
		park(loop, p, 1 + seed % 3);
		if (i % 8 == 0) {
			EMIT(XTC_TAIL_SUBMIT, lp, 0);
			EMIT(XTC_TAIL_REAP, lp, 0);
		}
		EMIT(XTC_TAIL_LOOP_POLL, lp, 0);
		sleep_us(tick_us);
	}
	if (sc == SC_LOOP_STALL && loop == 2) {
		while (elapsed_ms() < run_ms)
			sleep_us(10000);
		return NULL;
	}
	for (uint32_t p = 1; p <= NPROCS; p++)
		EMIT(XTC_TAIL_EXIT, ((xtc_pid_t){ loop, p, 1 }), 0);
	return NULL;
}

/* Wait for the file named by XTC_ANOMALY_GO, if any. */
static void wait_go(void)
{
	const char *go = getenv("XTC_ANOMALY_GO");

	for (int i = 0; go && *go && access(go, F_OK) != 0 && i < 6000; i++)
		sleep_us(10000);
}

static void usage(void)
{
	fprintf(stderr, "usage: xtc-anomaly SCENARIO [--die]\nscenarios:");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fprintf(stderr, " %s", names[i]);
	fputc('\n', stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	pthread_t th[3];
	unsigned loops = 2;
	int die = 0, found = 0;
	struct timespec rt;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--die") != 0))
		usage();
	die = argc == 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(argv[1], names[i]) == 0) {
			sc = (enum scenario)i;
			found = 1;
		}
	if (!found)
		usage();
	if (sc == SC_LOOP_STALL) {
		loops = 3;
		run_ms = 3600;
	} else if (sc == SC_DROPS) {
		loops = 1;
	} else if (sc == SC_DEGRADE) {
		run_ms = 3600;
	}
	if (getenv("XTC_TAIL_SHM") == NULL)
		xtc_tail_enable(XTC_TAIL_ALL);
	printf("pid %ld\n", (long)getpid());
	fflush(stdout);
	wait_go();
	clock_gettime(CLOCK_REALTIME, &rt);
	t0_mono = now_ns();
	if (sc == SC_DEGRADE) {
		double t0 = (double)rt.tv_sec + rt.tv_nsec / 1e9;

		printf("window A @%.6f..@%.6f\nwindow B @%.6f..@%.6f\n", t0 + 0.1, t0 + 1.0, t0 + 1.0,
		       t0 + 3.5);
		fflush(stdout);
	}
	for (unsigned i = 0; i < loops; i++)
		pthread_create(&th[i], NULL, loop_main, (void *)(uintptr_t)i);
	for (unsigned i = 0; i < loops; i++)
		pthread_join(th[i], NULL);
	if (die) {
		sleep_us(100000);                 /* let xtcd drain what there is */
		kill(getpid(), SIGKILL);
	}
	return 0;
}
