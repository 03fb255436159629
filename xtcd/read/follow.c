/*
 * xtcd/read/follow.c - xtcd --follow DIR [-n N|all] [--json] [--color=WHEN]
 * [filters]: tail -f for the record.
 *
 *   int xtcd_follow(const char *dir, const struct read_opts *o, FILE *out);
 *
 * It prints the last N records already in DIR (10 by default, all with
 * -n all), then every new record as xtcd writes it, in the same lines as
 * --cat (text, or JSON with --json), until SIGINT or SIGTERM, or until its
 * output pipe is closed; all three end it with exit code 0.
 *
 * How it reads.  Through the segments in order, from a (segment, byte
 * offset) position that only ever moves past whole, valid blocks
 * (xtcd/read/walk.h, the same walk as --ship's), so no record is printed
 * twice or skipped: a block cut short by the end of the file is xtcd
 * writing it, and is read again once whole; a segment is finished at its
 * SEGMENT_END, or, after a crash, once a newer one has its header on disk
 * (what is left after its last valid block is reported); a segment xtcd
 * cut back after a failed write is read on from its last valid block (one
 * line); segments deleted under the byte budget before the follower got
 * to their end (it lagged) are one line on stderr, naming what was lost,
 * and reading carries on from the oldest segment that is left.
 *
 * It never blocks xtcd: files are opened read-only, briefly, and never
 * locked.  It waits in ppoll(2) on an inotify watch of DIR (IN_MODIFY,
 * IN_CREATE, IN_MOVED_TO, IN_DELETE), so it uses no CPU while nothing
 * happens (but for one more look a second after the segment it reads
 * stopped growing, when nothing is under the next segment's name: see
 * walk.h); where inotify is unavailable (or XTCD_FOLLOW_POLL_MS is set) it
 * looks every 200 ms (or that many ms) instead.
 *
 * -n N counts the records that would be printed (after the filters, with
 * session starts and restatements as --cat prints them).  To find where
 * the last N begin, the segments are decoded (not printed) from the
 * newest back until N are covered: -n 10 reads one segment first.
 *
 * Exit codes: 0 stopped by a signal or a closed output; 1 DIR went away;
 * 2 DIR cannot be read, or writing the output failed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/seg/seg.h"
#include "lib/seg/segread.h"

#include "xtcd/read/view.h"
#include "xtcd/read/read.h"
#include "xtcd/read/walk.h"

#define POLL_MS_DEFAULT 200

/* Why following ended. */
enum end_why {
	RUNNING = 0,
	END_SIGNAL,          /* exit 0 */
	END_OUTPUT_CLOSED,   /* EPIPE, or POLLERR on the output: exit 0 */
	END_OUTPUT_ERROR,    /* exit 2 */
	END_DIR_GONE,        /* exit 1 */
};

struct follow {
	struct view view;
	struct segread *r;        /* the reader that prints */
	struct segread *counter;  /* -n: the reader that counts, or NULL */
	int      counting;        /* in the counting pass: print nothing */
	uint64_t counted;         /* printable items seen while counting */
	uint64_t oldest;          /* the oldest segment when we started */
	uint64_t start_seq;       /* the segment printing started at */
	uint64_t skip;            /* printable items still to pass over */
	enum end_why end;

	struct walk w;            /* where we are (walk.h) */
	int      said_waiting;    /* "waiting for segments" was said */

	/* problems already reported, so a retried block is reported once */
	uint64_t last_prob_seq;
	off_t    last_prob_off;
	int      last_prob_kind;

	/* waiting */
	int      ifd;             /* inotify, or -1 */
	int      poll_ms;
	int      watch_out;       /* poll the output for POLLERR (a pipe) */
	char     dir_path[PATH_MAX];
};

/* ---- the item and problem callbacks ---- */

/*
 * Whether a SESSION_START is printed: where --cat would print it.  --cat
 * shows a session's start once, at its first SESSION_START block in the
 * directory: the original, or the restatement at the start of the oldest
 * segment when the original was deleted.  Every segment restates the
 * sessions live when it began, so a restatement is a first sighting only
 * in the oldest segment; a follower that starts later than that (-n)
 * leaves out the restatements of the segment it starts in, and shows a
 * session it first meets after a gap.
 */
static int start_shown(const struct follow *fw, const struct segread_item *it)
{
	if (!it->u.start.restated)
		return fw->counting || it->u.start.first;
	if (fw->counting)
		return it->seq == fw->oldest;
	return it->u.start.first && (it->seq != fw->start_seq || fw->start_seq == fw->oldest);
}

