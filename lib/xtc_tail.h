/*
 * xtc_tail.h - libxtctail, the in-process event recorder of xtc-tail.
 *
 * A runtime microscope: an event loop records every individual runtime
 * event (spawn, park, wake, run, submit, reap, ...) at a few nanoseconds
 * each into per-loop single-producer rings in one memfd segment per
 * process.  The records can be read back in-process (xtc_tail_read,
 * xtc_tail_dump, xtc_tail_dump_dial9), and, when XTC_TAIL_SHM names a
 * running xtcd, the daemon drains them to disk with exact drop accounting.
 *
 * Errors: functions returning int return XTC_OK (0) or a non-negative count
 * on success and a negative errno value on failure.  The library never
 * exits, never installs signal handlers, and prints nothing unless the
 * environment variable XTC_DEBUG is set.
 *
 * See xtc_tail(3).
 */
#ifndef XTC_TAIL_H
#define XTC_TAIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define XTC_API __attribute__((visibility("default")))
#else
#define XTC_API
#endif

#define XTC_OK 0

/* The proc an event concerns: loop, slot in the loop, generation. */
typedef struct {
	uint32_t loop_id;
	uint32_t local_id;
	uint64_t gen;
} xtc_pid_t;

/* Event sources, an enable mask: pay only for what you turn on. */
#define XTC_TAIL_SCHED  (1u << 0)   /* proc spawn/exit/wake/run, loop liveness */
#define XTC_TAIL_MSG    (1u << 1)   /* send/recv/mailbox depth */
#define XTC_TAIL_IO     (1u << 2)   /* fd reg/del/completion */
#define XTC_TAIL_OS     (1u << 3)   /* per-loop CPU/RSS sampling */
#define XTC_TAIL_ALL    (XTC_TAIL_SCHED | XTC_TAIL_MSG | XTC_TAIL_IO | XTC_TAIL_OS)

/* Event kinds.  The numbers are part of the on-disk and dump formats. */
enum xtc_tail_kind {
	XTC_TAIL_SPAWN          = 0,  /* a proc was spawned */
	XTC_TAIL_EXIT           = 1,  /* a proc exited (detail = reason) */
	XTC_TAIL_WAKE           = 2,  /* a completion was dispatched to a task:
	                               * pid.loop_id = dispatching loop,
	                               * detail = the task pointer (join key) */
	XTC_TAIL_RUN            = 3,  /* a proc ran after a wake
	                               * (detail = wake-to-run latency, ns) */
	XTC_TAIL_PARK           = 4,  /* a proc parked (detail = the aio op) */
	XTC_TAIL_SEND           = 5,  /* MSG: pid sent (detail = bytes) */
	XTC_TAIL_RECV           = 6,  /* MSG: pid received (detail = bytes) */
	XTC_TAIL_MBOX_HWM       = 7,  /* MSG: new mailbox peak (detail = depth) */
	XTC_TAIL_LOOP_POLL      = 8,  /* an idle poll completed on pid.loop_id
	                               * (detail = events dispatched) */
	XTC_TAIL_PARK_TASK      = 9,  /* the task a proc parks as, emitted just
	                               * before its PARK (detail = task pointer) */
	XTC_TAIL_REAP           = 10, /* a CQE was reaped (detail = task pointer,
	                               * or 0 when consumed and not handed on) */
	XTC_TAIL_SUBMIT         = 11, /* an SQE was submitted (detail = task) */
	XTC_TAIL_SUBMIT_FAIL    = 12, /* a submission never reached the kernel
	                               * (detail = -errno, or
	                               * XTC_TAIL_SHORT_SUBMIT_BASE + unsubmitted) */
	XTC_TAIL_POLL_FULL      = 13, /* a poll filled its budget (detail = max) */
	XTC_TAIL_LIFECYCLE_DROP = 14, /* a DOWN/EXIT could not be delivered
	                               * (detail = -error of the send) */
	/* Loop-library adapters (libxtctail-ev, libxtctail-uring; see
	 * xtc_tail_ev(3)).  pid.loop_id is the loop or ring. */
	XTC_TAIL_LOOP_WAIT      = 15, /* the loop entered its blocking wait
	                               * (ev: detail = ev_iteration; uring:
	                               * detail = CQEs waited for) */
	XTC_TAIL_LOOP_WAKE      = 16, /* it returned from the wait
	                               * (detail = ns blocked; uring: local_id =
	                               * CQEs ready) */
	XTC_TAIL_LOOP_DISPATCH  = 17, /* it ran its pending callbacks
	                               * (local_id = how many were pending,
	                               * detail = ns the dispatch took) */
	XTC_TAIL_CB_BEGIN       = 18, /* a watcher callback started (local_id =
	                               * fd or signal, gen = XTC_TAIL_CB_GEN,
	                               * detail = ns since the loop woke) */
	XTC_TAIL_CB_END         = 19, /* it returned (same pid as its BEGIN,
	                               * detail = ns it ran) */
	XTC_TAIL_CB_FUNC        = 20, /* callback #local_id is the function at
	                               * address detail (gen = its offset in
	                               * its file, for addr2line) */
	XTC_TAIL_WATCH_START    = 21, /* a watcher was started (pid as CB_BEGIN,
	                               * detail = io events or timer repeat ns) */
	XTC_TAIL_WATCH_STOP     = 22  /* a watcher was stopped (pid as CB_BEGIN) */
};

