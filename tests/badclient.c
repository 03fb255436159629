/*
 * tests/badclient.c - an attach client that misbehaves on purpose.
 *
 *   xtc-badclient SOCKET CASE [ARG...]
 *
 * It speaks the attach protocol by hand (proto/ headers only, no
 * libxtctail), breaks it the way CASE says, prints one line with what
 * the daemon answered ("refused: <reason>", "accepted session N, ...",
 * "closed after N ms", ...) and exits 0 when xtcd behaved as it must for
 * that case, 1 when it did not, 2 on a usage or local setup error.
 *
 * Refused cases (xtcd must answer REFUSE with a reason):
 *   garbage truncated huge empty badmagic badversion badshm nofd twofds
 *   manyfds pipe dir unsealed wrongsize liar
 *   unwelcome     a correct client that xtcd must refuse for who runs it or
 *                 how busy xtcd is (--allow-uid, --max-clients)
 * Other cases:
 *   silent [MS]   connect, never say hello: xtcd must close the connection
 *                 (after about MS ms, when given)
 *   valid         a correct client: must be accepted; a few records, goodbye
 *   jump backwards dropback rewrite
 *                 a correct client that is accepted, emits records, waits
 *                 until they are drained, then breaks ring 0's head (jump
 *                 it by 2^40, move it backwards) or its drop counter (up,
 *                 then back down), or rewrites the segment header; then
 *                 goodbye and wait for xtcd to close
 *   many [N [MS]] N connections (default 1000) that never say hello, held
 *                 MS ms (default 200); then a valid client must be accepted
 *   flood [N]     N connections (default 200) that each send a valid hello
 *                 and close at once; then a valid client must be accepted
 * Clients that spend little and cost xtcd or a reader much (the test
 * around them checks what happened to everyone else):
 *   farapart      two records 1.8e19 ns apart (MONO_NS), then goodbye
 *   idle [N [MS]] N idle sessions (default 1000) held MS ms (default 10000);
 *                 every attach must be answered
 *   heads [MS [RINGS [CAP [fill]]]]  a session that writes no record but
 *                 keeps its heads a whole ring ahead of the tail, for MS ms;
 *                 with fill, its rings' memory is written once first (as
 *                 libxtctail prefaults a ring it binds), else it is holes
 *   fast [MS [RINGS [CAP]]]  rings written once, then every ms each head
 *                 moved 2^30 records on (faster than any producer writes,
 *                 within the 2^36 of jump), for MS ms
 *   churn [N]     N short sessions (default 10000), one after another
 *   nudges [MS]   a session writing its nudge eventfd in a loop for MS ms
 *   statushog [N [MS]]  N status requests (default 16) never read, held MS ms
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "proto/xtc_attach.h"
#include "proto/xtc_shm.h"

#define EXIT_OK      0
#define EXIT_WRONG   1 /* the daemon did not behave as it must */
#define EXIT_LOCAL   2 /* usage, or this process could not set up the case */

#define RINGS        2u
#define CAPACITY     64u
#define SEALS        (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define LOOP_NONE    0xFFFFFFFFu /* XTC_TAIL_LOOP_NONE in lib/xtc_tail.h */
#define MANY_FDS     9    /* more than xtcd makes room for (8) */
#define ANSWER_MS    5000
#define CLOSE_MS     5000

static const char *sock_path;

/* A segment as lib/tail.c builds one. */
struct seg {
	int      fd;
	uint8_t *map;
	uint64_t size;
	uint32_t rings, cap;
};

/* What the daemon said. */
struct answer {
	enum { ANS_ACCEPT, ANS_REFUSE, ANS_CLOSED, ANS_RESET, ANS_TIMEOUT, ANS_OTHER, ANS_ERROR } kind;
	uint64_t session_id;
	int      nudge_fd;
	int      error;
	char     reason[sizeof(((struct xtc_msg_refuse *)0)->reason)];
};

