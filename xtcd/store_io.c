/*
 * xtcd/store_io.c - the store's system calls for writing, and how long
 * they took: pwrite, and the io_uring that writes whole buffers to the
 * current segment file, several in flight, and reads their completions.
 *
 * The write buffers are registered (IORING_OP_WRITE_FIXED: the kernel
 * maps them once, not at every write) and so is the segment file, in a
 * table of two slots (the file, and the file opened O_DIRECT) that
 * store.c fills when a segment is created and empties when it is done
 * (no file lookup and reference per write; the slots are never trusted
 * by fd number, which the next segment may reuse, and emptied slots let
 * a deleted segment's space go).  Each of these is tried and, where the
 * kernel refuses it, done the plain way.  Writes queued while a drain
 * runs go to the kernel in one io_uring_enter at the end of the round
 * (sur_submit).
 *
 * Every write posts its completion: a successful one is what frees its
 * buffer and publishes its records, so IOSQE_CQE_SKIP_SUCCESS (which
 * hides it) would only pay with linked writes, and a link turns a short
 * write into the cancellation of every write after it.  The one link is
 * within a buffer: the page-cache write of its tail after the O_DIRECT
 * write of its whole blocks (store_write.c), so that the file never
 * grows past a hole.  Completions are
 * read from the shared ring without a system call (sur_reap) by the drain
 * itself as well as by the loop.
 *
 * What the results mean (short writes, failures, order) is store.c's.
 */
#include "config.h"

#include <errno.h>
#include <liburing.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "xtcd/store_int.h"
#include "xtcd/xtcd.h"

#define SUR_DEPTH 32      /* SQ entries: more than the store has buffers */
/* The kernel's work for a completed write (posting it, freeing the
 * request) waits for the loop's next io_uring_enter instead of waking the
 * loop from its sleep, as it otherwise does at every write, whatever the
 * eventfd (sur_wake); IORING_SQ_TASKRUN says that work waits (sur_reap
 * enters the kernel for it).  Only the thread that set the ring up may
 * submit then, which the loop's is.  Linux 6.1; else the plain setup. */
#define SUR_SETUP (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG)

static struct {
	struct io_uring ring;
	int  on;              /* the ring is set up */
	int  efd;             /* completions are signalled here (for the loop) */
	int  fixed_bufs;      /* buffers registered: WRITE_FIXED */
	int  fixed_file;      /* the file table is registered: slot 0 */
	unsigned queued;      /* SQEs prepared, not yet submitted */
} ur = { .efd = -1 };

/* ---------------------------------------------------------------------
 * Timing: how long the kernel took for a buffer, for the metrics
 */

static struct store_lat lat;

/* Upper bounds (seconds) of the write latency buckets; the last is +Inf. */
const double store_lat_bounds[STORE_LAT_BUCKETS] = {
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
	1e300,
};

uint64_t sio_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sio_observe(uint64_t submit_ns)
{
	double s = (double)(sio_now_ns() - submit_ns) / 1e9;
	size_t i = 0;

	while (i + 1 < STORE_LAT_BUCKETS && s > store_lat_bounds[i])
		i++;
	lat.count[i]++;
	lat.n++;
	lat.sum_s += s;
}

void store_write_latency(struct store_lat *out)
{
	*out = lat;
}

/* ---------------------------------------------------------------------
 * pwrite
 */

int sio_pwrite_all(int fd, const void *p, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)p + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		done += (size_t)n;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * io_uring
 */

int sur_init(uint8_t *const *bufs, unsigned n, size_t size)
{
	struct iovec iov[SUR_DEPTH];
	int none[2] = { -1, -1 };

	if (n > SUR_DEPTH || (io_uring_queue_init(SUR_DEPTH, &ur.ring, SUR_SETUP) < 0 &&
	                      io_uring_queue_init(SUR_DEPTH, &ur.ring, 0) < 0))
		return -1;
	ur.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ur.efd < 0 || io_uring_register_eventfd(&ur.ring, ur.efd) < 0) {
		io_uring_queue_exit(&ur.ring);
		if (ur.efd >= 0)
			close(ur.efd);
		ur.efd = -1;
		return -1;
	}
	for (unsigned i = 0; i < n; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = size;
	}
	ur.fixed_bufs = io_uring_register_buffers(&ur.ring, iov, n) == 0;
	/* two empty slots (sparse tables: Linux 5.12), filled per segment */
	ur.fixed_file = io_uring_register_files(&ur.ring, none, 2) == 0;
	ur.on = 1;
	return 0;
}

