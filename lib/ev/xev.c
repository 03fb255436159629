/*
 * lib/ev/xev.c - libxtctail-ev: record every libev loop of a program that
 * was never instrumented.
 *
 *   LD_PRELOAD=libxtctail-ev.so XTC_TAIL_SHM=1 ./any-libev-program
 *
 * Debian's libev.so.4 exports unversioned symbols and calls its own
 * exported functions through its PLT, so a preloaded definition of ev_run,
 * ev_TYPE_start/stop and the two hook setters is called by the program and
 * by libev itself.  Each one does its part and calls the real function
 * (dlsym RTLD_NEXT):
 *
 *   ev_run                   binds the running thread's ring to the loop
 *                            (a nested run of another loop rebinds, and
 *                            restores on return) and, once per loop, sets
 *                            our invoke-pending and release/acquire hooks
 *   release / acquire        LOOP_WAIT on entering the backend wait,
 *                            LOOP_WAKE (ns blocked) on return; then the
 *                            program's own hooks
 *   invoke-pending           the program's own (or ev_invoke_pending),
 *                            timed: LOOP_DISPATCH (pending count, ns)
 *   ev_set_invoke_pending_cb remember what the program sets; ours stays
 *   ev_set_loop_release_cb   installed and calls it
 *   ev_TYPE_start / stop     a trampoline on the callback (xev_cb.c) for
 *                            CB_BEGIN / CB_END; WATCH_START / WATCH_STOP
 *
 * Switches: XTC_TAIL_EV=0 (pass everything through), XTC_TAIL_EV_CALLBACKS
 * (callback records, default on), XTC_TAIL_EV_WATCHERS (start/stop
 * records, default off).  See xtc_tail_ev(3).
 */
#include "config.h"

/* ev.h before elf.h: elf.h defines EV_NONE, an enumerator of ev.h. */
#include "lib/ev/xev.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/adapt.h"

#define XEV_MAX_LOOPS 256u          /* distinct loop addresses a process may run */
#define XEV_LOOP_TAB  1024u

struct xev_real xev_real;
int xev_cb_on = 1;
int xev_watch_on;
unsigned xev_gen = 1;
uintptr_t xev_libev_lo, xev_libev_hi;

static int xev_off;                 /* XTC_TAIL_EV=0, or no libev */
static unsigned xev_runs;           /* ev_run calls seen, for the bypass check */
static pthread_mutex_t loops_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xev_loop loops[XEV_MAX_LOOPS];
static unsigned loops_used;
static uint32_t next_loop_id;
static struct xev_loop *loop_tab[XEV_LOOP_TAB];

/* The loop a thread last looked up, and the loop its ring is bound to. */
struct xev_tls {
	struct ev_loop  *loop;
	struct xev_loop *state;
	struct xev_loop *bound;
	unsigned         bound_gen;
};
static __thread struct xev_tls xt __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------------
 * Loops
 */

static inline uint32_t loop_slot(const struct ev_loop *loop)
{
	return (uint32_t)(((uint64_t)(uintptr_t)loop * 0x9E3779B97F4A7C15ull) >> 54) &
	       (XEV_LOOP_TAB - 1);
}

/* A fresh state for a loop seen for the first time (or reused after
 * ev_loop_destroy).  Called with loops_lock. */
static void loop_reset(struct xev_loop *L, struct ev_loop *loop)
{
	memset(L, 0, sizeof *L);
	L->id = next_loop_id++;
	__atomic_store_n(&L->loop, loop, __ATOMIC_RELEASE);
}

/* The slow path: probe the table, add the loop if it is new. */
static struct xev_loop *loop_lookup(struct ev_loop *loop)
{
	struct xev_loop *L;
	uint32_t i = loop_slot(loop);

