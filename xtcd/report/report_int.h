/*
 * xtcd/report/report_int.h - what the pieces of xtcd --report share.
 *
 *   report.c          the driver: reader callbacks, the per-ring merge
 *                     into time order, dispatch, the output order
 *   report_model.c    sessions, loops, procs, the end of a session's record,
 *                     the view: what every analysis calls down into
 *   report_find.c     findings, the loss check behind every absence verdict,
 *                     how findings print
 *   report_chain.c    wakeup chains, SUBMIT_FAIL, LIFECYCLE_DROP
 *   report_loops.c    loop liveness, POLL_FULL runs, busy share, imbalance,
 *                     the activity timeline the SVG draws
 *   report_latency.c  wake-to-run histograms, mailboxes, SEND/RECV
 *   report_offcpu.c   per-proc idle/busy/scheduled time, polls, wakes
 *   report_pprof.c    --export pprof (protobuf-c, gzip) and collapsed
 *   report_flows.c    the chains as --export chrome's flow arrows
 *   report_svg.c      --svg
 *   report_diff.c     --diff A B
 *   report_util.c     hash map, histogram, timeline lanes, time and number
 *                     formatting
 *   report_adapter.c  what the libev and liburing adapters recorded
 *
 * Times are wall-clock ns (the session's anchor applied to the monotonic
 * timestamp), so sessions and windows compare directly.
 *
 * Why a merge: the reader delivers each ring's records in order, but rings
 * interleave by drain, so a WAKE from loop 1 can arrive before the PARK of
 * loop 0 it answers.  Each session keeps a FIFO per ring and releases the
 * records in time order once every ring still producing has moved past
 * them (a k-way merge with a watermark), and at least a few drain periods
 * (the slack) behind the newest record, since a ring heard from for the
 * first time in a while can deliver records up to a drain pass older than
 * the others'.  A ring that has been silent for longer than the horizon
 * stops holding the others back, and a session never buffers more than
 * RP_MERGE_MAX records: past
 * that the oldest go out anyway and any record that then arrives older
 * than one already released is counted as "late".
 */
#ifndef XTCD_REPORT_INT_H
#define XTCD_REPORT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xtcd/read/print.h"
#include "lib/seg/idmap.h"
#include "lib/seg/segname.h"
#include "lib/seg/segread.h"

#include "xtcd/report/report.h"
#include "xtcd/read/read.h"

#define RP_NKINDS     SEGNAME_NKINDS /* named kinds; more count as other */
#define RP_MERGE_MAX  (1u << 21) /* records a session may hold back for order */
#define RP_PROOF      6         /* proving events kept per finding */
#define RP_WORST      5         /* worst latencies kept per session */
#define RP_TL_BINS    2048      /* timeline bins (their width doubles to fit) */
#define RP_SLICES     10        /* busy share "over time": tenths of the span */
#define RP_PF_RUN_MIN 4         /* POLL_FULLs in a row that make a backlog run */
#define RP_NONE       UINT32_MAX

/* ---- util: hash map, histogram, formatting ---- */

/* Open addressing map from a 3-word key to a 32-bit value (an index). */
struct rp_map {
	uint64_t *keys;             /* 3 per slot */
	uint32_t *vals;             /* RP_NONE: empty */
	size_t    cap, n;
};

/* The value slot of key (a, b, c); with insert, an empty key is added and
 * its slot (holding RP_NONE) returned for the caller to fill at once.  NULL
 * when absent without insert, or on -ENOMEM. */
uint32_t *rp_map_get(struct rp_map *m, uint64_t a, uint64_t b, uint64_t c, int insert);
void rp_map_free(struct rp_map *m);

/* Grow *p (elements of size elem, capacity *cap) to hold need; 0/-ENOMEM. */
int rp_grow(void *pp, size_t *cap, size_t need, size_t elem);