/* Number of kinds this header names: readers print others as KIND_<n>. */
#define XTC_TAIL_NKINDS 23

/* The watcher a CB_BEGIN/CB_END/WATCH_* record concerns, packed in
 * pid.gen: its kind (enum xtc_tail_watcher) in bits 56-63, the callback
 * number (see CB_FUNC) in bits 44-55, its address / 8 in bits 0-43. */
enum xtc_tail_watcher {
	XTC_TAIL_W_IO = 1, XTC_TAIL_W_TIMER, XTC_TAIL_W_PERIODIC, XTC_TAIL_W_SIGNAL,
	XTC_TAIL_W_CHILD, XTC_TAIL_W_STAT, XTC_TAIL_W_IDLE, XTC_TAIL_W_PREPARE,
	XTC_TAIL_W_CHECK, XTC_TAIL_W_EMBED, XTC_TAIL_W_FORK, XTC_TAIL_W_CLEANUP,
	XTC_TAIL_W_ASYNC
};
#define XTC_TAIL_CB_GEN(wkind, cbno, addr) \
	(((uint64_t)(wkind) << 56) | (((uint64_t)(cbno) & 0xFFFu) << 44) | \
	 (((uint64_t)(uintptr_t)(addr) >> 3) & 0xFFFFFFFFFFFull))
#define XTC_TAIL_CB_WKIND(gen)  ((uint32_t)((gen) >> 56))
#define XTC_TAIL_CB_NO(gen)     ((uint32_t)(((gen) >> 44) & 0xFFFu))
#define XTC_TAIL_CB_ADDR(gen)   (((gen) & 0xFFFFFFFFFFFull) << 3)
/* local_id of a watcher with no fd or signal number. */
#define XTC_TAIL_CB_NOFD 0xFFFFFFFFu

/* SUBMIT_FAIL detail: below this a plain errno, at or above it the number
 * of SQEs a short submit left unsubmitted, plus this base. */
#define XTC_TAIL_SHORT_SUBMIT_BASE 4096

/* loop_id of a ring whose thread never bound a loop. */
#define XTC_TAIL_LOOP_NONE 0xFFFFFFFFu

/* One recorded event as handed back by xtc_tail_read. */
typedef struct xtc_tail_rec {
	uint64_t  ts_ns;    /* CLOCK_MONOTONIC nanoseconds */
	uint32_t  source;   /* which XTC_TAIL_* source produced it */
	uint32_t  kind;     /* enum xtc_tail_kind */
	xtc_pid_t pid;      /* the proc the event concerns */
	uint64_t  detail;   /* kind-specific */
} xtc_tail_rec_t;

/* Visit callback for xtc_tail_read: return 0 to continue, nonzero stops. */
typedef int (*xtc_tail_fn)(const xtc_tail_rec_t *rec, void *user);

/* Enable the named sources (replaces the mask).  Creates the shared-memory
 * segment on first use.  Returns the previously enabled mask. */
XTC_API unsigned xtc_tail_enable(unsigned source_mask);

/* Disable all recording (xtc_tail_enable(0)). */
XTC_API void     xtc_tail_disable(void);

/* Drop all buffered records and zero the drop count.  Returns XTC_OK. */
XTC_API int      xtc_tail_reset(void);

/* Visit every buffered record oldest-first, ring by ring merged by time.
 * Returns the number of records visited or -errno. */