/* Sleep ms milliseconds, signals or not. */
static void sleep_ms(unsigned ms)
{
	struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* Print why this process, not the daemon, failed, and exit 2. */
static void die(const char *what)
{
	printf("local error: %s: %s\n", what, strerror(errno));
	exit(EXIT_LOCAL);
}

/* ---------------------------------------------------------------------
 * The segment
 */

/* Fill a header exactly as lib/tail.c's header_init does (MONO_NS clock). */
static void header_init(struct xtc_shm_hdr *h, uint32_t rings, uint32_t records, uint64_t size)
{
	uint64_t mono = mono_ns();

	h->magic = XTC_SHM_MAGIC;
	h->abi_major = XTC_SHM_MAJOR;
	h->abi_minor = XTC_SHM_MINOR;
	h->hdr_size = XTC_SHM_HDR_SIZE;
	h->rec_size = XTC_SHM_REC_SIZE;
	h->ring_count = rings;
	h->ring_capacity = records;
	h->ring_hdr_size = XTC_SHM_RING_HDR_SIZE;
	h->ring_offset = XTC_SHM_HDR_SIZE;
	h->ring_stride = xtc_shm_ring_stride(records);
	h->segment_size = size;
	h->producer_pid = (uint32_t)getpid();
	h->mode = XTC_SHM_MODE_DROP_NEW;
	snprintf(h->comm, sizeof h->comm, "xtc-badclient");
	clock_boot_id(h->boot_id);
	h->ts_unit = XTC_SHM_TS_MONO_NS;
	h->ts_hz = 1000000000u;
	h->anchor_ts = mono;
	h->anchor_mono_ns = mono;
	h->anchor_real_ns = real_ns();
	h->producer_state = XTC_SHM_PRODUCER_ACTIVE;
}

/* Ring i of segment sg. */
static struct xtc_shm_ring *seg_ring(const struct seg *sg, uint32_t i)
{
	return (struct xtc_shm_ring *)(sg->map + XTC_SHM_HDR_SIZE +
	                               (uint64_t)i * xtc_shm_ring_stride(sg->cap));
}

/* Create a correct segment of rings x cap records, sealed with `seals`
 * (0: left unsealed); ring 0 bound to loop 7 as xtc_tail_loop_bind would. */
static void seg_create_sized(struct seg *sg, int seals, uint32_t rings, uint32_t cap)
{
	struct xtc_shm_ring *r;

	sg->rings = rings;
	sg->cap = cap;
	sg->size = xtc_shm_segment_size(rings, cap);
	sg->fd = memfd_create("xtc-badclient", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (sg->fd < 0)
		die("memfd_create");
	if (ftruncate(sg->fd, (off_t)sg->size) < 0)
		die("ftruncate");
	sg->map = mmap(NULL, sg->size, PROT_READ | PROT_WRITE, MAP_SHARED, sg->fd, 0);
	if (sg->map == MAP_FAILED)
		die("mmap");
	header_init((struct xtc_shm_hdr *)sg->map, rings, cap, sg->size);
	for (uint32_t i = 0; i < rings; i++)
		seg_ring(sg, i)->loop_id = LOOP_NONE;
	r = seg_ring(sg, 0);
	r->loop_id = 7;
	r->tid = (uint32_t)getpid();
	r->bind_seq = 1;
	__atomic_store_n(&r->state, XTC_SHM_RING_BOUND, __ATOMIC_RELEASE);
	if (seals != 0 && fcntl(sg->fd, F_ADD_SEALS, seals) < 0)
		die("F_ADD_SEALS");
}

/* A correct segment of RINGS x CAPACITY. */
static void seg_create(struct seg *sg, int seals)
{
	seg_create_sized(sg, seals, RINGS, CAPACITY);
}

/* Publish one record stamped ts on ring 0 the way xtc_tail_emit does;
 * detail counts on from the current head. */
static void seg_emit_at(struct seg *sg, uint64_t ts)
{
	struct xtc_shm_ring *r = seg_ring(sg, 0);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	struct xtc_shm_rec *rec = &r->recs[head & (sg->cap - 1)];

	__atomic_store_n(&r->claim, head + 1, __ATOMIC_RELAXED);
	rec->ts = ts;
	rec->source = 1; /* XTC_TAIL_SCHED */
	rec->kind = 3;   /* XTC_TAIL_RUN */
	rec->loop_id = 7;
	rec->local_id = 1;
	rec->gen = head;
	rec->detail = head;
	__atomic_store_n(&r->head, head + 1, __ATOMIC_RELEASE);
}

/* Publish n records on ring 0, stamped now. */
static void seg_emit(struct seg *sg, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		seg_emit_at(sg, mono_ns());
}

/* Wait until xtcd has published ring 0's tail up to its head. */
static int seg_wait_drained(struct seg *sg, unsigned ms)
{
	struct xtc_shm_ring *r = seg_ring(sg, 0);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	for (unsigned waited = 0; waited < ms; waited += 5) {
		if (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == head)
			return 0;
		sleep_ms(5);
	}
	return -1;
}

/* Wait until xtcd has begun and finished a drain of ring 0 since now: it
 * re-arms the nudge at the end of every drain, so clear it twice and wait
 * for it to be set again (the first time may end a drain begun before). */
static int seg_wait_drain_pass(struct seg *sg, unsigned ms)
{
	struct xtc_shm_ring *r = seg_ring(sg, 0);
	unsigned waited = 0;

	for (int pass = 0; pass < 2; pass++) {
		__atomic_store_n(&r->nudge_armed, 0, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&r->nudge_armed, __ATOMIC_ACQUIRE)) {
			if (waited >= ms)
				return -1;
			sleep_ms(2);
			waited += 2;
		}
	}
	return 0;
}

/* Unmap and close: the daemon's mapping keeps the segment alive. */
static void seg_destroy(struct seg *sg)
{
	munmap(sg->map, sg->size);
	close(sg->fd);
}

/* ---------------------------------------------------------------------
 * The connection
 */

/* Connect to the daemon.  Returns the socket or -errno. */
static int conn_open(unsigned timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { (time_t)(timeout_ms / 1000), (long)(timeout_ms % 1000) * 1000 };
	int fd, err;

	if (strlen(sock_path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A unix connect waits for room in the backlog under SO_SNDTIMEO. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Connect or exit: the daemon must accept connections in every case. */
static int conn_open_or_exit(void)
{
	int fd = conn_open(ANSWER_MS);

	if (fd < 0) {
		printf("cannot connect to %s: %s\n", sock_path, strerror(-fd));
		exit(EXIT_WRONG);
	}
	return fd;
}

/* Send one message with nfds descriptors.  Returns 0 or -errno. */
static int conn_send(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MANY_FDS)];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (nfds > 0) {
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

/* Wait up to ms for fd to become readable.  1 readable, 0 timeout. */
static int wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	return n > 0;
}

/* Read one message of the daemon's answer to a hello. */
static void answer_recv(int fd, struct answer *a)
{
	union { struct xtc_msg_hdr hdr; struct xtc_msg_accept acc; struct xtc_msg_refuse ref;
	        char raw[XTC_ATTACH_MAX_MSG]; } m;
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	                     .msg_controllen = sizeof cbuf };
	ssize_t n;

	memset(&m, 0, sizeof m);
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n >= 0 && c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(int)) && a->nudge_fd < 0)
			memcpy(&a->nudge_fd, CMSG_DATA(c), sizeof(int));
	if (n == 0)
		a->kind = ANS_CLOSED;
	else if (n < 0 && errno == ECONNRESET)
		a->kind = ANS_RESET;
	else if (n < 0)
		a->kind = ANS_ERROR, a->error = errno;
	else if (n == (ssize_t)sizeof m.acc && m.hdr.magic == XTC_ATTACH_MAGIC &&
	         m.hdr.type == XTC_MSG_ACCEPT)
		a->kind = ANS_ACCEPT, a->session_id = m.acc.session_id;
	else if (n == (ssize_t)sizeof m.ref && m.hdr.magic == XTC_ATTACH_MAGIC &&
	         m.hdr.type == XTC_MSG_REFUSE) {
		a->kind = ANS_REFUSE;
		a->error = m.ref.error;
		memcpy(a->reason, m.ref.reason, sizeof a->reason);
		a->reason[sizeof a->reason - 1] = '\0';
	} else
		a->kind = ANS_OTHER, a->error = (int)n;
}

