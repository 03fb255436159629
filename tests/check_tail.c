/*
 * tests/check_tail.c - libxtctail, the in-process recorder: the API
 * contract of lib/xtc_tail.h (seed 000 plus loop binding, geometry and
 * attach), ring ownership, the flight recorder and drop-new modes, reads
 * racing producers, the environment, fork and timestamps.
 *
 * Every test relies on Check's fork mode (the default): each START_TEST
 * runs in a child of the runner, so each starts with no segment, nothing
 * enabled, no ring bound and a clock not yet chosen.  That is the only
 * way to test what happens "before the first enable" more than once.
 * Under CK_FORK=no the state of one test leaks into the next and the
 * results mean nothing beyond the first test run.
 *
 * Where the public API cannot show a fact (which ring a thread got, its
 * loop label, the ring geometry, the clock unit), the test maps the
 * process's own memfd segment read-only through /proc/self/fd and reads
 * it as proto/xtc_shm.h describes, the way xtcd would.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/xtc_shm.h"
#include "xtc_tail.h"

#define DEFAULT_RINGS   32u          /* lib/tail_int.h TAIL_DEFAULT_RINGS */
#define DEFAULT_RECORDS (1u << 18)   /* lib/tail_int.h TAIL_DEFAULT_RECORDS */
#define MAX_RECS        8192
#define TS_SLACK_NS     50000u       /* 50 us either side of the bracket */

/* ---------------------------------------------------------------------
 * Helpers: collecting records
 */

/* Records as xtc_tail_read hands them back. */
struct recs {
	xtc_tail_rec_t r[MAX_RECS];
	size_t         n;
	size_t         stop_at;   /* return nonzero on this record (1-based); 0 never */
};

static struct recs got;   /* static: too big for a thread's stack */

/* xtc_tail_read visitor: keep a record; stop when asked to. */
static int collect_cb(const xtc_tail_rec_t *rec, void *user)
{
	struct recs *rs = user;

	ck_assert_uint_lt(rs->n, MAX_RECS);
	rs->r[rs->n++] = *rec;
	return rs->stop_at != 0 && rs->n == rs->stop_at;
}

/* Read every buffered record into got; the return value must be the
 * number visited. */
static void collect(void)
{
	int rc;

	got.n = 0;
	got.stop_at = 0;
	rc = xtc_tail_read(collect_cb, &got);
	ck_assert_int_eq(rc, (int)got.n);
}

/* The pid the tests emit for detail d on loop. */
static xtc_pid_t test_pid(uint32_t loop, uint64_t d)
{
	xtc_pid_t pid = { loop, loop * 7, d };

	return pid;
}

/* Emit details first..first+n-1 on loop as SCHED/RUN records. */
static void emit_range(uint32_t loop, uint64_t first, uint64_t n)
{
	for (uint64_t d = first; d < first + n; d++)
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_RUN, test_pid(loop, d), d);
}

/* Assert got holds exactly details first..first+n-1 of loop, in order,
 * every field as emit_range wrote it. */
static void assert_got_range(uint32_t loop, uint64_t first, uint64_t n)
{
	ck_assert_uint_eq(got.n, n);
	for (size_t i = 0; i < got.n; i++) {
		const xtc_tail_rec_t *r = &got.r[i];

		ck_assert_uint_eq(r->detail, first + i);
		ck_assert_uint_eq(r->source, XTC_TAIL_SCHED);
		ck_assert_uint_eq(r->kind, XTC_TAIL_RUN);
		ck_assert_uint_eq(r->pid.loop_id, loop);
		ck_assert_uint_eq(r->pid.local_id, loop * 7);
		ck_assert_uint_eq(r->pid.gen, first + i);
		if (i > 0)
			ck_assert_uint_ge(r->ts_ns, got.r[i - 1].ts_ns);
	}
}

/* CLOCK_MONOTONIC now, in ns. */
static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---------------------------------------------------------------------
 * Helpers: the segment as xtcd sees it
 */

/* Map this process's recorder segment read-only, found as the memfd
 * named "xtc-tail" among our fds.  NULL when there is none. */
static const struct xtc_shm_hdr *shm_peek(void)
{
	DIR *d = opendir("/proc/self/fd");
	const struct xtc_shm_hdr *h = NULL;
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	while (h == NULL && (e = readdir(d)) != NULL) {
		char link[300], target[256];
		struct stat st;
		ssize_t n;
		void *map;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "/memfd:xtc-tail", 15) != 0)
			continue;
		fd = atoi(e->d_name);
		ck_assert_int_eq(fstat(fd, &st), 0);
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		ck_assert_ptr_ne(map, MAP_FAILED);
		h = map;
		ck_assert_uint_eq(h->magic, XTC_SHM_MAGIC);
		ck_assert_uint_eq(h->segment_size, (uint64_t)st.st_size);
	}
	closedir(d);
	return h;
}

/* Unmap what shm_peek mapped. */
static void shm_unpeek(const struct xtc_shm_hdr *h)
{
	munmap((void *)h, h->segment_size);
}

/* Ring i of a peeked segment. */
static const struct xtc_shm_ring *shm_ring(const struct xtc_shm_hdr *h, uint32_t i)
{
	return (const struct xtc_shm_ring *)((const char *)h + h->ring_offset + i * h->ring_stride);
}

/* Index of the ring labelled loop_id that has ever been bound, or -1;
 * asserts there is at most one. */
static int shm_find_loop(const struct xtc_shm_hdr *h, uint32_t loop_id)
{
	int found = -1;

	for (uint32_t i = 0; i < h->ring_count; i++) {
		const struct xtc_shm_ring *r = shm_ring(h, i);

		if (r->bind_seq != 0 && r->loop_id == loop_id) {
			ck_assert_msg(found < 0, "loop %u labels rings %d and %u", loop_id, found, i);
			found = (int)i;
		}
	}
	return found;
}

/* ---------------------------------------------------------------------
 * Helpers: stderr capture
 */

struct err_cap {
	int saved;   /* the real stderr */
	int rd;      /* read end of the pipe now on fd 2 */
};

