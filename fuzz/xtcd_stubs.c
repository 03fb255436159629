/*
 * fuzz/xtcd_stubs.c - main.c's and store.c's part for xtcd/session.c
 * under fuzz/fuzz_shm.c (see xtcd_stubs.h).
 *
 * The fake store packs blocks as the real one does and, like it, builds
 * each block 8-byte aligned and moves it down into its packed place at
 * store_block_end(); it writes nothing, and checks what it gets: the block's own layout, every
 * EVENTS body decoding to exactly its records and those records being
 * the ring slots they claim to be, no ring index delivered twice, and at
 * SESSION_END the accounting identity produced == written + dropped + lost
 * with written equal to what the store reported written and dropped equal
 * to the DROP blocks' counts (even when buffers ran out).  Writes are
 * "completed" at store_flush(), successfully unless the harness says
 * otherwise.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <sanitizer/asan_interface.h>

#include "lib/seg/seg.h"
#include "xtcd/xtcd.h"
#include "xtcd_stubs.h"

#define PAGE       4096u
#define ARENA      (2u << 20)
#define BLOCK_MAX  ((1u << 20) - 64)   /* what one 1 MiB write buffer takes */

struct config cfg = { .drain_ms = 10, .hello_timeout_ms = 1000, .max_clients = 16 };
struct ev_loop *xtcd_loop;
struct fake_store fake;
int fence_fd = -1;

static uint8_t *arena;          /* blocks are built here */
static size_t arena_pos;        /* where the real store's buffer would be */
static size_t built;            /* where the block begun is built */
static struct commit *commits;
static size_t ncommits, commit_cap;
static uint64_t session_ids = 1;

/* ---- worker.c: no thread here; the drains fault pages in themselves ---- */

void worker_touch(struct worker_touch *t, const void *p, size_t size, size_t from, size_t len)
{
	(void)t; (void)p; (void)size; (void)from; (void)len;
}

void worker_untouch(struct worker_touch *t)
{
	(void)t;
}

/* ---- main.c ---- */

/* The real log (log.c), silent unless FUZZ_XLOG is set. */
__attribute__((constructor)) static void quiet_log(void)
{
	if (!getenv("FUZZ_XLOG"))
		xlog_set_level(XLOG_NONE);
}

/* A SESSION_START carries these settings. */
const char *settings_text(void)
{
	return "dir=/fuzz\nsocket=/fuzz.sock\n";
}

/* ---- store.c ---- */

/* Session ids, never reused. */
uint64_t store_next_session_id(void)
{
	return session_ids++;
}

/* Forget one input's blocks and counts (the starve setting stays). */
void fake_store_reset(void)
{
	unsigned starve = fake.starve;

	memset(&fake, 0, sizeof fake);
	fake.starve = starve;
	ncommits = 0;
	arena_pos = 0;
}

/* Room for a block, built 8-byte aligned as store.c builds it; NULL
 * while the harness starves the store. */
void *store_block_begin(uint32_t len)
{
	if (!arena && !(arena = aligned_alloc(PAGE, ARENA)))
		abort();
	if (len > BLOCK_MAX)
		return NULL;
	if (fake.starve && !fake.no_starve) {
		fake.starve--;
		return NULL;
	}
	if (arena_pos + sizeof(struct xtc_seg_blk_hdr) + len + 7 > ARENA)
		arena_pos = arena_pos % 8; /* a new buffer: keep the misalignment */
	built = (arena_pos + 7) & ~(size_t)7;
	return arena + built + sizeof(struct xtc_seg_blk_hdr);
}

/* Room for a block built in its packed place, at any alignment, as
 * store.c's store_block_begin_bytes() gives it. */
uint8_t *store_block_begin_bytes(uint32_t len)
{
	if (store_block_begin(len) == NULL)
		return NULL;
	built = arena_pos;
	return arena + built + sizeof(struct xtc_seg_blk_hdr);
}

