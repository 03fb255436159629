/*
 * bench/drain_bench.c - the daemon's drain path alone, deterministic:
 * xtcd's own session.c (ring checks, copy out, TSC conversion, encoding),
 * store.c (blocks, CRC-32C, io_uring or pwrite into real segment files)
 * and worker.c, against one ring in a memfd filled the way libxtctail
 * fills it, with no producer thread racing the drain.
 *
 *   bench/drain_bench [--records N] [--rounds R] [--mix flat|mix|random]
 *                     [--pwrite] [--loop] [--drain-ms MS] [--dir DIR]
 *                     [--sync never|rotate] [--batch B] [--cross] [--direct yes|no]
 *                     [--inline-max N]
 *
 * Each round fills the whole ring (N records, default 262144, the
 * default ring) and then drains it to the disk: session_drain_all() and,
 * while writes are in flight, the event loop, until every record of the
 * round is written and its tail published.  With --loop the bench drains
 * once a round and leaves the rest to xtcd's own loop (its 20 ms drain
 * timer, write completions), the way xtcd drains a ring it cannot take
 * in one go: a ring of more than the 8 MiB of write buffers
 * (--records 4194304) shows whether the drain waits for the timer, the
 * more plainly the longer it is (--drain-ms, default 20 as xtcd's).  Round 1 runs on a fresh
 * mapping (xtcd's first touch of the ring's pages is in it); the rest are
 * the steady state.  --batch B fills and drains B records a round instead
 * of a whole ring (the 20,000 a drain takes at 1M events/s, say), and
 * --cross fills from a thread pinned to another CPU than the drain's, as
 * a producer does: the drain then reads lines another core has just
 * written, which is what xtcd's drains find at a low rate.  Printed: records/s of wall and of process CPU time
 * (user + system, so the kernel's share of the writes counts) for the
 * first round and for the others, the steady CPU time per record (and
 * the kernel's part of it, and the part of io_uring's worker threads,
 * which run the writes the kernel does not do at once), and bytes on
 * disk per record.  --direct yes writes as xtcd --direct does: the whole
 * blocks of the larger buffers O_DIRECT, where the filesystem of --dir
 * takes it; the default, as xtcd's, is everything through the page cache.
 *
 * For instruction counts, which do not move with the machine's load:
 *   valgrind --tool=callgrind --toggle-collect=bench_drain_round \
 *       bench/drain_bench --rounds 8
 * counts only the drains (the fills are left out); divide by the records.
 * The workloads: flat is bench/xb.c's flat-out burst (one pid, local id
 * counting, detail counting), mix examples/demo.c's event mix, random
 * every field random (the encoder's worst case).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "proto/xtc_attach.h"
#include "lib/seg/seg.h"
#include "xtcd/conf.h"
#include "xtcd/log.h"
#include "xtcd/xtcd.h"

struct config cfg;
struct ev_loop *xtcd_loop;

void session_init_clock(void);


const char *settings_text(void)
{
	return "dir=bench\nsocket=bench\n";
}

static struct {
	uint32_t records, rounds, batch;
	const char *mix, *dir;
	int pwrite, sync, loop, cross, direct;
	unsigned drain_ms;
	uint64_t inline_max;
} opt = { 262144, 6, 0, "flat", NULL, 0, SYNC_ROTATE, 0, 0, 0, 20, 256u << 10 };

/* xtcd's drain timer (main.c's drain_cb), for --loop. */
static void drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	session_drain_all();
}

struct producer {
	uint8_t *map;
	uint64_t size;
	struct xtc_shm_ring *r;
	uint64_t n;      /* records emitted so far */
	uint64_t seed;
	uint64_t ts;
};

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One record as the workload has it; ts advances like a TSC read by a
 * producer at about 11 ns an event. */
