/*
 * bench/xb.c - the benchmark driver: one source, built twice.
 *
 *   bench/xb-xtc     records with xtc_tail_emit (libxtctail)
 *   bench/xb-lttng   records with lttng_ust_tracepoint(xtcbench, rec, ...)
 *
 * Both builds run exactly the same loops with the same arguments; only the
 * EMIT() call differs, so the figures compare the two call sites and what
 * stands behind them.  Whether recording is on, and who drains it, is set
 * up from outside (bench/run.py): XTC_TAIL_SHM and a private xtcd for
 * xtc-tail, an LTTng session for LTTng.  Every command prints one line of
 * key=value pairs that run.py parses.
 *
 *   xb-* cost    [--events N] [--reps R] [--hist N] [--gap NS] [--hist-out F]
 *                [--stop PID,...] [--fill N]
 *                [--warm N] [--chunk N [--pause-ms MS]]
 *   xb-* threads [--threads T] [--events N] [--reps R]
 *   xb-* burst   [--events N]
 *   xb-* flat    [--seconds S]
 *   xb-* paced   --rate EVENTS_PER_S [--loops L] [--seconds S]
 *   xb-* mix     [--loops L] [--events N_PER_LOOP] [--rate PER_LOOP]
 *   xb-* random  [--events N] [--rate R]
 *
 * --stop sends SIGSTOP to the named processes (the draining daemon) and
 * emits --fill events before measuring, so every measured call finds the
 * ring full: the drop path.  They get SIGCONT before exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#if defined(XB_LTTNG)
#include "xb_tp.h"
#define XB_NAME "lttng"
#define EMIT(src, kind, loop, local, gen, detail) \
	lttng_ust_tracepoint(xtcbench, rec, (src), (kind), (loop), (local), (gen), (detail))
#else
#include "xtc_tail.h"
#define XB_NAME "xtc"
#define EMIT(src, kind, loop, local, gen, detail) \
	xtc_tail_emit((src), (kind), ((xtc_pid_t){ (loop), (local), (gen) }), (detail))
#endif

/* The fields the cost loops record: like bench_emit.c and tests/loadgen.c. */
#define SRC_SCHED 1u
#define KIND_RUN  3u

static unsigned long opt_events = 10000000, opt_reps = 5, opt_hist = 1000000;
static unsigned long opt_gap_ns = 200, opt_fill, opt_threads = 2, opt_loops = 1;
static unsigned long opt_rate, opt_warm, opt_chunk, opt_pause_ms = 10;
static double opt_seconds = 10;
static const char *opt_hist_out, *opt_stop;
static pid_t stopped[16];
static int nstopped;
static double tsc_ghz;

/* ---------------------------------------------------------------------
 * Clocks
 */

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* CPU time of the calling thread: what a loop cost even if the scheduler
 * ran something else in between (the machine is shared). */
static uint64_t thread_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Serialised TSC reads for timing one call: nothing before the first read
 * leaks into the window, nothing after the second leaks out. */
