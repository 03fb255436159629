/*
 * tests/uringapp.c - xtc-uringapp: a liburing program with known
 * behaviour, never instrumented, for libxtctail-uring
 * (tests/e2e_uring_adapter.sh).  It prints "app" lines (what its own calls
 * returned, the same with and without the adapter) and "seen" lines (what
 * the test compares with the record).
 *
 *   tags     ring A: 8 NOPs, user_data 0xA000..0xA007, one io_uring_submit,
 *            then reaped with io_uring_wait_cqe + the inline
 *            io_uring_for_each_cqe / io_uring_cq_advance
 *   fail     ring A: 2 NOPs (0xA100, 0xA101) submitted while the ring's fd
 *            is swapped for /dev/null's: io_uring_enter fails with
 *            EOPNOTSUPP; submitted again with the real fd
 *   block    ring A: a 300 ms timeout (0xA200) and io_uring_wait_cqe, which
 *            blocks until it fires (res -ETIME)
 *   two      ring B on the same thread: 4 NOPs 0xB000..0xB003 with
 *            io_uring_submit_and_wait(4)
 *   big      ring C, IORING_SETUP_SQE128 | IORING_SETUP_CQE32: 3 NOPs
 *            0xC000..0xC002, io_uring_submit_and_wait(3)
 *   unseen   ring A: a 60 s timeout (0xA300) submitted and never completed
 *            before the program exits
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

static void die(const char *what, int err)
{
	fprintf(stderr, "xtc-uringapp: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void nops(struct io_uring *r, uint64_t base, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *q = io_uring_get_sqe(r);

		if (!q)
			die("io_uring_get_sqe", EBUSY);
		io_uring_prep_nop(q);
		io_uring_sqe_set_data64(q, base + i);
	}
}

/* Reap n CQEs: wait for the first, take the rest inline. */
static uint64_t reap(struct io_uring *r, unsigned n)
{
	struct io_uring_cqe *cqe;
	uint64_t sum = 0;
	unsigned got = 0, head;
	int ret;

	while (got < n) {
		if ((ret = io_uring_wait_cqe(r, &cqe)) < 0)
			die("io_uring_wait_cqe", ret);
		unsigned k = 0;
		io_uring_for_each_cqe(r, head, cqe) {
			sum += cqe->user_data;
			k++;
		}
		io_uring_cq_advance(r, k);
		got += k;
	}
	return sum;
}

int main(void)
{
	struct io_uring a, b, c;
	struct io_uring_params p;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 300 * 1000000 };
	struct __kernel_timespec never = { .tv_sec = 60, .tv_nsec = 0 };
	int ret, devnull, fd, efd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((ret = io_uring_queue_init(64, &a, 0)) < 0)
		die("io_uring_queue_init", ret);
	if ((ret = io_uring_queue_init(16, &b, 0)) < 0)
		die("io_uring_queue_init", ret);
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	if ((ret = io_uring_queue_init_params(8, &c, &p)) < 0)
		die("io_uring_queue_init_params (SQE128|CQE32)", ret);

	nops(&a, 0xA000, 8);
	printf("app tags submit %d\n", io_uring_submit(&a));
	printf("app tags reaped sum 0x%llx\n", (unsigned long long)reap(&a, 8));

	nops(&a, 0xA100, 2);
	devnull = open("/dev/null", O_RDONLY);
	fd = a.ring_fd;
	efd = a.enter_ring_fd;
	a.ring_fd = a.enter_ring_fd = devnull;
	ret = io_uring_submit(&a);
	printf("app fail submit %d (%s)\n", ret, ret < 0 ? strerror(-ret) : "ok");
	a.ring_fd = fd;
	a.enter_ring_fd = efd;
	close(devnull);
	printf("seen fail errno %d\n", -ret);
	printf("app fail resubmit %d\n", io_uring_submit(&a));
	printf("app fail reaped sum 0x%llx\n", (unsigned long long)reap(&a, 2));

	{
		struct io_uring_sqe *q = io_uring_get_sqe(&a);

		io_uring_prep_timeout(q, &ts, 0, 0);
		io_uring_sqe_set_data64(q, 0xA200);
	}
	printf("app block submit %d\n", io_uring_submit(&a));
	if ((ret = io_uring_wait_cqe(&a, &cqe)) < 0)
		die("io_uring_wait_cqe", ret);
	printf("app block tag 0x%llx res %s\n", (unsigned long long)cqe->user_data,
	       cqe->res == -ETIME ? "ETIME" : "unexpected");
	io_uring_cqe_seen(&a, cqe);

	nops(&b, 0xB000, 4);
	printf("app two submit_and_wait %d\n", io_uring_submit_and_wait(&b, 4));
	printf("app two reaped sum 0x%llx\n", (unsigned long long)reap(&b, 4));

	nops(&c, 0xC000, 3);
	printf("app big submit_and_wait %d\n", io_uring_submit_and_wait(&c, 3));
	printf("app big reaped sum 0x%llx\n", (unsigned long long)reap(&c, 3));

	{
		struct io_uring_sqe *q = io_uring_get_sqe(&a);

		io_uring_prep_timeout(q, &never, 0, 0);
		io_uring_sqe_set_data64(q, 0xA300);
	}
	printf("app unseen submit %d\n", io_uring_submit(&a));
	io_uring_queue_exit(&c);
	io_uring_queue_exit(&b);
	io_uring_queue_exit(&a);
	printf("app done\n");
	return 0;
}