/* A log-linear histogram: exact below 32, then 32 buckets per power of
 * two (about 3% resolution), up to 2^64.  The buckets come in RP_HIST_RUNS
 * runs of RP_HIST_SUB, each allocated when a value first lands in it (and
 * the table of runs with the first value), so that a histogram of a few
 * values holds a few runs, not every bucket: a session or loop with one
 * record must not cost what a busy one does. */
#define RP_HIST_SUB  32
#define RP_HIST_RUNS 60
#define RP_HIST_N    (RP_HIST_SUB * RP_HIST_RUNS)
struct rp_hist {
	uint64_t n, sum, max, min;
	uint64_t **run;             /* NULL: no value yet; run[k] NULL: none there */
};

/* Count v; 0, or -ENOMEM (then v is not counted). */
int rp_hist_add(struct rp_hist *h, uint64_t v);
/* The count in bucket i. */
uint64_t rp_hist_count(const struct rp_hist *h, unsigned i);
/* The value at quantile q (0..1): the top of its bucket, at most max. */
uint64_t rp_hist_quantile(const struct rp_hist *h, double q);
/* The lowest value of bucket i. */
uint64_t rp_hist_low(unsigned i);
void rp_hist_free(struct rp_hist *h);

/* A loop's lanes on the report's timeline of RP_TL_BINS bins: per bin its
 * records, busy ns and idle polls.  The bins come in chunks of
 * RP_TL_CHUNK, each allocated when first added to (and the table of
 * chunks with the first), so that a loop that recorded a little for a
 * short while holds a chunk, not every bin. */
enum { RP_LANE_EV, RP_LANE_BUSY, RP_LANE_POLLS, RP_LANES };
#define RP_TL_CHUNK 32
struct rp_tl_bin {
	uint64_t v[RP_LANES];
};
struct rp_tl {
	struct rp_tl_bin **chunk;   /* RP_TL_BINS / RP_TL_CHUNK; NULL: all zero */
};

/* Add v to lane of bin; 0, or -ENOMEM (then nothing is added). */
int rp_tl_add(struct rp_tl *tl, size_t bin, unsigned lane, uint64_t v);
uint64_t rp_tl_get(const struct rp_tl *tl, size_t bin, unsigned lane);
/* Halve the resolution: bins 2i and 2i+1 become bin i, the upper half
 * reads zero. */
void rp_tl_fold(struct rp_tl *tl);
void rp_tl_free(struct rp_tl *tl);

/* Times, durations, loops and procs as text: xtcd/read/print.h. */
struct report;
struct rp_sess;
/* A text section: "\nHEADING", then part() for each session with records
 * in view, or one line saying no record matches. */
void report_text_sessions(struct report *rep, const char *heading,
                          void (*part)(struct report *rep, struct rp_sess *s));
/* A kind's name ("WAKE") or "KIND_n". */
const char *rp_kind(uint32_t kind);

/* ---- records, sessions, loops, procs ---- */

/* A record that proves something (kept in findings and loops). */
struct rp_proof {
	uint64_t  t, detail;
	xtc_pid_t pid;
	uint32_t  kind, loop;
};

/* One event after the merge. */
struct rp_ev {
	uint64_t  t;                /* wall-clock ns */
	uint64_t  detail;
	xtc_pid_t pid;
	uint32_t  loop;             /* filter_event_loop(): the ring's loop */
	uint16_t  kind;             /* kinds past 0xfffe read as 0xffff ("other") */
	uint8_t   view;             /* RP_VIEW_* */
	uint8_t   source;           /* XTC_TAIL_* source bit (0 past 0x80) */
};

#define RP_VIEW_MAIN 1u         /* passes every filter */
#define RP_VIEW_A    2u         /* also in --diff window A */
#define RP_VIEW_B    4u         /* also in --diff window B */

/* Records a producer lost, as a DROP block says. */
struct rp_drop {
	uint64_t from, to;          /* wall ns: last record before, first after */
	uint64_t count;
	uint32_t ring, loop, cause;
};

/* The merge state of one ring of a session. */
struct rp_ring {
	uint32_t ring;
	uint32_t heap_pos;          /* RP_NONE: not in the heap (empty) */
	uint64_t last_t;            /* newest record the reader delivered */
	struct rp_ev *q;            /* FIFO: q[(head + i) % cap] */
	size_t   cap, head, len;
};

