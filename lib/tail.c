/*
 * lib/tail.c - the in-process recorder: segment, rings, hot path, reads.
 *
 * One memfd segment per process holds N single-producer rings.  A thread
 * becomes the producer of a ring by binding a loop (xtc_tail_loop_bind) or,
 * lazily, on its first emit.  The hot path touches only the thread's own
 * ring: no lock, no allocation, no system call (but the rare nudge).
 *
 * Who writes what:
 *   head, dropped, claim   the ring's producer thread
 *   tail, evicted, nudge   the attached consumer (xtcd); nobody else
 *   descriptor             this library, under tail_st.lock
 * so resets and in-process reads never move `tail`; they keep a private
 * floor per ring instead.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "lib/common/logline.h"
#include "tail_int.h"

#undef xtc_tail_emit

XTC_API unsigned xtc_tail_mask_;

struct tail_state tail_st = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.memfd = -1,
	.mode = XTC_SHM_MODE_OVERWRITE,
	.nudge_fd = -1,
};

/* The calling thread's ring.  initial-exec: no __tls_get_addr call on the
 * hot path. */
struct tls_ring {
	struct xtc_shm_ring *ring;
	uint32_t index;
	uint64_t mask;        /* capacity - 1 */
	uint64_t nudge_mask;  /* check the fill level every capacity/16 records */
	uint64_t cached_tail; /* last tail seen; reloaded only when it says full */
	uint64_t failed_gen;  /* release_gen + 1 when no ring was free */
	uint64_t stall_tail;  /* tail + 1 when a wait for room last timed out */
};
static __thread struct tls_ring tls __attribute__((tls_model("initial-exec")));

static pthread_key_t ring_key;
static pthread_once_t ring_key_once = PTHREAD_ONCE_INIT;

void tail_log(int always, const char *fmt, ...)
{
	static int debug = -1;
	va_list ap;

	if (!always) {
		if (debug < 0)
			debug = getenv("XTC_DEBUG") != NULL;
		if (!debug)
			return;
	}
	va_start(ap, fmt);
	logline_v(fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------------
 * Configuration
 */

/* Parse a positive decimal u32 environment variable.  Returns 0 when
 * unset, 1 with *out set when valid, -1 (after one line on stderr: the
 * operator asked for something we cannot do) when not. */
static int env_u32(const char *name, uint32_t min, uint32_t max, int pow2, uint32_t *out)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (s == NULL || *s == '\0')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max || (pow2 && (v & (v - 1)) != 0)) {
		tail_log(1, "%s=%s is not valid: use a whole number from %u to %u%s; "
		         "using the default", name, s, min, max, pow2 ? " that is a power of two" : "");
		return -1;
	}
	*out = (uint32_t)v;
	return 1;
}

/* XTC_TAIL_CLOCK is "mono" or "tsc" (the default); anything else is one
 * line, and the default. */
static void env_clock_check(void)
{
	const char *s = getenv("XTC_TAIL_CLOCK");

	if (s != NULL && *s != '\0' && strcmp(s, "mono") != 0 && strcmp(s, "tsc") != 0)
		tail_log(1, "XTC_TAIL_CLOCK=%s is not valid: use mono or tsc; using the default, "
		         "tsc where the CPU has an invariant one", s);
}

static int valid_records(uint32_t n)
{
	return n >= XTC_SHM_MIN_RING_CAPACITY && n <= XTC_SHM_MAX_RING_CAPACITY && (n & (n - 1)) == 0;
}

XTC_API int xtc_tail_configure(uint32_t rings, uint32_t ring_records)
{
	int ret = XTC_OK;

	if ((rings != 0 && rings > XTC_SHM_MAX_RINGS) || (ring_records != 0 && !valid_records(ring_records)))
		return -EINVAL;
	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.hdr != NULL && !tail_st.forked) {
		ret = -EBUSY;
	} else {
		if (rings != 0)
			tail_st.want_rings = rings;
		if (ring_records != 0)
			tail_st.want_records = ring_records;
	}
	pthread_mutex_unlock(&tail_st.lock);
	return ret;
}

/* Rings and records for a new segment: API, then environment, then
 * defaults. */