static void gen(struct producer *p, struct xtc_shm_rec *rec)
{
	uint64_t n = p->n++, x = xorshift(&p->seed);

	p->ts += 28 + (x & 7);
	rec->ts = p->ts;
	if (strcmp(opt.mix, "random") == 0) {
		uint64_t b = xorshift(&p->seed), c = xorshift(&p->seed);

		rec->source = 1u << (x & 3);
		rec->kind = (uint32_t)((x >> 2) % 15);
		rec->loop_id = (uint32_t)(x >> 32);
		rec->local_id = (uint32_t)(c >> 32);
		rec->gen = b;
		rec->detail = c ^ (x << 7);
		return;
	}
	if (strcmp(opt.mix, "mix") == 0) {
		/* examples/demo.c's cycle of eight events per task */
		static const uint32_t kinds[8] = { 9, 4, 11, 10, 2, 3, 5, 6 };
		uint32_t k = (uint32_t)(n % 8), pp = 1 + (uint32_t)((n / 8) % 8);
		uint64_t task = 0x7f3a00001000ull + pp * 0x140;

		rec->source = k >= 6 ? 2u : 1u;
		rec->kind = kinds[k];
		rec->loop_id = 1;
		rec->local_id = (k >= 2 && k <= 4) ? 0 : k == 7 ? 1 + pp % 8 : pp;
		rec->gen = rec->local_id ? 1 : 0;
		rec->detail = k == 1 ? 1 + x % 3 : k == 5 ? 800 + x % 20000 : k == 6 ? 64 + x % 512
		            : k == 7 ? 64 : task;
		return;
	}
	rec->source = 1;
	rec->kind = 3;
	rec->loop_id = 1;
	rec->local_id = (uint32_t)(n & 1023);
	rec->gen = 1;
	rec->detail = n;
}

/* Fill a round's records, as lib/tail.c's xtc_tail_emit() does. */
static void fill(struct producer *p)
{
	struct xtc_shm_ring *r = p->r;
	uint64_t head = r->head, mask = opt.records - 1;

	for (uint32_t i = 0; i < opt.batch; i++) {
		__atomic_store_n(&r->claim, head + 1, __ATOMIC_RELAXED);
		gen(p, &r->recs[head & mask]);
		__atomic_store_n(&r->head, ++head, __ATOMIC_RELEASE);
	}
}

/* --cross: the fills run on a thread of their own, on another CPU. */
static struct {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct producer *p;
	uint32_t asked, done;
	double cpu_s;    /* the filler thread's CPU time, as of its last fill */
} filler = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) < 0)
		perror("drain_bench: sched_setaffinity");
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *filler_main(void *arg)
{
	(void)arg;
	pin(1);
	pthread_mutex_lock(&filler.mu);
	for (;;) {
		while (filler.asked == filler.done)
			pthread_cond_wait(&filler.cv, &filler.mu);
		if (filler.asked == UINT32_MAX)
			break;
		pthread_mutex_unlock(&filler.mu);
		fill(filler.p);
		pthread_mutex_lock(&filler.mu);
		filler.cpu_s = thread_cpu_s();
		filler.done++;
		pthread_cond_broadcast(&filler.cv);
	}
	pthread_mutex_unlock(&filler.mu);
	return NULL;
}

/* One round's fill, here or on the filler's CPU. */
static void fill_round(struct producer *p)
{
	if (!opt.cross) {
		fill(p);
		return;
	}
	pthread_mutex_lock(&filler.mu);
	filler.p = p;
	filler.asked++;
	pthread_cond_broadcast(&filler.cv);
	while (filler.done != filler.asked)
		pthread_cond_wait(&filler.cv, &filler.mu);
	pthread_mutex_unlock(&filler.mu);
}

static void filler_stop(void)
{
	if (!opt.cross)
		return;
	pthread_mutex_lock(&filler.mu);
	filler.asked = UINT32_MAX;
	pthread_cond_broadcast(&filler.cv);
	pthread_mutex_unlock(&filler.mu);
	pthread_join(filler.th, NULL);
}

/* Drain until the ring's tail reaches its head: what callgrind counts. */
__attribute__((noinline)) void bench_drain_round(struct xtc_shm_ring *r);
__attribute__((noinline)) void bench_drain_round(struct xtc_shm_ring *r)
{
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	session_drain_all();
	/* pwrite has written it all; io_uring completes on the loop.  With
	 * --loop only the loop drains again (its timer, completions), as in
	 * xtcd; else the bench drains after each turn of the loop too. */
	while (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) < head) {
		ev_run(xtcd_loop, EVRUN_ONCE);
		if (!opt.loop)
			session_drain_all();
	}
}

/* The drain's system time: the process's, with io_uring's workers (for
 * --cross the filler's too, which spends next to none there). */
static double sys_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The drain's CPU time: the process's, with io_uring's workers (which
 * write for it), less the filler's for --cross. */
static double cpu_s(void)
{
	struct rusage ru;
	double filler_s;

	pthread_mutex_lock(&filler.mu);
	filler_s = filler.cpu_s;
	pthread_mutex_unlock(&filler.mu);
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6 - filler_s;
}

