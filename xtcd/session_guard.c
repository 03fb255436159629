/*
 * xtcd/session_guard.c - what a ring's head may claim before xtcd reads
 * the records under it: no more than a producer could have written in
 * the time since the last drain, and only over memory that was written.
 *
 * A head is the one number a client sets that makes xtcd work and touch
 * memory.  shm_check.c bounds how far it may move between two drains by
 * the ring size; these checks bound it by time, and keep xtcd from
 * reading pages of the client's memfd that were never written: a read
 * fault on a hole of a shmem file allocates a page, charged to the
 * process that faults, so a client that only moves its heads would have
 * xtcd hold its memory.  A ring that fails either is marked corrupt
 * (session.c), and only that ring stops being drained.
 */
#include "config.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "xtcd/session_int.h"
#include "xtcd/shm_check.h"

/* The fastest a ring's head may move, on xtcd's clock: one record a
 * nanosecond.  An emit reads a clock (rdtsc alone takes 6-10 ns), stores
 * a 40-byte record and release-stores the head; the fastest measured
 * (bench/RESULTS.md) is about 12 ns, 85M records/s flat out, and one
 * record a ns would be 40 GB/s of stores from one thread.  Only a head
 * that is written without records moves faster. */
#define HEAD_MAX_PER_NS 1u
/* Records a head may move beyond that, and below which it is not timed
 * at all: one clock read per this many records at most. */
#define HEAD_SLACK   (1u << 14)

/* A head that moved since the last check further than HEAD_MAX_PER_NS
 * allows over the time between, plus HEAD_SLACK.  The time is xtcd's own:
 * from a clock read before the last checked head was read to one after
 * this one, so it is never shorter than the producer had, however long
 * xtcd itself was stopped or busy.  Records written before attach are
 * not timed (ring_adopt starts the check at the head it found); a head
 * that moved less than HEAD_SLACK is not timed yet, which costs no clock
 * read. */
enum shm_ring_fault ring_too_fast(struct sring *sr, uint64_t head)
{
	uint64_t now, elapsed;

	if (head < sr->rate_head)
		return SHM_RING_HEAD_BACKWARDS;
	if (head - sr->rate_head <= HEAD_SLACK)
		return SHM_RING_OK;
	now = mono_ns();
	elapsed = now > sr->rate_ns ? now - sr->rate_ns : 0;
	if ((head - sr->rate_head - HEAD_SLACK) / HEAD_MAX_PER_NS > elapsed)
		return SHM_RING_HEAD_TOO_FAST;
	sr->rate_head = head;
	sr->rate_ns = round_ns;
	return SHM_RING_OK;
}

/* Whether the page of the memfd at file offset `at`, which xtcd's mapping
 * does not show resident, holds data: swapped out (a producer's records,
 * to be read whatever it costs) rather than a hole (never written: a read
 * fault there would allocate a page, charged to xtcd).  Without our own
 * descriptor, assume data. */
static int page_has_data(int fd, off_t at)
{
	off_t d;

	if (fd < 0)
		return 1;
	d = lseek(fd, at, SEEK_DATA);
	return d == at || (d < 0 && errno != ENXIO);
}

/* Whether every page under bytes [at, at + len) of the mapping was ever
 * written: resident (mincore), or swapped out (page_has_data). */
static int span_written(const struct session *s, uint64_t at, uint64_t len)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned char vec[256];
	uint64_t from = at & ~(page - 1), end = at + len;

	for (; from < end; from += sizeof vec * page) {
		uint64_t n = (end - from + page - 1) / page;

		if (n > sizeof vec)
			n = sizeof vec;
		if (mincore(s->map + from, n * page, vec) < 0)
			return 1; /* cannot tell: as before, read it */
		for (uint64_t k = 0; k < n; k++)
			if (!(vec[k] & 1) && !page_has_data(s->memfd, (off_t)(from + k * page)))
				return 0;
	}
	return 1;
}

/* A head that covers slots never written (pages that are holes of the
 * memfd), checked once for each slot on the ring's first lap: a producer
 * writes a record before it moves the head over it, so only a head moved
 * without records finds a hole, and reading it would make xtcd allocate
 * the client's memory.  Later laps reuse pages already checked. */
enum shm_ring_fault ring_unwritten(struct session *s, uint32_t i, uint64_t head)
{
	struct sring *sr = &s->rings[i];
	uint64_t cap = s->hdr.ring_capacity, lap = sr->start + cap;
	uint64_t to = head < lap ? head : lap, from = sr->written_to;
	uint64_t base = s->hdr.ring_offset + (uint64_t)i * s->hdr.ring_stride + XTC_SHM_RING_HDR_SIZE;
	uint64_t slot, n, first;

	if (from >= to)
		return SHM_RING_OK;
	slot = from & (cap - 1);
	n = to - from;
	first = cap - slot < n ? cap - slot : n;
	if (!span_written(s, base + slot * XTC_SHM_REC_SIZE, first * XTC_SHM_REC_SIZE) ||
	    (n > first && !span_written(s, base, (n - first) * XTC_SHM_REC_SIZE)))
		return SHM_RING_UNWRITTEN;
	sr->written_to = to;
	return SHM_RING_OK;
}

uint64_t session_touched(const struct session *s)
{
	uint64_t cap = s->hdr.ring_capacity, n = XTC_SHM_HDR_SIZE;

	for (uint32_t i = 0; i < s->hdr.ring_count; i++) {
		const struct sring *sr = &s->rings[i];
		uint64_t to = sr->touch_next > sr->read ? sr->touch_next : sr->read;
		uint64_t recs = to - sr->touch_from < cap ? to - sr->touch_from : cap;

		n += XTC_SHM_RING_HDR_SIZE + recs * XTC_SHM_REC_SIZE;
	}
	return n < s->size ? n : s->size;
}
