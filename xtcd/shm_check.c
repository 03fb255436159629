/*
 * xtcd/shm_check.c - validate a producer's segment header and ring
 * indexes (see shm_check.h).
 *
 * Trust: the producer can write any byte of its segment at any time.
 * Every value checked here is a private copy the caller read once; what
 * passes is still only an index, to be masked with the capacity the
 * caller checked at attach before it addresses a record.
 */
#include "config.h"

#include "xtcd/shm_check.h"

/* Check a header copy against everything we can compute. */
const char *shm_check_header(const struct xtc_shm_hdr *h, uint64_t size)
{
	if (h->magic != XTC_SHM_MAGIC)
		return "the segment does not start with the xtc-tail magic";
	if (h->abi_major != XTC_SHM_MAJOR)
		return "the segment's ABI major version is not one this xtcd speaks";
	if (h->hdr_size != XTC_SHM_HDR_SIZE || h->rec_size != XTC_SHM_REC_SIZE ||
	    h->ring_hdr_size != XTC_SHM_RING_HDR_SIZE || h->ring_offset != XTC_SHM_HDR_SIZE)
		return "the segment header's sizes are not this ABI's";
	if (h->ring_count == 0 || h->ring_count > XTC_SHM_MAX_RINGS)
		return "the segment's ring count is out of range";
	if (h->ring_capacity < XTC_SHM_MIN_RING_CAPACITY || h->ring_capacity > XTC_SHM_MAX_RING_CAPACITY ||
	    (h->ring_capacity & (h->ring_capacity - 1)) != 0)
		return "the segment's ring capacity is not a power of two in range";
	if (h->ring_stride != xtc_shm_ring_stride(h->ring_capacity))
		return "the segment's ring stride does not match its capacity";
	if (h->segment_size != xtc_shm_segment_size(h->ring_count, h->ring_capacity) ||
	    h->segment_size != size)
		return "the segment's size does not match its geometry or the memfd";
	if (h->ts_unit != XTC_SHM_TS_MONO_NS && h->ts_unit != XTC_SHM_TS_TSC)
		return "the segment's timestamp unit is unknown";
	if (h->ts_unit == XTC_SHM_TS_TSC && (h->ts_hz < 1000000 || h->ts_hz > 100000000000ULL))
		return "the segment's tick rate is out of range";
	return NULL;
}

/* Whether the live header still says what the copy said at attach. */
int shm_check_intact(const struct xtc_shm_hdr *live, const struct xtc_shm_hdr *copy)
{
	return live->magic == copy->magic && live->ring_count == copy->ring_count &&
	       live->ring_capacity == copy->ring_capacity &&
	       live->ring_stride == copy->ring_stride && live->ring_offset == copy->ring_offset;
}

/* Check a ring's head and drop counter against the last good values. */
enum shm_ring_fault shm_check_ring(uint64_t head, uint64_t dropped, uint64_t last_head,
                                   uint64_t last_dropped)
{
	if (head < last_head)
		return SHM_RING_HEAD_BACKWARDS;
	if (head - last_head > SHM_MAX_JUMP)
		return SHM_RING_HEAD_JUMPED;
	if (dropped < last_dropped)
		return SHM_RING_DROPPED_BACKWARDS;
	return SHM_RING_OK;
}

/* A tail ahead of the head at attach. */
int shm_check_adopt(uint64_t head, uint64_t tail)
{
	return tail > head ? -1 : 0;
}