static int make_segment(struct producer *p)
{
	struct xtc_shm_hdr *h;
	struct clock_anchor a;
	int fd = memfd_create("drain-bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	p->size = xtc_shm_segment_size(1, opt.records);
	if (fd < 0 || ftruncate(fd, (off_t)p->size) < 0)
		return -1;
	p->map = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p->map == MAP_FAILED)
		return -1;
	h = (struct xtc_shm_hdr *)(void *)p->map;
	h->magic = XTC_SHM_MAGIC;
	h->abi_major = XTC_SHM_MAJOR;
	h->abi_minor = XTC_SHM_MINOR;
	h->hdr_size = XTC_SHM_HDR_SIZE;
	h->rec_size = XTC_SHM_REC_SIZE;
	h->ring_count = 1;
	h->ring_capacity = opt.records;
	h->ring_hdr_size = XTC_SHM_RING_HDR_SIZE;
	h->ring_offset = XTC_SHM_HDR_SIZE;
	h->ring_stride = xtc_shm_ring_stride(opt.records);
	h->segment_size = p->size;
	h->mode = XTC_SHM_MODE_DROP_NEW;
	memcpy(h->comm, "drain-bench", 12);
	h->ts_unit = clock_unit();
	h->ts_hz = clock_hz();
	clock_anchor_take(&a);
	h->anchor_ts = a.ts;
	h->anchor_mono_ns = a.mono_ns;
	h->anchor_real_ns = a.real_ns;
	h->producer_state = XTC_SHM_PRODUCER_ACTIVE;
	p->r = (struct xtc_shm_ring *)(void *)(p->map + XTC_SHM_HDR_SIZE);
	p->r->state = XTC_SHM_RING_BOUND;
	p->r->loop_id = 1;
	p->ts = a.ts;
	p->seed = 0x9E3779B97F4A7C15ull;
	return fd;
}

static int attach(struct producer *p, int memfd, int *peer)
{
	struct xtc_msg_hello hello;
	char why[256];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	memset(&hello, 0, sizeof hello);
	xtc_msg_init(&hello.hdr, XTC_MSG_HELLO, sizeof hello);
	hello.segment_size = p->size;
	hello.shm_major = XTC_SHM_MAJOR;
	if (session_attach(sv[0], memfd, getpid(), getuid(), getgid(), &hello, why, sizeof why) < 0) {
		fprintf(stderr, "drain_bench: attach refused: %s\n", why);
		return -1;
	}
	*peer = sv[1];
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: drain_bench [--records N] [--rounds R] [--mix flat|mix|random] "
	        "[--pwrite] [--loop] [--drain-ms MS] [--dir DIR] [--sync never|rotate] [--batch B] "
	        "[--cross] [--direct yes|no] [--inline-max N]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--pwrite")) {
			opt.pwrite = 1;
			continue;
		}
		if (!strcmp(a, "--loop")) {
			opt.loop = 1;
			continue;
		}
		if (!strcmp(a, "--cross")) {
			opt.cross = 1;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (!strcmp(a, "--records"))
			opt.records = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--rounds"))
			opt.rounds = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--batch"))
			opt.batch = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--inline-max"))
			opt.inline_max = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--mix"))
			opt.mix = v;
		else if (!strcmp(a, "--drain-ms"))
			opt.drain_ms = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--dir"))
			opt.dir = v;
		else if (!strcmp(a, "--sync"))
			opt.sync = !strcmp(v, "never") ? SYNC_NEVER : SYNC_ROTATE;
		else if (!strcmp(a, "--direct") && (!strcmp(v, "yes") || !strcmp(v, "no")))
			opt.direct = !strcmp(v, "yes");
		else
			usage();
	}
	if (opt.batch == 0)
		opt.batch = opt.records;
	if (opt.records < XTC_SHM_MIN_RING_CAPACITY || (opt.records & (opt.records - 1)) ||
	    opt.batch > opt.records ||
	    opt.rounds < 2 || (strcmp(opt.mix, "flat") && strcmp(opt.mix, "mix") &&
	                       strcmp(opt.mix, "random")))
		usage();
}

