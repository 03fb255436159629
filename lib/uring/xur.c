/*
 * lib/uring/xur.c - libxtctail-uring: record what a liburing program hands
 * the kernel and what comes back, as far as LD_PRELOAD can see.
 *
 *   LD_PRELOAD=libxtctail-uring.so XTC_TAIL_SHM=1 ./any-liburing-program
 *
 * liburing 2.3 (Debian 12) exports the submit and wait paths under symbol
 * versions LIBURING_2.x; xur.map gives our definitions the same versions,
 * so the program's references bind to them, and each calls the real one
 * (dlvsym RTLD_NEXT).  Each ring (struct io_uring *) is a loop of its own,
 * numbered from XUR_LOOP_BASE in the order they are first seen; records
 * carry that loop id whatever thread makes the call.  All records are of
 * source XTC_TAIL_IO:
 *
 *   SUBMIT       one per SQE the kernel consumed in the call (non-SQPOLL:
 *                the SQ head moved past it; SQPOLL: it was published to
 *                the SQ thread), read from the SQ ring: detail = user_data,
 *                local_id = opcode | flags << 8, gen = fd
 *   SUBMIT_FAIL  the call failed (detail = errno) or the kernel consumed
 *                fewer SQEs than were ready (detail =
 *                XTC_TAIL_SHORT_SUBMIT_BASE + how many were left)
 *   REAP         a CQE the adapter saw in the CQ ring at an exported call,
 *                before or after the real one: detail = user_data,
 *                local_id = res, gen = flags.  The hot paths
 *                io_uring_peek_cqe, io_uring_for_each_cqe and
 *                io_uring_cqe_seen are inline and invisible, so a REAP is
 *                "seen by the adapter at time t", not "consumed at t"; a
 *                CQE posted and consumed inline is seen at the next
 *                exported call, unless the kernel overwrote its slot first
 *                (then the count of lost CQEs is logged under XTC_DEBUG)
 *   LOOP_WAIT    a call that may block found no CQE ready (detail = how
 *                many it waits for)
 *   LOOP_WAKE    it returned (detail = ns blocked, local_id = CQEs ready)
 *
 * XTC_TAIL_URING=0 passes everything through.  See xtc_tail_uring(3).
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include <liburing.h>

#include "lib/adapt.h"
#include "xtc_tail.h"

#define XUR_API       __attribute__((visibility("default")))
#define XUR_LOOP_BASE 1000u       /* loop id of the first ring */
#define XUR_RINGS     1024u       /* rings a process may use (table slots / 2) */

/* What we keep of one ring. */
struct xur_ring {
	struct io_uring *ring;        /* key */
	void    *cqes, *sqes;         /* is it still the same ring? */
	uint32_t id;
	uint32_t cq_seen;             /* CQ index up to which we emitted REAPs */
	uint64_t lost;                /* CQEs overwritten before we saw them */
};

static struct {
	int (*submit)(struct io_uring *);
	int (*submit_and_wait)(struct io_uring *, unsigned);
	int (*submit_and_wait_timeout)(struct io_uring *, struct io_uring_cqe **, unsigned,
	                               struct __kernel_timespec *, sigset_t *);
	int (*submit_and_get_events)(struct io_uring *);
	int (*get_cqe)(struct io_uring *, struct io_uring_cqe **, unsigned, unsigned, sigset_t *);
	int (*wait_cqes)(struct io_uring *, struct io_uring_cqe **, unsigned,
	                 struct __kernel_timespec *, sigset_t *);
	int (*wait_cqe_timeout)(struct io_uring *, struct io_uring_cqe **,
	                        struct __kernel_timespec *);
	unsigned (*peek_batch_cqe)(struct io_uring *, struct io_uring_cqe **, unsigned);
	int (*get_events)(struct io_uring *);
} real;

static int xur_off;
static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xur_ring rings[XUR_RINGS];
static unsigned rings_used;
static struct xur_ring *ring_tab[2 * XUR_RINGS];
static uint32_t next_id = XUR_LOOP_BASE;
static __thread struct xur_ring *last __attribute__((tls_model("initial-exec")));
static __thread int thread_bound __attribute__((tls_model("initial-exec")));

static inline uint32_t ring_slot(const struct io_uring *r)
{
	return (uint32_t)(((uint64_t)(uintptr_t)r * 0x9E3779B97F4A7C15ull) >> 53) & (2 * XUR_RINGS - 1);
}