/* Read the daemon's answer to a hello, the way libxtctail does: what the
 * first recvmsg returns is the answer.  The kernel reports ECONNRESET
 * before any queued message when the daemon closed the connection with
 * our hello still unread; libxtctail then never sees the REFUSE queued
 * behind the reset, and neither do we, but we look for it to say so. */
static void conn_answer(int fd, int ms, struct answer *a)
{
	struct answer late;

	memset(a, 0, sizeof *a);
	a->nudge_fd = -1;
	if (!wait_readable(fd, ms)) {
		a->kind = ANS_TIMEOUT;
		return;
	}
	answer_recv(fd, a);
	if (a->kind != ANS_RESET)
		return;
	memset(&late, 0, sizeof late);
	late.nudge_fd = -1;
	answer_recv(fd, &late);
	if (late.kind == ANS_REFUSE)
		memcpy(a->reason, late.reason, sizeof a->reason);
	if (late.nudge_fd >= 0)
		close(late.nudge_fd);
}

/* The answer as the one line this program prints. */
static void answer_print(const struct answer *a)
{
	switch (a->kind) {
	case ANS_ACCEPT:  printf("accepted session %" PRIu64 "\n", a->session_id); break;
	case ANS_REFUSE:  printf("refused: %s (%s)\n", a->reason, strerror(a->error)); break;
	case ANS_CLOSED:  printf("closed without a reason\n"); break;
	case ANS_RESET:
		if (a->reason[0] != '\0')
			printf("connection reset by the daemon before its answer (the REFUSE queued "
			       "behind the reset, unseen by libxtctail, says: %s)\n", a->reason);
		else
			printf("connection reset by the daemon without an answer\n");
		break;
	case ANS_TIMEOUT: printf("no answer within %d ms\n", ANSWER_MS); break;
	case ANS_ERROR:   printf("reading the answer failed: %s\n", strerror(a->error)); break;
	case ANS_OTHER:   printf("an unexpected message of %d bytes\n", a->error); break;
	}
}

/* Wait up to ms for the daemon to close fd, discarding what it sends.
 * Returns the ms it took, or -1. */
static long wait_closed(int fd, int ms)
{
	uint64_t t0 = mono_ns();
	char buf[XTC_ATTACH_MAX_MSG];

	for (;;) {
		long spent = (long)((mono_ns() - t0) / 1000000);
		ssize_t n;

		if (spent >= ms || !wait_readable(fd, (int)(ms - spent)))
			return -1;
		n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return (long)((mono_ns() - t0) / 1000000);
	}
}

/* A correct hello, as lib/attach.c's send_hello builds it. */
static void hello_init(struct xtc_msg_hello *h, uint64_t segment_size)
{
	memset(h, 0, sizeof *h);
	xtc_msg_init(&h->hdr, XTC_MSG_HELLO, sizeof *h);
	h->segment_size = segment_size;
	h->shm_major = XTC_SHM_MAJOR;
	h->shm_minor = XTC_SHM_MINOR;
	h->pid = (uint32_t)getpid();
	snprintf(h->comm, sizeof h->comm, "xtc-badclient");
}

/* Say goodbye: a clean detach.  Returns 0 or -errno. */
static int send_goodbye(int fd)
{
	struct xtc_msg_goodbye g;

	xtc_msg_init(&g.hdr, XTC_MSG_GOODBYE, sizeof g);
	return conn_send(fd, &g, sizeof g, NULL, 0);
}

/* ---------------------------------------------------------------------
 * Cases that must be refused
 */

/* Send msg with fds on fd and require a REFUSE with a reason as the
 * answer.  The client must be able to send its message and read the
 * REFUSE first, as libxtctail does: a daemon that closes before reading
 * the message fails the send (EPIPE) or resets the connection, and the
 * client never learns why.  What did come back is printed all the same. */
static int expect_refusal_on(int fd, const void *msg, size_t len, const int *fds, int nfds)
{
	struct answer a;
	int err = conn_send(fd, msg, len, fds, nfds);

	conn_answer(fd, ANSWER_MS, &a);
	if (err < 0)
		printf("sending failed (%s), then: ", strerror(-err));
	answer_print(&a);
	if (a.nudge_fd >= 0)
		close(a.nudge_fd);
	close(fd);
	return err == 0 && a.kind == ANS_REFUSE && a.reason[0] != '\0' ? EXIT_OK : EXIT_WRONG;
}

/* expect_refusal_on() on a fresh connection. */
static int expect_refusal(const void *msg, size_t len, const int *fds, int nfds)
{
	return expect_refusal_on(conn_open_or_exit(), msg, len, fds, nfds);
}

/* A correct, sealed segment. */
static void seg_sealed(struct seg *sg)
{
	seg_create(sg, SEALS);
}

