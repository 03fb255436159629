/*
 * xtcd/xtcd.h - the daemon's modules and what they share.  The reading
 * modes live in read/ (read.h) and the report in report/ (report.h): they
 * never include this file.
 *
 *   main.c     command line, init chain, signals, teardown
 *   server.c   the attach socket: accept, validate, map, hand over
 *   session.c  one attached producer: drain its rings, account, end
 *   session_status.c  the sessions' live status (session_int.h: shared)
 *   store.c    segments on disk: blocks, io_uring/pwrite, rotation, init
 *   store_budget.c   the directory list, deletion under the budget, quota
 *   store_recover.c  crash recovery: mend the newest segment, close the
 *              sessions a killed xtcd left open (store_int.h: what the
 *              three share)
 *   worker.c   a thread for fdatasync and for faulting rings in
 *   prio.c     the drain's priority (priority_boost)
 *   settings.c the settings table: every key and flag, its values, --help
 *   conf.c     the configuration file, its merge with the command line
 *   log.c      the log: levels, whole lines on stderr
 *   status.c   live status: sd_notify, the watchdog, STATUS_REQ answers
 *   status_client.c  xtcd --status: ask the daemon and print
 *   metrics.c  the Prometheus textfile for node-exporter
 *   ship_opts.c  xtcd --ship: its settings into the shipper's (read/ship.c)
 */
#ifndef XTCD_XTCD_H
#define XTCD_XTCD_H

#include <ev.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "proto/xtc_seg.h"
#include "proto/xtc_shm.h"
#include "xtcd/log.h"

enum sync_policy {
	SYNC_NEVER  = 0,
	SYNC_ROTATE = 1, /* fdatasync a segment when it is closed */
	SYNC_PERIOD = 2, /* and every sync_ms */
};

struct config {
	const char *dir;
	const char *socket;
	uint64_t    max_bytes;
	uint64_t    segment_bytes;
	uint64_t    keep_free;
	unsigned    drain_ms;
	unsigned    priority_boost; /* the event loop at nice -N (prio.c); 0: as started */
	int         force_pwrite;
	int         direct;        /* O_DIRECT writes of whole blocks where the filesystem takes them */
	uint64_t    inline_max;    /* io_uring: small writes inline with pwrite (store_write.c) */
	int         sync;          /* enum sync_policy */
	unsigned    sync_ms;
	unsigned    hello_timeout_ms;
	unsigned    max_clients;
	uid_t      *allow_uids;    /* NULL: any uid that can reach the socket */
	size_t      allow_uid_count;
	gid_t      *allow_gids;    /* NULL: no group rule (see conf_peer_allowed) */
	size_t      allow_gid_count;
	uint64_t    quota;         /* event bytes a uid may hold; CONF_NO_QUOTA */
	struct conf_quota *quotas; /* quota.UID overrides */
	size_t      quota_count;
	int         log_level;     /* enum xlog_level */
	unsigned    log_rate_burst;       /* client lines per uid per interval; 0: no limit */
	unsigned    log_rate_interval_ms;
	unsigned    max_sessions_per_uid; /* 0: auto, see conf_max_sessions_per_uid */
	uint64_t    max_shm_per_uid; /* 0: auto, see conf_max_shm_per_uid */
	const char *metrics_file;  /* node-exporter textfile (metrics.c); NULL: none */
	/* xtcd --ship's (ship_opts.c); the daemon ignores them */
	const char *ship_url;      /* ClickHouse HTTP URL; NULL: none */
	int         ship_create;   /* create the tables first */
	const char *ship_host;     /* the host name shipped; NULL: the segments' own */
	const char *ship_cursor;   /* NULL: DIR/.xtcd-ship.cursor */
	unsigned    ship_batch;    /* send at this many rows ... */
	unsigned    ship_batch_ms; /* ... or when the oldest is this old */
	const char *ship_metrics;  /* NULL: xtcd-ship.prom next to metrics_file */
};

struct conf_quota {
	uid_t    uid;
	uint64_t bytes;
};

extern struct config cfg;

/* main.c: the settings as a SESSION_START carries them */
const char *settings_text(void);