/* Start following a ring from what is in its CQ ring now. */
static void ring_reset(struct xur_ring *R, struct io_uring *ring)
{
	R->cqes = ring->cq.cqes;
	R->sqes = ring->sq.sqes;
	R->id = next_id++;
	R->cq_seen = __atomic_load_n(ring->cq.khead, __ATOMIC_ACQUIRE);
	R->lost = 0;
	__atomic_store_n(&R->ring, ring, __ATOMIC_RELEASE);
}

static struct xur_ring *ring_lookup(struct io_uring *ring)
{
	struct xur_ring *R;
	uint32_t i = ring_slot(ring);

	for (uint32_t n = 0; n < 2 * XUR_RINGS; n++, i = (i + 1) & (2 * XUR_RINGS - 1)) {
		R = __atomic_load_n(&ring_tab[i], __ATOMIC_ACQUIRE);
		if (R == NULL)
			break;
		if (__atomic_load_n(&R->ring, __ATOMIC_ACQUIRE) == ring)
			return R;
	}
	pthread_mutex_lock(&rings_lock);
	for (i = ring_slot(ring); (R = ring_tab[i]) != NULL; i = (i + 1) & (2 * XUR_RINGS - 1))
		if (R->ring == ring)
			goto out;
	if (rings_used >= XUR_RINGS) {
		if (rings_used++ == XUR_RINGS)
			adapt_log("libxtctail-uring: more than %u rings; the rest are not recorded",
			          XUR_RINGS);
		R = NULL;
		goto out;
	}
	R = &rings[rings_used++];
	ring_reset(R, ring);
	__atomic_store_n(&ring_tab[i], R, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&rings_lock);
	return R;
}

/* Our state of ring, or NULL when we do not record it.  A ring torn down
 * (io_uring_queue_exit) and set up again at the same address has other
 * mappings, or a CQ head behind what we saw: it starts afresh as a new
 * loop. */
static struct xur_ring *ring_get(struct io_uring *ring)
{
	struct xur_ring *R = last;

	if (xur_off || !xtc_tail_on(XTC_TAIL_IO))
		return NULL;
	if (R == NULL || R->ring != ring)
		R = ring_lookup(ring);
	if (R == NULL)
		return NULL;
	if (R->cqes != ring->cq.cqes || R->sqes != ring->sq.sqes ||
	    R->cq_seen - __atomic_load_n(ring->cq.khead, __ATOMIC_ACQUIRE) > ring->cq.ring_entries) {
		pthread_mutex_lock(&rings_lock);
		ring_reset(R, ring);
		pthread_mutex_unlock(&rings_lock);
	}
	if (!thread_bound) {
		/* The first ring a thread uses labels the thread's record ring
		 * (readers' per-loop tables go by that label); records of its
		 * other rings name their own loop in pid.loop_id. */
		thread_bound = 1;
		xtc_tail_loop_bind(R->id);
	}
	last = R;
	return R;
}

/* ---------------------------------------------------------------------
 * Completions seen
 */

static inline const struct io_uring_cqe *cqe_at(const struct io_uring *ring, uint32_t i)
{
	unsigned shift = (ring->flags & IORING_SETUP_CQE32) ? 1 : 0;

	return &ring->cq.cqes[(i & ring->cq.ring_mask) << shift];
}

/* Emit a REAP for each CQE posted since the last look. */
static uint32_t reap_scan(struct xur_ring *R, const struct io_uring *ring)
{
	uint32_t tail = __atomic_load_n(ring->cq.ktail, __ATOMIC_ACQUIRE);
	uint32_t entries = ring->cq.ring_entries, from = R->cq_seen, after;

	if (tail == from)
		return 0;
	if (tail - from > entries) { /* overwritten before we looked */
		R->lost += tail - from - entries;
		adapt_log("libxtctail-uring: ring %u: %u completions were consumed and "
		          "overwritten between two liburing calls; not recorded", R->id,
		          tail - from - entries);
		from = tail - entries;
	}
	for (uint32_t i = from; i != tail; i++) {
		const struct io_uring_cqe *c = cqe_at(ring, i);

		xtc_tail_emit(XTC_TAIL_IO, XTC_TAIL_REAP,
		              ((xtc_pid_t){ R->id, (uint32_t)c->res, c->flags }), c->user_data);
	}
	/* A slot the kernel reused while we read it held a newer CQE: only
	 * the ones still within the ring behind the new tail are sure. */
	after = __atomic_load_n(ring->cq.ktail, __ATOMIC_ACQUIRE);
	if (after - from > entries) {
		R->lost += after - from - entries;
		adapt_log("libxtctail-uring: ring %u: %u completions may have been misread "
		          "while the kernel reused their slots", R->id, after - from - entries);
	}
	R->cq_seen = tail;
	return tail - from;
}