/* A hello for sg, changed by `mutate`, with sg's memfd when nfds is 1. */
static int refuse_hello(struct seg *sg, void (*mutate)(struct xtc_msg_hello *), int nfds)
{
	struct xtc_msg_hello h;

	hello_init(&h, sg->size);
	if (mutate != NULL)
		mutate(&h);
	return expect_refusal(&h, sizeof h, &sg->fd, nfds);
}

/* A correct hello carrying `fd` instead of a memfd. */
static int refuse_with_fd(int fd, const char *what)
{
	struct xtc_msg_hello h;

	if (fd < 0)
		die(what);
	hello_init(&h, xtc_shm_segment_size(RINGS, CAPACITY));
	return expect_refusal(&h, sizeof h, &fd, 1);
}

/* What the badmagic, badversion, badshm and wrongsize hellos get wrong. */
static void mutate_magic(struct xtc_msg_hello *h)   { h->hdr.magic = ~XTC_ATTACH_MAGIC; }
static void mutate_version(struct xtc_msg_hello *h) { h->hdr.major = 99; }
static void mutate_shm(struct xtc_msg_hello *h)     { h->shm_major = 99; }
static void mutate_size(struct xtc_msg_hello *h)    { h->segment_size += XTC_SHM_HDR_SIZE; }

/* A hello's worth of random bytes (never starting with the magic). */
static int case_garbage(int argc, char **argv)
{
	uint8_t buf[sizeof(struct xtc_msg_hello)];
	uint32_t magic;

	if (getrandom(buf, sizeof buf, 0) != (ssize_t)sizeof buf)
		die("getrandom");
	memcpy(&magic, buf, sizeof magic);
	if (magic == XTC_ATTACH_MAGIC)
		buf[0] ^= 0xff;
	return expect_refusal(buf, sizeof buf, NULL, 0);
}

/* The first 8 bytes of a correct hello, with its memfd. */
static int case_truncated(int argc, char **argv)
{
	struct xtc_msg_hello h;
	struct seg sg;

	seg_sealed(&sg);
	hello_init(&h, sg.size);
	return expect_refusal(&h, 8, &sg.fd, 1);
}

/* 64 KiB that start like a hello: more than any valid message. */
static int case_huge(int argc, char **argv)
{
	size_t len = 64u << 10;
	uint8_t *buf = calloc(1, len);
	int sndbuf = (int)len * 2, fd, ret;
	struct seg sg;

	if (buf == NULL)
		die("calloc");
	seg_sealed(&sg);
	hello_init((struct xtc_msg_hello *)buf, sg.size);
	((struct xtc_msg_hello *)buf)->hdr.size = (uint32_t)len;
	fd = conn_open_or_exit();
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	ret = expect_refusal_on(fd, buf, len, &sg.fd, 1);
	free(buf);
	return ret;
}

/* A hello whose header has another magic. */
static int case_badmagic(int argc, char **argv)
{
	struct seg sg;

	seg_sealed(&sg);
	return refuse_hello(&sg, mutate_magic, 1);
}

/* A hello of attach protocol major 99. */
static int case_badversion(int argc, char **argv)
{
	struct seg sg;

	seg_sealed(&sg);
	return refuse_hello(&sg, mutate_version, 1);
}

/* A hello announcing shared-memory ABI major 99. */
static int case_badshm(int argc, char **argv)
{
	struct seg sg;

	seg_sealed(&sg);
	return refuse_hello(&sg, mutate_shm, 1);
}

/* A correct hello without its memfd. */
static int case_nofd(int argc, char **argv)
{
	struct seg sg;

	seg_sealed(&sg);
	return refuse_hello(&sg, NULL, 0);
}

/* A correct hello with its memfd and /dev/null. */
static int case_twofds(int argc, char **argv)
{
	struct xtc_msg_hello h;
	struct seg sg;
	int fds[2];

	seg_sealed(&sg);
	fds[0] = sg.fd;
	fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fds[1] < 0)
		die("open /dev/null");
	hello_init(&h, sg.size);
	return expect_refusal(&h, sizeof h, fds, 2);
}

/* The memfd and 8 more: more descriptors than xtcd has room for. */
static int case_manyfds(int argc, char **argv)
{
	struct xtc_msg_hello h;
	struct seg sg;
	int fds[MANY_FDS];

	seg_sealed(&sg);
	fds[0] = sg.fd;
	for (int i = 1; i < MANY_FDS; i++)
		if ((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			die("open /dev/null");
	hello_init(&h, sg.size);
	return expect_refusal(&h, sizeof h, fds, MANY_FDS);
}

/* A message of no bytes: SOCK_SEQPACKET delivers it, and it is not EOF. */
static int case_empty(int argc, char **argv)
{
	return expect_refusal("", 0, NULL, 0);
}

/* A correct hello carrying a pipe instead of a memfd. */
static int case_pipe(int argc, char **argv)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe2");
	return refuse_with_fd(p[0], "pipe2");
}

/* A correct hello carrying a directory (O_RDONLY) instead of a memfd. */
static int case_dir(int argc, char **argv)
{
	return refuse_with_fd(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), "open /");
}

/* A correct segment that was never sealed: it could shrink under xtcd. */
static int case_unsealed(int argc, char **argv)
{
	struct seg sg;

	seg_create(&sg, 0);
	return refuse_hello(&sg, NULL, 1);
}

/* A sealed segment whose hello announces a page more than it has. */
static int case_wrongsize(int argc, char **argv)
{
	struct seg sg;

	seg_sealed(&sg);
	return refuse_hello(&sg, mutate_size, 1);
}

/* A correct client that must be refused: its uid is not allowed, or xtcd
 * serves its maximum number of clients. */