	for (uint32_t n = 0; n < XEV_LOOP_TAB; n++, i = (i + 1) & (XEV_LOOP_TAB - 1)) {
		L = __atomic_load_n(&loop_tab[i], __ATOMIC_ACQUIRE);
		if (L == NULL)
			break;
		if (__atomic_load_n(&L->loop, __ATOMIC_ACQUIRE) == loop)
			return L;
	}
	pthread_mutex_lock(&loops_lock);
	for (i = loop_slot(loop); (L = loop_tab[i]) != NULL; i = (i + 1) & (XEV_LOOP_TAB - 1))
		if (L->loop == loop)
			goto out; /* another thread added it meanwhile */
	if (loops_used == XEV_MAX_LOOPS) {
		if (loops_used++ == XEV_MAX_LOOPS)
			adapt_log("libxtctail-ev: more than %u loops; the rest are not recorded",
			          XEV_MAX_LOOPS);
		L = NULL;
		goto out;
	}
	L = &loops[loops_used++];
	loop_reset(L, loop);
	__atomic_store_n(&loop_tab[i], L, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&loops_lock);
	return L;
}

struct xev_loop *xev_loop_get(struct ev_loop *loop)
{
	struct xev_loop *L;

	if (__builtin_expect(xt.loop == loop && xt.state != NULL && !xt.state->destroyed, 1))
		return xt.state;
	L = loop_lookup(loop);
	if (L != NULL && __atomic_load_n(&L->destroyed, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&loops_lock);
		if (L->destroyed)
			loop_reset(L, loop); /* a new loop at a destroyed one's address */
		pthread_mutex_unlock(&loops_lock);
	}
	xt.loop = loop;
	xt.state = L;
	return L;
}

/* Make this thread's ring the loop's.  -EBUSY (a live thread that ran the
 * loop before still owns its ring) leaves the records on this thread's
 * ring: each record names its loop anyway. */
static void loop_bind(struct xev_loop *L)
{
	int err;

	if (xt.bound == L && xt.bound_gen == xev_gen)
		return;
	xt.bound = L;
	xt.bound_gen = xev_gen;
	err = xtc_tail_loop_bind(L->id);
	if (err < 0 && err != -ENODEV)
		adapt_log("libxtctail-ev: loop %u: no ring of its own (%s); its records "
		          "go to this thread's ring", L->id, strerror(-err));
}

/* ---------------------------------------------------------------------
 * The hooks libev calls
 */

static void xev_release(struct ev_loop *loop)
{
	struct xev_loop *L = xev_loop_get(loop);

	if (L == NULL)
		return;
	if (xtc_tail_on(XTC_TAIL_SCHED)) {
		if (__builtin_expect(xt.bound_gen != xev_gen, 0))
			loop_bind(L); /* a forked child still inside ev_run */
		L->wait_ts = clock_now();
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_LOOP_WAIT, ((xtc_pid_t){ L->id, 0, 0 }),
		              xev_real.iteration(loop));
	}
	if (L->app_release != NULL)
		L->app_release(loop);
}

/* Ours first, then the program's: its acquire may wait for a lock that
 * another thread holds, and that is not the backend's wait. */
static void xev_acquire(struct ev_loop *loop)
{
	struct xev_loop *L = xev_loop_get(loop);
	uint64_t now;

	if (L == NULL)
		return;
	if (xtc_tail_on(XTC_TAIL_SCHED)) {
		now = clock_now();
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_LOOP_WAKE, ((xtc_pid_t){ L->id, 0, 0 }),
		              L->wait_ts != 0 ? adapt_ns(now - L->wait_ts) : 0);
		__atomic_store_n(&L->wake_ts, now, __ATOMIC_RELAXED);
		L->woke = 1;
	}
	if (L->app_acquire != NULL)
		L->app_acquire(loop);
}

static void xev_invoke(struct ev_loop *loop)
{
	struct xev_loop *L = xev_loop_get(loop);
	ev_loop_callback fn = L != NULL && L->app_invoke != NULL ? L->app_invoke : xev_real.invoke_pending;
	unsigned pending;
	uint64_t t0;

	if (L == NULL || !xtc_tail_on(XTC_TAIL_SCHED)) {
		fn(loop);
		return;
	}
	pending = xev_real.pending_count(loop);
	t0 = clock_now();
	L->hol_base = L->woke ? __atomic_load_n(&L->wake_ts, __ATOMIC_RELAXED) : t0;
	L->woke = 0;
	__atomic_add_fetch(&L->dispatching, 1, __ATOMIC_RELAXED);
	fn(loop);
	__atomic_sub_fetch(&L->dispatching, 1, __ATOMIC_RELAXED);
	if (pending != 0) /* libev calls it at every ev_run entry too, mostly empty */
		xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_LOOP_DISPATCH,
		              ((xtc_pid_t){ L->id, pending, 0 }), adapt_ns(clock_now() - t0));
}

