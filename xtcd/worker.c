/*
 * xtcd/worker.c - one thread for the slow, blocking chores of the event
 * loop: fdatasync and close of finished segment files, the last close of
 * deleted ones (which frees their blocks and page cache), and the first
 * touch of a newly bound ring's pages.
 *
 * fdatasync of a 64 MiB segment takes tens of milliseconds, and while the
 * event loop waits for it nothing is drained: a producer at millions of
 * events/s fills its ring meanwhile and drops.  The first read of each
 * page of a ring through xtcd's own mapping costs a page fault, about
 * 10 us on a VM, 25 ms for a 10 MiB ring: paid by the first drains, it
 * made them ten times slower than the rest just when a fresh ring fills.
 * So the loop hands both to this thread and carries on; session.c asks
 * for a ring's pages a quarter of a ring ahead of its producer, and only
 * pages the producer's memfd already holds are read.  Jobs run in the
 * order they were handed over.  If the thread cannot be started, or its
 * queue is full, syncs run on the loop as before and touches are skipped
 * (the drains then fault the pages in as they read).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "xtcd/xtcd.h"

#define QCAP 64

enum job_kind { JOB_SYNC, JOB_TOUCH, JOB_RELEASE };

struct job {
	enum job_kind kind;
	int      fd;        /* JOB_SYNC: synced, then closed (it is ours) */
	uint64_t seq;       /* JOB_SYNC: the segment, for the log; JOB_RELEASE: its bytes */
	const volatile uint8_t *p;  /* JOB_TOUCH: read one byte a page of */
	size_t   size;               /* the circular [p, p + size), */
	size_t   from, len;          /* len bytes from offset from, wrapping */
	struct worker_touch *t;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t  wake;    /* a job, or stop */
	pthread_cond_t  done;    /* a touch job finished */
	struct job      q[QCAP];
	unsigned        head, n;
	int             busy;    /* a JOB_SYNC is running */
	int             stop;
	int             running;
	uint64_t        releasing; /* bytes of deleted segments not closed yet (atomic) */
	int             nice;    /* the thread's nice: xtcd's from before prio_boost */
	int             nice_set;
	pthread_t       th;
} wk = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

static void sync_close(int fd, uint64_t seq)
{
	if (fdatasync(fd) < 0)
		xlog_error("fdatasync of segment %llu failed: %s", (unsigned long long)seq,
		     strerror(errno));
	close(fd);
}

/* Pages asked about in one mincore call. */
#define TOUCH_CHUNK 256

/* Read one byte of every page of [at, at + n pages) that is in the
 * memfd's page cache, as one mincore says.  A page that is not is a hole
 * the producer has not written yet (or one swapped out): a read fault
 * there would allocate it, charged to xtcd, for a client that may never
 * write it.  Those are left to the drains. */
static unsigned touch_present(const volatile uint8_t *at, size_t n, size_t page)
{
	unsigned char v[TOUCH_CHUNK];
	unsigned sum = 0;

	if (mincore((void *)(uintptr_t)at, n * page, v) < 0)
		return 0;
	for (size_t k = 0; k < n; k++)
		if (v[k] & 1)
			sum += at[k * page];
	return sum;
}

/* Read one byte of every page already present, a chunk of pages at a
 * time (one system call each, not one a page), stopping early if the
 * owner cancels. */
static void touch(const struct job *j)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = (uintptr_t)j->p & ~(uintptr_t)(page - 1);
	size_t span = ((uintptr_t)j->p + j->size - base + page - 1) / page; /* pages of the ring */
	size_t first = ((uintptr_t)j->p + j->from % j->size - base) / page;
	size_t last = ((uintptr_t)j->p + (j->from + j->len - 1) % j->size - base) / page;
	size_t n = j->len >= j->size ? span                              /* pages, wrapping */
	         : j->len == 0 ? 0 : (last + span - first) % span + 1;
	unsigned sum = 0;

	for (size_t done = 0; done < n;) {
		size_t at = (first + done) % span, k = n - done;

		if (__atomic_load_n(&j->t->cancel, __ATOMIC_RELAXED))
			break;
		if (k > TOUCH_CHUNK)
			k = TOUCH_CHUNK;
		if (k > span - at)
			k = span - at; /* up to the ring's end, then from its start */
		sum += touch_present((const volatile uint8_t *)(base + at * page), k, page);
		done += k;
	}
	(void)sum;
}