/* Count, skip or print one item. */
static int follow_item_cb(const struct segread_item *it, void *user)
{
	struct follow *fw = user;

	if (walk_stop) {
		fw->end = END_SIGNAL;
		return 1;
	}
	if (it->type == SEGREAD_SEGMENT_END && !fw->counting) {
		walk_seg_end(&fw->w, it->u.seg_end.next_seq);
	}
	if (!view_wants(&fw->view, fw->counting ? fw->counter : fw->r, it))
		return 0;
	if (it->type == SEGREAD_SESSION_START && !start_shown(fw, it))
		return 0;
	if (fw->counting) {
		fw->counted++;
		return 0;
	}
	if (fw->skip) {
		fw->skip--;
		return 0;
	}
	if (view_print(&fw->view, it) < 0) {
		fw->end = walk_stop ? END_SIGNAL : fw->view.out_err == -EPIPE ? END_OUTPUT_CLOSED
		                                                               : END_OUTPUT_ERROR;
		return 1;
	}
	return 0;
}

/* Flush the output; note how writing ended if it failed. */
static void follow_flush(struct follow *fw)
{
	if (fflush(fw->view.out) == 0 && !ferror(fw->view.out))
		return;
	if (!fw->view.out_err)
		fw->view.out_err = errno ? -errno : -EIO;
	if (fw->end == RUNNING)
		fw->end = walk_stop ? END_SIGNAL : fw->view.out_err == -EPIPE ? END_OUTPUT_CLOSED
		                                                                : END_OUTPUT_ERROR;
}

/* One stderr line per problem; a block retried after a wakeup is not
 * reported again.  VANISHED is the follower's own line (note_gap). */
static void follow_problem_cb(const struct segread_problem *p, void *user)
{
	struct follow *fw = user;

	if (fw->counting || p->kind == SEGREAD_VANISHED)
		return;
	if (p->seq == fw->last_prob_seq && p->offset == fw->last_prob_off &&
	    (int)p->kind == fw->last_prob_kind)
		return;
	fw->last_prob_seq = p->seq;
	fw->last_prob_off = p->offset;
	fw->last_prob_kind = (int)p->kind;
	follow_flush(fw);
	if (view_denied(p))
		return;
	switch (p->kind) {
	case SEGREAD_TORN_TAIL:
	case SEGREAD_CORRUPT_TAIL:
		fprintf(stderr, "xtcd: %s: ends in a torn or bad block at byte %lld (%s; %lld "
		        "bytes ignored); going on with the next segment\n", p->path,
		        (long long)p->offset, p->why ? p->why : "?", (long long)p->bytes);
		break;
	case SEGREAD_BAD_FILE_HEADER:
		fprintf(stderr, "xtcd: %s: %s; segment skipped\n", p->path, p->why);
		break;
	case SEGREAD_BAD_PAYLOAD:
		fprintf(stderr, "xtcd: %s: block at byte %lld skipped: %s\n", p->path,
		        (long long)p->offset, p->why);
		break;
	default:
		fprintf(stderr, "xtcd: %s: %s: %s\n", p->path, p->why ? p->why : "error",
		        strerror(-p->err));
		break;
	}
}

/* ---- the segments in DIR ---- */

/* Segments from..to were deleted before we read (all of) them, or were
 * never segments: one line. */
static void note_gap(void *user, uint64_t from, off_t at, uint64_t to, uint64_t resume,
                     int not_segments)
{
	struct follow *fw = user;

	fw->skip = 0;   /* what -n meant to show first is partly gone: show the rest */
	follow_flush(fw);
	if (not_segments) {
		fprintf(stderr, "xtcd: xtc-%06" PRIu64 ".seg%s %s not a segment but something else "
		        "named like one (a FIFO, link or device): skipped; ", from,
		        from == to ? "" : " and the next ones", from == to ? "is" : "are");
		if (resume)
			fprintf(stderr, "continuing with segment %" PRIu64 "\n", resume);
		else
			fprintf(stderr, "waiting for the next segment\n");
		return;
	}
	if (from == to && at > 0)
		fprintf(stderr, "xtcd: segment %" PRIu64 " was deleted under the byte budget while "
		        "being read (at byte %lld): the rest of it is lost to this follower; ",
		        from, (long long)at);
	else if (from == to)
		fprintf(stderr, "xtcd: segment %" PRIu64 " was deleted under the byte budget before "
		        "it could be read: its records are lost to this follower; ", from);
	else
		fprintf(stderr, "xtcd: segments %" PRIu64 "..%" PRIu64 " were deleted under the byte "
		        "budget before they could be read%s: their records are lost to this "
		        "follower; ", from, to, at > 0 ? " (the first while being read)" : "");
	if (resume)
		fprintf(stderr, "continuing with segment %" PRIu64 "\n", resume);
	else
		fprintf(stderr, "waiting for the next segment\n");
}

