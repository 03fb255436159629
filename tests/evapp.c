/*
 * tests/evapp.c - xtc-evapp: a libev program with known behaviour, never
 * instrumented, for libxtctail-ev (tests/e2e_ev_adapter.sh).  It prints
 * what its own callbacks did; the lines starting "app " must be the same
 * with and without the adapter, the lines starting "seen " are what the
 * test compares with the record.
 *
 * In order, on the default loop (loop id 0 under the adapter, the first
 * loop to run):
 *   slow      a timer whose callback runs 40 ms
 *   again     a one-shot timer restarted from its own callback, 5 runs
 *   setcb     an active periodic timer whose callback is replaced with
 *             ev_set_cb, then stopped and restarted: cb_a then cb_b
 *   nested    a callback that runs a second loop to completion (ev_run
 *             inside a callback), whose timer fires 3 times
 *   hooks     a loop with the program's own invoke-pending and
 *             release/acquire callbacks, counted
 *   threads   two loops on two threads, 20 timer runs each
 *   other     libev's threads example: the loop's invoke-pending callback
 *             has another thread run ev_invoke_pending, under a mutex the
 *             release/acquire callbacks drop and take; 10 timer runs, all
 *             on that other thread
 *   idle      a loop on a thread blocked in its wait for 600 ms with
 *             nothing to do, then woken by ev_async_send
 *   fork      a child forked from a callback runs its loop (ev_loop_fork)
 *             for 4 timer runs and exits
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

static void spin_ms(int ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

/* ---- slow ---- */
static int slow_runs;
static void slow_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	spin_ms(40);
	slow_runs++;
}

/* ---- again ---- */
static int again_runs;
static void again_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	if (++again_runs < 5) {
		ev_timer_set(w, 0.001, 0.);
		ev_timer_start(loop, w);
	}
}

/* ---- setcb ---- */
static int cb_a_runs, cb_b_runs;
static void cb_b(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	if (++cb_b_runs == 3)
		ev_timer_stop(loop, w);
}
static void cb_a(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)revents;
	if (++cb_a_runs == 2)
		ev_set_cb(w, cb_b); /* while active: the adapter sees it at the next start */
}

/* ---- nested ---- */
static int inner_runs, nested_runs;
static void inner_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	if (++inner_runs == 3)
		ev_timer_stop(loop, w);
}
static void nested_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ev_loop *inner = ev_loop_new(EVFLAG_AUTO);
	ev_timer t;

	(void)loop; (void)w; (void)revents;
	ev_timer_init(&t, inner_cb, 0.002, 0.002);
	ev_timer_start(inner, &t);
	ev_run(inner, 0);
	ev_loop_destroy(inner);
	nested_runs++;
}

/* ---- hooks ---- */
static unsigned app_invokes, app_releases, app_acquires, hook_runs;
static void app_invoke(struct ev_loop *loop)
{
	app_invokes++;
	ev_invoke_pending(loop);
}
static void app_release(struct ev_loop *loop)
{
	(void)loop;
	app_releases++;
}
static void app_acquire(struct ev_loop *loop)
{
	(void)loop;
	app_acquires++;
}
static void hook_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	if (++hook_runs == 10)
		ev_timer_stop(loop, w);
}

/* ---- threads ---- */
struct worker {
	int runs;
	struct ev_loop *loop;
};
static void worker_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct worker *k = w->data;

	(void)revents;
	if (++k->runs == 20)
		ev_timer_stop(loop, w);
}
static void *worker_main(void *arg)
{
	struct worker *k = arg;
	ev_timer t;

	k->loop = ev_loop_new(EVFLAG_AUTO);
	ev_timer_init(&t, worker_cb, 0.001, 0.001);
	t.data = k;
	ev_timer_start(k->loop, &t);
	ev_run(k->loop, 0);
	ev_loop_destroy(k->loop);
	return NULL;
}

/* ---- other: callbacks invoked on another thread ---- */
static pthread_mutex_t ot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ot_cond = PTHREAD_COND_INITIALIZER;
static int ot_want, ot_done, ot_runs, ot_elsewhere;
static pthread_t ot_loop_thread;
static void ot_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	ot_elsewhere += !pthread_equal(pthread_self(), ot_loop_thread);
	if (++ot_runs == 10)
		ev_timer_stop(loop, w);
}
static void ot_invoke(struct ev_loop *loop)
{
	(void)loop;
	ot_want = 1;
	pthread_cond_broadcast(&ot_cond);
	while (ot_want)
		pthread_cond_wait(&ot_cond, &ot_lock);
}
static void ot_release(struct ev_loop *loop)
{
	(void)loop;
	pthread_mutex_unlock(&ot_lock);
}
static void ot_acquire(struct ev_loop *loop)
{
	(void)loop;
	pthread_mutex_lock(&ot_lock);
}
static void *ot_invoker(void *arg)
{
	struct ev_loop *loop = arg;

	pthread_mutex_lock(&ot_lock);
	while (!ot_done) {
		if (ot_want) {
			ev_invoke_pending(loop);
			ot_want = 0;
			pthread_cond_broadcast(&ot_cond);
		}
		pthread_cond_wait(&ot_cond, &ot_lock);
	}
	pthread_mutex_unlock(&ot_lock);
	return NULL;
}
static void run_other_thread(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	pthread_t inv;
	ev_timer t;

	ot_loop_thread = pthread_self();
	ev_set_invoke_pending_cb(loop, ot_invoke);
	ev_set_loop_release_cb(loop, ot_release, ot_acquire);
	pthread_create(&inv, NULL, ot_invoker, loop);
	ev_timer_init(&t, ot_cb, 0.001, 0.001);
	pthread_mutex_lock(&ot_lock);
	ev_timer_start(loop, &t);
	ev_run(loop, 0);
	ot_done = 1;
	pthread_cond_broadcast(&ot_cond);
	pthread_mutex_unlock(&ot_lock);
	pthread_join(inv, NULL);
	ev_loop_destroy(loop);
	printf("app other runs %d, all on the invoking thread: %s\n", ot_runs,
	       ot_elsewhere == ot_runs ? "yes" : "no");
}