static void segment_geometry(uint32_t *rings, uint32_t *records)
{
	*rings = TAIL_DEFAULT_RINGS;
	*records = TAIL_DEFAULT_RECORDS;
	if (tail_st.want_rings != 0)
		*rings = tail_st.want_rings;
	else
		env_u32("XTC_TAIL_RINGS", 1, XTC_SHM_MAX_RINGS, 0, rings);
	if (tail_st.want_records != 0)
		*records = tail_st.want_records;
	else
		env_u32("XTC_TAIL_RING_RECORDS", XTC_SHM_MIN_RING_CAPACITY,
		        XTC_SHM_MAX_RING_CAPACITY, 1, records);
}

/* ---------------------------------------------------------------------
 * The segment
 */

/* Fill a fresh segment header. */
static void header_init(struct xtc_shm_hdr *h, uint32_t rings, uint32_t records, uint64_t size)
{
	struct clock_anchor a;

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
	h->mode = tail_st.mode;
	prctl(PR_GET_NAME, h->comm, 0, 0, 0);
	clock_boot_id(h->boot_id);
	h->ts_unit = clock_unit();
	h->ts_hz = clock_hz();
	clock_anchor_take(&a);
	h->anchor_ts = a.ts;
	h->anchor_mono_ns = a.mono_ns;
	h->anchor_real_ns = a.real_ns;
	h->producer_state = XTC_SHM_PRODUCER_ACTIVE;
}

/* Create, size, map, fill and seal the segment.  Called with the lock. */
static int segment_create_locked(void)
{
	uint32_t rings, records;
	uint64_t size;
	void *map;
	int fd, err;

	env_clock_check();
	clock_setup();
	segment_geometry(&rings, &records);
	env_u32("XTC_TAIL_BLOCKING_TIMEOUT_US", 0, 10000000, 0, &tail_st.block_us);
	size = xtc_shm_segment_size(rings, records);
	fd = memfd_create("xtc-tail", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail;
	tail_st.priv = calloc(rings, sizeof *tail_st.priv);
	if (tail_st.priv == NULL) {
		munmap(map, size);
		errno = ENOMEM;
		goto fail;
	}
	header_init(map, rings, records, size);
	for (uint32_t i = 0; i < rings; i++) /* no ring is loop 0 until bound so */
		((struct xtc_shm_ring *)((char *)map + XTC_SHM_HDR_SIZE +
		                         (uint64_t)i * xtc_shm_ring_stride(records)))->loop_id =
			XTC_TAIL_LOOP_NONE;
	/* A consumer maps this size: it must never shrink under it. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		free(tail_st.priv);
		tail_st.priv = NULL;
		munmap(map, size);
		goto fail;
	}
	tail_st.hdr = map;
	tail_st.memfd = fd;
	tail_st.size = size;
	tail_st.rings = rings;
	tail_st.capacity = records;
	tail_log(0, "segment: %u rings x %u records, %llu bytes, clock %s",
	         rings, records, (unsigned long long)size, clock_use_tsc ? "tsc" : "monotonic");
	return 0;
fail:
	err = -errno;
	close(fd);
	tail_log(0, "cannot create the shared-memory segment: %s", strerror(-err));
	return err;
}

/* In a forked child: let go of the parent's segment and, if recording was
 * on, start a fresh one of our own.  Called with the lock. */
static void fork_refresh_locked(void)
{
	int old_nudge = tail_st.nudge_fd;

	tail_st.forked = 0;
	tail_st.nudge_fd = -1;
	tail_st.base_no_ring = 0;
	if (old_nudge >= 0)
		close(old_nudge);
	if (tail_st.hdr != NULL) {
		munmap(tail_st.hdr, tail_st.size);
		close(tail_st.memfd);
		free(tail_st.priv);
		tail_st.hdr = NULL;
		tail_st.priv = NULL;
		tail_st.memfd = -1;
	}
	if (xtc_tail_mask_ != 0 && segment_create_locked() < 0)
		__atomic_store_n(&xtc_tail_mask_, 0, __ATOMIC_RELAXED);
	if (tail_st.hdr != NULL)
		attach_resume_in_child();
}

/* ---------------------------------------------------------------------
 * Ring ownership
 */

static void ring_release_cb(void *arg);

static void ring_key_create(void)
{
	pthread_key_create(&ring_key, ring_release_cb);
}

/* Make ring i the calling thread's, for loop_id.  Called with the lock. */
static struct xtc_shm_ring *ring_bind_locked(uint32_t i, uint32_t loop_id)
{
	struct xtc_shm_ring *r = tail_ring(i);

	r->loop_id = loop_id;
	r->tid = (uint32_t)syscall(SYS_gettid);
	r->bind_seq++;
	__atomic_store_n(&r->state, XTC_SHM_RING_BOUND, __ATOMIC_RELEASE);
	tail_st.priv[i].owned = 1;
	tls.ring = r;
	tls.index = i;
	tls.mask = tail_st.capacity - 1;
	tls.nudge_mask = tail_st.capacity >= 16 ? tail_st.capacity / 16 - 1 : 0;
	tls.cached_tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	pthread_once(&ring_key_once, ring_key_create);
	pthread_setspecific(ring_key, (void *)(uintptr_t)(i + 1));
	return r;
}

/* Fault the ring's pages in now, at bind time, rather than one fault per
 * ~100 records on the first pass (about 10 us each on a VM). */
static void ring_prefault(struct xtc_shm_ring *r)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = (uintptr_t)r & ~(page - 1);
	uintptr_t to = (uintptr_t)r + xtc_shm_ring_stride(tail_st.capacity);

	madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#else
	(void)r;
#endif
}

/* Tell an attached xtcd that a ring was just bound, so that it faults the
 * ring's pages into its own mapping before the records come. */
static void ring_nudge_bound(void)
{
	int fd = __atomic_load_n(&tail_st.nudge_fd, __ATOMIC_ACQUIRE);
	uint64_t one = 1;

	if (fd >= 0 && write(fd, &one, sizeof one) < 0) {
		/* the daemon went away; the next attach brings a new one */
	}
}

/* Give ring i back (its records stay for readers).  Called with the lock. */
static void ring_release_locked(uint32_t i)
{
	struct xtc_shm_ring *r = tail_ring(i);

	__atomic_store_n(&r->state, XTC_SHM_RING_FREE, __ATOMIC_RELEASE);
	tail_st.priv[i].owned = 0;
	__atomic_add_fetch(&tail_st.release_gen, 1, __ATOMIC_RELAXED);
}

/* Thread exit: release the thread's ring for reuse. */
static void ring_release_cb(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg - 1;

	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.hdr != NULL && !tail_st.forked && i < tail_st.rings && tls.ring == tail_ring(i))
		ring_release_locked(i);
	tls.ring = NULL;
	pthread_mutex_unlock(&tail_st.lock);
}

