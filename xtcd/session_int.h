/*
 * xtcd/session_int.h - what session.c shares with session_status.c (the
 * live status of the sessions) and session_guard.c (the checks on a
 * ring's head): the session itself.  Nothing else includes it.
 */
#ifndef XTCD_SESSION_INT_H
#define XTCD_SESSION_INT_H

#include <ev.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/xtc_seg.h"
#include "proto/xtc_shm.h"
#include "xtcd/shm_check.h"
#include "xtcd/xtcd.h"

struct sring {
	uint64_t read;          /* next index to copy */
	uint64_t published;     /* tail last published to the producer */
	uint64_t pub_at_drain;  /* published when the last drain ended */
	uint64_t start;         /* head - unread at attach */
	uint64_t last_head;     /* last head that passed the checks */
	uint64_t final_head;    /* drain up to here once closing */
	uint64_t final_dropped; /* and count drops up to here */
	uint64_t start_dropped;
	uint64_t last_dropped;
	uint64_t last_ts;       /* ns of the last record drained */
	uint64_t ts_floor;      /* ns of the last record copied out (see ts_ticks) */
	uint32_t loop_id;
	int      corrupt;
	uint64_t touch_from;    /* first record index whose page we touch */
	uint64_t touch_next;    /* records below this were handed to the worker */
	uint64_t rate_head;     /* head at the last speed check (see ring_too_fast) */
	uint64_t rate_ns;       /* xtcd's clock at or before rate_head was read */
	uint64_t written_to;    /* first lap: slots below this lie on written pages */
};

struct session {
	struct session *next;
	uint64_t id;
	pid_t    pid;
	uid_t    uid;
	gid_t    gid;
	int      conn_fd;
	ev_io    conn_w;
	int      nudge_fd;
	ev_io    nudge_w;
	struct worker_touch touch;   /* the worker's first touch of its rings */
	uint8_t *map;
	uint64_t size;
	int      memfd;         /* our own open of it, for SEEK_DATA; -1: none */
	struct xtc_shm_hdr hdr;  /* the validated copy */
	struct sring *rings;
	struct xtc_seg_session_start start;
	uint64_t written, dropped, lost, inflight;
	uint64_t bytes;          /* of its EVENTS blocks on disk */
	uint64_t quota_dropped;
	uint64_t rate_mark;      /* produced at the last sample */
	uint64_t rate_at;        /* mono ns of the last sample (or attach) */
	uint64_t rate;           /* records produced per second, last sample */
	uint64_t quota_drops_inflight; /* quota DROPs carrying a tail, unwritten */
	uint64_t no_ring_start, no_ring_last, no_ring_final; /* emits with no ring */
	int      closing;
	int      reason;
	int      header_changed;
};

/* The live sessions, newest first, and the counts of those that ended. */
extern struct session *sessions;
extern struct session_totals session_ended;

static inline struct xtc_shm_ring *ring_at(const struct session *s, uint32_t i)
{
	return (struct xtc_shm_ring *)(s->map + s->hdr.ring_offset + (uint64_t)i * s->hdr.ring_stride);
}

/* Records the producer of s made since attach (see the top of session.c). */
uint64_t session_produced(const struct session *s);

/* xtcd's clock taken before the current drain round read any head. */
extern uint64_t round_ns;

/* The checks of session_guard.c on a head that passed shm_check_ring:
 * not faster than a producer can write since the last check (updating
 * the check's mark), and not over slots of ring i never written on its
 * first lap.  SHM_RING_OK, or the fault to mark the ring corrupt with. */
enum shm_ring_fault ring_too_fast(struct sring *sr, uint64_t head);
enum shm_ring_fault ring_unwritten(struct session *s, uint32_t i, uint64_t head);

/* Bytes of s's segment that xtcd's drains and prefetches have reached:
 * the header, each ring's header, and the records of at most one lap. */
uint64_t session_touched(const struct session *s);

#endif /* XTCD_SESSION_INT_H */