static int case_unwelcome(int argc, char **argv)
{
	struct seg sg;

	seg_sealed(&sg);
	return refuse_hello(&sg, NULL, 1);
}

/* A segment sized for RINGS rings whose header claims 1000 of them. */
static int case_liar(int argc, char **argv)
{
	struct seg sg;

	seg_create(&sg, 0);
	((struct xtc_shm_hdr *)sg.map)->ring_count = 1000;
	if (fcntl(sg.fd, F_ADD_SEALS, SEALS) < 0)
		die("F_ADD_SEALS");
	return refuse_hello(&sg, NULL, 1);
}

/* ---------------------------------------------------------------------
 * A client that never says hello
 */

/* Connect and say nothing: xtcd must close after its hello timeout
 * (argv[0]: that timeout in ms, to check the time it took). */
static int case_silent(int argc, char **argv)
{
	long expect = argc > 0 ? strtol(argv[0], NULL, 10) : -1;
	int fd = conn_open_or_exit();
	uint64_t t0 = mono_ns();
	struct answer a;
	long took;

	conn_answer(fd, 30000, &a);
	took = (long)((mono_ns() - t0) / 1000000);
	close(fd);
	if (a.kind == ANS_CLOSED || a.kind == ANS_RESET)
		printf("closed after %ld ms\n", took);
	else if (a.kind == ANS_REFUSE)
		printf("refused after %ld ms: %s\n", took, a.reason);
	else {
		answer_print(&a);
		return EXIT_WRONG;
	}
	if (expect >= 0 && (took < expect - expect / 10 - 10 || took > expect + 2000)) {
		printf("expected about %ld ms\n", expect);
		return EXIT_WRONG;
	}
	return EXIT_OK;
}

/* ---------------------------------------------------------------------
 * Correct clients, and attackers that were correct until accepted
 */

enum attack { ATTACK_NONE, ATTACK_JUMP, ATTACK_BACKWARDS, ATTACK_DROPBACK, ATTACK_REWRITE };

/* Connect, send a correct hello for sg and read the answer.  Returns the
 * connection, accepted or not (a->kind says), and the nudge eventfd in
 * a->nudge_fd when accepted. */
static int attach_nudging(struct seg *sg, struct answer *a)
{
	struct xtc_msg_hello h;
	int fd = conn_open_or_exit();
	int err;

	hello_init(&h, sg->size);
	err = conn_send(fd, &h, sizeof h, &sg->fd, 1);
	conn_answer(fd, ANSWER_MS, a);
	if (err < 0)
		printf("sending the hello failed (%s), then: ", strerror(-err));
	return fd;
}

/* The same, for a producer that never nudges: the nudge eventfd closed. */
static int attach(struct seg *sg, struct answer *a)
{
	int fd = attach_nudging(sg, a);

	if (a->nudge_fd >= 0)
		close(a->nudge_fd);
	a->nudge_fd = -1;
	return fd;
}

/* Break segment sg the way `what` says.  Returns what was done. */
static const char *attack(struct seg *sg, enum attack what)
{
	struct xtc_shm_ring *r = seg_ring(sg, 0);
	struct xtc_shm_hdr *h = (struct xtc_shm_hdr *)sg->map;
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

	switch (what) {
	case ATTACK_JUMP:
		__atomic_store_n(&r->head, head + (1ULL << 40), __ATOMIC_RELEASE);
		return "jumped ring 0's head by 2^40";
	case ATTACK_BACKWARDS:
		__atomic_store_n(&r->head, head - 5, __ATOMIC_RELEASE);
		return "moved ring 0's head back by 5";
	case ATTACK_DROPBACK:
		__atomic_store_n(&r->dropped, 5, __ATOMIC_RELEASE);
		if (seg_wait_drain_pass(sg, 2000) < 0)
			return "raised ring 0's drop counter to 5, which was never drained";
		__atomic_store_n(&r->dropped, 2, __ATOMIC_RELEASE);
		return "raised ring 0's drop counter to 5, then moved it back to 2";
	case ATTACK_REWRITE:
		__atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&h->ring_count, 1000, __ATOMIC_RELEASE);
		return "rewrote the header's magic and ring_count";
	case ATTACK_NONE:
		break;
	}
	return "behaved";
}

/* Attach, emit 10 records, wait until they are drained, attack, say
 * goodbye and wait for xtcd to close.  A rewritten header must make xtcd
 * end the session on its own, before the goodbye. */
static int run_session(enum attack what)
{
	struct seg sg;
	struct answer a;
	const char *done;
	long closed;
	int fd, err;

	seg_sealed(&sg);
	fd = attach(&sg, &a);
	if (a.kind != ANS_ACCEPT) {
		answer_print(&a);
		return EXIT_WRONG;
	}
	printf("accepted session %" PRIu64 ", emitted 10 records", a.session_id);
	seg_emit(&sg, 10);
	if (seg_wait_drained(&sg, 3000) < 0) {
		printf(" that were not drained within 3000 ms\n");
		return EXIT_WRONG;
	}
	done = attack(&sg, what);
	printf(", %s", done);
	sleep_ms(100);
	if (what == ATTACK_REWRITE && wait_closed(fd, 2000) >= 0) {
		printf("; closed by the daemon before the goodbye\n");
		seg_destroy(&sg);
		return EXIT_OK;
	}
	if ((err = send_goodbye(fd)) < 0)
		printf("; goodbye failed (%s)", strerror(-err));
	closed = wait_closed(fd, CLOSE_MS);
	if (closed < 0)
		printf("; goodbye; not closed within %d ms\n", CLOSE_MS);
	else
		printf("; goodbye; closed after %ld ms\n", closed);
	seg_destroy(&sg);
	/* a rewritten header that xtcd let live until the goodbye is a failure */
	return closed >= 0 && what != ATTACK_REWRITE ? EXIT_OK : EXIT_WRONG;
}