/* One loop of a session. */
struct rp_loop {
	uint32_t loop;
	uint64_t events, view_events;
	uint64_t first_t, last_t;
	uint64_t sess_events_at_last;    /* the session's events at our last one */
	struct rp_proof last_ev;         /* our last record */
	uint64_t ivl[64];                /* intervals between records, log2 buckets */
	/* liveness */
	uint64_t polls, last_poll_t, view_polls;
	uint64_t spawned, exited, open_chains;
	/* POLL_FULL runs: full polls with no idle poll between them */
	uint64_t poll_full, pf_n, pf_start, pf_last, pf_runs;
	uint64_t pf_long_n, pf_long_start, pf_long_end;
	/* untagged completions: REAP 0 that answer no untagged SUBMIT */
	uint64_t submit0_open, reap0, reap0_unexplained, reap0_next;
	uint64_t *reap0_t;               /* their times, at most RP_REAP0_KEEP */
	size_t   nreap0_t, reap0_cap;
	/* time */
	uint64_t busy_ns, view_busy_ns;
	uint64_t win_events[2], win_busy[2];
	/* latency (RUN detail) of its procs, in view */
	struct rp_hist lat;
	/* messages */
	uint64_t send_n, recv_n;
	/* timeline lanes: records, busy ns, idle polls per bin */
	struct rp_tl tl;
};

#define RP_REAP0_KEEP 4096

struct rp_worst {
	uint64_t lat, t;
	xtc_pid_t pid;
	uint32_t loop;
};

/* One session (one attach of one process). */
struct rp_sess {
	uint64_t id;
	uint32_t idx;                      /* in struct report's sess[] */
	const struct segread_session *ss;  /* NULL: its start was never read */
	uint32_t os_pid;
	char     comm[20];
	uint64_t first_t, last_t;          /* its records (all of them) */
	uint64_t view_first, view_last;    /* its records in view */
	int      ended, finalized, evicted;
	struct xtc_seg_session_end end;
	uint64_t end_t;
	/* merge */
	uint64_t horizon, slack;
	struct rp_ring *rings;
	size_t   nrings, rings_cap, last_ring;
	uint32_t *heap;                    /* ring indexes by head time */
	size_t   nheap, heap_cap;
	uint64_t buffered, max_t, out_t, late, forced, since_release;
	/* loss */
	struct rp_drop *drops;
	size_t   ndrops, drops_cap;
	uint64_t dropped_seen, corrupt_rings;
	uint32_t corrupt_reason;   /* of its CORRUPT records; UINT32_MAX: they differ */
	/* counts (in view) */
	uint64_t events, view_events, kinds[RP_NKINDS + 1];
	/* loops */
	struct rp_loop *loops;
	size_t   nloops, loops_cap, last_loop;
	/* latency and messages (in view) */
	struct rp_hist lat;
	struct rp_worst worst[RP_WORST];
	size_t   nworst;
	uint64_t send_n, send_b, recv_n, recv_b, mbox_n;
	uint64_t msg_sec, msg_sec_send, msg_sec_recv, peak_send, peak_recv;
	/* chains */
	uint64_t parks, chains_done, chains_resumed, chains_inflight;
	uint64_t orphan_submit, orphan_reap, orphan_wake;
	/* procs and chains (indexes into struct report's) */
	uint64_t nprocs;
	uint32_t *proc_ids, *chain_ids, *gap_ids;
	size_t   nproc_ids, proc_ids_cap, nchain_ids, chain_ids_cap, ngap_ids, gap_ids_cap;
};

/* Off-CPU state of a proc. */
enum { RP_PS_UNKNOWN = 0, RP_PS_RUNNING, RP_PS_PARKED, RP_PS_DONE };