static inline uint64_t tsc_begin(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

static inline uint64_t tsc_end(void)
{
	unsigned aux;
	uint64_t t = __rdtscp(&aux);

	_mm_lfence();
	return t;
}

/* TSC ticks per ns, against CLOCK_MONOTONIC over 50 ms. */
static double tsc_calibrate(void)
{
	uint64_t n0 = now_ns(), t0 = __rdtsc(), n1, t1;

	do
		n1 = now_ns();
	while (n1 - n0 < 50000000u);
	t1 = __rdtsc();
	return (double)(t1 - t0) / (double)(n1 - n0);
}

/* Sleep until the monotonic clock reaches `due` (ns).  Never spins: on
 * two cores a spinning producer would take the daemon's CPU.  The timer
 * slack makes the pace bursty at the 50-100 us scale, steady above it. */
static void wait_until(uint64_t due)
{
	for (;;) {
		uint64_t now = now_ns();

		if (now >= due)
			return;
		struct timespec ts = { (time_t)((due - now) / 1000000000u),
		                       (long)((due - now) % 1000000000u) };

		nanosleep(&ts, NULL);
	}
}

/* ---------------------------------------------------------------------
 * Helpers
 */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void pin_to(unsigned cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % (unsigned)(n > 0 ? n : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The thread becomes the producer of loop `loop` (xtc-tail binds a ring;
 * LTTng has per-CPU buffers and nothing to bind). */
static void producer_init(uint32_t loop)
{
#if !defined(XB_LTTNG)
	int err = xtc_tail_loop_bind(loop);

	if (err < 0 && err != -ENODEV)
		fprintf(stderr, "xb: xtc_tail_loop_bind(%u): %s\n", loop, strerror(-err));
#else
	(void)loop;
#endif
}

/* Records the library itself counts as lost (xtc-tail); -1 for LTTng,
 * whose count comes from the session (lttng stop, lttng list). */
static long long lib_dropped(void)
{
#if !defined(XB_LTTNG)
	return (long long)xtc_tail_dropped();
#else
	return -1;
#endif
}

static void stop_daemons(void)
{
	char buf[256], *save = NULL, *tok;

	if (opt_stop == NULL || *opt_stop == '\0')
		return;
	snprintf(buf, sizeof buf, "%s", opt_stop);
	for (tok = strtok_r(buf, ",", &save); tok && nstopped < 16; tok = strtok_r(NULL, ",", &save)) {
		pid_t p = (pid_t)atoi(tok);

		if (p > 0 && kill(p, SIGSTOP) == 0)
			stopped[nstopped++] = p;
	}
}

static void cont_daemons(void)
{
	for (int i = 0; i < nstopped; i++)
		kill(stopped[i], SIGCONT);
	nstopped = 0;
}

/* ---------------------------------------------------------------------
 * cost: ns per call from loops of --events, and a per-call histogram
 */

/* ns per call of `n` back-to-back emits; with --chunk, of `n` emits in
 * timed chunks with an untimed --pause-ms after each (room for the daemon
 * to drain, so no call takes the drop path). */
static double loop_ns(unsigned long n, double *cpu)
{
	uint64_t t0, c0, spent = 0, cspent = 0;
	unsigned long chunk = opt_chunk ? opt_chunk : n;

	for (unsigned long i = 0; i < n;) {
		unsigned long end = n - i < chunk ? n : i + chunk;

		t0 = now_ns();
		c0 = thread_ns();
		for (; i < end; i++)
			EMIT(SRC_SCHED, KIND_RUN, 1, (uint32_t)(i & 1023), 1, i);
		cspent += thread_ns() - c0;
		spent += now_ns() - t0;
		if (opt_chunk && i < n)
			wait_until(now_ns() + opt_pause_ms * 1000000u);
	}
	*cpu = (double)cspent / (double)n;
	return (double)spent / (double)n;
}

/* Per-call TSC ticks of `n` single emits (or of nothing, with `empty`),
 * each followed by a pause of `gap` ticks standing in for the
 * application's own work. */
static void time_calls(uint32_t *d, unsigned long n, int empty, uint64_t gap)
{
	uint32_t seed = 12345;

	for (unsigned long i = 0; i < n; i++) {
		uint64_t t0, t1;

		/* A VM's TSC may step coarsely (21 ticks, 10 ns, on the AMD
		 * hosts here): start at a random phase of the step, so the
		 * mean of many calls is right even where one call is not. */
		seed = seed * 1103515245u + 12345u;
		for (uint32_t k = (seed >> 16) & 63; k; k--)
			__asm__ volatile("");
		t0 = tsc_begin();

		if (!empty)
			EMIT(SRC_SCHED, KIND_RUN, 1, (uint32_t)(i & 1023), 1, i);
		t1 = tsc_end();
		d[i] = t1 - t0 > UINT32_MAX ? UINT32_MAX : (uint32_t)(t1 - t0);
		while (__rdtsc() - t1 < gap)
			_mm_pause();
	}
}

static double mean_ns(const uint32_t *d, unsigned long n, uint32_t base)
{
	double sum = 0;

	for (unsigned long i = 0; i < n; i++)
		sum += (double)d[i];
	return (sum / (double)n - (double)base) / tsc_ghz;
}

static double pct_ns(const uint32_t *sorted, unsigned long n, double p, uint32_t base)
{
	unsigned long i = (unsigned long)(p * (double)(n - 1) + 0.5);
	uint32_t v = sorted[i] > base ? sorted[i] - base : 0;

	return (double)v / tsc_ghz;
}

/* Write the histogram: bins eight to an octave of ns, "ns_low count". */
static void write_hist(const char *path, const uint32_t *sorted, unsigned long n, uint32_t base)
{
	FILE *f = fopen(path, "w");
	unsigned long i = 0;

	if (f == NULL) {
		fprintf(stderr, "xb: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "# %s per-call ns (empty-timing overhead subtracted), %lu calls\n", XB_NAME, n);
	for (int b = 0; i < n && b < 8 * 24; b++) {
		double lo = b == 0 ? 0 : 0.5 * pow(2.0, b / 8.0);
		double hi = 0.5 * pow(2.0, (b + 1) / 8.0);
		unsigned long c = 0;

		while (i < n && (double)(sorted[i] > base ? sorted[i] - base : 0) / tsc_ghz < hi) {
			c++;
			i++;
		}
		fprintf(f, "%.3f %.3f %lu\n", lo, hi, c);
	}
	fclose(f);
}

/* One histogram run of opt_hist calls; prints p50/p99/p99.9/max in ns. */
static void cost_hist(void)
{
	uint32_t *d = malloc(opt_hist * sizeof *d), base;
	uint64_t gap = (uint64_t)((double)opt_gap_ns * tsc_ghz);
	double empty_mean, empty_tmean, mean, tmean;

	if (d == NULL)
		return;
	time_calls(d, opt_hist, 1, gap);
	qsort(d, opt_hist, sizeof *d, cmp_u32);
	base = d[opt_hist / 2];
	empty_mean = mean_ns(d, opt_hist, 0);
	empty_tmean = mean_ns(d, opt_hist - opt_hist / 1000, 0);
	time_calls(d, opt_hist, 0, gap);
	mean = mean_ns(d, opt_hist, 0) - empty_mean;
	qsort(d, opt_hist, sizeof *d, cmp_u32);
	/* The mean of all but the slowest 0.1%: preemption and page faults
	 * (microseconds, on a shared machine) would swamp the plain mean. */
	tmean = mean_ns(d, opt_hist - opt_hist / 1000, 0) - empty_tmean;
	printf("hist calls=%lu empty_ns=%.2f mean=%.2f tmean=%.2f p50=%.2f p99=%.2f p999=%.2f "
	       "max=%.1f\n", opt_hist, (double)base / tsc_ghz, mean, tmean, pct_ns(d, opt_hist, 0.5, base), pct_ns(d, opt_hist, 0.99, base),
	       pct_ns(d, opt_hist, 0.999, base), pct_ns(d, opt_hist, 1.0, base));
	if (opt_hist_out != NULL)
		write_hist(opt_hist_out, d, opt_hist, base);
	free(d);
}

/* Touch the ring once (paced over 200 ms, then 200 ms for the daemon to
 * drain), so the histogram sees a warm ring: on a VM with shadow paging
 * the first write to each page costs microseconds even after the library
 * prefaulted it. */
static void warm_up(void)
{
	uint64_t t0 = now_ns();

	for (unsigned long i = 0; i < opt_warm; i++) {
		EMIT(SRC_SCHED, KIND_RUN, 1, 0, 1, i);
		if ((i & 255) == 255)
			wait_until(t0 + (uint64_t)(2e8 * (double)(i + 1) / (double)opt_warm));
	}
	if (opt_warm)
		wait_until(now_ns() + 200000000u);
}

static void cmd_cost(void)
{
	double *v = calloc(opt_reps, sizeof *v), *c = calloc(opt_reps, sizeof *c);
	long long d0;

	if (v == NULL || c == NULL)
		return;
	pin_to(1);
	producer_init(1);
	stop_daemons();
	for (unsigned long i = 0; i < opt_fill; i++)
		EMIT(SRC_SCHED, KIND_RUN, 1, 0, 1, i);
	d0 = lib_dropped();
	warm_up();
	if (opt_hist)
		cost_hist();
	for (unsigned long r = 0; r < opt_reps; r++)
		v[r] = loop_ns(opt_events, &c[r]);
	cont_daemons();
	printf("cost events=%lu reps=%lu", opt_events, opt_reps);
	for (unsigned long r = 0; r < opt_reps; r++)
		printf(" rep%lu=%.3f cpu%lu=%.3f", r, v[r], r, c[r]);
	qsort(v, opt_reps, sizeof *v, cmp_double);
	printf(" median=%.3f min=%.3f max=%.3f emitted=%lu dropped=%lld dropped_before=%lld\n",
	       v[opt_reps / 2], v[0], v[opt_reps - 1], opt_events * opt_reps + opt_hist, lib_dropped(),
	       d0);
	free(v);
	free(c);
}

/* ---------------------------------------------------------------------
 * threads: T producers pinned one per CPU, each timing its own loops
 */

static pthread_barrier_t start_line;

struct thr {
	pthread_t th;
	unsigned idx;
	double median, min, max, cpu;
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	double *v = calloc(opt_reps, sizeof *v), *c = calloc(opt_reps, sizeof *c);

	pin_to(t->idx);
	producer_init(t->idx);
	pthread_barrier_wait(&start_line);
	for (unsigned long r = 0; r < opt_reps && v && c; r++)
		v[r] = loop_ns(opt_events, &c[r]);
	if (v && c) {
		qsort(v, opt_reps, sizeof *v, cmp_double);
		qsort(c, opt_reps, sizeof *c, cmp_double);
		t->median = v[opt_reps / 2];
		t->min = v[0];
		t->max = v[opt_reps - 1];
		t->cpu = c[opt_reps / 2];
	}
	free(v);
	free(c);
	return NULL;
}

static void cmd_threads(void)
{
	struct thr t[64];
	unsigned n = opt_threads > 64 ? 64 : (unsigned)opt_threads;

	pthread_barrier_init(&start_line, NULL, n);
	for (unsigned i = 0; i < n; i++) {
		t[i].idx = i;
		pthread_create(&t[i].th, NULL, thr_main, &t[i]);
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i].th, NULL);
	printf("threads n=%u events=%lu reps=%lu", n, opt_events, opt_reps);
	for (unsigned i = 0; i < n; i++)
		printf(" t%u_median=%.3f t%u_min=%.3f t%u_max=%.3f t%u_cpu=%.3f", i, t[i].median, i,
		       t[i].min, i, t[i].max, i, t[i].cpu);
	printf(" emitted=%lu dropped=%lld\n", opt_events * opt_reps * n, lib_dropped());
}

/* ---------------------------------------------------------------------
 * burst, flat: one thread as fast as it can
 */

static void cmd_burst(void)
{
	uint64_t t0;
	double s;

	pin_to(1);
	producer_init(1);
	t0 = now_ns();
	for (unsigned long i = 0; i < opt_events; i++)
		EMIT(SRC_SCHED, KIND_RUN, 1, (uint32_t)(i & 1023), 1, i);
	s = (double)(now_ns() - t0) / 1e9;
	printf("burst emitted=%lu seconds=%.4f ns_per_event=%.3f dropped=%lld\n", opt_events, s,
	       s * 1e9 / (double)opt_events, lib_dropped());
}

static void cmd_flat(void)
{
	uint64_t t0, end, now;
	unsigned long n = 0;

	pin_to(1);
	producer_init(1);
	t0 = now_ns();
	end = t0 + (uint64_t)(opt_seconds * 1e9);
	do {
		for (unsigned i = 0; i < 4096; i++, n++)
			EMIT(SRC_SCHED, KIND_RUN, 1, (uint32_t)(n & 1023), 1, n);
		now = now_ns();
	} while (now < end);
	printf("flat emitted=%lu seconds=%.4f dropped=%lld\n", n, (double)(now - t0) / 1e9,
	       lib_dropped());
}

/* ---------------------------------------------------------------------
 * paced: L producers at rate/L events/s each for S seconds
 */

struct paced {
	pthread_t th;
	unsigned idx;
	unsigned long emitted;
	uint64_t start, end, lag;
};

static void *paced_main(void *arg)
{
	struct paced *p = arg;
	double per = (double)opt_rate / (double)opt_loops;
	unsigned long total = (unsigned long)(per * opt_seconds);
	uint64_t origin;

	producer_init(p->idx);
	pthread_barrier_wait(&start_line);
	p->start = origin = now_ns();
	for (unsigned long i = 0; i < total; i++) {
		EMIT(SRC_SCHED, KIND_RUN, p->idx, 1, i, i);
		if ((i & 63) == 63) {
			uint64_t due = origin + (uint64_t)((double)(i + 1) * 1e9 / per), now = now_ns();

			/* A steady rate: after the scheduler kept us off the CPU,
			 * catch up at most 10 ms of events in a burst, as a
			 * paced application would, and carry on at the rate
			 * (the rest shows as an achieved rate below target). */
			if (now > due + 10000000u) {
				p->lag += now - due - 10000000u;
				origin += now - due - 10000000u;
			}
			wait_until(due);
		}
	}
	p->end = now_ns();
	p->emitted = total;
	return NULL;
}

static void cmd_paced(void)
{
	struct paced p[64];
	unsigned n = opt_loops > 64 ? 64 : (unsigned)opt_loops;
	unsigned long emitted = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0, lag = 0;

	opt_loops = n;
	pthread_barrier_init(&start_line, NULL, n);
	memset(p, 0, sizeof p);
	for (unsigned i = 0; i < n; i++) {
		p[i].idx = i;
		pthread_create(&p[i].th, NULL, paced_main, &p[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(p[i].th, NULL);
		emitted += p[i].emitted;
		t0 = p[i].start < t0 ? p[i].start : t0;
		t1 = p[i].end > t1 ? p[i].end : t1;
		lag = p[i].lag > lag ? p[i].lag : lag;
	}
	printf("paced rate=%lu loops=%u emitted=%lu seconds=%.4f achieved=%.0f lag_ms=%.1f "
	       "dropped=%lld\n", opt_rate, n, emitted, (double)(t1 - t0) / 1e9,
	       (double)emitted * 1e9 / (double)(t1 - t0), (double)lag / 1e6, lib_dropped());
}

/* ---------------------------------------------------------------------
 * mix: examples/demo.c's event mix; random: every field random
 */

struct mixer {
	pthread_t th;
	unsigned idx;
	unsigned long emitted;
};

/* The generator of examples/demo.c loop_main(), event for event. */
static void *mix_main(void *arg)
{
	struct mixer *m = arg;
	uint32_t loop = m->idx, seed = loop * 2654435761u + 1;
	uint64_t start, task_base = 0x7f3a00001000ull + ((uint64_t)loop << 24);
	unsigned long n = 0;

	producer_init(loop);
	pthread_barrier_wait(&start_line);
	start = now_ns();
	for (uint32_t p = 1; p <= 8; p++, n++)
		EMIT(1u, 0u, loop, p, 1, 0);
	while (n < opt_events) {
		uint32_t p = 1 + (seed >> 8) % 8;
		uint64_t task = task_base + p * 0x140;

		seed = seed * 1103515245u + 12345u;
		EMIT(1u, 9u, loop, p, 1, task);                    /* PARK_TASK */
		EMIT(1u, 4u, loop, p, 1, 1 + seed % 3);            /* PARK */
		EMIT(1u, 11u, loop, 0, 0, task);                   /* SUBMIT */
		EMIT(1u, 10u, loop, 0, 0, task);                   /* REAP */
		EMIT(1u, 2u, loop, 0, 0, task);                    /* WAKE */
		EMIT(1u, 3u, loop, p, 1, 800 + seed % 20000);      /* RUN */
		EMIT(2u, 5u, loop, p, 1, 64 + seed % 512);         /* SEND */
		EMIT(2u, 6u, loop, 1 + (p % 8), 1, 64);            /* RECV */
		n += 8;
		if (seed % 16 == 0) {
			EMIT(1u, 8u, loop, 0, 0, 0);               /* LOOP_POLL */
			n++;
		}
		if (seed % 997 == 0) {
			EMIT(1u, 13u, loop, 0, 0, 64);             /* POLL_FULL */
			n++;
		}
		if (opt_rate)
			wait_until(start + (uint64_t)((double)n * 1e9 / (double)opt_rate));
	}
	for (uint32_t p = 1; p <= 8; p++, n++)
		EMIT(1u, 1u, loop, p, 1, 0);
	m->emitted = n;
	return NULL;
}

static void cmd_mix(void)
{
	struct mixer m[64];
	unsigned n = opt_loops > 64 ? 64 : (unsigned)opt_loops;
	unsigned long emitted = 0;

	pthread_barrier_init(&start_line, NULL, n);
	for (unsigned i = 0; i < n; i++) {
		m[i].idx = i;
		pthread_create(&m[i].th, NULL, mix_main, &m[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(m[i].th, NULL);
		emitted += m[i].emitted;
	}
	printf("mix loops=%u emitted=%lu dropped=%lld\n", n, emitted, lib_dropped());
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void cmd_random(void)
{
	uint64_t s = 0x9E3779B97F4A7C15ull, start;

	producer_init(0);
	start = now_ns();
	for (unsigned long i = 0; i < opt_events; i++) {
		uint64_t a = xorshift(&s), b = xorshift(&s), c = xorshift(&s);

		/* Any source and kind the format knows; everything else random. */
		EMIT(1u << (a & 3), (uint32_t)((a >> 2) % 15), (uint32_t)(a >> 32),
		     (uint32_t)(c >> 32), b, c ^ (a << 7));
		if (opt_rate && (i & 63) == 63)
			wait_until(start + (uint64_t)((double)(i + 1) * 1e9 / (double)opt_rate));
	}
	printf("random emitted=%lu dropped=%lld\n", opt_events, lib_dropped());
}

/* ---------------------------------------------------------------------
 * main
 */

static void usage(void)
{
	fprintf(stderr, "usage: xb-%s cost|threads|burst|flat|paced|mix|random [--events N] "
	        "[--reps R] [--hist N] [--gap NS] [--hist-out FILE] [--stop PID,...] [--fill N] "
	        "[--warm N] [--chunk N] [--pause-ms MS] "
	        "[--threads T] [--loops L] [--rate R] [--seconds S]\n", XB_NAME);
	exit(2);
}

static unsigned long num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || *s == '-')
		usage();
	return v;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		usage();
	cmd = argv[1];
	for (int i = 2; i < argc; i += 2) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		if (!strcmp(f, "--events"))
			opt_events = num(v);
		else if (!strcmp(f, "--reps"))
			opt_reps = num(v) ? num(v) : 1;
		else if (!strcmp(f, "--hist"))
			opt_hist = num(v);
		else if (!strcmp(f, "--gap"))
			opt_gap_ns = num(v);
		else if (!strcmp(f, "--hist-out"))
			opt_hist_out = v;
		else if (!strcmp(f, "--stop"))
			opt_stop = v;
		else if (!strcmp(f, "--chunk"))
			opt_chunk = num(v);
		else if (!strcmp(f, "--pause-ms"))
			opt_pause_ms = num(v);
		else if (!strcmp(f, "--warm"))
			opt_warm = num(v);
		else if (!strcmp(f, "--fill"))
			opt_fill = num(v);
		else if (!strcmp(f, "--threads"))
			opt_threads = num(v) ? num(v) : 1;
		else if (!strcmp(f, "--loops"))
			opt_loops = num(v) ? num(v) : 1;
		else if (!strcmp(f, "--rate"))
			opt_rate = num(v);
		else if (!strcmp(f, "--seconds"))
			opt_seconds = atof(v);
		else
			usage();
	}
#if !defined(XB_LTTNG)
	/* In-process flight recorder: recording on, nobody draining. */
	if (getenv("XB_FLIGHT") != NULL && getenv("XTC_TAIL_SHM") == NULL)
		xtc_tail_enable(XTC_TAIL_ALL);
#endif
	tsc_ghz = tsc_calibrate();
	printf("# xb-%s %s tsc_ghz=%.4f\n", XB_NAME, cmd, tsc_ghz);
	if (!strcmp(cmd, "cost"))
		cmd_cost();
	else if (!strcmp(cmd, "threads"))
		cmd_threads();
	else if (!strcmp(cmd, "burst"))
		cmd_burst();
	else if (!strcmp(cmd, "flat"))
		cmd_flat();
	else if (!strcmp(cmd, "paced") && opt_rate)
		cmd_paced();
	else if (!strcmp(cmd, "mix"))
		cmd_mix();
	else if (!strcmp(cmd, "random"))
		cmd_random();
	else
		usage();
	fflush(stdout);
	return 0;
}