XTC_API int      xtc_tail_read(xtc_tail_fn cb, void *user);

/* Write the buffered records to fd as an XTCL v3 dump.  Returns XTC_OK or
 * -errno. */
XTC_API int      xtc_tail_dump(int fd);

/* Write the buffered records to fd as a dial9 trace (TRC\0, version 1). */
XTC_API int      xtc_tail_dump_dial9(int fd);

/* Set the mask from XTC_TAIL_ENABLE (1, sched, msg, io, os, all, a
 * comma-separated list of them, or 0/off/none); unset or invalid leaves it
 * as it was.  Returns the mask enabled after the call. */
XTC_API unsigned xtc_tail_from_env(void);

/* Write a dial9 trace to dir/xtc-tail-<pid>-<ns>.d9.  Returns XTC_OK or
 * -errno (-ENOENT or -ENOTDIR when dir is not a directory). */
XTC_API int      xtc_tail_spill_dial9(const char *dir);

/* Number of records currently buffered. */
XTC_API size_t   xtc_tail_count(void);

/* Records lost since the last reset: overwritten because a ring wrapped,
 * refused because a ring was full while a consumer was attached, or
 * emitted by a thread that found no free ring.
 * Check it before believing the absence of an event. */
XTC_API uint64_t xtc_tail_dropped(void);

/* Record one event if `source` is enabled.  Never blocks, locks,
 * allocates or enters the kernel (except the once-per-drain nudge of an
 * attached xtcd). */
XTC_API void     xtc_tail_emit(uint32_t source, uint32_t kind, xtc_pid_t pid,
                               uint64_t detail);

/* Make the calling thread the only producer of loop_id's ring.  Returns
 * XTC_OK, -EBUSY if another live thread owns that loop, -ENOSPC if every
 * ring is taken, -ENODEV if recording was never enabled, -EINVAL for
 * XTC_TAIL_LOOP_NONE. */
XTC_API int      xtc_tail_loop_bind(uint32_t loop_id);

/* Choose the geometry before the first enable: `rings` rings of
 * `ring_records` records (a power of two, >= 64).  0 keeps a value.
 * Returns XTC_OK, -EINVAL for a bad value, -EBUSY once the segment exists. */
XTC_API int      xtc_tail_configure(uint32_t rings, uint32_t ring_records);

/* Attach to the xtcd listening at socket_path (NULL: XTC_TAIL_SHM or the
 * default /run/xtcd/xtcd.sock) from a background thread that retries with
 * backoff and re-attaches after a daemon restart.  Returns XTC_OK or
 * -errno.  Setting XTC_TAIL_SHM does this at load time. */
XTC_API int      xtc_tail_attach(const char *socket_path);

/* Say goodbye to xtcd (a clean detach) and stop the attach thread. */
XTC_API int      xtc_tail_detach(void);

/* The enabled mask; read through xtc_tail_on(). */
XTC_API extern unsigned xtc_tail_mask_;

/* One load and one branch: skip argument setup when a source is off. */
static inline int xtc_tail_on(uint32_t source)
{
	return (__atomic_load_n(&xtc_tail_mask_, __ATOMIC_RELAXED) & source) != 0;
}

/* Call sites test the mask inline, so a disabled source costs one load
 * and one branch, not a call.  `source` is evaluated twice; define
 * XTC_TAIL_NO_INLINE_CHECK to call the function directly. */
#ifndef XTC_TAIL_NO_INLINE_CHECK
#define xtc_tail_emit(source, kind, pid, detail) \
	(xtc_tail_on(source) ? xtc_tail_emit((source), (kind), (pid), (detail)) : (void)0)
#endif

/* On-disk XTCL dump header (see xtc_tail_dump): little-endian fields
 *   magic[4]="XTCL" version(u32)=3 flags(u32) count(u32) base_ts_ns(u64)
 * then per event: kind u8, source u8, ts_delta varint, loop_id varint,
 * local_id varint, gen varint, detail varint (LEB128). */
#define XTC_TAIL_MAGIC   0x5854434Cu   /* "XTCL" */
#define XTC_TAIL_VERSION 3u
#define XTC_TAIL_FLAG_LE 1u
typedef struct xtc_tail_hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t count;
	uint64_t base_ts_ns;
} xtc_tail_hdr_t;

#ifdef __cplusplus
}
#endif

#endif /* XTC_TAIL_H */