/* One proc (loop.local.gen) of a session. */
struct rp_proc {
	uint64_t  sess;
	xtc_pid_t pid;
	uint32_t  loop;                /* the loop its records came from */
	uint32_t  chain;               /* open chain, RP_NONE if none */
	uint32_t  sidx;                /* its session's index */
	uint8_t   state, at_end;       /* at_end: RP_PS_* when the record ended */
	uint64_t  since;
	uint64_t  idle, busy, sched, polls, wakes, parks;
	uint64_t  mbox_hwm, mbox_t;
	uint64_t  first_t, last_t;
};

/* ---- findings ---- */

enum rp_class {
	RF_NEVER_SUBMITTED = 1,  /* parked; no SUBMIT for its task */
	RF_NEVER_REAPED,         /* submitted; no REAP came back */
	RF_NOT_HANDED_ON,        /* reaped; no WAKE (or reaped with no tag) */
	RF_NEVER_RUN,            /* woken; its proc never ran */
	RF_SUBMIT_FAIL,          /* a submission never reached the kernel */
	RF_LIFECYCLE_DROP,       /* a DOWN/EXIT was not delivered */
	RF_LOOP_STOPPED,         /* a loop went silent for good, others went on */
	RF_LOOP_GAP,             /* a loop went silent for a while, others went on */
	RF_NCLASS
};

enum rp_verdict { RV_PROVEN = 1, RV_CANNOT_TELL };

/* What an absence verdict needs to be clean of. */
enum rp_scope {
	RS_SESSION = 1,          /* any ring of the session (SUBMIT/REAP/WAKE can
	                          * come from any loop) */
	RS_LOOP,                 /* the rings of one loop (RUN, LOOP_POLL) */
};

/* Why an absence cannot be trusted. */
enum rp_loss_kind {
	RL_NONE = 0,
	RL_DROP,                 /* DROP blocks overlap the window */
	RL_CUT,                  /* the session's record is cut short */
	RL_LOST,                 /* records lost to I/O at unknown times */
	RL_UNLOCATED,            /* drops the session end counts but no DROP places */
	RL_CORRUPT_RING,         /* a ring was taken out of draining */
	RL_DAMAGE,               /* segment damage (torn/corrupt/vanished) */
	RL_EVICTED,              /* older segments deleted: history before is gone */
};

struct rp_loss {
	enum rp_loss_kind kind;
	uint64_t from, to, count;          /* the first loss found */
	uint32_t ring, loop, cause;        /* DROP: where; CUT: end reason */
	uint64_t ndrops, nrecords;         /* all the DROPs overlapping */
};

/* Forms of a class (how it was told). */
enum {
	RFF_NONE = 0,
	RFF_UNTAGGED,            /* NOT_HANDED_ON: no REAP for the task, an
	                          * unexplained REAP 0 on its loop after the submit */
};

struct rp_finding {
	uint32_t  id;                      /* its index (after sorting: its number - 1) */
	enum rp_class   cls;
	enum rp_verdict verdict;
	int       form;
	uint32_t  sidx;                    /* session index */
	uint64_t  sess;
	uint32_t  loop;                    /* the loop it is about */
	xtc_pid_t pid;
	int       has_pid, has_task;
	uint64_t  task, op;
	uint64_t  t;                       /* when it began (the anchor) */
	uint64_t  t_last;                  /* the last event that proves it */
	uint64_t  t_end;                   /* how far its window reaches */
	uint64_t  detail;                  /* fault detail, gap length, ... */
	struct rp_proof proof[RP_PROOF];
	unsigned  nproof;
	struct rp_loss loss;
	/* the loop after the last proving event */
	uint32_t  watch_loop;
	uint64_t  loop_events_after, loop_polls_after, loop_last_t;
	int       loop_stopped;            /* ... and then went silent for --stall */
	uint32_t  loops_active;            /* other loops recording meanwhile */
	uint64_t  others_events;
	uint64_t  procs_live, chains_open;
	uint32_t  explained_by;            /* a SUBMIT_FAIL finding, or RP_NONE */
	uint32_t  explains;                /* chains a SUBMIT_FAIL may explain */
	int       in_view;
	uint32_t  view;                    /* RP_VIEW_* of its anchor */
};

