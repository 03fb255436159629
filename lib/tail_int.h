/*
 * lib/tail_int.h - state shared inside libxtctail (not installed).
 */
#ifndef XTC_LIB_TAIL_INT_H
#define XTC_LIB_TAIL_INT_H

#include <pthread.h>
#include <stdint.h>

#include "xtc_tail.h"
#include "proto/xtc_shm.h"

#define TAIL_DEFAULT_RINGS    32u
#define TAIL_DEFAULT_RECORDS  (1u << 18) /* 10 MiB a ring */

/* Library-private view of one ring: what a reset or read needs that the
 * shared memory must not hold. */
struct ring_priv {
	uint64_t floor;         /* records below this index were reset away */
	uint64_t base_dropped;  /* shm dropped at the last reset */
	uint64_t base_evicted;  /* shm evicted at the last reset */
	int      owned;         /* a live thread produces into it */
};

struct tail_state {
	pthread_mutex_t lock;      /* everything but the hot path */
	struct xtc_shm_hdr *hdr;   /* NULL until the first enable */
	int      memfd;
	uint64_t size;
	uint32_t rings;
	uint32_t capacity;
	struct ring_priv *priv;
	uint32_t want_rings;       /* xtc_tail_configure / environment */
	uint32_t want_records;
	uint32_t mode;             /* enum xtc_shm_mode for the next segment */
	uint64_t release_gen;      /* bumped when a ring is released */
	uint64_t base_no_ring;     /* hdr->no_ring_count at the last reset */
	int      forked;           /* we are a child whose segment is the parent's */
	int      nudge_fd;         /* eventfd from xtcd, or -1 */
	uint32_t block_us;         /* XTC_TAIL_BLOCKING_TIMEOUT_US; 0: never wait */
};

extern struct tail_state tail_st;

/* One line to stderr: always when `always`, otherwise only under
 * XTC_DEBUG.  Async-signal-safe enough for atfork paths; keeps errno. */
void tail_log(int always, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The ring at index i of the current segment. */
static inline struct xtc_shm_ring *tail_ring(uint32_t i)
{
	return (struct xtc_shm_ring *)((char *)tail_st.hdr + tail_st.hdr->ring_offset +
	                               (uint64_t)i * tail_st.hdr->ring_stride);
}

/* attach.c */
/* Start attaching to the daemon at path; with `now`, try once in the
 * caller first (never with tail_st.lock held). */
int  attach_start(const char *path, int now);
int  attach_stop(int join);
void attach_forget_in_child(void);
void attach_resume_in_child(void);

#endif /* XTC_LIB_TAIL_INT_H */
