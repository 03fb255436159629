/*
 * xtcd/shm_check.h - the checks xtcd applies to a producer's shared
 * memory (proto/xtc_shm.h): the segment header once at attach, and the
 * ring indexes at every drain.
 *
 * session.c calls these on its mapping; the fuzzers (fuzz/fuzz_shm.c)
 * drive session.c itself over a mapping they fill from fuzz input.  No
 * function here keeps state: the caller keeps its own private copy of
 * every value it relies on and passes it in.
 */
#ifndef XTCD_SHM_CHECK_H
#define XTCD_SHM_CHECK_H

#include <stdint.h>

#include "proto/xtc_seg.h"
#include "proto/xtc_shm.h"

/* More records than any producer can publish between two drains: a head
 * (or a no-ring counter) that moves further has been scribbled on. */
#define SHM_MAX_JUMP (1ULL << 36)

/* Why a ring is taken out of draining: the xtc_seg_corrupt.reason its
 * CORRUPT block carries. */
enum shm_ring_fault {
	SHM_RING_OK                = 0,
	SHM_RING_HEAD_BACKWARDS    = XTC_CORRUPT_HEAD_BACKWARDS,
	SHM_RING_HEAD_JUMPED       = XTC_CORRUPT_HEAD_JUMPED,
	SHM_RING_DROPPED_BACKWARDS = XTC_CORRUPT_DROPPED_BACKWARDS,
	SHM_RING_HEAD_TOO_FAST     = XTC_CORRUPT_HEAD_TOO_FAST,
	SHM_RING_UNWRITTEN         = XTC_CORRUPT_UNWRITTEN,
};

/* Check a private copy of the segment header against everything xtcd can
 * compute itself and the memfd's size.  NULL, or what is wrong. */
const char *shm_check_header(const struct xtc_shm_hdr *h, uint64_t size);

/* Whether the live header still gives the geometry of the copy taken at
 * attach. */
int shm_check_intact(const struct xtc_shm_hdr *live, const struct xtc_shm_hdr *copy);

/* Check a ring's head and drop counter as just read against the last
 * values that passed (head >= last_head, head - last_head <= SHM_MAX_JUMP,
 * dropped >= last_dropped), in that order. */
enum shm_ring_fault shm_check_ring(uint64_t head, uint64_t dropped, uint64_t last_head,
                                   uint64_t last_dropped);

/* Check a ring's indexes at attach: its tail may not be ahead of its
 * head.  0, or -1 when it is. */
int shm_check_adopt(uint64_t head, uint64_t tail);

#endif /* XTCD_SHM_CHECK_H */