/* ---- the report ---- */

struct rp_chain;

/* A reader problem: records of any session may be missing in [from, to]. */
struct rp_damage {
	uint64_t from, to;
	int      kind;                     /* enum segread_problem_kind */
	uint64_t seq;
};

struct report {
	const struct read_opts   *ro;
	const struct report_opts *o;
	struct segread *r;
	FILE    *out;
	struct filter sess_filter;         /* --session and --pid only */
	int      fatal;                    /* -errno that ended the pass */
	int      filtered, sess_filtered;  /* any filter; --session or --pid */
	/* sessions */
	struct rp_sess **sess;
	size_t   nsess, sess_cap, last_sess;
	struct idmap sess_index;   /* session id -> its place in sess */
	/* reader problems */
	struct rp_damage *damage;
	size_t   ndamage, damage_cap;
	int      damage_open;
	uint64_t last_real;
	uint64_t evicted_records;
	/* over everything in view */
	uint64_t view_first, view_last, view_events;
	/* procs and chains */
	struct rp_proc *procs;
	size_t   nprocs, procs_cap;
	struct rp_map proc_map;
	struct rp_map loop_map;     /* (session idx, loop) -> index in its loops */
	struct rp_chain *chains;
	size_t   nchains, chains_cap;
	struct rp_map task_map;
	/* findings */
	struct rp_finding *f;
	size_t   nf, f_cap;
	uint64_t suppressed[RF_NCLASS];    /* past the cap */
	/* the timeline (lanes live in the loops) */
	uint64_t tl_t0, tl_width;
	int      tl_started;
	/* --diff */
	struct rp_hist win_lat[2];
	uint64_t win_kinds[2][RP_NKINDS + 1];
	uint64_t win_events[2];
	/* latency over every session, for the SVG */
	struct rp_hist all_lat;
	/* the adapters' loops, callbacks and rings (report_adapter.c) */
	struct rp_adapter *adapter;
};

/* report_model.c: what every analysis reads and extends (never report.c) */
/* Remember that the pass ran out of memory: it stops, and says so. */
void report_oom(struct report *rep);
/* The session, loop of s, proc of s with this id, created if new; NULL
 * (and report_oom) on -ENOMEM.  A proc pointer lasts until the next proc
 * is created. */
struct rp_sess *report_sess(struct report *rep, uint64_t id);
struct rp_loop *report_loop(struct report *rep, struct rp_sess *s, uint32_t loop);
void report_loops_sort(struct report *rep, struct rp_sess *s,
                       int (*cmp)(const void *, const void *));
struct rp_proc *report_proc(struct report *rep, struct rp_sess *s, const xtc_pid_t *pid,
                            uint32_t loop);
/* The end of what is known of s: its SESSION_END, else its last record. */
uint64_t report_sess_end(const struct rp_sess *s);
/* Whether s ended with a clean detach (its record runs to its end). */
int report_sess_clean_end(const struct rp_sess *s);
/* Whether t passes --since/--until. */
int report_time_in_view(const struct report *rep, uint64_t t);
/* How much of [from, to) of loop passes --loop/--since/--until. */
uint64_t report_view_overlap(const struct report *rep, uint32_t loop, uint64_t from, uint64_t to);
/* Whether DROP d may have taken records of loop. */
int report_drop_on_loop(const struct rp_drop *d, uint32_t loop);
/* Free every session, loop and proc. */
void report_model_free(struct report *rep);

/* report_find.c */
struct rp_finding *report_find_add(struct report *rep, enum rp_class cls, struct rp_sess *s);
void report_find_proof(struct rp_finding *f, const struct rp_ev *e);
void report_find_proof_at(struct rp_finding *f, uint32_t kind, uint64_t t, uint32_t loop,
                          const xtc_pid_t *pid, uint64_t detail);
/* Check the window [from, to] of s for losses that could hide a record of
 * scope (RS_LOOP: of loop); to_end: the window runs to the end of the
 * record (so a cut-short session cannot be trusted there).  Returns 1 and
 * fills loss when an absence cannot be trusted, else 0. */