/* The cases that attach: a correct client, and the attackers. */
static int case_valid(int argc, char **argv)     { return run_session(ATTACK_NONE); }
static int case_jump(int argc, char **argv)      { return run_session(ATTACK_JUMP); }
static int case_backwards(int argc, char **argv) { return run_session(ATTACK_BACKWARDS); }
static int case_dropback(int argc, char **argv)  { return run_session(ATTACK_DROPBACK); }
static int case_rewrite(int argc, char **argv)   { return run_session(ATTACK_REWRITE); }

/* After a storm: a correct client must still be accepted and let go.
 * Appends to the line being printed; returns the exit status. */
static int probe_valid(void)
{
	struct seg sg;
	struct answer a;
	int fd, ret = EXIT_WRONG;

	seg_sealed(&sg);
	fd = attach(&sg, &a);
	if (a.kind == ANS_ACCEPT) {
		printf("; then a valid client was accepted as session %" PRIu64, a.session_id);
		send_goodbye(fd);
		if (wait_closed(fd, CLOSE_MS) >= 0)
			ret = EXIT_OK;
		else
			printf(" but not closed %d ms after its goodbye", CLOSE_MS);
	} else {
		printf("; then a valid client got: ");
		answer_print(&a);
	}
	if (a.kind == ANS_ACCEPT)
		printf("\n");
	close(fd);
	seg_destroy(&sg);
	return ret;
}

/* Room for n more descriptors in this process. */
static void raise_nofile(unsigned n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n + 64) {
		rl.rlim_cur = rl.rlim_max < n + 64 ? rl.rlim_max : n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* How many of fds[0..n) the daemon has closed. */
static unsigned count_closed(const int *fds, unsigned n)
{
	unsigned closed = 0;
	char buf[XTC_ATTACH_MAX_MSG];

	for (unsigned i = 0; i < n; i++)
		if (wait_readable(fds[i], 0) && recv(fds[i], buf, sizeof buf, MSG_DONTWAIT) <= 0)
			closed++;
	return closed;
}

/* argv[0] connections (default 1000) that never say hello, held argv[1]
 * ms (default 200), then closed; then a correct client. */
static int case_many(int argc, char **argv)
{
	unsigned n = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 1000;
	unsigned hold = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 200;
	int *fds = calloc(n ? n : 1, sizeof *fds), err = 0;
	unsigned opened = 0, closed;

	if (fds == NULL)
		die("calloc");
	raise_nofile(n);
	for (; opened < n; opened++)
		if ((fds[opened] = conn_open(ANSWER_MS)) < 0) {
			err = -fds[opened];
			break;
		}
	sleep_ms(hold);
	closed = count_closed(fds, opened);
	for (unsigned i = 0; i < opened; i++)
		close(fds[i]);
	free(fds);
	printf("opened %u of %u connections", opened, n);
	if (err != 0)
		printf(" (then %s)", strerror(err));
	printf(", held them %u ms (%u closed by the daemon meanwhile)", hold, closed);
	return probe_valid() == EXIT_OK && opened == n ? EXIT_OK : EXIT_WRONG;
}

/* argv[0] connections (default 200) that send a correct hello and close
 * at once; then a correct client. */
static int case_flood(int argc, char **argv)
{
	unsigned n = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 200, sent = 0;
	struct xtc_msg_hello h;
	struct seg sg;

	seg_sealed(&sg);
	hello_init(&h, sg.size);
	for (unsigned i = 0; i < n; i++) {
		int fd = conn_open(ANSWER_MS);

		if (fd < 0) {
			printf("connection %u of %u failed: %s", i + 1, n, strerror(-fd));
			break;
		}
		if (conn_send(fd, &h, sizeof h, &sg.fd, 1) == 0)
			sent++;
		close(fd);
	}
	printf("sent %u of %u valid hellos, closing each connection at once", sent, n);
	seg_destroy(&sg);
	return probe_valid() == EXIT_OK && sent == n ? EXIT_OK : EXIT_WRONG;
}

/* ---------------------------------------------------------------------
 * Clients that cost xtcd (or a reader) much while spending little
 */

/* Two records on ring 0 whose timestamps (MONO_NS, which a producer may
 * set to anything) lie 1.8e19 ns apart, placed so that their wall times
 * (real - mono + ts) span as much as they can without wrapping: 1e12 ns
 * and 1.8e19 ns after 1970.  Then goodbye. */
static int case_farapart(int argc, char **argv)
{
	uint64_t lo = 1000000000000ull - (real_ns() - mono_ns());
	uint64_t ts[] = { lo, lo + 18000000000000000000ull };
	struct seg sg;
	struct answer a;
	int fd;

	(void)argc; (void)argv;
	seg_sealed(&sg);
	fd = attach(&sg, &a);
	if (a.kind != ANS_ACCEPT) {
		answer_print(&a);
		return EXIT_WRONG;
	}
	for (unsigned k = 0; k < 2; k++)
		seg_emit_at(&sg, ts[k]);
	if (seg_wait_drained(&sg, 3000) < 0) {
		printf("accepted session %" PRIu64 ", but its 2 records were not drained\n", a.session_id);
		return EXIT_WRONG;
	}
	send_goodbye(fd);
	printf("session %" PRIu64 ": 2 records 1.8e19 ns apart; goodbye; %s\n", a.session_id,
	       wait_closed(fd, CLOSE_MS) >= 0 ? "closed" : "not closed");
	seg_destroy(&sg);
	return EXIT_OK;
}

/* Attach n idle sessions (one small segment each) from this process;
 * count the accepted and the refused (keeping one refusal's reason).
 * Their connections go to fds[], -1 for the refused. */
static unsigned attach_many(struct seg *sgs, int *fds, unsigned n, unsigned *refused, char *why,
                            size_t why_len)
{
	unsigned accepted = 0;

	*refused = 0;
	for (unsigned i = 0; i < n; i++) {
		struct answer a;

		seg_sealed(&sgs[i]);
		fds[i] = attach(&sgs[i], &a);
		if (a.kind == ANS_ACCEPT) {
			accepted++;
			continue;
		}
		if (a.kind == ANS_REFUSE && (*refused)++ == 0)
			snprintf(why, why_len, "%s", a.reason);
		close(fds[i]);
		fds[i] = -1;
		seg_destroy(&sgs[i]);
	}
	return accepted;
}

/* argv[0] idle sessions (default 1000) held argv[1] ms (default 10000),
 * then goodbye to each.  Every attach must be answered (accepted, or
 * refused with a reason). */
static int case_idle(int argc, char **argv)
{
	unsigned n = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 1000;
	unsigned hold = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 10000;
	struct seg *sgs = calloc(n ? n : 1, sizeof *sgs);
	int *fds = calloc(n ? n : 1, sizeof *fds);
	unsigned accepted, refused, closed = 0;
	char why[sizeof(((struct xtc_msg_refuse *)0)->reason)] = "";

	if (sgs == NULL || fds == NULL)
		die("calloc");
	raise_nofile(2 * n);
	accepted = attach_many(sgs, fds, n, &refused, why, sizeof why);
	printf("%u of %u idle sessions accepted, %u refused%s%s%s", accepted, n, refused,
	       refused ? " (\"" : "", why, refused ? "\")" : "");
	sleep_ms(hold);
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			send_goodbye(fds[i]);
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0) {
			closed += wait_closed(fds[i], CLOSE_MS) >= 0;
			close(fds[i]);
			seg_destroy(&sgs[i]);
		}
	printf("; held %u ms; goodbye: %u closed\n", hold, closed);
	free(sgs);
	free(fds);
	return accepted + refused == n && closed == accepted ? EXIT_OK : EXIT_WRONG;
}