/* Set our hooks on the loop, once; the program's stay in L and are
 * called from ours. */
static void loop_install(struct ev_loop *loop, struct xev_loop *L)
{
	if (L->installed)
		return;
	L->installed = 1;
	xev_real.set_invoke_pending_cb(loop, xev_invoke);
	xev_real.set_loop_release_cb(loop, xev_release, xev_acquire);
}

/* ---------------------------------------------------------------------
 * The interposed API
 */

XEV_API int ev_run(struct ev_loop *loop, int flags)
{
	struct xev_loop *L, *prev;
	unsigned prev_gen;
	int ret;

	__atomic_add_fetch(&xev_runs, 1, __ATOMIC_RELAXED);
	if (xev_off || (L = xev_loop_get(loop)) == NULL)
		return xev_real.run(loop, flags);
	loop_install(loop, L);
	prev = xt.bound;
	prev_gen = xt.bound_gen;
	if (xtc_tail_on(XTC_TAIL_SCHED))
		loop_bind(L);
	ret = xev_real.run(loop, flags);
	if (prev != NULL && prev != L && prev_gen == xev_gen && xtc_tail_on(XTC_TAIL_SCHED))
		loop_bind(prev); /* back to the loop whose callback ran this one */
	return ret;
}

XEV_API void ev_set_invoke_pending_cb(struct ev_loop *loop, ev_loop_callback cb)
{
	struct xev_loop *L = xev_off ? NULL : xev_loop_get(loop);

	if (L == NULL) {
		xev_real.set_invoke_pending_cb(loop, cb);
		return;
	}
	L->app_invoke = cb == xev_invoke ? NULL : cb;
	if (!L->installed)
		xev_real.set_invoke_pending_cb(loop, cb);
}

XEV_API void ev_set_loop_release_cb(struct ev_loop *loop, void (*release)(struct ev_loop *),
                                    void (*acquire)(struct ev_loop *))
{
	struct xev_loop *L = xev_off ? NULL : xev_loop_get(loop);

	if (L == NULL) {
		xev_real.set_loop_release_cb(loop, release, acquire);
		return;
	}
	L->app_release = release == xev_release ? NULL : release;
	L->app_acquire = acquire == xev_acquire ? NULL : acquire;
	if (!L->installed)
		xev_real.set_loop_release_cb(loop, release, acquire);
}

XEV_API void ev_loop_destroy(struct ev_loop *loop)
{
	struct xev_loop *L = xev_off ? NULL : xev_loop_get(loop);

	xev_real.loop_destroy(loop);
	if (L != NULL) {
		__atomic_store_n(&L->destroyed, 1, __ATOMIC_RELEASE);
		if (xt.bound == L)
			xt.bound = NULL;
		xt.state = NULL;
	}
}

/* A stop the program asked for gives the watcher its callback back.  A
 * stop from inside libev keeps the trampoline: libev stops an expired
 * one-shot timer (timers_reify) and a dead fd's io watcher (fd_kill)
 * just before it queues their callbacks. */
static inline int called_by_libev(const void *ret)
{
	return (uintptr_t)ret >= xev_libev_lo && (uintptr_t)ret < xev_libev_hi;
}

static void watch_rec(struct ev_loop *loop, ev_watcher *w, unsigned wkind, uint32_t kind,
                      uint64_t detail)
{
	struct xev_loop *L = xev_loop_get(loop);

	if (L == NULL || !xtc_tail_on(XTC_TAIL_SCHED))
		return;
	xtc_tail_emit(XTC_TAIL_SCHED, kind,
	              ((xtc_pid_t){ L->id, xev_ident(wkind, w), XTC_TAIL_CB_GEN(wkind, 0xFFF, w) }),
	              detail);
}