int report_loss(const struct report *rep, const struct rp_sess *s, enum rp_scope scope,
                uint32_t loop, uint64_t from, uint64_t to, int to_end, struct rp_loss *loss);
void report_find_sort(struct report *rep);
const char *report_class_name(enum rp_class cls);
const char *report_class_key(enum rp_class cls);
/* Whether f passes --loop/--since/--until. */
int report_find_in_view(const struct report *rep, const struct rp_finding *f);
size_t report_find_count(const struct report *rep);
void report_find_text(struct report *rep);
void report_find_json(struct report *rep);
/* One line describing f (for the SVG and the diff). */
void report_find_summary(const struct report *rep, const struct rp_finding *f, char *buf,
                         size_t len);
/* What a loss is, in words ("2 records dropped on loop 1 ..."). */
void report_loss_text(const struct report *rep, const struct rp_loss *l, char *buf, size_t len);

/* report_chain.c */
void report_chain_event(struct report *rep, struct rp_sess *s, const struct rp_ev *e,
                        struct rp_proc *p);
void report_chain_finish(struct report *rep, struct rp_sess *s);
void report_chain_link(struct report *rep);
void report_chain_free(struct report *rep);

/* report_loops.c */
void report_loops_event(struct report *rep, struct rp_sess *s, struct rp_loop *l,
                        const struct rp_ev *e);
void report_loops_busy(struct report *rep, struct rp_sess *s, uint32_t loop, uint64_t from,
                       uint64_t to);
void report_loops_finish(struct report *rep, struct rp_sess *s);
/* The sum of lane of l over [from, to), bins cut in proportion. */
double report_tl_sum(const struct report *rep, const struct rp_loop *l, unsigned lane,
                     uint64_t from, uint64_t to);
void report_loops_text(struct report *rep);
void report_loops_json(struct report *rep);

/* report_latency.c */
void report_lat_event(struct report *rep, struct rp_sess *s, struct rp_loop *l,
                      const struct rp_ev *e, struct rp_proc *p);
void report_lat_text(struct report *rep);
void report_lat_json(struct report *rep);

/* report_offcpu.c */
void report_offcpu_event(struct report *rep, struct rp_sess *s, const struct rp_ev *e,
                         struct rp_proc *p);
void report_offcpu_finish(struct report *rep, struct rp_sess *s);
void report_offcpu_text(struct report *rep);
void report_offcpu_json(struct report *rep);
/* The procs with any task data, sorted by idle time (most first); the
 * caller frees the array.  Returns the count, or -ENOMEM. */
long report_offcpu_sorted(struct report *rep, uint32_t **idx);

/* report_adapter.c */
void report_adapter_event(struct report *rep, struct rp_sess *s, const struct rp_ev *e);
void report_adapter_finish(struct report *rep, struct rp_sess *s);
void report_adapter_text(struct report *rep);
void report_adapter_json(struct report *rep);
void report_adapter_free(struct report *rep);

/* report_pprof.c: 0, or the exit code (2 write/terminal, 3 no data). */
int report_export(struct report *rep, const char *format, FILE *out);

/* report_flows.c: a chain's step for the sink of --export chrome, when
 * the pass has one and e passes the filters; for a PARK_TASK the new
 * flow id (0: none), else flow. */
#define RP_CHAINS_FORMAT "chains"          /* export_format of that pass */
uint64_t report_flow_step(struct report *rep, const struct rp_sess *s, uint64_t flow,
                          const struct rp_ev *e, const xtc_pid_t *pid, uint64_t task);
/* Hand the verdicts of the chains that never completed to the sink. */
int report_flow_verdicts(struct report *rep);

/* report_svg.c: 0 or -errno. */
int report_svg(struct report *rep, const char *path);

/* report_diff.c */
void report_diff_text(struct report *rep);
void report_diff_json(struct report *rep);

#endif /* XTCD_REPORT_INT_H */