/*
 * store.c <-> session.c.  The store owns the segment files; session.c
 * owns the rings.  They meet in four places:
 *
 *  - Blocks.  A session writes a block as store_block_begin(len), fill
 *    the payload, store_block_end(type, flags, real_len, commit): nothing
 *    else may call the store between the two.  begin may return NULL (every
 *    write buffer busy, or a rotation needing two free ones): the session
 *    leaves its records in the ring and tries again when a buffer frees
 *    up (the store calls session_drain_all() then, whatever the backend).
 *    A block is appended whole, or not at all.  EVENTS blocks use
 *    store_block_begin_bytes() instead: built where they stay, unaligned.
 *  - Commit after write.  An EVENTS or quota DROP block carries a struct
 *    commit: the ring tail to publish once the block is on disk.  The
 *    store calls session_commit(c, ok) for each, in order, when the
 *    buffer holding it was written (ok) or failed (its records are then
 *    counted as lost); only then does session.c move the producer-visible
 *    tail, so a killed xtcd loses nothing still in a ring.  A session
 *    must therefore live until its last commit came back.
 *  - Restatement at rotation.  Every segment must be readable alone, so
 *    when the store opens a new segment (rotation, or a dead one created
 *    again) it calls session_restate_all() inside the rotation (begin
 *    then never rotates again): each live session writes its
 *    SESSION_START again, flagged as a restatement.
 *  - The quota.  Before an EVENTS block the session asks
 *    store_quota_blocked(uid); when it is, the records are dropped with
 *    cause quota instead (and that DROP commits the tail).
 */
struct commit {
	uint64_t session_id;
	uint32_t ring;
	uint64_t index;        /* ring tail to publish once this is on disk */
	uint64_t records;      /* event records this commit covers */
	uid_t    uid;          /* the session's uid, for the quota */
	uint32_t bytes;        /* EVENTS block bytes (store_block_end sets it) */
};

int  store_init(struct ev_loop *loop);
void store_fini(int clean);
/* Room for a block of payload `len`: returns an 8-byte aligned pointer to
 * write the payload into, or NULL when every write buffer is busy (back
 * off). */
void *store_block_begin(uint32_t len);
/* The same, but the payload is built where it will stay in the buffer,
 * at any alignment, so the caller writes it with memcpy and byte stores
 * only; store_block_end() then moves nothing.  For EVENTS bodies, where
 * the move cost 5 of ~100 instructions a record. */
uint8_t *store_block_begin_bytes(uint32_t len);
/* Finish the block begun last with its real payload length; with c, the
 * ring tail to publish once the block is written. */
void store_block_end(uint16_t type, uint16_t flags, uint32_t len, const struct commit *c);
/* Write out whatever is buffered. */
void store_flush(void);
/* Wait for the write in flight to finish (frees a buffer); -1 if none. */
int  store_wait_write(void);
/* Read the writes completed (one io_uring_enter at most, none when none
 * did): at each drain round, since the loop is not woken for every
 * completion (see store_write.c). */
void store_reap(void);
/* After a drain round: whether the sessions wait for a write to complete
 * (one is ending, or a producer is short of room); with what the store
 * itself waits for, this decides whether a completion wakes the loop. */
void store_wake_policy(int waits);
uint64_t store_next_session_id(void);
const char *store_io_backend(void);
uint64_t store_bytes_used(void);
uint64_t store_segments(void);
uint64_t store_disk_bytes(void);
/* The quota (see store.c): event bytes of a uid's sessions on disk, and
 * whether its new event blocks are refused. */
uint64_t store_uid_bytes(uid_t uid);
int  store_quota_blocked(uid_t uid);
/* For the metrics (metrics.c): what the budget deleted since start, and
 * how long each buffer write took, in buckets up to store_lat_bounds[i]
 * seconds (the last is +Inf). */
struct store_evictions {
	uint64_t segments, bytes, records;
};
void store_evictions(struct store_evictions *out);
#define STORE_LAT_BUCKETS 14
extern const double store_lat_bounds[STORE_LAT_BUCKETS];
struct store_lat {
	uint64_t count[STORE_LAT_BUCKETS];   /* per bucket, not cumulative */
	uint64_t n;
	double   sum_s;
};
void store_write_latency(struct store_lat *out);
/* Buffer writes by how they were made since start: with io_uring, with
 * pwrite on the loop because small (inline), and with pwrite otherwise
 * (--pwrite, no io_uring); inline ones that held the loop past the bound;
 * drains stopped because no write buffer was free (the disk behind). */