static uint64_t dir_bytes(const char *dir)
{
	uint64_t segs, bytes, first, last;

	return seg_dir_usage(dir, &segs, &bytes, &first, &last) == 0 ? bytes : 0;
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/drain-bench.XXXXXX";
	struct producer p = { 0 };
	ev_timer drain_w;
	double c_first = 0, c_rest = 0, w_first = 0, w_rest = 0, s_rest = 0, t_rest = 0;
	uint64_t bytes;
	int memfd, peer;

	/* xtcd's own lines only when asked: they would time the terminal */
	xlog_set_level(getenv("DRAIN_BENCH_LOG") ? XLOG_DEBUG : XLOG_NONE);

	parse(argc, argv);
	if (opt.dir == NULL && (opt.dir = mkdtemp(tmp)) == NULL) {
		perror("drain_bench: mkdtemp");
		return 1;
	}
	memset(&cfg, 0, sizeof cfg);
	cfg.dir = opt.dir;
	cfg.max_bytes = 1ULL << 40;
	cfg.segment_bytes = 64ULL << 20;
	cfg.drain_ms = opt.drain_ms ? opt.drain_ms : 20;
	cfg.sync = opt.sync;
	cfg.force_pwrite = opt.pwrite;
	cfg.direct = opt.direct;
	cfg.inline_max = opt.inline_max;
	cfg.quota = CONF_NO_QUOTA;
	xtcd_loop = ev_default_loop(0);
	session_init_clock();
	if (store_init(xtcd_loop) < 0 || (memfd = make_segment(&p)) < 0 ||
	    attach(&p, memfd, &peer) < 0) {
		fprintf(stderr, "drain_bench: setup failed\n");
		return 1;
	}
	ev_timer_init(&drain_w, drain_cb, cfg.drain_ms / 1000.0, cfg.drain_ms / 1000.0);
	if (opt.loop)
		ev_timer_start(xtcd_loop, &drain_w);
	if (opt.cross) {
		pin(0);
		if (pthread_create(&filler.th, NULL, filler_main, NULL) != 0) {
			fprintf(stderr, "drain_bench: cannot start the filler thread\n");
			return 1;
		}
	}
	for (uint32_t k = 0; k < opt.rounds; k++) {
		double c0, w0, s0, t0;

		fill_round(&p);
		s0 = sys_s();
		t0 = thread_cpu_s();
		c0 = cpu_s();
		w0 = (double)mono_ns() / 1e9;
		bench_drain_round(p.r);
		if (k == 0) {
			c_first = cpu_s() - c0;
			w_first = (double)mono_ns() / 1e9 - w0;
		} else {
			c_rest += cpu_s() - c0;
			s_rest += sys_s() - s0;
			t_rest += thread_cpu_s() - t0;
			w_rest += (double)mono_ns() / 1e9 - w0;
		}
	}
	ev_timer_stop(xtcd_loop, &drain_w);
	filler_stop();
	session_shutdown_all();
	store_fini(1);
	bytes = dir_bytes(opt.dir);
	printf("drain_bench mix=%s records=%u batch=%u rounds=%u io=%s%s%s inline-max=%llu\n", opt.mix,
	       opt.records, opt.batch, opt.rounds, opt.pwrite ? "pwrite" : "io_uring",
	       opt.direct ? " direct" : " buffered", opt.cross ? " cross-CPU" : "",
	       (unsigned long long)opt.inline_max);
	printf("  first round (fresh mapping): %7.1fM records/s wall, %7.1fM per CPU-second\n",
	       opt.batch / w_first / 1e6, opt.batch / (c_first > 0 ? c_first : 1e-9) / 1e6);
	printf("  steady rounds:               %7.1fM records/s wall, %7.1fM per CPU-second\n",
	       (double)opt.batch * (opt.rounds - 1) / w_rest / 1e6,
	       (double)opt.batch * (opt.rounds - 1) / (c_rest > 0 ? c_rest : 1e-9) / 1e6);
	printf("  steady CPU per record: %.2f ns, of which %.2f ns in the kernel; %.2f ns on other threads "
	       "than the drain's (io_uring's workers)\n",
	       c_rest * 1e9 / ((double)opt.batch * (opt.rounds - 1)),
	       s_rest * 1e9 / ((double)opt.batch * (opt.rounds - 1)),
	       (c_rest - t_rest) * 1e9 / ((double)opt.batch * (opt.rounds - 1)));
	printf("  on disk: %.2f bytes/record\n", (double)bytes / ((double)opt.batch * opt.rounds));
	if (strncmp(opt.dir, "/tmp/drain-bench.", 17) == 0) {
		uint64_t *seqs;
		size_t n;
		char path[4096];

		if (seg_list(opt.dir, &seqs, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				seg_path(path, sizeof path, opt.dir, seqs[i]);
				unlink(path);
			}
			free(seqs);
		}
		rmdir(opt.dir);
	}
	close(peer);
	return 0;
}