static inline uint32_t cq_ready(const struct io_uring *ring)
{
	return __atomic_load_n(ring->cq.ktail, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(ring->cq.khead, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------------
 * Submissions
 */

struct sub_snap {
	uint32_t khead, head, tail;   /* kernel's SQ head, liburing's sqe_head/tail */
	int      sqpoll;
};

static void sub_before(const struct io_uring *ring, struct sub_snap *sn)
{
	sn->khead = __atomic_load_n(ring->sq.khead, __ATOMIC_ACQUIRE);
	sn->head = ring->sq.sqe_head;
	sn->tail = ring->sq.sqe_tail;
	sn->sqpoll = (ring->flags & IORING_SETUP_SQPOLL) != 0;
}

static void emit_sqe(const struct xur_ring *R, const struct io_uring *ring, uint32_t i)
{
	unsigned shift = (ring->flags & IORING_SETUP_SQE128) ? 1 : 0;
	uint32_t idx = ring->sq.array != NULL ? ring->sq.array[i & ring->sq.ring_mask] : i;
	const struct io_uring_sqe *q;

	idx &= ring->sq.ring_mask;
	q = &ring->sq.sqes[idx << shift];
	xtc_tail_emit(XTC_TAIL_IO, XTC_TAIL_SUBMIT,
	              ((xtc_pid_t){ R->id, (uint32_t)q->opcode | (uint32_t)q->flags << 8,
	                            (uint64_t)(uint32_t)q->fd }), q->user_data);
}

/* After a call that submits: SUBMIT per SQE handed over, SUBMIT_FAIL for
 * a refusal or a short submit. */
static void sub_after(const struct xur_ring *R, const struct io_uring *ring,
                      const struct sub_snap *sn, int ret)
{
	uint32_t from, to, ready;

	if (sn->sqpoll) {
		/* The SQ thread consumes on its own time: what was published in
		 * this call (sqe_head moved) is what we can say was handed over. */
		from = sn->head;
		to = ring->sq.sqe_head;
		ready = 0;
	} else {
		from = sn->khead;
		to = __atomic_load_n(ring->sq.khead, __ATOMIC_ACQUIRE);
		ready = sn->tail - sn->khead;
	}
	if (to - from > ring->sq.ring_entries)
		to = from; /* not a ring we understand: say nothing rather than nonsense */
	for (uint32_t i = from; i != to; i++)
		emit_sqe(R, ring, i);
	if (ret < 0)
		xtc_tail_emit(XTC_TAIL_IO, XTC_TAIL_SUBMIT_FAIL, ((xtc_pid_t){ R->id, 0, 0 }),
		              (uint64_t)-(int64_t)ret);
	else if (!sn->sqpoll && to - from < ready)
		xtc_tail_emit(XTC_TAIL_IO, XTC_TAIL_SUBMIT_FAIL, ((xtc_pid_t){ R->id, 0, 0 }),
		              XTC_TAIL_SHORT_SUBMIT_BASE + (ready - (to - from)));
}

/* ---------------------------------------------------------------------
 * Waits
 */

/* Before a call that may block for wait_nr CQEs: LOOP_WAIT when none is
 * ready (so an idle ring is seen in its wait).  Returns the tick it began
 * at, or 0 when it will not block. */
static uint64_t wait_begin(const struct xur_ring *R, const struct io_uring *ring, unsigned wait_nr)
{
	if (wait_nr == 0 || cq_ready(ring) >= wait_nr)
		return 0;
	xtc_tail_emit(XTC_TAIL_IO, XTC_TAIL_LOOP_WAIT, ((xtc_pid_t){ R->id, 0, 0 }), wait_nr);
	return clock_now();
}

static void wait_end(const struct xur_ring *R, const struct io_uring *ring, uint64_t t0)
{
	if (t0 == 0)
		return;
	xtc_tail_emit(XTC_TAIL_IO, XTC_TAIL_LOOP_WAKE, ((xtc_pid_t){ R->id, cq_ready(ring), 0 }),
	              adapt_ns(clock_now() - t0));
}

/* ---------------------------------------------------------------------
 * The interposed functions
 */

/* The common shape: scan, note the SQ, maybe wait, call, account, scan. */
#define XUR_CALL(ring, submits, wait_nr, call)                   \
	do {                                                     \
		struct xur_ring *R = ring_get(ring);             \
		struct sub_snap sn;                              \
		uint64_t t0;                                     \
		int ret;                                         \
                                                                 \
		if (R == NULL)                                   \
			return call;                             \
		reap_scan(R, ring);                              \
		if (submits)                                     \
			sub_before(ring, &sn);                   \
		t0 = wait_begin(R, ring, wait_nr);               \
		ret = call;                                      \
		wait_end(R, ring, t0);                           \
		if (submits)                                     \
			sub_after(R, ring, &sn, ret);            \
		reap_scan(R, ring);                              \
		return ret;                                      \
	} while (0)

XUR_API int io_uring_submit(struct io_uring *ring)
{
	XUR_CALL(ring, 1, 0, real.submit(ring));
}

XUR_API int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	XUR_CALL(ring, 1, wait_nr, real.submit_and_wait(ring, wait_nr));
}

XUR_API int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                             unsigned wait_nr, struct __kernel_timespec *ts,
                                             sigset_t *sigmask)
{
	XUR_CALL(ring, 1, wait_nr, real.submit_and_wait_timeout(ring, cqe_ptr, wait_nr, ts, sigmask));
}

XUR_API int io_uring_submit_and_get_events(struct io_uring *ring)
{
	XUR_CALL(ring, 1, 0, real.submit_and_get_events(ring));
}

/* io_uring_wait_cqe, io_uring_wait_cqe_nr and io_uring_peek_cqe (when
 * nothing is ready) are inline wrappers of this one. */
XUR_API int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                               unsigned submit, unsigned wait_nr, sigset_t *sigmask)
{
	XUR_CALL(ring, submit != 0, wait_nr, real.get_cqe(ring, cqe_ptr, submit, wait_nr, sigmask));
}