/* Send fd 2 into a pipe. */
static void stderr_begin(struct err_cap *c)
{
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	c->saved = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_eq(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	c->rd = p[0];
}

/* Put stderr back and return what was written meanwhile (NUL-ended). */
static size_t stderr_end(struct err_cap *c, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	ck_assert_int_eq(dup2(c->saved, STDERR_FILENO), STDERR_FILENO);
	close(c->saved);
	while (len < size - 1 && (n = read(c->rd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(c->rd);
	buf[len] = '\0';
	return len;
}

/* Assert text is exactly one line and names what. */
static void assert_one_line_naming(const char *text, const char *what)
{
	const char *nl = strchr(text, '\n');

	ck_assert_msg(nl != NULL && nl[1] == '\0', "want one line on stderr, got \"%s\"", text);
	ck_assert_msg(strstr(text, what) != NULL, "stderr \"%s\" does not name %s", text, what);
}

/* ---------------------------------------------------------------------
 * Helpers: threads that hold a ring
 */

/* A thread that optionally binds a loop, emits, and keeps its ring until
 * released. */
struct holder {
	pthread_t th;
	uint32_t  loop;       /* bind this loop; XTC_TAIL_LOOP_NONE: do not bind */
	uint64_t  first, n;   /* emit_range(pid_loop, first, n) after binding */
	uint32_t  pid_loop;   /* loop named in the emitted pids */
	int       bind_rc;
	pid_t     tid;
	sem_t     ready, release;
};

/* Thread body of a holder. */
static void *holder_main(void *arg)
{
	struct holder *h = arg;

	h->tid = my_tid();
	h->bind_rc = h->loop == XTC_TAIL_LOOP_NONE ? 0 : xtc_tail_loop_bind(h->loop);
	emit_range(h->pid_loop, h->first, h->n);
	sem_post(&h->ready);
	sem_wait(&h->release);
	return NULL;
}

/* Start a holder and wait until it has bound and emitted. */
static void holder_start(struct holder *h, uint32_t loop, uint32_t pid_loop, uint64_t first,
                         uint64_t n)
{
	memset(h, 0, sizeof *h);
	h->loop = loop;
	h->pid_loop = pid_loop;
	h->first = first;
	h->n = n;
	ck_assert_int_eq(sem_init(&h->ready, 0, 0), 0);
	ck_assert_int_eq(sem_init(&h->release, 0, 0), 0);
	ck_assert_int_eq(pthread_create(&h->th, NULL, holder_main, h), 0);
	while (sem_wait(&h->ready) < 0 && errno == EINTR)
		;
}

/* Let a holder exit (releasing its ring) and join it. */
static void holder_stop(struct holder *h)
{
	sem_post(&h->release);
	ck_assert_int_eq(pthread_join(h->th, NULL), 0);
	sem_destroy(&h->ready);
	sem_destroy(&h->release);
}

/* ---------------------------------------------------------------------
 * api: enable, disable, on, emit, read, count, reset, dropped
 */

/* Before any enable there is nothing: no records, no drops, no segment. */
START_TEST(test_tail_before_enable)
{
	ck_assert_uint_eq(xtc_tail_count(), 0);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	ck_assert_int_eq(xtc_tail_reset(), XTC_OK);
	collect();
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_ALL), 0);
	emit_range(1, 0, 10);
	(xtc_tail_emit)(XTC_TAIL_SCHED, XTC_TAIL_RUN, test_pid(1, 0), 0);
	ck_assert_uint_eq(xtc_tail_count(), 0);
	ck_assert_ptr_null(shm_peek());
}
END_TEST

/* enable returns the previous mask and replaces it (never ORs). */
START_TEST(test_tail_enable_replaces)
{
	ck_assert_uint_eq(xtc_tail_enable(XTC_TAIL_SCHED), 0);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_SCHED), 1);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_MSG | XTC_TAIL_IO | XTC_TAIL_OS), 0);
	ck_assert_uint_eq(xtc_tail_enable(XTC_TAIL_MSG), XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_SCHED), 0);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_MSG), 1);
	ck_assert_uint_eq(xtc_tail_enable(XTC_TAIL_IO | XTC_TAIL_OS), XTC_TAIL_MSG);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_MSG), 0);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_IO), 1);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_OS), 1);
	ck_assert_uint_eq(xtc_tail_enable(XTC_TAIL_ALL), XTC_TAIL_IO | XTC_TAIL_OS);
	ck_assert_uint_eq(xtc_tail_enable(XTC_TAIL_ALL), XTC_TAIL_ALL);
	ck_assert_uint_eq(xtc_tail_mask_, XTC_TAIL_ALL);
}
END_TEST

/* disable turns every source off, keeps what is buffered, and the next
 * enable reports 0 as the previous mask. */
START_TEST(test_tail_disable)
{
	xtc_tail_enable(XTC_TAIL_ALL);
	emit_range(1, 0, 5);
	ck_assert_uint_eq(xtc_tail_count(), 5);
	xtc_tail_disable();
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_ALL), 0);
	emit_range(1, 5, 5);
	(xtc_tail_emit)(XTC_TAIL_SCHED, XTC_TAIL_RUN, test_pid(1, 5), 5);
	ck_assert_uint_eq(xtc_tail_count(), 5);
	collect();
	assert_got_range(1, 0, 5);
	ck_assert_uint_eq(xtc_tail_enable(XTC_TAIL_SCHED), 0);
	emit_range(1, 5, 1);
	ck_assert_uint_eq(xtc_tail_count(), 6);
}
END_TEST

/* An emit whose source is not enabled records nothing, through the
 * inline check and through the function itself. */
START_TEST(test_tail_emit_disabled_source)
{
	xtc_tail_enable(XTC_TAIL_SCHED);
	xtc_tail_emit(XTC_TAIL_MSG, XTC_TAIL_SEND, test_pid(1, 1), 64);
	(xtc_tail_emit)(XTC_TAIL_MSG, XTC_TAIL_SEND, test_pid(1, 2), 64);
	(xtc_tail_emit)(XTC_TAIL_IO, XTC_TAIL_REAP, test_pid(1, 3), 0);
	(xtc_tail_emit)(0, XTC_TAIL_REAP, test_pid(1, 3), 0);
	ck_assert_uint_eq(xtc_tail_count(), 0);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	(xtc_tail_emit)(XTC_TAIL_SCHED, XTC_TAIL_RUN, test_pid(1, 0), 0);
	ck_assert_uint_eq(xtc_tail_count(), 1);
	xtc_tail_enable(XTC_TAIL_MSG);
	(xtc_tail_emit)(XTC_TAIL_SCHED, XTC_TAIL_RUN, test_pid(1, 1), 1);
	xtc_tail_emit(XTC_TAIL_MSG, XTC_TAIL_SEND, test_pid(1, 2), 64);
	collect();
	ck_assert_uint_eq(got.n, 2);
	ck_assert_uint_eq(got.r[0].source, XTC_TAIL_SCHED);
	ck_assert_uint_eq(got.r[0].detail, 0);
	ck_assert_uint_eq(got.r[1].source, XTC_TAIL_MSG);
	ck_assert_uint_eq(got.r[1].kind, XTC_TAIL_SEND);
	ck_assert_uint_eq(got.r[1].pid.gen, 2);
	ck_assert_uint_eq(got.r[1].detail, 64);
}
END_TEST

/* read with no callback is -EINVAL, before and after enable. */
START_TEST(test_tail_read_null_cb)
{
	ck_assert_int_eq(xtc_tail_read(NULL, NULL), -EINVAL);
	xtc_tail_enable(XTC_TAIL_SCHED);
	emit_range(1, 0, 3);
	ck_assert_int_eq(xtc_tail_read(NULL, &got), -EINVAL);
}
END_TEST

/* A nonzero callback return stops the read; the return value counts the
 * records visited, the stopping one included. */
START_TEST(test_tail_read_stop)
{
	int rc;

	xtc_tail_enable(XTC_TAIL_SCHED);
	emit_range(2, 0, 10);
	got.n = 0;
	got.stop_at = 3;
	rc = xtc_tail_read(collect_cb, &got);
	ck_assert_int_eq(rc, 3);
	ck_assert_uint_eq(got.n, 3);
	ck_assert_uint_eq(got.r[2].detail, 2);
	got.n = 0;
	got.stop_at = 1;
	ck_assert_int_eq(xtc_tail_read(collect_cb, &got), 1);
	ck_assert_uint_eq(got.r[0].detail, 0);
	got.n = 0;
	got.stop_at = 10;
	ck_assert_int_eq(xtc_tail_read(collect_cb, &got), 10);
	collect();
	assert_got_range(2, 0, 10);
	ck_assert_uint_eq(xtc_tail_count(), 10);   /* reading consumes nothing */
}
END_TEST