int sur_efd(void)
{
	return ur.efd;
}

const char *sur_describe(void)
{
	if (ur.fixed_bufs)
		return "io_uring (registered buffers)";
	return "io_uring";
}

int sur_file(int fd, int dfd)
{
	int fds[2] = { fd, dfd };

	if (!ur.on || !ur.fixed_file)
		return 0;
	/* a write still queued resolves its slot when it is submitted: it
	 * must see the file it was queued for */
	sur_submit();
	if (io_uring_register_files_update(&ur.ring, 0, fds, 2) != 2) {
		ur.fixed_file = 0; /* writes name their fd from now on */
		return 0;
	}
	return fd >= 0;
}

unsigned sur_space(void)
{
	return io_uring_sq_space_left(&ur.ring);
}

int sur_queue(const struct sur_write *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ur.ring);
	int fixed = w->slot >= 0 && ur.fixed_file;
	int fd = fixed ? w->slot : w->fd;

	if (sqe == NULL)
		return -1;
	if (ur.fixed_bufs)
		io_uring_prep_write_fixed(sqe, fd, w->p, w->len, (uint64_t)w->off, (int)w->buf);
	else
		io_uring_prep_write(sqe, fd, w->p, w->len, (uint64_t)w->off);
	if (fixed)
		sqe->flags |= IOSQE_FIXED_FILE;
	if (w->link)
		sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, w->tag);
	ur.queued++;
	return 0;
}

int sur_submit(void)
{
	int n;

	if (ur.queued == 0)
		return 0;
	do
		n = io_uring_submit(&ur.ring);
	while (n == -EINTR);
	if (n < 0)
		return n;
	ur.queued -= (unsigned)n < ur.queued ? (unsigned)n : ur.queued;
	return n;
}

unsigned sur_reap(void (*done)(unsigned tag, int res))
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	if (IO_URING_READ_ONCE(*ur.ring.sq.kflags) & IORING_SQ_TASKRUN)
		io_uring_get_events(&ur.ring); /* completions the kernel holds (SUR_SETUP) */
	io_uring_for_each_cqe(&ur.ring, head, cqe) {
		done((unsigned)cqe->user_data, cqe->res);
		n++;
	}
	io_uring_cq_advance(&ur.ring, n);
	return n;
}

int sur_wait(void (*done)(unsigned tag, int res))
{
	int err;

	/* what is queued goes first: it may be what we wait for */
	do
		err = io_uring_submit_and_wait(&ur.ring, 1);
	while (err == -EINTR);
	if (err < 0)
		return err;
	ur.queued -= (unsigned)err < ur.queued ? (unsigned)err : ur.queued;
	sur_reap(done);
	return 0;
}

/* Whether a completion signals the eventfd (a flag in the ring's shared
 * memory: no system call).  Returns whether completions wait, read after
 * the change (those that came while the signal was off posted none):
 * posted, or held by the kernel for the next enter (SUR_SETUP).  No
 * completion falls between the two: the kernel, queueing the first work
 * for the next enter, sets IORING_SQ_TASKRUN with a full barrier before
 * it reads the DISABLED flag to decide whether to signal
 * (io_req_local_work_add), and we clear that flag, fence, then read
 * IORING_SQ_TASKRUN, so either it signals or we see the work; later
 * work finds the flag still set, which only our own enter clears.  With
 * the plain setup (before Linux 6.1) the kernel posts the completion and
 * then reads the flag with no barrier between, so one may rarely go
 * unsignalled: the next drain round reaps it, a period late at most. */
unsigned sur_wake(int on)
{
	if (!ur.on)
		return 0;
	if (io_uring_cq_eventfd_enabled(&ur.ring) != (on != 0) &&
	    io_uring_cq_eventfd_toggle(&ur.ring, on != 0) == 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST); /* the flag before the tail's load */
	return io_uring_cq_ready(&ur.ring) + !!(IO_URING_READ_ONCE(*ur.ring.sq.kflags) & IORING_SQ_TASKRUN);
}

void sur_exit(void)
{
	if (!ur.on)
		return;
	io_uring_queue_exit(&ur.ring);
	close(ur.efd);
	ur.efd = -1;
	ur.on = ur.fixed_bufs = ur.fixed_file = 0;
}