/* Without IORING_FEAT_EXT_ARG and with a timeout, liburing submits a
 * timeout SQE of its own (user_data LIBURING_UDATA_TIMEOUT): it is
 * recorded like any other, and so is its CQE. */
XUR_API int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                               unsigned wait_nr, struct __kernel_timespec *ts, sigset_t *sigmask)
{
	XUR_CALL(ring, 1, wait_nr, real.wait_cqes(ring, cqe_ptr, wait_nr, ts, sigmask));
}

XUR_API int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                      struct __kernel_timespec *ts)
{
	XUR_CALL(ring, 1, 1, real.wait_cqe_timeout(ring, cqe_ptr, ts));
}

XUR_API unsigned io_uring_peek_batch_cqe(struct io_uring *ring, struct io_uring_cqe **cqes,
                                         unsigned count)
{
	struct xur_ring *R = ring_get(ring);
	unsigned n = real.peek_batch_cqe(ring, cqes, count);

	if (R != NULL)
		reap_scan(R, ring);
	return n;
}

XUR_API int io_uring_get_events(struct io_uring *ring)
{
	XUR_CALL(ring, 0, 0, real.get_events(ring));
}

/* ---------------------------------------------------------------------
 * Load
 */

static void *real_sym(const char *name, const char *version)
{
	void *p = dlvsym(RTLD_NEXT, name, version);

	if (p == NULL)
		p = dlsym(RTLD_NEXT, name);
	if (p == NULL)
		xur_off = 1;
	return p;
}

__attribute__((constructor)) static void xur_load(void)
{
	adapt_clock_setup();
	real.submit = real_sym("io_uring_submit", "LIBURING_2.0");
	real.submit_and_wait = real_sym("io_uring_submit_and_wait", "LIBURING_2.0");
	real.submit_and_wait_timeout = real_sym("io_uring_submit_and_wait_timeout", "LIBURING_2.2");
	real.submit_and_get_events = real_sym("io_uring_submit_and_get_events", "LIBURING_2.3");
	real.get_cqe = real_sym("__io_uring_get_cqe", "LIBURING_2.0");
	real.wait_cqes = real_sym("io_uring_wait_cqes", "LIBURING_2.0");
	real.wait_cqe_timeout = real_sym("io_uring_wait_cqe_timeout", "LIBURING_2.0");
	real.peek_batch_cqe = real_sym("io_uring_peek_batch_cqe", "LIBURING_2.0");
	real.get_events = real_sym("io_uring_get_events", "LIBURING_2.3");
	if (!adapt_env_flag("XTC_TAIL_URING", 1))
		xur_off = 1;
	if (real.submit == NULL)
		adapt_log("libxtctail-uring: no liburing 2.3 in this process after libxtctail-uring; "
		          "nothing to record (a program with its own static liburing is not seen)");
	else if (xur_off)
		adapt_log("libxtctail-uring: off (XTC_TAIL_URING=0, or this liburing lacks a "
		          "function it interposes)");
	else
		adapt_log("libxtctail-uring: recording liburing rings from loop %u on", XUR_LOOP_BASE);
}