/* Index of the ring labelled loop_id, or -1. */
static int ring_find_loop_locked(uint32_t loop_id)
{
	for (uint32_t i = 0; i < tail_st.rings; i++)
		if (tail_ring(i)->loop_id == loop_id && tail_ring(i)->bind_seq != 0)
			return (int)i;
	return -1;
}

/* A ring nobody produces into: unlabelled or never used first, so a
 * loop's ring waits for its loop to come back.  -1 when all are taken. */
static int ring_pick_free_locked(void)
{
	int relabel = -1;

	for (uint32_t i = 0; i < tail_st.rings; i++) {
		struct xtc_shm_ring *r = tail_ring(i);

		if (tail_st.priv[i].owned)
			continue;
		if (r->bind_seq == 0 || r->loop_id == XTC_TAIL_LOOP_NONE)
			return (int)i;
		if (relabel < 0)
			relabel = (int)i;
	}
	return relabel;
}

/* Slow path of the first emit on a thread: find it a ring. */
static struct xtc_shm_ring *ring_for_thread(void)
{
	struct xtc_shm_ring *r = NULL;
	int i;

	if (tls.failed_gen == __atomic_load_n(&tail_st.release_gen, __ATOMIC_RELAXED) + 1 &&
	    tail_st.hdr != NULL && !tail_st.forked) {
		__atomic_add_fetch(&tail_st.hdr->no_ring_count, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.forked)
		fork_refresh_locked();
	if (tail_st.hdr == NULL)
		goto out;
	i = ring_pick_free_locked();
	if (i < 0) {
		tls.failed_gen = tail_st.release_gen + 1;
		__atomic_add_fetch(&tail_st.hdr->no_ring_count, 1, __ATOMIC_RELAXED);
		goto out;
	}
	r = ring_bind_locked((uint32_t)i, XTC_TAIL_LOOP_NONE);
out:
	pthread_mutex_unlock(&tail_st.lock);
	return r;
}

XTC_API int xtc_tail_loop_bind(uint32_t loop_id)
{
	int i, ret = XTC_OK;

	if (loop_id == XTC_TAIL_LOOP_NONE)
		return -EINVAL;
	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.forked)
		fork_refresh_locked();
	if (tail_st.hdr == NULL) {
		ret = -ENODEV;
		goto out;
	}
	if (tls.ring != NULL && tls.ring->loop_id == loop_id)
		goto out;
	i = ring_find_loop_locked(loop_id);
	if (i >= 0 && tail_st.priv[i].owned) {
		ret = -EBUSY;
		goto out;
	}
	if (i < 0 && tls.ring != NULL && tls.ring->loop_id == XTC_TAIL_LOOP_NONE)
		i = (int)tls.index; /* label the thread's own ring */
	if (i < 0)
		i = ring_pick_free_locked();
	if (i < 0) {
		ret = -ENOSPC;
		goto out;
	}
	if (tls.ring != NULL && tls.index != (uint32_t)i)
		ring_release_locked(tls.index);
	ring_bind_locked((uint32_t)i, loop_id);
	ring_prefault(tls.ring);
	ring_nudge_bound();
out:
	pthread_mutex_unlock(&tail_st.lock);
	return ret;
}