/* For argv[0] ms (default 3000): a session of argv[1] rings (default 8)
 * of argv[2] records (default 262144) that writes no record but keeps
 * every ring's head a whole ring ahead of the tail xtcd published, as
 * if it emitted flat out.  Then goodbye. */
/* rings x cap records, every ring bound (to loops 100...), their records'
 * memory written once when fill. */
static void seg_bound_all(struct seg *sg, uint32_t rings, uint32_t cap, int fill)
{
	seg_create_sized(sg, SEALS, rings, cap);
	for (uint32_t i = 0; i < rings; i++) {
		struct xtc_shm_ring *r = seg_ring(sg, i);

		if (fill)
			memset(r->recs, 0, (size_t)cap * sizeof r->recs[0]);
		r->loop_id = 100 + i;
		__atomic_store_n(&r->state, XTC_SHM_RING_BOUND, __ATOMIC_RELEASE);
	}
}

static int case_heads(int argc, char **argv)
{
	unsigned ms = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 3000;
	uint32_t rings = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 8;
	uint32_t cap = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 262144;
	int fill = argc > 3 && strcmp(argv[3], "fill") == 0;
	uint64_t t0, moved = 0;
	struct seg sg;
	struct answer a;
	int fd;

	seg_bound_all(&sg, rings, cap, fill);
	/* The first lap before attach: what came before is bounded by the
	 * ring only, so xtcd judges these rings by their memory (holes or
	 * written), not by a whole lap appearing faster than one record a
	 * ns after it first looked, which a slowed xtcd may see first. */
	for (uint32_t i = 0; i < rings; i++) {
		struct xtc_shm_ring *r = seg_ring(&sg, i);

		__atomic_store_n(&r->claim, (uint64_t)cap, __ATOMIC_RELAXED);
		__atomic_store_n(&r->head, (uint64_t)cap, __ATOMIC_RELEASE);
	}
	fd = attach(&sg, &a);
	if (a.kind != ANS_ACCEPT) {
		answer_print(&a);
		return EXIT_WRONG;
	}
	for (t0 = mono_ns(); mono_ns() - t0 < (uint64_t)ms * 1000000u;) {
		for (uint32_t i = 0; i < rings; i++) {
			struct xtc_shm_ring *r = seg_ring(&sg, i);
			uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
			uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

			if (tail + cap > head) {
				moved += tail + cap - head;
				__atomic_store_n(&r->claim, tail + cap, __ATOMIC_RELAXED);
				__atomic_store_n(&r->head, tail + cap, __ATOMIC_RELEASE);
			}
		}
		sleep_ms(1);
	}
	send_goodbye(fd);
	printf("session %" PRIu64 ": %u rings x %u records, moved its heads by %" PRIu64
	       " records in %u ms without writing one; goodbye; %s\n", a.session_id, rings, cap, moved,
	       ms, wait_closed(fd, 30000) >= 0 ? "closed" : "not closed within 30 s");
	seg_destroy(&sg);
	return EXIT_OK;
}

/* Heads that run ahead faster than any producer writes: 2^30 records a
 * ms, on rings whose memory was written (so that only the speed is
 * wrong), each step short of the 2^36 a head may never jump. */
