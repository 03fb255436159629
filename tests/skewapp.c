/*
 * tests/skewapp.c - xtc-skewapp: a producer that writes libxtctail-ev's
 * loop and callback records with durations longer than their records'
 * times say, for tests/e2e_chrome_adapter_skew.sh.
 *
 * libxtctail-ev measures a callback's run and a wait's block in ticks it
 * converts with its own 2 ms calibration; xtcd converts the records'
 * ticks with its own rate and a fresh anchor at each drain.  The two
 * disagree by a few ppm and by the anchors' jitter, so a detail may
 * exceed the time between its BEGIN and END records.  This program makes
 * the disagreement large (50 ms) so that it shows whatever the load:
 *
 *   loop 0:  CB_BEGIN, 100 ms, CB_END (its true length), LOOP_WAIT, 10 ms,
 *            LOOP_WAKE (detail 50 ms too long: it begins inside the
 *            callback), then a last CB_BEGIN / CB_END, 1 ms
 *   loop 1:  a callback that runs its loop again (a nested ev_run):
 *            CB_BEGIN, LOOP_WAIT, 10 ms, LOOP_WAKE, CB_BEGIN, 100 ms,
 *            CB_END, CB_BEGIN, 1 ms, CB_END (detail 50 ms too long:
 *            it begins inside its sibling), CB_END of the outer callback
 *   loop 2:  CB_BEGIN, 10 ms, CB_END, 5 ms, a CB_END whose BEGIN is not in
 *            the record (lost to a DROP, say) with detail 10 ms: as long
 *            before it as its detail says, it would begin inside the
 *            callback before it
 *
 * It attaches through XTC_TAIL_SHM like any app, detaches and prints
 * "done".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "xtc_tail.h"

#define SKEW_NS 50000000u

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* pid of an io callback on fd, callback number k (xtc_tail_ev(3)). */
static xtc_pid_t cb_pid(uint32_t loop, uint32_t fd, unsigned k)
{
	return (xtc_pid_t){ loop, fd, XTC_TAIL_CB_GEN(XTC_TAIL_W_IO, k, (void *)(uintptr_t)(0x1000 + fd)) };
}

static void emit(uint32_t kind, xtc_pid_t pid, uint64_t detail)
{
	xtc_tail_emit(XTC_TAIL_SCHED, kind, pid, detail);
}

/* A callback that runs ms, its END skew ns longer than it ran. */
static void callback(uint32_t loop, uint32_t fd, unsigned ms, uint64_t skew)
{
	uint64_t t0 = now_ns();

	emit(XTC_TAIL_CB_BEGIN, cb_pid(loop, fd, 1), 0);
	sleep_ms(ms);
	emit(XTC_TAIL_CB_END, cb_pid(loop, fd, 1), now_ns() - t0 + skew);
}

/* A wait of ms, its WAKE skew ns longer than it blocked. */
static void wait_ms(uint32_t loop, unsigned ms, uint64_t skew)
{
	uint64_t t0 = now_ns();

	emit(XTC_TAIL_LOOP_WAIT, ((xtc_pid_t){ loop, 0, 0 }), 1);
	sleep_ms(ms);
	emit(XTC_TAIL_LOOP_WAKE, ((xtc_pid_t){ loop, 0, 0 }), now_ns() - t0 + skew);
}

static int bind(uint32_t loop)
{
	int err = xtc_tail_loop_bind(loop);

	if (err < 0 && err != -ENODEV) {
		fprintf(stderr, "xtc-skewapp: cannot bind loop %u (%d)\n", loop, err);
		return -1;
	}
	return 0;
}

int main(void)
{
	uint64_t t0;

	if (bind(0) < 0)
		return 1;
	callback(0, 20, 100, 0);
	wait_ms(0, 10, SKEW_NS);
	callback(0, 20, 1, 0);

	if (bind(1) < 0)
		return 1;
	t0 = now_ns();
	emit(XTC_TAIL_CB_BEGIN, cb_pid(1, 30, 2), 0);
	wait_ms(1, 10, 0);
	callback(1, 31, 100, 0);
	callback(1, 32, 1, SKEW_NS);
	emit(XTC_TAIL_CB_END, cb_pid(1, 30, 2), now_ns() - t0);

	if (bind(2) < 0)
		return 1;
	callback(2, 40, 10, 0);
	sleep_ms(5);
	emit(XTC_TAIL_CB_END, cb_pid(2, 41, 1), 10000000u);

	xtc_tail_detach();
	printf("done\n");
	return 0;
}