/* ---------------------------------------------------------------------
 * The hot path
 */

static void ring_nudge_now(struct xtc_shm_ring *r);

/*
 * The opt-in lossless mode (XTC_TAIL_BLOCKING_TIMEOUT_US, like LTTng's
 * --blocking-timeout): a full ring makes the emitting thread wait up to
 * that long for xtcd to free room, instead of dropping the record.  The
 * trade-off is the caller's latency: an emit may then take as long as the
 * timeout.  Only in drop-new mode, that is attached or attaching (a
 * flight recorder overwrites instead), and once a wait has timed out the
 * thread waits no more until xtcd moves the tail again, so a daemon that
 * is slow to accept or stopped draining costs one timeout, not one per
 * emit.  Spins briefly (room comes in whole written blocks), then sleeps
 * in short steps so that a daemon sharing the CPU gets to run.  Returns 1
 * when there is room.
 */
static int ring_wait_room(struct xtc_shm_ring *r, uint64_t head, uint64_t tail)
{
	uint64_t deadline = 0;

	if (tail_st.block_us == 0 || tls.stall_tail == tail + 1)
		return 0;
	ring_nudge_now(r);
	for (unsigned spin = 0;; spin++) {
		tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (head - tail <= tls.mask) {
			tls.cached_tail = tail;
			tls.stall_tail = 0;
			return 1;
		}
		if (spin < 256) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
			continue;
		}
		if (deadline == 0) {
			deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)tail_st.block_us * 1000u;
		} else if (clock_ns(CLOCK_MONOTONIC) >= deadline) {
			tls.stall_tail = tail + 1;
			tls.cached_tail = tail;
			return 0;
		}
		{
			struct timespec ts = { 0, 10000 };

			nanosleep(&ts, NULL);
		}
	}
}

/* The ring looked full against the cached tail.  Returns 1 to write the
 * record, 0 to drop it. */
static int ring_make_room(struct xtc_shm_ring *r, uint64_t head)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	tls.cached_tail = tail;
	if (head - tail <= tls.mask)
		return 1;
	if (__atomic_load_n(&tail_st.hdr->mode, __ATOMIC_RELAXED) == XTC_SHM_MODE_OVERWRITE)
		return 1; /* flight recorder: readers count what this evicts */
	if (ring_wait_room(r, head, tail))
		return 1;
	__atomic_store_n(&r->dropped, r->dropped + 1, __ATOMIC_RELAXED);
	return 0;
}

/* Every capacity/16 records: if the ring is a quarter full and the
 * consumer armed its nudge, wake it.  One write(2) per drain at most.
 * A quarter, checked often, so that the drain starts with three quarters
 * of the ring still free: the first drains of a session run cold and
 * slow, and a producer at millions of events/s fills the rest meanwhile. */