/* The slot that holds ring index idx of ring `ring`. */
static const struct xtc_shm_rec *slot(uint32_t ring, uint64_t idx)
{
	const struct xtc_shm_hdr *g = &fake.geo;

	return (const struct xtc_shm_rec *)(const void *)(fake.map + g->ring_offset +
	        ring * g->ring_stride + XTC_SHM_RING_HDR_SIZE +
	        (idx & (g->ring_capacity - 1)) * XTC_SHM_REC_SIZE);
}

/* An EVENTS block: layout, its commit, every record, no index twice. */
static void check_events(const uint8_t *p, uint32_t len, const struct commit *c)
{
	struct xtc_seg_events e;
	struct seg_codec codec;
	const uint8_t *q, *end;

	if (len < sizeof e)
		abort();
	memcpy(&e, p, sizeof e);
	if (len != sizeof e + (uint64_t)e.body_len || e.count == 0 || e.ring >= fake.geo.ring_count)
		abort();
	if (!c || c->ring != e.ring || c->records != e.count || c->index != e.first_index + e.count)
		abort();
	if (e.first_index < fake.next_index[e.ring])
		abort(); /* a record delivered twice */
	fake.next_index[e.ring] = e.first_index + e.count;
	fake.encoded += e.count;
	q = p + sizeof e;
	end = q + e.body_len;
	seg_codec_begin(&codec, e.loop_id, e.first_ts_ns);
	for (uint32_t k = 0; k < e.count; k++) {
		const struct xtc_shm_rec *src = slot(e.ring, e.first_index + k);
		xtc_tail_rec_t r;
		size_t n = seg_decode_rec(&codec, q, end, &r);

		if (n == 0)
			abort();
		q += n;
		if (r.source != src->source || r.kind != src->kind || r.pid.loop_id != src->loop_id ||
		    r.pid.local_id != src->local_id || r.pid.gen != src->gen ||
		    r.detail != src->detail || (fake.ts_is_ns && r.ts_ns != src->ts))
			abort();
	}
	if (q != end)
		abort();
}

/* A SESSION_END: the identity, and what the store itself counted. */
static void check_end(const uint8_t *p, uint32_t len)
{
	struct xtc_seg_session_end e;

	if (len != sizeof e)
		abort();
	memcpy(&e, p, sizeof e);
	if (e.produced != e.written + e.dropped + e.lost) {
		fprintf(stderr, "fuzz_shm: accounting: produced %llu != written %llu + dropped %llu"
		        " + lost %llu\n", (unsigned long long)e.produced,
		        (unsigned long long)e.written, (unsigned long long)e.dropped,
		        (unsigned long long)e.lost);
		abort();
	}
	if (e.written != fake.ok_records || fake.ok_records + fake.failed_records != fake.encoded ||
	    e.lost < fake.failed_records)
		abort();
	if (e.dropped != fake.drop_sum)
		abort(); /* a loss counted but not placed in the stream */
	if (e.reason < XTC_END_DETACHED || e.reason > XTC_END_IO_ERROR)
		abort();
	if (e.complete && (e.reason != XTC_END_DETACHED || e.dropped || e.lost))
		abort();
	fake.ended++;
}