/* reset empties the buffer and zeroes the drop count; recording goes on. */
START_TEST(test_tail_reset)
{
	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	emit_range(1, 0, 100);
	ck_assert_uint_eq(xtc_tail_count(), 64);
	ck_assert_uint_eq(xtc_tail_dropped(), 36);
	ck_assert_int_eq(xtc_tail_reset(), XTC_OK);
	ck_assert_uint_eq(xtc_tail_count(), 0);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	collect();
	ck_assert_uint_eq(got.n, 0);
	emit_range(1, 100, 10);
	ck_assert_uint_eq(xtc_tail_count(), 10);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	collect();
	assert_got_range(1, 100, 10);
	emit_range(1, 110, 100);
	ck_assert_uint_eq(xtc_tail_count(), 64);
	ck_assert_uint_eq(xtc_tail_dropped(), 46);
	collect();
	assert_got_range(1, 210 - 64, 64);
	ck_assert_int_eq(xtc_tail_reset(), XTC_OK);
	ck_assert_uint_eq(xtc_tail_count(), 0);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
}
END_TEST

/* reset in drop-new mode (attach with no daemon) zeroes both counts too,
 * and the accounting stays exact afterwards. */
START_TEST(test_tail_reset_drop_new)
{
	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	ck_assert_int_eq(xtc_tail_attach("/nonexistent/dir/sock"), XTC_OK);
	emit_range(1, 0, 100);
	ck_assert_uint_eq(xtc_tail_count(), 64);
	ck_assert_uint_eq(xtc_tail_dropped(), 36);
	ck_assert_int_eq(xtc_tail_reset(), XTC_OK);
	ck_assert_uint_eq(xtc_tail_count(), 0);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	collect();
	ck_assert_uint_eq(got.n, 0);
	emit_range(1, 100, 10);
	ck_assert_uint_eq(xtc_tail_count() + xtc_tail_dropped(), 10);
	ck_assert_int_eq(xtc_tail_detach(), XTC_OK);
}
END_TEST

/* ---------------------------------------------------------------------
 * configure
 */

/* Geometries configure must refuse: {rings, ring_records}. */
static const uint32_t bad_geometry[][2] = {
	{ 0, 63 }, { 0, 32 }, { 0, 1 }, { 0, 100 }, { 0, 65 }, { 0, 96 }, { 0, 1u << 27 },
	{ 0, UINT32_MAX }, { 1025, 0 }, { UINT32_MAX, 0 }, { 1025, 128 }, { 4, 100 },
};
#define N_BAD_GEOMETRY (sizeof bad_geometry / sizeof bad_geometry[0])

/* A bad geometry is -EINVAL and changes nothing, not even its good half. */
START_TEST(test_tail_configure_einval)
{
	const struct xtc_shm_hdr *h;

	ck_assert_int_eq(xtc_tail_configure(bad_geometry[_i][0], bad_geometry[_i][1]), -EINVAL);
	xtc_tail_enable(XTC_TAIL_SCHED);
	h = shm_peek();
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->ring_count, DEFAULT_RINGS);
	ck_assert_uint_eq(h->ring_capacity, DEFAULT_RECORDS);
	shm_unpeek(h);
}
END_TEST

/* The edges that are valid are accepted, and 0 keeps a value. */
START_TEST(test_tail_configure_zero_keeps)
{
	const struct xtc_shm_hdr *h;

	ck_assert_int_eq(xtc_tail_configure(1024, 64), XTC_OK);
	ck_assert_int_eq(xtc_tail_configure(1, 1u << 26), XTC_OK);
	ck_assert_int_eq(xtc_tail_configure(3, 64), XTC_OK);
	ck_assert_int_eq(xtc_tail_configure(0, 128), XTC_OK);   /* rings stay 3 */
	ck_assert_int_eq(xtc_tail_configure(0, 0), XTC_OK);     /* both stay */
	xtc_tail_enable(XTC_TAIL_SCHED);
	h = shm_peek();
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->ring_count, 3);
	ck_assert_uint_eq(h->ring_capacity, 128);
	ck_assert_uint_eq(h->ring_stride, xtc_shm_ring_stride(128));
	ck_assert_uint_eq(h->segment_size, xtc_shm_segment_size(3, 128));
	shm_unpeek(h);
	emit_range(1, 0, 300);   /* capacity as the API sees it */
	ck_assert_uint_eq(xtc_tail_count(), 128);
	ck_assert_uint_eq(xtc_tail_dropped(), 172);
}
END_TEST

/* Once the segment exists, configure is -EBUSY, even after disable. */
START_TEST(test_tail_configure_ebusy)
{
	ck_assert_int_eq(xtc_tail_configure(2, 64), XTC_OK);
	xtc_tail_enable(0);   /* no segment yet: still configurable */
	ck_assert_int_eq(xtc_tail_configure(4, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_configure(8, 128), -EBUSY);
	ck_assert_int_eq(xtc_tail_configure(0, 128), -EBUSY);
	ck_assert_int_eq(xtc_tail_configure(8, 0), -EBUSY);
	xtc_tail_disable();
	ck_assert_int_eq(xtc_tail_configure(8, 128), -EBUSY);
	xtc_tail_enable(XTC_TAIL_SCHED);
	emit_range(1, 0, 100);
	ck_assert_uint_eq(xtc_tail_count(), 64);   /* the geometry did not change */
}
END_TEST

/* ---------------------------------------------------------------------
 * bind: ring ownership
 */

/* XTC_TAIL_LOOP_NONE cannot be bound, before or after enable. */
START_TEST(test_tail_bind_einval)
{
	ck_assert_int_eq(xtc_tail_loop_bind(XTC_TAIL_LOOP_NONE), -EINVAL);
	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_loop_bind(XTC_TAIL_LOOP_NONE), -EINVAL);
	ck_assert_int_eq(xtc_tail_loop_bind(XTC_TAIL_LOOP_NONE - 1), XTC_OK);
}
END_TEST

/* -ENODEV until recording was enabled once (enable(0) does not count);
 * a later disable does not take the segment away. */
START_TEST(test_tail_bind_enodev)
{
	ck_assert_int_eq(xtc_tail_loop_bind(1), -ENODEV);
	xtc_tail_enable(0);
	ck_assert_int_eq(xtc_tail_loop_bind(1), -ENODEV);
	xtc_tail_disable();
	ck_assert_int_eq(xtc_tail_loop_bind(1), -ENODEV);
	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	xtc_tail_disable();
	ck_assert_int_eq(xtc_tail_loop_bind(2), XTC_OK);
}
END_TEST

/* Binding the loop the thread already has is a no-op that succeeds. */
START_TEST(test_tail_bind_rebind_same)
{
	const struct xtc_shm_hdr *h;
	const struct xtc_shm_ring *r;
	int i;

	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_loop_bind(5), XTC_OK);
	emit_range(5, 0, 3);
	ck_assert_int_eq(xtc_tail_loop_bind(5), XTC_OK);
	emit_range(5, 3, 3);
	collect();
	assert_got_range(5, 0, 6);
	h = shm_peek();
	i = shm_find_loop(h, 5);
	ck_assert_int_ge(i, 0);
	r = shm_ring(h, (uint32_t)i);
	ck_assert_uint_eq(r->state, XTC_SHM_RING_BOUND);
	ck_assert_uint_eq(r->bind_seq, 1);
	ck_assert_uint_eq(r->tid, (uint32_t)my_tid());
	ck_assert_uint_eq(r->head, 6);
	shm_unpeek(h);
}
END_TEST

/* A loop another live thread owns is -EBUSY; other loops are fine. */
START_TEST(test_tail_bind_ebusy)
{
	struct holder a;

	xtc_tail_enable(XTC_TAIL_SCHED);
	holder_start(&a, 5, 5, 0, 4);
	ck_assert_int_eq(a.bind_rc, XTC_OK);
	ck_assert_int_eq(xtc_tail_loop_bind(5), -EBUSY);
	ck_assert_int_eq(xtc_tail_loop_bind(6), XTC_OK);
	ck_assert_int_eq(xtc_tail_loop_bind(5), -EBUSY);
	emit_range(6, 0, 2);
	ck_assert_uint_eq(xtc_tail_count(), 6);
	holder_stop(&a);
}
END_TEST

