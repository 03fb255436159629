/*
 * lib/ev/xev.h - state shared inside libxtctail-ev (not installed).
 *
 *   xev.c      the interposed libev functions, per-loop state, the
 *              invoke-pending and release/acquire hooks, fork, bypass checks
 *   xev_cb.c   callback trampolines: one per distinct (callback, watcher
 *              kind), so a watcher needs no per-watcher table at all
 */
#ifndef XTC_LIB_EV_XEV_H
#define XTC_LIB_EV_XEV_H

#include <stdint.h>

#include <ev.h>

#include "xtc_tail.h"

#if !EV_MULTIPLICITY
#error "libxtctail-ev interposes the EV_MULTIPLICITY=1 libev API (Debian's libev.so.4)"
#endif

#define XEV_API __attribute__((visibility("default")))

typedef void (*xev_cb_fn)(struct ev_loop *, void *, int);

/* One libev loop this process ran. */
struct xev_loop {
	struct ev_loop *loop;       /* key; NULL while the entry is free */
	uint32_t id;                /* the pid.loop_id of its records */
	int      installed;         /* our invoke and release hooks are set */
	int      destroyed;         /* ev_loop_destroy ran: a new loop may reuse it */
	ev_loop_callback app_invoke;            /* what the program set, or NULL */
	void   (*app_release)(struct ev_loop *);
	void   (*app_acquire)(struct ev_loop *);
	uint64_t wait_ts;           /* ticks when it entered the wait */
	uint64_t wake_ts;           /* ticks when it last returned from it */
	uint64_t hol_base;          /* ticks head-of-line delay counts from */
	int      woke;              /* a wake since the last dispatch */
	int      dispatching;       /* inside our invoke hook (any thread) */
};

/* The real libev functions, found with dlsym(RTLD_NEXT). */
struct xev_real {
	int      (*run)(struct ev_loop *, int);
	void     (*invoke_pending)(struct ev_loop *);
	unsigned (*pending_count)(struct ev_loop *);
	unsigned (*iteration)(struct ev_loop *);
	void     (*set_invoke_pending_cb)(struct ev_loop *, ev_loop_callback);
	void     (*set_loop_release_cb)(struct ev_loop *, void (*)(struct ev_loop *),
	                                void (*)(struct ev_loop *));
	void     (*loop_destroy)(struct ev_loop *);
};

extern struct xev_real xev_real;
extern int xev_cb_on;        /* XTC_TAIL_EV_CALLBACKS */
extern int xev_watch_on;     /* XTC_TAIL_EV_WATCHERS */
extern unsigned xev_gen;     /* bumped in a forked child */
extern uintptr_t xev_libev_lo, xev_libev_hi;  /* libev's code */

/* xev.c: the loop's state (created on first sight), or NULL when the
 * table is full. */
struct xev_loop *xev_loop_get(struct ev_loop *loop);

/* xev_cb.c */
void xev_cb_init(void);
/* Put a trampoline on w's callback if it has none (a start). */
void xev_cb_wrap(ev_watcher *w, unsigned wkind);
/* Give w its own callback back (a stop by the program). */
void xev_cb_unwrap(ev_watcher *w);
/* The trampolines' section (xev_cb.c): a callback outside it is none. */
extern const char __start_xev_tramp[] __attribute__((visibility("hidden")));
extern const char __stop_xev_tramp[] __attribute__((visibility("hidden")));
static inline int xev_maybe_tramp(const void *cb)
{
	return (uintptr_t)cb - (uintptr_t)__start_xev_tramp <
	       (uintptr_t)__stop_xev_tramp - (uintptr_t)__start_xev_tramp;
}
/* The trampolines in use and the callbacks left unwrapped for want of one. */
unsigned xev_cb_count(void);
uint64_t xev_cb_unwrapped(void);

/* pid.local_id of a watcher: its fd, signal or child pid, else NOFD. */
static inline uint32_t xev_ident(unsigned wkind, const void *w)
{
	switch (wkind) {
	case XTC_TAIL_W_IO:     return (uint32_t)((const ev_io *)w)->fd;
	case XTC_TAIL_W_SIGNAL: return (uint32_t)((const ev_signal *)w)->signum;
	case XTC_TAIL_W_CHILD:  return (uint32_t)((const ev_child *)w)->pid;
	default:                return XTC_TAIL_CB_NOFD;
	}
}

#endif /* XTC_LIB_EV_XEV_H */
