/*
 * lib/dump.c - writing the buffered records out: the XTCL v3 dump
 * (xtc_tail_dump) and the dial9 trace format (xtc_tail_dump_dial9,
 * xtc_tail_spill_dial9).  The encoders themselves are in lib/common/trace_enc.c,
 * shared with xtcd --export.
 *
 * Every writer first copies the buffered records through the public
 * xtc_tail_read(), and encodes only that copy.  Producers keep emitting
 * while we write, so this is what makes the output one consistent view:
 * the XTCL header's count is exactly the number of events that follow.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "lib/common/trace_enc.h"
#include "xtc_tail.h"

/* ---------------------------------------------------------------------
 * The snapshot
 */

/* A private copy of the buffered records, oldest first. */
struct snap {
	xtc_tail_rec_t *rec;
	size_t          n;
	size_t          cap;
	int             err;    /* -ENOMEM once a record could not be kept */
};

/* Make room for one more record.  Returns 0 or -ENOMEM. */
static int snap_grow(struct snap *s)
{
	xtc_tail_rec_t *p;
	size_t cap;

	if (s->n < s->cap)
		return 0;
	cap = s->cap * 2;
	if (cap <= s->cap || cap > SIZE_MAX / sizeof(*p))
		return -ENOMEM;
	p = realloc(s->rec, cap * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	s->rec = p;
	s->cap = cap;
	return 0;
}

/* xtc_tail_read visitor: append one record to the snapshot. */
static int snap_cb(const xtc_tail_rec_t *rec, void *user)
{
	struct snap *s = user;
	int rc = snap_grow(s);

	if (rc < 0) {
		s->err = rc;
		return 1;
	}
	s->rec[s->n++] = *rec;
	return 0;
}

/* Copy every buffered record into s.  Returns 0 or -errno; on success
 * the caller frees s->rec. */
static int snap_take(struct snap *s)
{
	int rc;

	memset(s, 0, sizeof(*s));
	/* A hint only: producers may add records before the read. */
	s->cap = xtc_tail_count() + 64;
	if (s->cap < 64 || s->cap > SIZE_MAX / sizeof(*s->rec))
		return -ENOMEM;
	s->rec = malloc(s->cap * sizeof(*s->rec));
	if (s->rec == NULL)
		return -ENOMEM;
	rc = xtc_tail_read(snap_cb, s);
	if (rc >= 0 && s->err < 0)
		rc = s->err;
	if (rc < 0) {
		free(s->rec);
		s->rec = NULL;
		return rc;
	}
	return 0;
}

/*
 * Writing to a pipe or socket whose reader is gone raises SIGPIPE, and its
 * default action kills the process: the host's process, which a library
 * must not end.  So SIGPIPE is blocked in the calling thread while a dump
 * writes, a SIGPIPE that our write raised is consumed, and the dump
 * returns -EPIPE instead.  A SIGPIPE already pending before we started is
 * not ours and is left alone.
 */
struct pipe_guard {
	sigset_t old;
	int      was_pending;
};

/* Block SIGPIPE in this thread for the duration of a dump. */
static void pipe_guard_on(struct pipe_guard *g)
{
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigemptyset(&pending);
	sigpending(&pending);
	g->was_pending = sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

/* Consume the SIGPIPE our -EPIPE raised, then restore the signal mask. */
static void pipe_guard_off(struct pipe_guard *g, int rc)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t set;

	if (rc == -EPIPE && !g->was_pending) {
		sigemptyset(&set);
		sigaddset(&set, SIGPIPE);
		while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* A format: an optional check that may refuse the records before any
 * byte is written, and the encoder. */
struct format {
	int (*check)(const xtc_tail_rec_t *rec, size_t n);
	int (*write)(int fd, const xtc_tail_rec_t *rec, size_t n);
};

/* Snapshot the records and write them to fd in format f.  Returns XTC_OK
 * or -errno. */
static int dump_as(int fd, const struct format *f)
{
	struct pipe_guard g;
	struct snap s;
	int rc;

	if (fd < 0)
		return -EBADF;
	if ((rc = snap_take(&s)) < 0)
		return rc;
	if (f->check != NULL && (rc = f->check(s.rec, s.n)) < 0)
		goto out_snap;
	pipe_guard_on(&g);
	rc = f->write(fd, s.rec, s.n);
	pipe_guard_off(&g, rc);
out_snap:
	free(s.rec);
	return rc;
}

static const struct format xtcl_format = { trace_enc_xtcl_check, trace_enc_xtcl_write };
static const struct format d9_format = { NULL, trace_enc_dial9_write };

/* Write the buffered records to fd as an XTCL v3 dump. */
XTC_API int xtc_tail_dump(int fd)
{
	return dump_as(fd, &xtcl_format);
}

/* Write the buffered records to fd as a dial9 trace. */
XTC_API int xtc_tail_dump_dial9(int fd)
{
	return dump_as(fd, &d9_format);
}


/* Create a new xtc-tail-<pid>-<ns>.d9 in dfd, its name in name.  O_EXCL
 * never reuses a file; a name taken in the same nanosecond is retried
 * with a fresh clock.  Returns the fd or -errno. */
static int spill_create(int dfd, char *name, size_t len)
{
	for (int tries = 0; tries < 4; tries++) {
		int fd;

		snprintf(name, len, "xtc-tail-%ld-%" PRIu64 ".d9", (long)getpid(), mono_ns());
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/*
 * Write a dial9 trace to a new file in dir.  A trace that could not be
 * written whole is unlinked rather than left looking complete.  The file
 * is not fsync'ed: a spill is a snapshot to copy off the box, not a
 * durable log.
 */
XTC_API int xtc_tail_spill_dial9(const char *dir)
{
	char name[64];
	int dfd, fd, rc;

	if (dir == NULL)
		return -EINVAL;
	/* O_PATH: a directory we may create in but not list still works. */
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = spill_create(dfd, name, sizeof(name));
	if (fd < 0) {
		rc = fd;
		goto out_dir;
	}
	rc = xtc_tail_dump_dial9(fd);
	/* Linux closes the fd even when close() says EINTR. */
	if (close(fd) < 0 && errno != EINTR && rc == 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dfd, name, 0);
out_dir:
	close(dfd);
	return rc;
}
