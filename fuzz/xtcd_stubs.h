/*
 * fuzz/xtcd_stubs.h - what fuzz/fuzz_shm.c links xtcd/session.c against
 * instead of main.c and store.c: a store that keeps no files but checks
 * every block session.c hands it, and an mmap that fences a producer's
 * segment so a read past it is an ASan report.
 */
#ifndef XTC_FUZZ_XTCD_STUBS_H
#define XTC_FUZZ_XTCD_STUBS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/xtc_shm.h"

/* What the fake store is told and what it saw, for one input. */
struct fake_store {
	/* set by the harness */
	unsigned starve;          /* this many block_begin calls return NULL */
	int      fail_next_flush; /* the next flush fails every write */
	int      no_starve;       /* shutting down: never refuse a buffer */
	int      quota_blocked;   /* store_quota_blocked() says so */
	const uint8_t *map;       /* the segment, as the harness filled it */
	struct xtc_shm_hdr geo;   /* its geometry, as the harness wrote it */
	int      ts_is_ns;        /* records carry ns: compare ts exactly */
	/* seen */
	int      ended;           /* a SESSION_END came */
	uint64_t ok_records;      /* in writes that succeeded */
	uint64_t failed_records;  /* in writes that failed */
	uint64_t encoded;         /* event records in EVENTS blocks */
	uint64_t drop_sum;        /* counts in DROP blocks */
	uint64_t next_index[XTC_SHM_MAX_RINGS]; /* per ring: after the last EVENTS */
};

extern struct fake_store fake;

/* The descriptor whose mapping is fenced (-1: none). */
extern int fence_fd;

/* Forget everything but the harness's settings. */
void fake_store_reset(void);

/* session.c's, not in xtcd.h. */
void session_init_clock(void);

#endif /* XTC_FUZZ_XTCD_STUBS_H */