/* A loop's ring is released when its thread exits and the loop's next
 * thread gets the same ring back.  One ring only: were it not released,
 * the bind would be -EBUSY (or -ENOSPC). */
START_TEST(test_tail_bind_reuse_after_exit)
{
	const struct xtc_shm_hdr *h;
	const struct xtc_shm_ring *r;
	struct holder a;

	ck_assert_int_eq(xtc_tail_configure(1, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	holder_start(&a, 5, 5, 0, 10);
	ck_assert_int_eq(a.bind_rc, XTC_OK);
	ck_assert_int_eq(xtc_tail_loop_bind(5), -EBUSY);
	h = shm_peek();
	r = shm_ring(h, 0);
	ck_assert_uint_eq(r->state, XTC_SHM_RING_BOUND);
	ck_assert_uint_eq(r->tid, (uint32_t)a.tid);
	holder_stop(&a);
	ck_assert_uint_eq(r->state, XTC_SHM_RING_FREE);
	ck_assert_uint_eq(r->loop_id, 5);   /* the label waits for the loop */
	ck_assert_int_eq(xtc_tail_loop_bind(5), XTC_OK);
	ck_assert_uint_eq(r->state, XTC_SHM_RING_BOUND);
	ck_assert_uint_eq(r->loop_id, 5);
	ck_assert_uint_eq(r->bind_seq, 2);
	ck_assert_uint_eq(r->tid, (uint32_t)my_tid());
	emit_range(5, 10, 10);
	ck_assert_uint_eq(r->head, 20);
	shm_unpeek(h);
	collect();
	assert_got_range(5, 0, 20);
}
END_TEST

/* -ENOSPC when every ring has a live owner; an emit from a thread with
 * no ring is lost but counted; a ring freed by a thread exit is taken. */
START_TEST(test_tail_bind_enospc)
{
	const struct xtc_shm_hdr *h;
	struct holder a, b;

	ck_assert_int_eq(xtc_tail_configure(2, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	holder_start(&a, 1, 1, 0, 1);
	holder_start(&b, 2, 2, 0, 1);
	ck_assert_int_eq(a.bind_rc, XTC_OK);
	ck_assert_int_eq(b.bind_rc, XTC_OK);
	ck_assert_int_eq(xtc_tail_loop_bind(3), -ENOSPC);
	ck_assert_int_eq(xtc_tail_loop_bind(1), -EBUSY);
	emit_range(3, 0, 2);   /* no ring for this thread: lost, and counted */
	ck_assert_uint_eq(xtc_tail_count(), 2);
	ck_assert_uint_eq(xtc_tail_dropped(), 2);
	h = shm_peek();
	ck_assert_uint_eq(h->no_ring_count, 2);
	holder_stop(&a);
	ck_assert_int_eq(xtc_tail_loop_bind(3), XTC_OK);
	emit_range(3, 0, 2);
	ck_assert_uint_eq(xtc_tail_count(), 4);
	ck_assert_uint_eq(xtc_tail_dropped(), 2);
	ck_assert_uint_eq(h->no_ring_count, 2);
	shm_unpeek(h);
	ck_assert_int_eq(xtc_tail_reset(), XTC_OK);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	holder_stop(&b);
}
END_TEST

/* A thread that emits without binding gets a ring of its own labelled
 * XTC_TAIL_LOOP_NONE, whose records carry the pids it emitted; the ring
 * is released at thread exit and another unbound thread reuses it. */
START_TEST(test_tail_unbound_thread)
{
	const struct xtc_shm_hdr *h;
	const struct xtc_shm_ring *r;
	struct holder a, b;
	int i;

	ck_assert_int_eq(xtc_tail_configure(1, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	holder_start(&a, XTC_TAIL_LOOP_NONE, 9, 0, 5);
	collect();
	assert_got_range(9, 0, 5);
	h = shm_peek();
	i = shm_find_loop(h, XTC_TAIL_LOOP_NONE);
	ck_assert_int_eq(i, 0);
	r = shm_ring(h, 0);
	ck_assert_uint_eq(r->state, XTC_SHM_RING_BOUND);
	ck_assert_uint_eq(r->tid, (uint32_t)a.tid);
	ck_assert_uint_eq(r->head, 5);
	ck_assert_int_eq(shm_find_loop(h, 9), -1);   /* pids do not label rings */
	ck_assert_int_eq(xtc_tail_loop_bind(9), -ENOSPC);
	holder_stop(&a);
	ck_assert_uint_eq(r->state, XTC_SHM_RING_FREE);
	holder_start(&b, XTC_TAIL_LOOP_NONE, 9, 5, 5);
	ck_assert_uint_eq(r->state, XTC_SHM_RING_BOUND);
	ck_assert_uint_eq(r->tid, (uint32_t)b.tid);
	ck_assert_uint_eq(r->loop_id, XTC_TAIL_LOOP_NONE);
	ck_assert_uint_eq(h->no_ring_count, 0);
	holder_stop(&b);
	shm_unpeek(h);
	collect();
	assert_got_range(9, 0, 10);
}
END_TEST

/* Binding after unbound emits labels the thread's own ring: the records
 * continue in it. */
START_TEST(test_tail_bind_labels_own_ring)
{
	const struct xtc_shm_hdr *h;
	int i;

	ck_assert_int_eq(xtc_tail_configure(4, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	emit_range(4, 0, 3);
	h = shm_peek();
	i = shm_find_loop(h, XTC_TAIL_LOOP_NONE);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(xtc_tail_loop_bind(4), XTC_OK);
	ck_assert_int_eq(shm_find_loop(h, 4), i);
	ck_assert_int_eq(shm_find_loop(h, XTC_TAIL_LOOP_NONE), -1);
	emit_range(4, 3, 3);
	ck_assert_uint_eq(shm_ring(h, (uint32_t)i)->head, 6);
	shm_unpeek(h);
	collect();
	assert_got_range(4, 0, 6);
}
END_TEST

/* ---------------------------------------------------------------------
 * overflow: the flight recorder and drop-new
 */

/* No consumer: a full ring keeps the newest records. */
START_TEST(test_tail_flight_recorder)
{
	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	emit_range(3, 0, 1000);
	ck_assert_uint_eq(xtc_tail_count(), 64);
	ck_assert_uint_eq(xtc_tail_dropped(), 936);
	collect();
	assert_got_range(3, 936, 64);
}
END_TEST

/* attach with no daemon: recording switches to drop-new (so a daemon that
 * comes later loses nothing in the rings), a full ring keeps the oldest
 * records, and detach stops the retrying thread. */
START_TEST(test_tail_drop_new)
{
	const struct xtc_shm_hdr *h;

	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	ck_assert_int_eq(xtc_tail_attach("/nonexistent/dir/sock"), XTC_OK);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_SCHED), 1);
	h = shm_peek();
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->mode, XTC_SHM_MODE_DROP_NEW);
	emit_range(3, 0, 1000);
	ck_assert_uint_eq(xtc_tail_count(), 64);
	ck_assert_uint_eq(xtc_tail_dropped(), 936);
	collect();
	assert_got_range(3, 0, 64);
	ck_assert_int_eq(xtc_tail_detach(), XTC_OK);
	ck_assert_uint_eq(h->producer_state, XTC_SHM_PRODUCER_DETACHED);
	ck_assert_int_eq(xtc_tail_detach(), -ENOTCONN);
	ck_assert_uint_eq(xtc_tail_count(), 64);
	shm_unpeek(h);
}
END_TEST

/* A segment that already records in overwrite mode switches to drop-new
 * on attach; what was overwritten before stays counted. */
START_TEST(test_tail_drop_new_after_overwrite)
{
	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	emit_range(3, 0, 100);
	ck_assert_uint_eq(xtc_tail_dropped(), 36);
	ck_assert_int_eq(xtc_tail_attach("/nonexistent/dir/sock"), XTC_OK);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_SCHED), 1);
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_MSG), 0);   /* attach kept the mask */
	emit_range(3, 100, 50);
	ck_assert_uint_eq(xtc_tail_count(), 64);
	ck_assert_uint_eq(xtc_tail_dropped(), 86);
	collect();
	assert_got_range(3, 36, 64);
	ck_assert_int_eq(xtc_tail_detach(), XTC_OK);
}
END_TEST

/* An attach that fails leaves recording as it was: same mask, still a
 * flight recorder (no thread will ever drain a drop-new ring). */
START_TEST(test_tail_attach_failure_no_side_effects)
{
	char path[300];
	const struct xtc_shm_hdr *h;
	struct err_cap c;
	char err[1024];

	memset(path, 'a', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	stderr_begin(&c);
	ck_assert_int_eq(xtc_tail_attach(path), -ENAMETOOLONG);
	stderr_end(&c, err, sizeof err);
	ck_assert_int_eq(xtc_tail_detach(), -ENOTCONN);
	ck_assert_uint_eq(xtc_tail_mask_, XTC_TAIL_SCHED);
	h = shm_peek();
	ck_assert_uint_eq(h->mode, XTC_SHM_MODE_OVERWRITE);
	shm_unpeek(h);
	emit_range(3, 0, 1000);
	collect();
	assert_got_range(3, 936, 64);
}
END_TEST

/* The same from a recorder that was off: a failed attach enables nothing. */
START_TEST(test_tail_attach_failure_enables_nothing)
{
	char path[300];
	struct err_cap c;
	char err[1024];

	memset(path, 'a', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	stderr_begin(&c);
	ck_assert_int_eq(xtc_tail_attach(path), -ENAMETOOLONG);
	stderr_end(&c, err, sizeof err);
	ck_assert_uint_eq(xtc_tail_mask_, 0);
	ck_assert_int_eq(xtc_tail_configure(2, 64), XTC_OK);   /* no segment either */
}
END_TEST

/* A second attach after a detach makes the producer active again: the
 * header must not keep saying "said goodbye; no more records". */
START_TEST(test_tail_reattach_active)
{
	const struct xtc_shm_hdr *h;

	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	ck_assert_int_eq(xtc_tail_attach("/nonexistent/dir/sock"), XTC_OK);
	ck_assert_int_eq(xtc_tail_attach("/nonexistent/dir/sock"), -EALREADY);
	h = shm_peek();
	ck_assert_uint_eq(h->producer_state, XTC_SHM_PRODUCER_ACTIVE);
	ck_assert_int_eq(xtc_tail_detach(), XTC_OK);
	ck_assert_uint_eq(h->producer_state, XTC_SHM_PRODUCER_DETACHED);
	ck_assert_int_eq(xtc_tail_attach("/nonexistent/dir/sock"), XTC_OK);
	ck_assert_uint_eq(h->producer_state, XTC_SHM_PRODUCER_ACTIVE);
	ck_assert_int_eq(xtc_tail_detach(), XTC_OK);
	shm_unpeek(h);
}
END_TEST

/* ---------------------------------------------------------------------
 * concurrency: reads racing producers
 */

#define CONC_LOOPS 4
#define CONC_EMITS 200000u
#define CONC_CAP   1024u
#define CONC_CHUNK 1000u   /* emits between yields; divides CONC_EMITS / 2 */

/* One producer thread of test_tail_concurrent_read. */
struct conc_prod {
	pthread_t          th;
	uint32_t           loop;      /* 1..CONC_LOOPS */
	int                bind_rc;
	pthread_barrier_t *start;
	unsigned          *done;
	unsigned          *snaps;     /* non-empty reads the main thread finished */
};

/* Thread: bind, then emit detail = gen = sequence number.  Halfway, wait
 * until the reader has finished two non-empty snapshots, so some surely
 * fall while producers are mid-stream on wrapped rings. */
static void *conc_main(void *arg)
{
	struct conc_prod *p = arg;

	p->bind_rc = xtc_tail_loop_bind(p->loop);
	pthread_barrier_wait(p->start);
	for (uint64_t d = 0; d < CONC_EMITS; d += CONC_CHUNK) {
		emit_range(p->loop, d, CONC_CHUNK);
		if (d == CONC_EMITS / 2)
			while (__atomic_load_n(p->snaps, __ATOMIC_ACQUIRE) < 2)
				sched_yield();
		else
			sched_yield();
	}
	__atomic_add_fetch(p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* What one snapshot showed. */
struct conc_snap {
	int64_t  last[CONC_LOOPS + 1];    /* last detail per loop, -1 none */
	uint64_t first[CONC_LOOPS + 1];
	uint64_t n[CONC_LOOPS + 1];
	uint64_t prev_ts;
	size_t   total;
	char     err[256];
};

/* xtc_tail_read visitor: every record whole, each loop's details
 * contiguous and increasing, the merge in time order.  Stops at the first
 * fault and describes it. */
static int conc_check_cb(const xtc_tail_rec_t *r, void *user)
{
	struct conc_snap *s = user;
	uint32_t loop = r->pid.loop_id;

	if (loop < 1 || loop > CONC_LOOPS || r->source != XTC_TAIL_SCHED || r->kind != XTC_TAIL_RUN ||
	    r->pid.local_id != loop * 7 || r->pid.gen != r->detail || r->detail >= CONC_EMITS) {
		snprintf(s->err, sizeof s->err,
		         "record %zu torn: loop %u local %u gen %llu detail %llu source %u kind %u",
		         s->total, loop, r->pid.local_id, (unsigned long long)r->pid.gen,
		         (unsigned long long)r->detail, r->source, r->kind);
		return 1;
	}
	if (r->ts_ns < s->prev_ts) {
		snprintf(s->err, sizeof s->err, "record %zu (loop %u detail %llu) goes back in time",
		         s->total, loop, (unsigned long long)r->detail);
		return 1;
	}
	if (s->last[loop] >= 0 && r->detail != (uint64_t)s->last[loop] + 1) {
		snprintf(s->err, sizeof s->err, "loop %u: detail %llu follows %lld", loop,
		         (unsigned long long)r->detail, (long long)s->last[loop]);
		return 1;
	}
	if (s->last[loop] < 0)
		s->first[loop] = r->detail;
	s->last[loop] = (int64_t)r->detail;
	s->n[loop]++;
	s->prev_ts = r->ts_ns;
	s->total++;
	return 0;
}

/* Take one snapshot and assert it is consistent; returns its size. */
static size_t conc_snapshot(struct conc_snap *s)
{
	int rc;

	memset(s, 0, sizeof *s);
	for (int l = 0; l <= CONC_LOOPS; l++)
		s->last[l] = -1;
	rc = xtc_tail_read(conc_check_cb, s);
	ck_assert_msg(s->err[0] == '\0', "%s", s->err);
	ck_assert_int_eq(rc, (int)s->total);
	for (int l = 1; l <= CONC_LOOPS; l++)
		ck_assert_uint_le(s->n[l], CONC_CAP);
	return s->total;
}

/* Four loops' producers wrap small rings while the main thread reads:
 * no snapshot holds a torn, missing-in-the-middle or reordered record,
 * and at the end every emitted record is either buffered or dropped. */
START_TEST(test_tail_concurrent_read)
{
	struct conc_prod p[CONC_LOOPS];
	pthread_barrier_t start;
	unsigned done = 0, snaps = 0;
	const struct xtc_shm_hdr *h;
	struct conc_snap s;

	ck_assert_int_eq(xtc_tail_configure(8, CONC_CAP), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	pthread_barrier_init(&start, NULL, CONC_LOOPS + 1);
	for (int i = 0; i < CONC_LOOPS; i++) {
		p[i] = (struct conc_prod){ .loop = (uint32_t)i + 1, .start = &start, .done = &done,
		                           .snaps = &snaps };
		ck_assert_int_eq(pthread_create(&p[i].th, NULL, conc_main, &p[i]), 0);
	}
	pthread_barrier_wait(&start);
	while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < CONC_LOOPS) {
		if (conc_snapshot(&s) > 0)
			__atomic_add_fetch(&snaps, 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < CONC_LOOPS; i++) {
		ck_assert_int_eq(pthread_join(p[i].th, NULL), 0);
		ck_assert_int_eq(p[i].bind_rc, XTC_OK);
	}
	pthread_barrier_destroy(&start);
	ck_assert_uint_ge(snaps, 2);

	/* Quiescent: each ring holds exactly its last CONC_CAP records. */
	ck_assert_uint_eq(conc_snapshot(&s), CONC_LOOPS * CONC_CAP);
	for (int l = 1; l <= CONC_LOOPS; l++) {
		ck_assert_uint_eq(s.n[l], CONC_CAP);
		ck_assert_uint_eq(s.first[l], CONC_EMITS - CONC_CAP);
		ck_assert_int_eq(s.last[l], CONC_EMITS - 1);
	}
	h = shm_peek();
	for (uint32_t l = 1; l <= CONC_LOOPS; l++) {
		int i = shm_find_loop(h, l);

		ck_assert_int_ge(i, 0);
		ck_assert_uint_eq(shm_ring(h, (uint32_t)i)->head, CONC_EMITS);
		ck_assert_uint_eq(shm_ring(h, (uint32_t)i)->dropped, 0);
	}
	shm_unpeek(h);
	ck_assert_uint_eq(xtc_tail_count(), CONC_LOOPS * CONC_CAP);
	ck_assert_uint_eq(xtc_tail_dropped(), CONC_LOOPS * (uint64_t)(CONC_EMITS - CONC_CAP));
	ck_assert_uint_eq(xtc_tail_count() + xtc_tail_dropped(), CONC_LOOPS * (uint64_t)CONC_EMITS);
}
END_TEST

/* ---------------------------------------------------------------------
 * env: XTC_TAIL_ENABLE, XTC_TAIL_RINGS, XTC_TAIL_RING_RECORDS
 */

/* XTC_TAIL_ENABLE values and the mask each must enable. */
static const struct {
	const char *value;
	unsigned    mask;
} env_good[] = {
	{ "1", XTC_TAIL_SCHED },
	{ "sched", XTC_TAIL_SCHED },
	{ "msg", XTC_TAIL_MSG },
	{ "all", XTC_TAIL_ALL },
	{ "sched,msg", XTC_TAIL_SCHED | XTC_TAIL_MSG },
	{ "io,os", XTC_TAIL_IO | XTC_TAIL_OS },
	{ "0", 0 },
	{ "off", 0 },
	{ "none", 0 },
};
#define N_ENV_GOOD (sizeof env_good / sizeof env_good[0])

/* A valid XTC_TAIL_ENABLE enables exactly its mask, silently; 0/off/none
 * create nothing. */
START_TEST(test_tail_env_enable)
{
	unsigned want = env_good[_i].mask;
	struct err_cap c;
	char err[1024];

	ck_assert_int_eq(setenv("XTC_TAIL_ENABLE", env_good[_i].value, 1), 0);
	stderr_begin(&c);
	ck_assert_uint_eq(xtc_tail_from_env(), want);
	ck_assert_uint_eq(stderr_end(&c, err, sizeof err), 0);
	for (unsigned bit = 1; bit <= XTC_TAIL_OS; bit <<= 1)
		ck_assert_int_eq(xtc_tail_on(bit), (want & bit) != 0);
	(xtc_tail_emit)(XTC_TAIL_SCHED, XTC_TAIL_RUN, test_pid(1, 0), 0);
	ck_assert_uint_eq(xtc_tail_count(), (want & XTC_TAIL_SCHED) != 0);
	if (want == 0)
		ck_assert_int_eq(xtc_tail_loop_bind(1), -ENODEV);
	ck_assert_uint_eq(xtc_tail_enable(0), want);
}
END_TEST

/* Unset: nothing happens. */
START_TEST(test_tail_env_unset)
{
	unsetenv("XTC_TAIL_ENABLE");
	ck_assert_uint_eq(xtc_tail_from_env(), 0);
	ck_assert_uint_eq(xtc_tail_mask_, 0);
	ck_assert_int_eq(xtc_tail_loop_bind(1), -ENODEV);
}
END_TEST

/* Bad XTC_TAIL_ENABLE values. */
static const char *const env_bad[] = { "bogus", "sched,bogus", "2", "sched;msg", "sched msg" };
#define N_ENV_BAD (sizeof env_bad / sizeof env_bad[0])

/* A bad XTC_TAIL_ENABLE enables nothing, returns 0 and says so in one
 * line on stderr naming the variable. */
START_TEST(test_tail_env_enable_bad)
{
	struct err_cap c;
	char err[1024];

	ck_assert_int_eq(setenv("XTC_TAIL_ENABLE", env_bad[_i], 1), 0);
	stderr_begin(&c);
	ck_assert_uint_eq(xtc_tail_from_env(), 0);
	stderr_end(&c, err, sizeof err);
	assert_one_line_naming(err, "XTC_TAIL_ENABLE");
	ck_assert_msg(strstr(err, env_bad[_i]) != NULL, "stderr \"%s\" does not quote the value", err);
	ck_assert_uint_eq(xtc_tail_mask_, 0);
	ck_assert_int_eq(xtc_tail_loop_bind(1), -ENODEV);
}
END_TEST

/* from_env returns the mask it leaves enabled: XTC_TAIL_ENABLE=off after
 * an enable must not report 0 while recording goes on. */
START_TEST(test_tail_env_off_reports_truth)
{
	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(setenv("XTC_TAIL_ENABLE", "off", 1), 0);
	ck_assert_uint_eq(xtc_tail_from_env(), xtc_tail_mask_);
}
END_TEST

/* XTC_TAIL_RINGS and XTC_TAIL_RING_RECORDS set the geometry, silently. */
START_TEST(test_tail_env_geometry)
{
	const struct xtc_shm_hdr *h;
	struct holder a, b, c;
	struct err_cap ec;
	char err[1024];

	ck_assert_int_eq(setenv("XTC_TAIL_RINGS", "3", 1), 0);
	ck_assert_int_eq(setenv("XTC_TAIL_RING_RECORDS", "128", 1), 0);
	stderr_begin(&ec);
	ck_assert_uint_eq(xtc_tail_enable(XTC_TAIL_SCHED), 0);
	ck_assert_uint_eq(stderr_end(&ec, err, sizeof err), 0);
	emit_range(1, 0, 1000);
	ck_assert_uint_eq(xtc_tail_count(), 128);
	ck_assert_uint_eq(xtc_tail_dropped(), 872);
	h = shm_peek();
	ck_assert_uint_eq(h->ring_count, 3);
	ck_assert_uint_eq(h->ring_capacity, 128);
	shm_unpeek(h);
	/* Three rings: this thread's, a's and b's; c finds none. */
	holder_start(&a, 1, 1, 0, 0);
	holder_start(&b, 2, 2, 0, 0);
	holder_start(&c, 3, 3, 0, 0);
	ck_assert_int_eq(a.bind_rc, XTC_OK);
	ck_assert_int_eq(b.bind_rc, XTC_OK);
	ck_assert_int_eq(c.bind_rc, -ENOSPC);
	holder_stop(&c);
	holder_stop(&b);
	holder_stop(&a);
}
END_TEST

/* configure wins over the environment. */
START_TEST(test_tail_configure_beats_env)
{
	const struct xtc_shm_hdr *h;

	ck_assert_int_eq(setenv("XTC_TAIL_RINGS", "3", 1), 0);
	ck_assert_int_eq(setenv("XTC_TAIL_RING_RECORDS", "128", 1), 0);
	ck_assert_int_eq(xtc_tail_configure(5, 256), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	h = shm_peek();
	ck_assert_uint_eq(h->ring_count, 5);
	ck_assert_uint_eq(h->ring_capacity, 256);
	shm_unpeek(h);
}
END_TEST

/* A bad XTC_TAIL_RING_RECORDS is one line on stderr and the default. */
START_TEST(test_tail_env_bad_records)
{
	const struct xtc_shm_hdr *h;
	struct err_cap c;
	char err[1024];

	ck_assert_int_eq(setenv("XTC_TAIL_RING_RECORDS", "100", 1), 0);
	stderr_begin(&c);
	xtc_tail_enable(XTC_TAIL_SCHED);
	stderr_end(&c, err, sizeof err);
	assert_one_line_naming(err, "XTC_TAIL_RING_RECORDS");
	ck_assert_int_eq(xtc_tail_on(XTC_TAIL_SCHED), 1);
	h = shm_peek();
	ck_assert_uint_eq(h->ring_capacity, DEFAULT_RECORDS);
	shm_unpeek(h);
	emit_range(1, 0, DEFAULT_RECORDS + 10);
	ck_assert_uint_eq(xtc_tail_count(), DEFAULT_RECORDS);
	ck_assert_uint_eq(xtc_tail_dropped(), 10);
}
END_TEST

/* Bad XTC_TAIL_RINGS values. */
static const char *const rings_bad[] = { "0", "1025", "abc", "4x", "-1", "99999999999999999999" };
#define N_RINGS_BAD (sizeof rings_bad / sizeof rings_bad[0])

/* A bad XTC_TAIL_RINGS is one line on stderr and the default. */
START_TEST(test_tail_env_bad_rings)
{
	const struct xtc_shm_hdr *h;
	struct err_cap c;
	char err[1024];

	ck_assert_int_eq(setenv("XTC_TAIL_RINGS", rings_bad[_i], 1), 0);
	ck_assert_int_eq(setenv("XTC_TAIL_RING_RECORDS", "64", 1), 0);
	stderr_begin(&c);
	xtc_tail_enable(XTC_TAIL_SCHED);
	stderr_end(&c, err, sizeof err);
	assert_one_line_naming(err, "XTC_TAIL_RINGS");
	h = shm_peek();
	ck_assert_uint_eq(h->ring_count, DEFAULT_RINGS);
	ck_assert_uint_eq(h->ring_capacity, 64);
	shm_unpeek(h);
}
END_TEST

/* XTC_TAIL_CLOCK: "mono" and "tsc" are silent; anything else is one line
 * naming it, and the default clock. */
static const char *const clock_values[] = { "mono", "tsc", "monotonic", "TSC", "mono " };
#define N_CLOCK_VALUES (sizeof clock_values / sizeof clock_values[0])

START_TEST(test_tail_env_clock)
{
	const struct xtc_shm_hdr *h;
	struct err_cap c;
	char err[1024];

	ck_assert_int_eq(setenv("XTC_TAIL_CLOCK", clock_values[_i], 1), 0);
	stderr_begin(&c);
	xtc_tail_enable(XTC_TAIL_SCHED);
	stderr_end(&c, err, sizeof err);
	h = shm_peek();
	if (_i < 2) {
		ck_assert_msg(err[0] == '\0', "XTC_TAIL_CLOCK=%s said: %s", clock_values[_i], err);
	} else {
		assert_one_line_naming(err, "XTC_TAIL_CLOCK");
		ck_assert(h->ts_unit == XTC_SHM_TS_MONO_NS || h->ts_unit == XTC_SHM_TS_TSC);
	}
	if (_i == 0)
		ck_assert_uint_eq(h->ts_unit, XTC_SHM_TS_MONO_NS);
	shm_unpeek(h);
}
END_TEST

/* ---------------------------------------------------------------------
 * fork
 */

/* Child of test_tail_fork: emit, check its own view, report by exit code
 * (one bit per failed check).  Never returns. */
static void fork_child(int ready_fd, int go_fd)
{
	int code = 0;
	char c = 'x';

	emit_range(1, 200, 7);
	if (xtc_tail_count() != 7)
		code |= 1;
	if (xtc_tail_dropped() != 0)
		code |= 2;
	got.n = 0;
	got.stop_at = 0;
	if (xtc_tail_read(collect_cb, &got) != 7 || got.r[0].detail != 200 || got.r[6].detail != 206)
		code |= 4;
	if (xtc_tail_loop_bind(1) != XTC_OK)   /* its own segment: loop 1 is free */
		code |= 8;
	if (write(ready_fd, &c, 1) != 1)
		code |= 16;
	while (read(go_fd, &c, 1) > 0)
		;
	_exit(code);
}

/* After fork the child records into a segment of its own: the parent's
 * rings never see the child's records, and each side's counts are its
 * own. */
START_TEST(test_tail_fork)
{
	int ready[2], go[2], status;
	pid_t child;
	char c;

	ck_assert_int_eq(xtc_tail_configure(0, 64), XTC_OK);
	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	emit_range(1, 100, 5);
	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(ready[0]);
		close(go[1]);
		fork_child(ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);   /* the child has emitted */
	ck_assert_uint_eq(xtc_tail_count(), 5);
	ck_assert_uint_eq(xtc_tail_dropped(), 0);
	collect();
	assert_got_range(1, 100, 5);
	close(go[1]);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	close(ready[0]);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "child status %#x (exit bits: 1 count, 2 dropped, 4 read, 8 bind, 16 pipe)",
	              status);
	ck_assert_uint_eq(xtc_tail_count(), 5);
	emit_range(1, 105, 1);   /* the parent's ring still works */
	collect();
	assert_got_range(1, 100, 6);
}
END_TEST

/* ---------------------------------------------------------------------
 * time: ts_ns is CLOCK_MONOTONIC nanoseconds
 */

#define TS_N 16

/* Emit TS_N records, each bracketed by CLOCK_MONOTONIC reads, and assert
 * each read-back timestamp lies in its bracket give or take 50 us. */
static void assert_ts_brackets(unsigned pause_us)
{
	uint64_t before[TS_N], after[TS_N];

	for (int i = 0; i < TS_N; i++) {
		before[i] = mono_ns();
		emit_range(1, (uint64_t)i, 1);
		after[i] = mono_ns();
		if (pause_us != 0 && i == TS_N / 2)
			usleep(pause_us);
	}
	collect();
	assert_got_range(1, 0, TS_N);
	for (int i = 0; i < TS_N; i++)
		ck_assert_msg(got.r[i].ts_ns + TS_SLACK_NS >= before[i] &&
		              got.r[i].ts_ns <= after[i] + TS_SLACK_NS,
		              "record %d: ts %llu outside [%llu, %llu] +- 50 us", i,
		              (unsigned long long)got.r[i].ts_ns, (unsigned long long)before[i],
		              (unsigned long long)after[i]);
}

/* Loop case 0: the default clock (TSC where invariant); 1:
 * XTC_TAIL_CLOCK=mono, where the ring holds the nanoseconds verbatim. */
START_TEST(test_tail_timestamps)
{
	const struct xtc_shm_hdr *h;

	if (_i == 1)
		ck_assert_int_eq(setenv("XTC_TAIL_CLOCK", "mono", 1), 0);
	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	assert_ts_brackets(0);
	h = shm_peek();
	if (_i == 1) {
		int i = shm_find_loop(h, 1);

		ck_assert_uint_eq(h->ts_unit, XTC_SHM_TS_MONO_NS);
		ck_assert_uint_eq(h->ts_hz, 1000000000u);
		ck_assert_int_ge(i, 0);
		for (int k = 0; k < TS_N; k++)
			ck_assert_uint_eq(shm_ring(h, (uint32_t)i)->recs[k].ts, got.r[k].ts_ns);
	} else {
		ck_assert(h->ts_unit == XTC_SHM_TS_MONO_NS || h->ts_unit == XTC_SHM_TS_TSC);
	}
	shm_unpeek(h);
}
END_TEST

/* Timestamps stay exact across a pause long enough for the reader to
 * refine the tick rate (100 ms past the segment's anchor). */
START_TEST(test_tail_timestamps_after_pause)
{
	xtc_tail_enable(XTC_TAIL_SCHED);
	ck_assert_int_eq(xtc_tail_loop_bind(1), XTC_OK);
	assert_ts_brackets(150000);
}
END_TEST

/*
 * A record's time is a pure function of its tick and the segment header:
 * read before its thread exits and again after (past the 100 ms after
 * which a reader used to refine the tick rate), under the default clock
 * (TSC where invariant), every record reads the same nanoseconds, and so
 * what the ring holds converted by the header's anchor and rate.
 */
START_TEST(test_tail_timestamps_stable)
{
	static struct recs first;
	const struct xtc_shm_hdr *h;
	struct holder ho;
	int ring;

	unsetenv("XTC_TAIL_CLOCK");
	xtc_tail_enable(XTC_TAIL_SCHED);
	holder_start(&ho, 4, 4, 0, 64);
	collect();
	assert_got_range(4, 0, 64);
	first = got;
	usleep(150000);
	holder_stop(&ho);
	collect();
	assert_got_range(4, 0, 64);
	h = shm_peek();
	ring = shm_find_loop(h, 4);
	for (size_t i = 0; i < 64; i++) {
		ck_assert_msg(got.r[i].ts_ns == first.r[i].ts_ns,
		              "record %zu: %llu ns before its thread exited, %llu after", i,
		              (unsigned long long)first.r[i].ts_ns, (unsigned long long)got.r[i].ts_ns);
		if (h->ts_unit == XTC_SHM_TS_TSC && ring >= 0) {
			uint64_t ts = shm_ring(h, (uint32_t)ring)->recs[i].ts;
			uint64_t ns = h->anchor_mono_ns +
			              (uint64_t)(((unsigned __int128)(ts - h->anchor_ts) *
			                          (uint64_t)(((unsigned __int128)1000000000u << 32) /
			                                     h->ts_hz)) >> 32);

			ck_assert_uint_eq(got.r[i].ts_ns, ns);
		}
	}
	shm_unpeek(h);
}
END_TEST

/* ---------------------------------------------------------------------
 * The suite
 */

/* One TCase per feature.  Fork mode (Check's default) gives every test a
 * fresh recorder; see the comment at the top. */
static Suite *tail_suite(void)
{
	Suite *s = suite_create("tail");
	TCase *tc;

	tc = tcase_create("api");
	tcase_add_test(tc, test_tail_before_enable);
	tcase_add_test(tc, test_tail_enable_replaces);
	tcase_add_test(tc, test_tail_disable);
	tcase_add_test(tc, test_tail_emit_disabled_source);
	tcase_add_test(tc, test_tail_read_null_cb);
	tcase_add_test(tc, test_tail_read_stop);
	tcase_add_test(tc, test_tail_reset);
	tcase_add_test(tc, test_tail_reset_drop_new);
	suite_add_tcase(s, tc);

	tc = tcase_create("configure");
	tcase_add_loop_test(tc, test_tail_configure_einval, 0, (int)N_BAD_GEOMETRY);
	tcase_add_test(tc, test_tail_configure_zero_keeps);
	tcase_add_test(tc, test_tail_configure_ebusy);
	suite_add_tcase(s, tc);

	tc = tcase_create("bind");
	tcase_add_test(tc, test_tail_bind_einval);
	tcase_add_test(tc, test_tail_bind_enodev);
	tcase_add_test(tc, test_tail_bind_rebind_same);
	tcase_add_test(tc, test_tail_bind_ebusy);
	tcase_add_test(tc, test_tail_bind_reuse_after_exit);
	tcase_add_test(tc, test_tail_bind_enospc);
	tcase_add_test(tc, test_tail_unbound_thread);
	tcase_add_test(tc, test_tail_bind_labels_own_ring);
	suite_add_tcase(s, tc);

	tc = tcase_create("overflow");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_tail_flight_recorder);
	tcase_add_test(tc, test_tail_drop_new);
	tcase_add_test(tc, test_tail_drop_new_after_overwrite);
	tcase_add_test(tc, test_tail_attach_failure_no_side_effects);
	tcase_add_test(tc, test_tail_attach_failure_enables_nothing);
	tcase_add_test(tc, test_tail_reattach_active);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrency");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tail_concurrent_read);
	suite_add_tcase(s, tc);

	tc = tcase_create("env");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_tail_env_enable, 0, (int)N_ENV_GOOD);
	tcase_add_test(tc, test_tail_env_unset);
	tcase_add_loop_test(tc, test_tail_env_enable_bad, 0, (int)N_ENV_BAD);
	tcase_add_test(tc, test_tail_env_off_reports_truth);
	tcase_add_test(tc, test_tail_env_geometry);
	tcase_add_test(tc, test_tail_configure_beats_env);
	tcase_add_test(tc, test_tail_env_bad_records);
	tcase_add_loop_test(tc, test_tail_env_bad_rings, 0, (int)N_RINGS_BAD);
	tcase_add_loop_test(tc, test_tail_env_clock, 0, (int)N_CLOCK_VALUES);
	suite_add_tcase(s, tc);

	tc = tcase_create("fork");
	tcase_add_test(tc, test_tail_fork);
	suite_add_tcase(s, tc);

	tc = tcase_create("time");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_tail_timestamps, 0, 2);
	tcase_add_test(tc, test_tail_timestamps_after_pause);
	tcase_add_test(tc, test_tail_timestamps_stable);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	static const char *const env[] = {
		"XTC_TAIL_ENABLE", "XTC_TAIL_RINGS", "XTC_TAIL_RING_RECORDS",
		"XTC_TAIL_CLOCK", "XTC_TAIL_SHM", "XTC_DEBUG",
	};
	SRunner *sr;
	int failed;

	/* The tests set what they need; nothing may come from the caller. */
	for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
		unsetenv(env[i]);
	sr = srunner_create(tail_suite());
	if (srunner_fork_status(sr) == CK_NOFORK)
		fprintf(stderr, "check_tail: CK_FORK=no: every test after the first inherits the "
		        "recorder state of the ones before it; expect failures\n");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
