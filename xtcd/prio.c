/*
 * xtcd/prio.c - run the drain ahead of the applications it records.
 *
 * A producer flat out fills a ring of the default size in 6-9 ms; the
 * drain that empties it needs the CPU for a few hundred microseconds at a
 * time, but it needs it then.  At the same nice as the applications (and
 * in their autogroup, as when started from the same shell), a woken xtcd
 * waited 2-6 ms for its turn on a busy 2-core machine, long enough for
 * the ring to fill (bench/RESULTS.md, "Burst drops and sustained rates,
 * third round").  So the event loop lowers its nice to -priority_boost,
 * as auditd does with its priority_boost: the drain then preempts the
 * applications when it wakes, and takes no more CPU than before.  The
 * io_uring workers the kernel starts for our writes are created by this
 * thread later and inherit it (their completions publish the ring
 * tails); the worker thread (fdatasync, page touches) keeps the nice
 * xtcd was started with (worker_set_nice), so a segment's writeback never
 * competes with the drain.  Linux keeps a nice per thread, which is what
 * makes that split possible.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "xtcd/xtcd.h"

int prio_boost(unsigned boost)
{
	int base, want;

	errno = 0;
	base = getpriority(PRIO_PROCESS, 0);
	if (base == -1 && errno != 0)
		return -errno;
	worker_set_nice(base);
	want = boost > 20 ? -20 : -(int)boost;
	if (boost == 0 || base <= want)
		return 0; /* asked for nothing, or started as high already (systemd's Nice=) */
	if (setpriority(PRIO_PROCESS, 0, want) < 0) {
		int err = errno;

		xlog_warn("cannot raise the drain's priority to nice %d (%s): it stays at nice %d, "
		          "where a busy machine can keep it off the CPU long enough for a fast "
		          "producer's ring to fill; give xtcd CAP_SYS_NICE or start it with nice "
		          "(systemd: Nice=%d), or set priority_boost = 0 to say so",
		          want, strerror(err), base, want);
		return -err;
	}
	xlog_debug("the drain runs at nice %d (was %d), the worker thread at %d", want, base, base);
	return 0;
}