static void ring_maybe_nudge(struct xtc_shm_ring *r, uint64_t head)
{
	if (__atomic_load_n(&tail_st.nudge_fd, __ATOMIC_ACQUIRE) < 0)
		return;
	tls.cached_tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	if (head - tls.cached_tail < (tls.mask + 1) / 4)
		return;
	ring_nudge_now(r);
}

/* Wake the daemon if it armed the nudge (it has not since its last
 * drain otherwise: that drain will see the ring as it is). */
static void ring_nudge_now(struct xtc_shm_ring *r)
{
	int fd = __atomic_load_n(&tail_st.nudge_fd, __ATOMIC_ACQUIRE);
	uint64_t one = 1;

	if (fd < 0 || !__atomic_exchange_n(&r->nudge_armed, 0, __ATOMIC_ACQ_REL))
		return;
	if (write(fd, &one, sizeof one) < 0) {
		/* the daemon went away; the next attach brings a new one */
	}
}

XTC_API void xtc_tail_emit(uint32_t source, uint32_t kind, xtc_pid_t pid, uint64_t detail)
{
	struct xtc_shm_ring *r;
	struct xtc_shm_rec *rec;
	uint64_t head;

	if (!(__atomic_load_n(&xtc_tail_mask_, __ATOMIC_RELAXED) & source))
		return;
	r = tls.ring;
	if (__builtin_expect(r == NULL, 0) && (r = ring_for_thread()) == NULL)
		return;
	head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	if (__builtin_expect(head - tls.cached_tail > tls.mask, 0) && !ring_make_room(r, head))
		return;
	/* Announce the slot before touching it, so a reader racing a wrap
	 * can tell a torn copy (see proto/xtc_shm.h, claim). */
	__atomic_store_n(&r->claim, head + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rec = &r->recs[head & tls.mask];
	rec->ts = clock_now();
	rec->source = source;
	rec->kind = kind;
	rec->loop_id = pid.loop_id;
	rec->local_id = pid.local_id;
	rec->gen = pid.gen;
	rec->detail = detail;
	__atomic_store_n(&r->head, head + 1, __ATOMIC_RELEASE);
	if (__builtin_expect(((head + 1) & tls.nudge_mask) == 0, 0))
		ring_maybe_nudge(r, head + 1);
}

/* ---------------------------------------------------------------------
 * Enable, reset, counts
 */

XTC_API unsigned xtc_tail_enable(unsigned source_mask)
{
	unsigned prev;

	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.forked)
		fork_refresh_locked();
	prev = __atomic_load_n(&xtc_tail_mask_, __ATOMIC_RELAXED);
	if (source_mask != 0 && tail_st.hdr == NULL && segment_create_locked() < 0)
		source_mask = 0; /* nowhere to record: stay off */
	__atomic_store_n(&xtc_tail_mask_, source_mask, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&tail_st.lock);
	return prev;
}

XTC_API void xtc_tail_disable(void)
{
	xtc_tail_enable(0);
}

/* Parse an XTC_TAIL_ENABLE value.  Returns 0 and the mask, or -EINVAL. */
static int parse_sources(const char *s, unsigned *mask)
{
	static const struct { const char *name; unsigned bits; } names[] = {
		{ "1", XTC_TAIL_SCHED }, { "sched", XTC_TAIL_SCHED }, { "msg", XTC_TAIL_MSG },
		{ "io", XTC_TAIL_IO }, { "os", XTC_TAIL_OS }, { "all", XTC_TAIL_ALL },
		{ "0", 0 }, { "off", 0 }, { "none", 0 },
	};
	char buf[128], *save = NULL, *tok;

	if (strlen(s) >= sizeof buf)
		return -EINVAL;
	strcpy(buf, s);
	*mask = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof names / sizeof names[0]; i++)
			if (strcasecmp(tok, names[i].name) == 0)
				break;
		if (i == sizeof names / sizeof names[0])
			return -EINVAL;
		*mask |= names[i].bits;
	}
	return 0;
}

/* XTC_TAIL_ENABLE as a mask; `dflt` when unset; -1 (after a line on
 * stderr) when it names something unknown. */