static inline uint64_t watch_detail(unsigned wkind, const void *w)
{
	if (wkind == XTC_TAIL_W_IO)
		return (uint64_t)((const ev_io *)w)->events;
	if (wkind == XTC_TAIL_W_TIMER)
		return (uint64_t)(((const ev_timer *)w)->repeat * 1e9);
	return 0;
}

#define XEV_REAL(type, what) \
	static void (*real_##type##_##what)(struct ev_loop *, ev_##type *)

#define XEV_HOOKS(type, WKIND)                                                          \
	XEV_REAL(type, start);                                                          \
	XEV_REAL(type, stop);                                                           \
	XEV_API void ev_##type##_start(struct ev_loop *loop, ev_##type *w)              \
	{                                                                               \
		if (xev_cb_on && !xev_off)                                              \
			xev_cb_wrap((ev_watcher *)w, WKIND);                            \
		real_##type##_start(loop, w);                                           \
		if (xev_watch_on && !xev_off)                                           \
			watch_rec(loop, (ev_watcher *)w, WKIND, XTC_TAIL_WATCH_START,   \
			          watch_detail(WKIND, w));                              \
	}                                                                               \
	XEV_API void ev_##type##_stop(struct ev_loop *loop, ev_##type *w)               \
	{                                                                               \
		if (xev_watch_on && !xev_off && ev_is_active(w))                        \
			watch_rec(loop, (ev_watcher *)w, WKIND, XTC_TAIL_WATCH_STOP, 0);\
		if (xev_cb_on && xev_maybe_tramp((void *)w->cb) &&                      \
		    !called_by_libev(__builtin_return_address(0)))                      \
			xev_cb_unwrap((ev_watcher *)w);                                 \
		real_##type##_stop(loop, w);                                            \
	}

XEV_HOOKS(io, XTC_TAIL_W_IO)
XEV_HOOKS(timer, XTC_TAIL_W_TIMER)
XEV_HOOKS(periodic, XTC_TAIL_W_PERIODIC)
XEV_HOOKS(signal, XTC_TAIL_W_SIGNAL)
XEV_HOOKS(child, XTC_TAIL_W_CHILD)
XEV_HOOKS(stat, XTC_TAIL_W_STAT)
XEV_HOOKS(idle, XTC_TAIL_W_IDLE)
XEV_HOOKS(prepare, XTC_TAIL_W_PREPARE)
XEV_HOOKS(check, XTC_TAIL_W_CHECK)
XEV_HOOKS(embed, XTC_TAIL_W_EMBED)
XEV_HOOKS(fork, XTC_TAIL_W_FORK)
XEV_HOOKS(cleanup, XTC_TAIL_W_CLEANUP)
XEV_HOOKS(async, XTC_TAIL_W_ASYNC)

/* ---------------------------------------------------------------------
 * Load, fork, bypass checks
 */

/* An address inside this library that no other object can interpose. */
static void xev_real_sym_anchor(void)
{
}

static void *real_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (p == NULL)
		xev_off = 1;
	return p;
}

static void resolve_real(void)
{
	xev_real.run = real_sym("ev_run");
	xev_real.invoke_pending = real_sym("ev_invoke_pending");
	xev_real.pending_count = real_sym("ev_pending_count");
	xev_real.iteration = real_sym("ev_iteration");
	xev_real.set_invoke_pending_cb = real_sym("ev_set_invoke_pending_cb");
	xev_real.set_loop_release_cb = real_sym("ev_set_loop_release_cb");
	xev_real.loop_destroy = real_sym("ev_loop_destroy");
#define R(type)                                                      \
	real_##type##_start = real_sym("ev_" #type "_start");        \
	real_##type##_stop = real_sym("ev_" #type "_stop");
	R(io) R(timer) R(periodic) R(signal) R(child) R(stat) R(idle) R(prepare) R(check)
	R(embed) R(fork) R(cleanup) R(async)
#undef R
}