/* ---- idle ---- */
static struct ev_loop *idle_loop;
static ev_async idle_async;
static ev_prepare idle_prepare;
static int idle_woken;
static sem_t idle_blocking;
/* Runs just before the loop blocks: from here on it is in its wait. */
static void idle_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)revents;
	ev_prepare_stop(loop, w);
	sem_post(&idle_blocking);
}
static void idle_async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)revents;
	idle_woken++;
	ev_async_stop(loop, w);
}
static void *idle_main(void *arg)
{
	(void)arg;
	ev_run(idle_loop, 0);
	return NULL;
}

/* ---- fork ---- */
static int child_runs;
static void child_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	if (++child_runs == 4)
		ev_timer_stop(loop, w);
}
static pid_t child;
static void fork_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ev_timer t;

	(void)w; (void)revents;
	child = fork();
	if (child != 0)
		return;
	ev_loop_fork(loop);
	ev_timer_init(&t, child_cb, 0.001, 0.001);
	ev_timer_start(loop, &t);
	ev_run(loop, 0);
	printf("app child timer runs %d\n", child_runs);
	fflush(stdout);
	exit(child_runs == 4 ? 0 : 1); /* exit, not _exit: the child detaches cleanly */
}

static void run_once(struct ev_loop *loop, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int),
                     double after, double repeat)
{
	ev_timer_init(t, cb, after, repeat);
	ev_timer_start(loop, t);
	ev_run(loop, 0);
}

int main(void)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct ev_loop *hl;
	ev_timer t;
	pthread_t th[2], it;
	struct worker w[2] = { { 0, NULL }, { 0, NULL } };
	int st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("seen pid %d\n", (int)getpid());
	run_once(loop, &t, slow_cb, 0.001, 0.);
	printf("app slow runs %d\n", slow_runs);

	run_once(loop, &t, again_cb, 0.001, 0.);
	printf("app again runs %d\n", again_runs);

	ev_timer_init(&t, cb_a, 0.001, 0.001);
	ev_timer_start(loop, &t);
	ev_run(loop, EVRUN_ONCE);
	ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &t);
	printf("app ev_cb after stop is cb_b: %s\n", ev_cb(&t) == cb_b ? "yes" : "no");
	ev_timer_start(loop, &t);
	ev_run(loop, 0);
	printf("app setcb runs a=%d b=%d\n", cb_a_runs, cb_b_runs);
	printf("app ev_cb after the last stop is cb_b: %s\n", ev_cb(&t) == cb_b ? "yes" : "no");

	run_once(loop, &t, nested_cb, 0.001, 0.);
	printf("app nested runs %d inner runs %d\n", nested_runs, inner_runs);

	hl = ev_loop_new(EVFLAG_AUTO);
	ev_set_invoke_pending_cb(hl, app_invoke);
	ev_set_loop_release_cb(hl, app_release, app_acquire);
	run_once(hl, &t, hook_cb, 0.001, 0.001);
	printf("app hooks runs %d, invoke called: %s, release == acquire: %s\n", hook_runs,
	       app_invokes >= 10 ? "yes" : "no", app_releases == app_acquires ? "yes" : "no");
	printf("seen hooks releases %u\n", app_releases);
	ev_loop_destroy(hl);

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("app threads runs %d %d\n", w[0].runs, w[1].runs);

	run_other_thread();

	idle_loop = ev_loop_new(EVFLAG_AUTO);
	ev_async_init(&idle_async, idle_async_cb);
	ev_async_start(idle_loop, &idle_async);
	ev_prepare_init(&idle_prepare, idle_prepare_cb);
	ev_prepare_start(idle_loop, &idle_prepare);
	sem_init(&idle_blocking, 0, 0);
	pthread_create(&it, NULL, idle_main, NULL);
	sem_wait(&idle_blocking);
	usleep(600 * 1000);
	ev_async_send(idle_loop, &idle_async);
	pthread_join(it, NULL);
	ev_loop_destroy(idle_loop);
	printf("app idle woken %d\n", idle_woken);

	run_once(loop, &t, fork_cb, 0.001, 0.);
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("app child failed\n");
		return 1;
	}
	printf("seen child pid %d\n", (int)child);
	printf("seen fn slow %p again %p cb_a %p cb_b %p inner %p nested %p hook %p worker %p "
	       "idle %p child %p other %p\n", (void *)slow_cb, (void *)again_cb, (void *)cb_a,
	       (void *)cb_b, (void *)inner_cb, (void *)nested_cb, (void *)hook_cb, (void *)worker_cb,
	       (void *)idle_async_cb, (void *)child_cb, (void *)ot_cb);
	printf("app done\n");
	return 0;
}