static long env_sources(unsigned dflt)
{
	const char *s = getenv("XTC_TAIL_ENABLE");
	unsigned mask;

	if (s == NULL)
		return dflt;
	if (parse_sources(s, &mask) < 0) {
		tail_log(1, "XTC_TAIL_ENABLE=%s is not valid: use 1, all, sched, msg, io, os, "
		         "a comma-separated list of them, or 0; recording is left as it was", s);
		return -1;
	}
	return mask;
}

XTC_API unsigned xtc_tail_from_env(void)
{
	long mask = getenv("XTC_TAIL_ENABLE") != NULL ? env_sources(0) : -1;

	if (mask >= 0)
		xtc_tail_enable((unsigned)mask);
	return __atomic_load_n(&xtc_tail_mask_, __ATOMIC_RELAXED);
}

/* The readable window of ring i: [*lo, head). */
static uint64_t ring_window(uint32_t i, uint64_t *lo)
{
	struct xtc_shm_ring *r = tail_ring(i);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint64_t from = tail > tail_st.priv[i].floor ? tail : tail_st.priv[i].floor;

	if (from > head)
		from = head;
	if (head - from > tail_st.capacity)
		from = head - tail_st.capacity;
	*lo = from;
	return head;
}

XTC_API int xtc_tail_reset(void)
{
	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.forked)
		fork_refresh_locked();
	for (uint32_t i = 0; tail_st.hdr != NULL && i < tail_st.rings; i++) {
		struct xtc_shm_ring *r = tail_ring(i);

		tail_st.priv[i].floor = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		tail_st.priv[i].base_dropped = __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
		tail_st.priv[i].base_evicted = __atomic_load_n(&r->evicted, __ATOMIC_RELAXED);
	}
	if (tail_st.hdr != NULL)
		tail_st.base_no_ring = __atomic_load_n(&tail_st.hdr->no_ring_count, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&tail_st.lock);
	return XTC_OK;
}

XTC_API size_t xtc_tail_count(void)
{
	size_t n = 0;
	uint64_t lo;

	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.forked)
		fork_refresh_locked();
	for (uint32_t i = 0; tail_st.hdr != NULL && i < tail_st.rings; i++)
		n += ring_window(i, &lo) - lo;
	pthread_mutex_unlock(&tail_st.lock);
	return n;
}

XTC_API uint64_t xtc_tail_dropped(void)
{
	uint64_t n = 0;

	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.forked)
		fork_refresh_locked();
	for (uint32_t i = 0; tail_st.hdr != NULL && i < tail_st.rings; i++) {
		struct xtc_shm_ring *r = tail_ring(i);
		struct ring_priv *p = &tail_st.priv[i];
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		uint64_t from = tail > p->floor ? tail : p->floor;

		n += __atomic_load_n(&r->dropped, __ATOMIC_RELAXED) - p->base_dropped;
		n += __atomic_load_n(&r->evicted, __ATOMIC_RELAXED) - p->base_evicted;
		if (head > from + tail_st.capacity)
			n += head - from - tail_st.capacity; /* overwritten in place */
	}
	if (tail_st.hdr != NULL) /* emits from threads that found no free ring */
		n += __atomic_load_n(&tail_st.hdr->no_ring_count, __ATOMIC_RELAXED) - tail_st.base_no_ring;
	pthread_mutex_unlock(&tail_st.lock);
	return n;
}

/* ---------------------------------------------------------------------
 * Reading back
 */

struct snap_rec {
	xtc_tail_rec_t rec;
	uint32_t ring;
	uint64_t index;
};

/* Copy ring i's readable records to out (room for capacity), dropping any
 * the producer overwrote while we copied.  Returns how many were kept. */