static int case_fast(int argc, char **argv)
{
	unsigned ms = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 2000;
	uint32_t rings = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2;
	uint32_t cap = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 65536;
	uint64_t t0, steps = 0;
	struct seg sg;
	struct answer a;
	int fd;

	seg_bound_all(&sg, rings, cap, 1);
	fd = attach(&sg, &a);
	if (a.kind != ANS_ACCEPT) {
		answer_print(&a);
		return EXIT_WRONG;
	}
	for (t0 = mono_ns(); mono_ns() - t0 < (uint64_t)ms * 1000000u; steps++) {
		sleep_ms(1);
		for (uint32_t i = 0; i < rings; i++) {
			struct xtc_shm_ring *r = seg_ring(&sg, i);
			uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED) + (1ULL << 30);

			__atomic_store_n(&r->claim, head, __ATOMIC_RELAXED);
			__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
		}
	}
	send_goodbye(fd);
	printf("session %" PRIu64 ": %u rings x %u records, heads moved 2^30 records a step, "
	       "%" PRIu64 " steps in %u ms; goodbye; %s\n", a.session_id, rings, cap, steps, ms,
	       wait_closed(fd, 30000) >= 0 ? "closed" : "not closed within 30 s");
	seg_destroy(&sg);
	return EXIT_OK;
}

/* argv[0] short sessions (default 10000), one after another, each its own
 * segment: attach, one record, goodbye, and gone without waiting. */
static int case_churn(int argc, char **argv)
{
	unsigned n = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 10000, accepted = 0;
	uint64_t t0 = mono_ns();

	for (unsigned i = 0; i < n; i++) {
		struct seg sg;
		struct answer a;
		int fd;

		seg_sealed(&sg);
		fd = attach(&sg, &a);
		if (a.kind == ANS_ACCEPT) {
			accepted++;
			seg_emit(&sg, 1);
			send_goodbye(fd);
		}
		close(fd);
		seg_destroy(&sg);
	}
	printf("%u of %u short sessions accepted in %.2f s\n", accepted, n,
	       (double)(mono_ns() - t0) / 1e9);
	return accepted == n ? EXIT_OK : EXIT_WRONG;
}

/* For argv[0] ms (default 3000): a session that writes no record but
 * writes its nudge eventfd in a loop, as fast as it can: each write costs
 * it a syscall; what it costs xtcd is for the caller to measure. */
static int case_nudges(int argc, char **argv)
{
	unsigned ms = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 3000;
	uint64_t t0, one = 1, n = 0;
	struct seg sg;
	struct answer a;
	int fd;

	seg_sealed(&sg);
	fd = attach_nudging(&sg, &a);
	if (a.kind != ANS_ACCEPT || a.nudge_fd < 0) {
		answer_print(&a);
		return EXIT_WRONG;
	}
	for (t0 = mono_ns(); mono_ns() - t0 < (uint64_t)ms * 1000000u;)
		for (int i = 0; i < 64; i++)
			n += write(a.nudge_fd, &one, sizeof one) == sizeof one;
	send_goodbye(fd);
	printf("session %" PRIu64 ": %" PRIu64 " nudges in %u ms; goodbye; %s\n", a.session_id, n, ms,
	       wait_closed(fd, 30000) >= 0 ? "closed" : "not closed within 30 s");
	seg_destroy(&sg);
	return EXIT_OK;
}

/* argv[0] status requests (default 16) that never read the answer, held
 * argv[1] ms (default 5000). */
static int case_statushog(int argc, char **argv)
{
	unsigned n = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 10) : 16;
	unsigned hold = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 5000, sent = 0;
	int *fds = calloc(n ? n : 1, sizeof *fds);
	struct xtc_msg_status_req r;

	if (fds == NULL)
		die("calloc");
	memset(&r, 0, sizeof r);
	xtc_msg_init(&r.hdr, XTC_MSG_STATUS_REQ, sizeof r);
	for (unsigned i = 0; i < n; i++) {
		int rcv = 4096;

		fds[i] = conn_open_or_exit();
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
		sent += conn_send(fds[i], &r, sizeof r, NULL, 0) == 0;
	}
	printf("%u status requests sent, never read; holding them %u ms\n", sent, hold);
	sleep_ms(hold);
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return sent == n ? EXIT_OK : EXIT_WRONG;
}

/* ---------------------------------------------------------------------
 * main
 */

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} cases[] = {
	{ "garbage", case_garbage },       { "truncated", case_truncated },
	{ "huge", case_huge },             { "empty", case_empty },
	{ "badmagic", case_badmagic },     { "badversion", case_badversion },
	{ "badshm", case_badshm },         { "nofd", case_nofd },
	{ "twofds", case_twofds },         { "manyfds", case_manyfds },
	{ "pipe", case_pipe },             { "dir", case_dir },
	{ "unsealed", case_unsealed },     { "wrongsize", case_wrongsize },
	{ "liar", case_liar },             { "unwelcome", case_unwelcome },
	{ "silent", case_silent },         { "valid", case_valid },
	{ "jump", case_jump },             { "backwards", case_backwards },
	{ "dropback", case_dropback },     { "rewrite", case_rewrite },
	{ "many", case_many },             { "flood", case_flood },
	{ "farapart", case_farapart },     { "idle", case_idle },
	{ "heads", case_heads },           { "fast", case_fast },
	{ "churn", case_churn },            { "nudges", case_nudges },
	{ "statushog", case_statushog },
};

static void usage(void)
{
	fprintf(stderr, "usage: xtc-badclient SOCKET CASE [ARG...]\ncases:");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		fprintf(stderr, " %s", cases[i].name);
	fprintf(stderr, "\n(see the comment at the top of tests/badclient.c)\n");
	exit(EXIT_LOCAL);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	sock_path = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (strcmp(cases[i].name, argv[2]) == 0)
			return cases[i].run(argc - 3, argv + 3);
	usage();
	return EXIT_LOCAL;
}