struct find_text {
	uintptr_t base;
	uintptr_t lo, hi;
	int symbolic;
};

/* libev's executable segment, and whether it was linked -Bsymbolic. */
static int find_text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_text *f = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || f->base < lo ||
		    f->base >= lo + ph->p_memsz)
			continue;
		f->lo = lo;
		f->hi = lo + ph->p_memsz;
		for (int j = 0; j < info->dlpi_phnum; j++) {
			const ElfW(Phdr) *d = &info->dlpi_phdr[j];

			if (d->p_type != PT_DYNAMIC)
				continue;
			for (const ElfW(Dyn) *dyn = (const void *)(info->dlpi_addr + d->p_vaddr);
			     dyn->d_tag != DT_NULL; dyn++)
				if (dyn->d_tag == DT_SYMBOLIC ||
				    (dyn->d_tag == DT_FLAGS && (dyn->d_un.d_val & DF_SYMBOLIC)))
					f->symbolic = 1;
		}
		return 1;
	}
	return 0;
}

/* Say (under XTC_DEBUG) when the program's libev is not the one we
 * interpose: a copy in the executable or another library ahead of us
 * (static or vendored ev.c, EV_MULTIPLICITY=0 builds), or a libev linked
 * -Bsymbolic, whose own internal calls skip us. */
static void check_bypass(void)
{
	Dl_info me, def;
	void *first = dlsym(RTLD_DEFAULT, "ev_run");
	struct find_text f = { 0 };

	if (xev_real.run == NULL) {
		adapt_log("libxtctail-ev: no libev in this process after libxtctail-ev; nothing "
		          "to record (a program with its own static copy of libev is not seen)");
		return;
	}
	if (dladdr((void *)xev_real_sym_anchor, &me) != 0 && first != NULL && dladdr(first, &def) != 0 &&
	    def.dli_fbase != me.dli_fbase)
		adapt_log("libxtctail-ev: ev_run of %s comes before ours: this program's libev "
		          "(static, vendored, or linked ahead of libxtctail-ev) is not recorded",
		          def.dli_fname);
	f.base = (uintptr_t)xev_real.run;
	dl_iterate_phdr(find_text_cb, &f);
	xev_libev_lo = f.lo;
	xev_libev_hi = f.hi;
	if (f.symbolic)
		adapt_log("libxtctail-ev: libev was linked -Bsymbolic: watchers it starts "
		          "itself are not recorded");
	adapt_log("libxtctail-ev: recording libev loops, callbacks %s, watcher start/stop %s",
	          xev_cb_on ? "on" : "off", xev_watch_on ? "on" : "off");
}

static void xev_atfork_child(void)
{
	pthread_mutex_init(&loops_lock, NULL);
	__atomic_add_fetch(&xev_gen, 1, __ATOMIC_RELAXED); /* rebind, re-announce */
}

__attribute__((constructor)) static void xev_load(void)
{
	adapt_clock_setup();
	xev_cb_init();
	resolve_real();
	xev_cb_on = adapt_env_flag("XTC_TAIL_EV_CALLBACKS", 1);
	xev_watch_on = adapt_env_flag("XTC_TAIL_EV_WATCHERS", 0);
	if (!adapt_env_flag("XTC_TAIL_EV", 1))
		xev_off = 1;
	if (xev_off)
		xev_cb_on = xev_watch_on = 0;
	pthread_atfork(NULL, NULL, xev_atfork_child);
	check_bypass();
}

__attribute__((destructor)) static void xev_unload(void)
{
	if (!xev_off && __atomic_load_n(&xev_runs, __ATOMIC_RELAXED) == 0)
		adapt_log("libxtctail-ev: no ev_run went through libxtctail-ev in this process "
		          "(not a libev program, or one with its own copy of libev)");
	else if (!xev_off)
		adapt_log("libxtctail-ev: %u loops, %u callbacks wrapped, %llu left unwrapped",
		          loops_used, xev_cb_count(), (unsigned long long)xev_cb_unwrapped());
}