static size_t ring_copy(uint32_t i, struct snap_rec *out, const struct clock_conv *conv)
{
	struct xtc_shm_ring *r = tail_ring(i);
	uint64_t lo, head = ring_window(i, &lo), claim, keep_from;
	uint64_t cap = tail_st.capacity;
	size_t n = 0;

	for (uint64_t k = lo; k < head; k++) {
		const struct xtc_shm_rec *s = &r->recs[k & (cap - 1)];
		struct snap_rec *d = &out[k - lo];

		d->rec.ts_ns = s->ts;
		d->rec.source = s->source;
		d->rec.kind = s->kind;
		d->rec.pid.loop_id = s->loop_id;
		d->rec.pid.local_id = s->local_id;
		d->rec.pid.gen = s->gen;
		d->rec.detail = s->detail;
		d->ring = i;
		d->index = k;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	claim = __atomic_load_n(&r->claim, __ATOMIC_RELAXED);
	keep_from = claim > lo + cap ? claim - cap : lo;
	for (uint64_t k = keep_from; k < head; k++) {
		out[n] = out[k - lo];
		out[n].rec.ts_ns = clock_conv_ns(conv, out[n].rec.ts_ns);
		n++;
	}
	return n;
}

static int snap_cmp(const void *a, const void *b)
{
	const struct snap_rec *x = a, *y = b;

	if (x->rec.ts_ns != y->rec.ts_ns)
		return x->rec.ts_ns < y->rec.ts_ns ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* A time-ordered copy of every buffered record.  Called with the lock. */
static int snapshot_locked(struct snap_rec **out, size_t *count)
{
	const struct xtc_shm_hdr *h = tail_st.hdr;
	struct clock_conv conv;
	struct snap_rec *all;
	size_t n = 0, total = 0;
	uint64_t lo;

	*out = NULL;
	*count = 0;
	if (tail_st.hdr == NULL)
		return 0;
	for (uint32_t i = 0; i < tail_st.rings; i++)
		total += ring_window(i, &lo) - lo;
	/* Room for one more ring's worth: producers keep writing meanwhile. */
	all = malloc((total + tail_st.capacity) * sizeof *all);
	if (all == NULL)
		return -ENOMEM;
	/* From the header alone, never from a fresh anchor: a record reads
	 * the same now, later, and in xtcd (see clock_conv). */
	clock_conv_init(&conv, h->ts_unit, h->ts_hz, h->anchor_ts, h->anchor_mono_ns);
	for (uint32_t i = 0; i < tail_st.rings; i++) {
		struct snap_rec *tmp;
		size_t got;

		if (ring_window(i, &lo) == lo)
			continue;
		tmp = malloc(tail_st.capacity * sizeof *tmp);
		if (tmp == NULL) {
			free(all);
			return -ENOMEM;
		}
		got = ring_copy(i, tmp, &conv);
		if (n + got > total + tail_st.capacity)
			got = total + tail_st.capacity - n;
		memcpy(all + n, tmp, got * sizeof *tmp);
		n += got;
		free(tmp);
	}
	qsort(all, n, sizeof *all, snap_cmp);
	*out = all;
	*count = n;
	return 0;
}

XTC_API int xtc_tail_read(xtc_tail_fn cb, void *user)
{
	struct snap_rec *all;
	size_t n, i;
	int ret;

	if (cb == NULL)
		return -EINVAL;
	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.forked)
		fork_refresh_locked();
	ret = snapshot_locked(&all, &n);
	pthread_mutex_unlock(&tail_st.lock);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++)
		if (cb(&all[i].rec, user) != 0) {
			i++;
			break;
		}
	free(all);
	return i > INT_MAX ? INT_MAX : (int)i;
}

/* ---------------------------------------------------------------------
 * Process lifecycle
 */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&tail_st.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&tail_st.lock);
}

/* The child must never write into the parent's rings: forget this
 * thread's ring and mark the segment as the parent's.  The next call
 * that needs a segment makes a new one. */
static void atfork_child(void)
{
	pthread_mutex_init(&tail_st.lock, NULL);
	if (tail_st.hdr != NULL)
		tail_st.forked = 1;
	tls.ring = NULL;
	tls.failed_gen = 0;
	attach_forget_in_child();
}

__attribute__((constructor)) static void tail_load(void)
{
	const char *shm = getenv("XTC_TAIL_SHM");
	long mask;

	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (shm == NULL || *shm == '\0' || strcmp(shm, "0") == 0)
		return;
	mask = env_sources(XTC_TAIL_ALL);
	if (mask <= 0)
		return;
	tail_st.mode = XTC_SHM_MODE_DROP_NEW;
	xtc_tail_enable((unsigned)mask);
	attach_start(shm, 1);
}

__attribute__((destructor)) static void tail_unload(void)
{
	attach_stop(0);
}
