/*
 * lib/ev/xev_cb.c - callback records by trampoline.
 *
 * A started watcher's callback is replaced by a trampoline, and the
 * trampoline, not the watcher, knows the callback it stands for: there is
 * one trampoline per distinct (callback function, watcher kind), a few
 * dozen in a real program.  So nothing is kept per watcher: a watcher
 * copied while active, called through ev_cb(w), or freed inside its
 * callback needs no lookup and leaves nothing behind, and start/stop churn
 * (nghttpd starts a timer per HTTP/2 stream) costs one probe of a table
 * that never grows past the number of callbacks.
 *
 * Two insert-only open-addressing tables, no deletion, so no tombstones:
 *   tramp_tab   trampoline address -> its number (filled once at load)
 *   orig_tab    (callback, kind)   -> its number (filled as callbacks appear,
 *               lock-free: a slot is claimed by CAS, then its value
 *               published)
 */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>

#include "lib/adapt.h"
#include "lib/ev/xev.h"

#define XEV_NTRAMP 256u                /* distinct callbacks we can wrap */
#define XEV_TAB    1024u               /* slots in each table, 4x NTRAMP */

struct xev_cb {
	xev_cb_fn fn;                  /* the program's callback */
	unsigned  wkind;               /* enum xtc_tail_watcher */
	unsigned  announced;           /* xev_gen when its CB_FUNC was written */
};

struct xev_slot {
	uintptr_t key;                 /* 0: free */
	uint32_t  val;                 /* number + 1; 0 while being published */
};

static struct xev_cb cbs[XEV_NTRAMP];
static int16_t slot_k[XEV_NTRAMP * 2];  /* 16-byte slot of the section -> k */
static int slots_ok;
static unsigned cb_next;
static uint64_t cb_unwrapped;
static struct xev_slot tramp_tab[XEV_TAB], orig_tab[XEV_TAB];

static void tramp_run(struct ev_loop *loop, void *w, int revents, unsigned k)
	__attribute__((noinline));

/* 256 trampolines, each a call of tramp_run with its own number.  A
 * name's digits are base 4 (xev_t0213); pasted behind a 0 they make an
 * octal literal whose octal digits are those base-4 digits, and B4 reads
 * them back as the number, at compile time. */
#define B4(o) ((((o) >> 9) & 7) * 64 + (((o) >> 6) & 7) * 16 + (((o) >> 3) & 7) * 4 + ((o) & 7))
/* Each is "mov $k, %ecx; jmp tramp_run", 10 bytes, in a section of its
 * own at 16-byte alignment: so a callback is a trampoline when its address
 * falls in the section, and which one is its 16-byte slot (tramp_init
 * checks that layout and falls back to tramp_tab when the compiler made
 * something else of them, as without optimisation). */
#define T1(n) __attribute__((section("xev_tramp"), aligned(16), noinline)) \
	static void xev_t##n(struct ev_loop *l, void *w, int r) { tramp_run(l, w, r, B4(0##n)); }
#define T4(n) T1(n##0) T1(n##1) T1(n##2) T1(n##3)
#define T16(n) T4(n##0) T4(n##1) T4(n##2) T4(n##3)
#define T64(n) T16(n##0) T16(n##1) T16(n##2) T16(n##3)
T64(0) T64(1) T64(2) T64(3)
#define R1(n) xev_t##n,
#define R4(n) R1(n##0) R1(n##1) R1(n##2) R1(n##3)
#define R16(n) R4(n##0) R4(n##1) R4(n##2) R4(n##3)
#define R64(n) R16(n##0) R16(n##1) R16(n##2) R16(n##3)
/* Trampoline k is tramps[k]: listed in the order of their numbers. */
static const xev_cb_fn tramps[XEV_NTRAMP] = { R64(0) R64(1) R64(2) R64(3) };

static inline uint32_t slot_of(uintptr_t key)
{
	return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 54) & (XEV_TAB - 1);
}

/* The value for key, or -1. */
static int tab_find(const struct xev_slot *tab, uintptr_t key)
{
	for (uint32_t i = slot_of(key), n = 0; n < XEV_TAB; i = (i + 1) & (XEV_TAB - 1), n++) {
		uintptr_t k = __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE);

		if (k == 0)
			return -1;
		if (k == key) {
			uint32_t v = __atomic_load_n(&tab[i].val, __ATOMIC_ACQUIRE);

			return v == 0 ? -1 : (int)v - 1; /* being published: not yet */
		}
	}
	return -1;
}

/* The trampoline number of fn, or -1 when fn is none. */
static inline int tramp_of(xev_cb_fn fn)
{
	uintptr_t off = (uintptr_t)fn - (uintptr_t)__start_xev_tramp;

	if (__builtin_expect(slots_ok, 1))
		return off < sizeof(slot_k) / sizeof(slot_k[0]) * 16 && (off & 15) == 0 ? slot_k[off >> 4] : -1;
	return tab_find(tramp_tab, (uintptr_t)fn);
}

/* Map each 16-byte slot of the section to its trampoline, if they are
 * laid out one to a slot. */
static void slots_init(void)
{
	uintptr_t base = (uintptr_t)__start_xev_tramp, end = (uintptr_t)__stop_xev_tramp;

	for (unsigned i = 0; i < sizeof(slot_k) / sizeof(slot_k[0]); i++)
		slot_k[i] = -1;
	if (end - base > sizeof(slot_k) / sizeof(slot_k[0]) * 16)
		return;
	for (unsigned k = 0; k < XEV_NTRAMP; k++) {
		uintptr_t off = (uintptr_t)tramps[k] - base;

		if (off >= end - base || (off & 15) != 0 || slot_k[off >> 4] != -1)
			return;
		slot_k[off >> 4] = (int16_t)k;
	}
	slots_ok = 1;
}