static void *worker_main(void *arg)
{
	(void)arg;
	/* A nice per thread: the chores must not compete with the drain. */
	if (wk.nice_set && setpriority(PRIO_PROCESS, 0, wk.nice) < 0)
		xlog_debug("worker thread: cannot set nice %d: %s", wk.nice, strerror(errno));
	pthread_mutex_lock(&wk.mu);
	for (;;) {
		struct job j;

		while (wk.n == 0 && !wk.stop)
			pthread_cond_wait(&wk.wake, &wk.mu);
		if (wk.n == 0)
			break;
		j = wk.q[wk.head];
		wk.head = (wk.head + 1) % QCAP;
		wk.n--;
		wk.busy = j.kind == JOB_SYNC;
		pthread_mutex_unlock(&wk.mu);
		if (j.kind == JOB_SYNC) {
			sync_close(j.fd, j.seq);
		} else if (j.kind == JOB_RELEASE) {
			close(j.fd); /* the last reference: the file is freed here */
			__atomic_sub_fetch(&wk.releasing, j.seq, __ATOMIC_RELAXED);
		} else {
			touch(&j);
		}
		pthread_mutex_lock(&wk.mu);
		wk.busy = 0;
		if (j.kind == JOB_TOUCH) {
			j.t->pending--;
			pthread_cond_broadcast(&wk.done);
		}
	}
	pthread_mutex_unlock(&wk.mu);
	return NULL;
}

void worker_set_nice(int nice)
{
	wk.nice = nice;
	wk.nice_set = 1;
}

int worker_start(void)
{
	sigset_t all, old;
	int err;

	if (wk.running)
		return 0;
	/* Signals are the event loop's business, never this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	wk.stop = 0;
	err = pthread_create(&wk.th, NULL, worker_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		xlog_warn("cannot start the worker thread (%s): segments are synced on the event loop",
		     strerror(err));
		return -err;
	}
	wk.running = 1;
	return 0;
}

/* Queue a job; 0, or -1 when the caller must do without. */
static int enqueue(const struct job *j)
{
	int ret = -1;

	if (!wk.running)
		return -1;
	pthread_mutex_lock(&wk.mu);
	if (wk.n < QCAP) {
		wk.q[(wk.head + wk.n) % QCAP] = *j;
		wk.n++;
		if (j->kind == JOB_TOUCH)
			j->t->pending++;
		pthread_cond_signal(&wk.wake);
		ret = 0;
	}
	pthread_mutex_unlock(&wk.mu);
	return ret;
}

void worker_close(int fd, uint64_t seq, int sync)
{
	struct job j = { .kind = JOB_SYNC, .fd = fd, .seq = seq };

	if (!sync)
		close(fd);
	else if (enqueue(&j) < 0)
		sync_close(fd, seq);
}

void worker_release(int fd, uint64_t bytes)
{
	struct job j = { .kind = JOB_RELEASE, .fd = fd, .seq = bytes };

	__atomic_add_fetch(&wk.releasing, bytes, __ATOMIC_RELAXED);
	if (enqueue(&j) < 0) {
		close(fd);
		__atomic_sub_fetch(&wk.releasing, bytes, __ATOMIC_RELAXED);
	}
}

uint64_t worker_releasing(void)
{
	return __atomic_load_n(&wk.releasing, __ATOMIC_RELAXED);
}

void worker_sync(int fd, uint64_t seq)
{
	struct job j = { .kind = JOB_SYNC, .seq = seq };
	int busy;

	/* A periodic sync while the last one still runs would only queue up
	 * behind it: skip it, the next tick comes soon enough. */
	pthread_mutex_lock(&wk.mu);
	busy = wk.n > 0 || wk.busy;
	pthread_mutex_unlock(&wk.mu);
	if (busy)
		return;
	if ((j.fd = dup(fd)) < 0) {
		xlog_error("cannot sync segment %llu: dup: %s", (unsigned long long)seq, strerror(errno));
		return;
	}
	if (enqueue(&j) < 0)
		sync_close(j.fd, seq);
}

void worker_touch(struct worker_touch *t, const void *p, size_t size, size_t from, size_t len)
{
	struct job j = { .kind = JOB_TOUCH, .p = p, .size = size, .from = from, .len = len, .t = t };

	(void)enqueue(&j);
}

/* Drop t's touch jobs that have not started, keeping the others in
 * order.  Called with the lock. */
static void unqueue_touches(const struct worker_touch *owner, int *pending)
{
	unsigned kept = 0;

	for (unsigned k = 0; k < wk.n; k++) {
		struct job *j = &wk.q[(wk.head + k) % QCAP];

		if (j->kind == JOB_TOUCH && j->t == owner)
			(*pending)--;
		else
			wk.q[(wk.head + kept++) % QCAP] = *j;
	}
	wk.n = kept;
}

void worker_untouch(struct worker_touch *t)
{
	/* Never wait behind a queued fdatasync: only for a touch of t that
	 * is running, and that one stops within 64 pages. */
	__atomic_store_n(&t->cancel, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&wk.mu);
	unqueue_touches(t, &t->pending);
	while (t->pending > 0)
		pthread_cond_wait(&wk.done, &wk.mu);
	pthread_mutex_unlock(&wk.mu);
}

void worker_stop(void)
{
	if (!wk.running)
		return;
	pthread_mutex_lock(&wk.mu);
	wk.stop = 1;
	pthread_cond_signal(&wk.wake);
	pthread_mutex_unlock(&wk.mu);
	pthread_join(wk.th, NULL);
	wk.running = 0;
}