struct store_write_counts {
	uint64_t uring_writes, inline_writes, pwrite_writes, inline_slow;
	uint64_t starved;
};
void store_write_counts(struct store_write_counts *out);
/* Apply changed budget and sync settings (SIGHUP). */
void store_reconfigure(void);

/* session.c */
struct session;
typedef void (*session_restate_fn)(void);
int  session_attach(int conn_fd, int memfd, pid_t pid, uid_t uid, gid_t gid,
                    const void *hello, char *why, size_t why_len);
void session_drain_all(void);
void session_shutdown_all(void);
void session_restate_all(void);
void session_commit(const struct commit *c, int ok);
void session_tick(void);
size_t session_count(void);
/* Live sessions of uid (max_sessions_per_uid bounds it). */
size_t session_count_uid(uid_t uid);
/* Bytes of the live sessions' segments of uid that xtcd has mapped
 * (max_shm_per_uid bounds it), and how many of them its drains and
 * prefetches have reached, which bounds what it faulted in. */
uint64_t session_shm_uid(uid_t uid);
uint64_t session_shm_touched_uid(uid_t uid);
/* Live status (status.c): sample the rates once a second; fill one
 * STATUS_SESSION per session `uid` may see (root sees all), at most max,
 * and return how many; and the counts over every session since start. */
struct xtc_msg_status_session;
struct session_totals {
	uint64_t produced, written, dropped, lost;
	uint64_t events_per_s;
};
void   session_sample(void);
size_t session_status(uid_t uid, struct xtc_msg_status_session *out, size_t max);
void   session_totals(struct session_totals *t);
/* The same counts per uid, over every session since start (live ones
 * included), with the sessions attached, and the bytes of the live ones'
 * segments mapped and touched now: at most max uids, how many. */
struct session_uid_totals {
	uid_t    uid;
	uint64_t sessions, produced, written, dropped, lost;
	uint64_t shm_mapped, shm_touched;
};
size_t session_uid_totals(struct session_uid_totals *out, size_t max);

/* ship_opts.c: run xtcd --ship with the settings in c (the ship_* rows,
 * dir, metrics_file); conf_path names the file in messages.  The exit
 * code. */
int  ship_run(const struct config *c, const char *conf_path);

/* metrics.c: the node-exporter textfile (cfg.metrics_file), written
 * every few seconds and at shutdown. */
void metrics_start(struct ev_loop *loop);
void metrics_stop(void);

/* server.c */
int  server_init(struct ev_loop *loop);
void server_stop_accepting(void);
void server_fini(void);
/* The path of the socket xtcd listens on (systemd's, when it passed one). */
const char *server_path(void);

extern struct ev_loop *xtcd_loop;

/* worker.c: a thread for fdatasync/close of segments and the first touch
 * of a ring's pages, so that the event loop never waits for either. */
int  worker_start(void);
/* Take fd: fdatasync it (if sync) and close it, in hand-over order. */
void worker_close(int fd, uint64_t seq, int sync);
/* Take fd, the last descriptor of a deleted segment of `bytes`: close it
 * on the worker, where the kernel frees the file. */
void worker_release(int fd, uint64_t bytes);
/* Bytes of deleted segments the worker has not closed yet: free space to
 * come, for --keep-free. */
uint64_t worker_releasing(void);
/* fdatasync a dup of fd, unless a sync is still queued or running. */
void worker_sync(int fd, uint64_t seq);
/* What the owner of a mapping keeps to know the worker is done with it. */
struct worker_touch {
	int pending;     /* touch jobs not finished (under the worker's lock) */
	int cancel;      /* the mapping is going away: stop early */
};
/* Fault in len bytes from offset from of the circular [p, p + size) of a
 * mapping, by reading one byte a page. */
void worker_touch(struct worker_touch *t, const void *p, size_t size, size_t from, size_t len);
/* Cancel t's touch jobs and wait until none runs: before munmap. */
void worker_untouch(struct worker_touch *t);
/* Finish every job, then end the thread. */
void worker_stop(void);
/* The nice the worker thread runs at (set before worker_start): xtcd's
 * own, from before prio_boost. */
void worker_set_nice(int nice);

/* prio.c: the calling thread (the event loop, before any other thread
 * starts) at nice -boost, unless it already runs that high; the worker
 * keeps the nice xtcd started with.  One warning line when not allowed.
 * Returns 0 or -errno. */
int  prio_boost(unsigned boost);

#endif /* XTCD_XTCD_H */