/* Started on a directory with no segment in it (yet): say once what we
 * wait for, so an empty screen is not mistaken for a wrong directory. */
static void note_waiting(void *user)
{
	struct follow *fw = user;

	if (fw->said_waiting || fw->w.floor)
		return;
	fw->said_waiting = 1;
	follow_flush(fw);
	fprintf(stderr, "xtcd: waiting for segments in %s: there are none yet\n", fw->dir_path);
}

/* xtcd cut the segment back after a failed write: one line. */
static void note_shrunk(void *user, const char *path, off_t from, off_t to)
{
	struct follow *fw = user;

	follow_flush(fw);
	fprintf(stderr, "xtcd: %s was cut back from byte %lld to %lld (xtcd drops a block "
	        "whose write failed, and counts its records as lost); going on from there\n",
	        path, (long long)from, (long long)to);
}

static int follow_read(void *user, uint64_t seq, off_t from, enum segread_tail tail,
                       struct segread_span *sp)
{
	struct follow *fw = user;

	return segread_segment(fw->r, seq, from, tail, sp);
}

static int follow_stopped(void *user)
{
	return ((struct follow *)user)->end != RUNNING;
}

/* Starting at the oldest segment: -n all shows from there. */
static void follow_started(void *user, uint64_t seq)
{
	struct follow *fw = user;

	fw->start_seq = fw->oldest = seq;
}

static const struct walk_ops follow_walk = {
	.read = follow_read, .stopped = follow_stopped, .gap = note_gap, .shrunk = note_shrunk,
	.started = follow_started, .waiting = note_waiting,
};

/* ---- -n: where the last N records begin ---- */

/*
 * Count the printable items of segments from the newest back, until the
 * last `lines` of them are covered, and start the printing reader at that
 * segment, skipping what comes before them there.  Only the segments
 * needed are read: -n 10 reads the newest one.  0 or -errno.
 */
static int position_last(struct follow *fw, long long lines)
{
	struct segread_span sp;
	uint64_t *seqs, total = 0;
	size_t n, i;
	int ret;

	if ((ret = seg_list(fw->dir_path, &seqs, &n)) < 0)
		return ret;
	if (n == 0) {
		free(seqs);
		return 0;   /* nothing yet: everything that comes is new */
	}
	if ((ret = segread_open(&fw->counter, fw->dir_path, follow_item_cb, NULL, fw)) < 0)
		goto out;
	fw->counting = 1;
	fw->oldest = seqs[0];
	for (i = n; i-- > 0 && !walk_stop;) {
		fw->counted = 0;
		ret = segread_segment(fw->counter, seqs[i], 0, SEGREAD_TAIL_QUIET, &sp);
		if (ret == -ENOMEM)
			goto out;
		total += fw->counted;
		if (total >= (uint64_t)lines)
			break;
	}
	ret = 0;
	if (i == (size_t)-1 || total < (uint64_t)lines) {
		i = 0;   /* fewer than `lines` in all: show everything */
		total = (uint64_t)lines;
	}
	walk_go_to(&fw->w, seqs[i]);
	fw->start_seq = seqs[i];
	fw->skip = total - (uint64_t)lines;
out:
	fw->counting = 0;
	segread_close(fw->counter);
	fw->counter = NULL;
	free(seqs);
	return ret;
}

/* ---- waiting ---- */