void xev_cb_init(void)
{
	slots_init();
	if (!slots_ok)
		adapt_log("libxtctail-ev: trampolines are not one to a 16-byte slot (an "
		          "unoptimised build?); finding them by table instead");
	for (unsigned k = 0; k < XEV_NTRAMP; k++) {
		uintptr_t key = (uintptr_t)tramps[k];
		uint32_t i = slot_of(key);

		while (tramp_tab[i].key != 0)
			i = (i + 1) & (XEV_TAB - 1);
		tramp_tab[i].key = key;
		tramp_tab[i].val = k + 1;
	}
}

/* The last (callback, kind) a thread wrapped: a server restarts the same
 * few over and over. */
static __thread struct { uintptr_t key; int k; } last_orig __attribute__((tls_model("initial-exec")));

/* The trampoline number of (fn, wkind), given one if it has none; -1 when
 * all are taken. */
static int orig_get(xev_cb_fn fn, unsigned wkind)
{
	uintptr_t key = (uintptr_t)fn ^ ((uintptr_t)wkind << 56);
	int k;
	unsigned mine;

	if (last_orig.key == key)
		return last_orig.k;
	k = tab_find(orig_tab, key);
	if (k >= 0) {
		last_orig.key = key;
		last_orig.k = k;
		return k;
	}
	for (uint32_t i = slot_of(key), n = 0; n < XEV_TAB; i = (i + 1) & (XEV_TAB - 1), n++) {
		uintptr_t expect = 0;

		if (__atomic_compare_exchange_n(&orig_tab[i].key, &expect, key, 0, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE)) {
			mine = __atomic_fetch_add(&cb_next, 1, __ATOMIC_RELAXED);
			if (mine >= XEV_NTRAMP)
				return -1; /* the slot stays claimed with no value: unwrapped */
			cbs[mine].fn = fn;
			cbs[mine].wkind = wkind;
			__atomic_store_n(&orig_tab[i].val, mine + 1, __ATOMIC_RELEASE);
			return (int)mine;
		}
		if (expect == key)
			return tab_find(orig_tab, key); /* another thread: wait for its value */
	}
	return -1;
}

void xev_cb_wrap(ev_watcher *w, unsigned wkind)
{
	xev_cb_fn fn = (xev_cb_fn)w->cb;
	int k;

	if (fn == NULL || ev_is_active(w) || tramp_of(fn) >= 0)
		return; /* a no-op start, or wrapped already (restarted, copied) */
	k = orig_get(fn, wkind);
	if (k < 0) {
		if (__atomic_fetch_add(&cb_unwrapped, 1, __ATOMIC_RELAXED) == 0)
			adapt_log("libxtctail-ev: more than %u distinct callbacks; "
			         "the rest run unrecorded", XEV_NTRAMP);
		return;
	}
	w->cb = (void (*)(struct ev_loop *, ev_watcher *, int))tramps[k];
}

void xev_cb_unwrap(ev_watcher *w)
{
	int k = tramp_of((xev_cb_fn)w->cb);

	if (k >= 0)
		w->cb = (void (*)(struct ev_loop *, ev_watcher *, int))cbs[k].fn;
}

unsigned xev_cb_count(void)
{
	unsigned n = __atomic_load_n(&cb_next, __ATOMIC_RELAXED);

	return n < XEV_NTRAMP ? n : XEV_NTRAMP;
}

uint64_t xev_cb_unwrapped(void)
{
	return __atomic_load_n(&cb_unwrapped, __ATOMIC_RELAXED);
}

/* Say once per process (and again in a forked child) which function
 * callback k is, with its offset in its file for addr2line. */
static void announce(unsigned k, uint32_t loop_id)
{
	struct xev_cb *c = &cbs[k];
	Dl_info info;
	uint64_t off = 0;

	__atomic_store_n(&c->announced, xev_gen, __ATOMIC_RELAXED);
	if (dladdr((void *)c->fn, &info) != 0 && info.dli_fbase != NULL)
		off = (uint64_t)((uintptr_t)c->fn - (uintptr_t)info.dli_fbase);
	xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_CB_FUNC, ((xtc_pid_t){ loop_id, k, off }),
	              (uint64_t)(uintptr_t)c->fn);
}

static void tramp_run(struct ev_loop *loop, void *w, int revents, unsigned k)
{
	const struct xev_cb *c = &cbs[k];
	struct xev_loop *L;
	xtc_pid_t pid;
	uint64_t t0, hol;

	if (!xtc_tail_on(XTC_TAIL_SCHED) || (L = xev_loop_get(loop)) == NULL) {
		c->fn(loop, w, revents);
		return;
	}
	if (__builtin_expect(__atomic_load_n(&c->announced, __ATOMIC_RELAXED) != xev_gen, 0))
		announce(k, L->id);
	/* Read the watcher now: the callback may free it. */
	pid.loop_id = L->id;
	pid.local_id = xev_ident(c->wkind, w);
	pid.gen = XTC_TAIL_CB_GEN(c->wkind, k, w);
	t0 = clock_now();
	hol = L->dispatching ? adapt_ns(t0 - L->hol_base) : 0;
	xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_CB_BEGIN, pid, hol);
	c->fn(loop, w, revents);
	xtc_tail_emit(XTC_TAIL_SCHED, XTC_TAIL_CB_END, pid, adapt_ns(clock_now() - t0));
}