/* Move the block into its packed place, check it, keep its commit. */
void store_block_end(uint16_t type, uint16_t flags, uint32_t len, const struct commit *c)
{
	const uint8_t *p = arena + arena_pos + sizeof(struct xtc_seg_blk_hdr);
	struct xtc_seg_drop d;
	struct xtc_seg_corrupt x;

	(void)flags;
	memmove(arena + arena_pos, arena + built, sizeof(struct xtc_seg_blk_hdr) + len);
	switch (type) {
	case XTC_BLK_SESSION_START:
		if (len != sizeof(struct xtc_seg_session_start) + strlen(settings_text()))
			abort();
		break;
	case XTC_BLK_EVENTS:
		check_events(p, len, c);
		break;
	case XTC_BLK_DROP:
		memcpy(&d, p, sizeof d);
		if (len != sizeof d || d.count == 0 ||
		    !((d.cause == 4 && d.ring == UINT32_MAX) ||
		      ((d.cause == 1 || d.cause == 2 || d.cause == 5) && d.ring < fake.geo.ring_count)))
			abort();
		/* a quota DROP stands for an EVENTS block: it carries its tail */
		if ((d.cause == 5) != (c != NULL) || (c && (c->ring != d.ring || c->records != 0)))
			abort();
		fake.drop_sum += d.count;
		break;
	case XTC_BLK_SESSION_END:
		check_end(p, len);
		break;
	case XTC_BLK_CORRUPT:
		memcpy(&x, p, sizeof x);
		if (len != sizeof x || x.ring >= fake.geo.ring_count || x.reason < 1 || x.reason > XTC_CORRUPT_UNWRITTEN)
			abort();
		break;
	default:
		abort();
	}
	arena_pos += sizeof(struct xtc_seg_blk_hdr) + len;
	if (c == NULL)
		return;
	if (ncommits == commit_cap) {
		commit_cap = commit_cap ? commit_cap * 2 : 64;
		commits = realloc(commits, commit_cap * sizeof *commits);
		if (!commits)
			abort();
	}
	commits[ncommits++] = *c;
}

/* Complete every pending write, failing them all when told to. */
void store_flush(void)
{
	int ok = !fake.fail_next_flush;
	size_t n = ncommits;

	fake.fail_next_flush = 0;
	ncommits = 0;
	for (size_t i = 0; i < n; i++) {
		if (ok)
			fake.ok_records += commits[i].records;
		else
			fake.failed_records += commits[i].records;
		session_commit(&commits[i], ok);
	}
}

/* The "write in flight" completes: the pending commits go through. */
int store_wait_write(void)
{
	if (ncommits == 0)
		return -1;
	store_flush();
	return 0;
}

/* Writes complete at store_flush() here: nothing is left to read, and
 * no loop to wake. */
void store_reap(void)
{
}

void store_wake_policy(int waits)
{
	(void)waits;
}

/* The harness decides whether the session's uid is over its quota. */
int store_quota_blocked(uid_t uid)
{
	(void)uid;
	return fake.quota_blocked;
}

/* ---- a fenced mapping ---- */

/*
 * session_attach() maps the producer's memfd with mmap(NULL, size, ...).
 * Linked with -Wl,--wrap=mmap,--wrap=munmap, that mapping of fence_fd
 * gets an inaccessible page on each side and the bytes from its end to
 * the end of its last page poisoned for ASan, so any read outside the
 * segment stops the fuzzer.  Every other mmap passes through.
 */
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);

static uint8_t *fence_base, *fence_map;
static size_t fence_span, fence_len;

/* mmap, with fence_fd's mapping fenced. */
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	size_t span = (len + PAGE - 1) / PAGE * PAGE;
	uint8_t *base, *m;

	if (fd < 0 || fd != fence_fd || fence_base != NULL)
		return __real_mmap(addr, len, prot, flags, fd, off);
	base = __real_mmap(NULL, span + 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
	                   -1, 0);
	if (base == MAP_FAILED)
		return MAP_FAILED;
	m = __real_mmap(base + PAGE, len, prot, flags | MAP_FIXED, fd, off);
	if (m == MAP_FAILED) {
		__real_munmap(base, span + 2 * PAGE);
		return MAP_FAILED;
	}
	ASAN_POISON_MEMORY_REGION(m + len, span - len);
	fence_base = base;
	fence_map = m;
	fence_span = span;
	fence_len = len;
	return m;
}

/* munmap, taking the fences down with the fenced mapping. */
int __wrap_munmap(void *addr, size_t len)
{
	uint8_t *base = fence_base;

	if (addr == NULL || addr != fence_map)
		return __real_munmap(addr, len);
	if (len != fence_len)
		abort(); /* session.c unmaps what it mapped */
	ASAN_UNPOISON_MEMORY_REGION(fence_map + fence_len, fence_span - fence_len);
	fence_map = NULL;
	fence_base = NULL;
	return __real_munmap(base, fence_span + 2 * PAGE);
}