/* Watch DIR with inotify, or fall back to polling. */
static void watch_init(struct follow *fw)
{
	const char *env = getenv("XTCD_FOLLOW_POLL_MS");
	struct stat st;

	fw->ifd = -1;
	fw->poll_ms = POLL_MS_DEFAULT;
	if (env && *env) {
		long v = strtol(env, NULL, 10);

		fw->poll_ms = v >= 1 && v <= 60000 ? (int)v : POLL_MS_DEFAULT;
	} else {
		fw->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fw->ifd >= 0 &&
		    inotify_add_watch(fw->ifd, fw->dir_path, IN_MODIFY | IN_CREATE | IN_MOVED_TO |
		                      IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) < 0) {
			close(fw->ifd);
			fw->ifd = -1;
		}
		if (fw->ifd < 0)
			fprintf(stderr, "xtcd: cannot watch %s with inotify (%s); looking for new "
			        "records every %d ms instead\n", fw->dir_path, strerror(errno),
			        fw->poll_ms);
	}
	/* A closed pipe shows as POLLERR on our end: stop then, even idle. */
	fw->watch_out = fstat(fileno(fw->view.out), &st) == 0 &&
	                (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* Read and discard the inotify events; note a vanished directory. */
static void drain_inotify(struct follow *fw)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	while ((n = read(fw->ifd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(void *)p;

			if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
				fw->end = END_DIR_GONE;
			p += sizeof(*ev) + ev->len;
		}
	}
}

/*
 * Sleep until DIR changes, the poll interval (or the walk's recheck)
 * passes, a signal comes or the output closes.  SIGINT/SIGTERM are blocked between the check of the
 * flag and ppoll, which unblocks them atomically: no lost wakeup.
 */
static void wait_change(struct follow *fw)
{
	struct pollfd p[2];
	struct timespec ts = { fw->poll_ms / 1000, (long)(fw->poll_ms % 1000) * 1000000L };
	struct timespec recheck = { WALK_RECHECK_MS / 1000, (long)(WALK_RECHECK_MS % 1000) * 1000000L };
	sigset_t block, old;
	nfds_t n = 0;
	int in = -1, out = -1;

	if (fw->ifd >= 0) {
		in = (int)n;
		p[n++] = (struct pollfd){ .fd = fw->ifd, .events = POLLIN };
	}
	if (fw->watch_out) {
		out = (int)n;
		p[n++] = (struct pollfd){ .fd = fileno(fw->view.out), .events = 0 };
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (!walk_stop &&
	    ppoll(p, n, fw->ifd < 0 ? &ts : fw->w.recheck ? &recheck : NULL, &old) > 0) {
		if (out >= 0 && (p[out].revents & (POLLERR | POLLHUP)))
			fw->end = END_OUTPUT_CLOSED;
		if (in >= 0 && (p[in].revents & POLLIN))
			drain_inotify(fw);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (walk_stop && fw->end == RUNNING)
		fw->end = END_SIGNAL;
}

/* ---- the mode ---- */

/* The exit code for how following ended. */
static int follow_status(struct follow *fw, int ret)
{
	if (walk_stop)
		return 0;   /* asked to stop: whatever was cut short by it is fine */
	if (ret < 0 && fw->end == RUNNING) {
		fprintf(stderr, "xtcd: following %s failed: %s\n", fw->dir_path, strerror(-ret));
		return 2;
	}
	switch (fw->end) {
	case END_OUTPUT_ERROR:
		fprintf(stderr, "xtcd: writing the output failed: %s\n", strerror(-fw->view.out_err));
		return 2;
	case END_DIR_GONE:
		fprintf(stderr, "xtcd: %s was removed or renamed; nothing more to follow\n",
		        fw->dir_path);
		return 1;
	default:
		return 0;
	}
}

/* Check that dir is a directory we can list; one line and 2 if not. */
static int dir_check(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "xtcd: --follow %s: %s; point it at the directory xtcd writes its "
		        "segments to (--dir)\n", dir, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* Print the last records of dir, then new ones as they come. */
int xtcd_follow(const char *dir, const struct read_opts *o, FILE *out)
{
	struct follow *fw;
	int ret, status;

	if (dir_check(dir) < 0)
		return 2;
	fw = calloc(1, sizeof(*fw));
	if (!fw)
		return 2;
	snprintf(fw->dir_path, sizeof(fw->dir_path), "%s", dir);
	walk_init(&fw->w, dir, &follow_walk, fw);
	/* Batches are flushed whole after each read, so a big buffer costs no
	 * latency and saves write(2)s when records come fast. */
	if (!isatty(fileno(out)))
		setvbuf(out, NULL, _IOFBF, 1 << 16);
	view_init(&fw->view, out, o->json, (enum view_color)o->color, &o->filter);
	walk_catch_stop();
	watch_init(fw);
	ret = segread_open(&fw->r, dir, follow_item_cb, follow_problem_cb, fw);
	if (ret == 0 && o->lines != -1)
		ret = position_last(fw, o->lines);
	while (ret >= 0 && fw->end == RUNNING) {
		ret = walk_step(&fw->w);
		if (ret != 0)
			continue;
		follow_flush(fw);
		if (fw->end == RUNNING)
			wait_change(fw);
	}
	/* Stopped by a signal: drop what is not written yet, as tail -f killed
	 * by it would, rather than wait on a reader that may have stopped
	 * reading.  Everything read before the last wait is already out. */
	if (walk_stop)
		__fpurge(out);
	else
		follow_flush(fw);
	status = follow_status(fw, ret);
	segread_close(fw->r);
	if (fw->ifd >= 0)
		close(fw->ifd);
	free(fw);
	return status;
}
