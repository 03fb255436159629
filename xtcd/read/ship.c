/*
 * xtcd/read/ship.c - xtcd --ship URL DIR: follow the segments as --follow
 * does and insert every record into ClickHouse (ship.h).
 *
 *   int xtcd_ship(const struct ship_opts *o);
 *
 * Following.  The same walk as --follow's (xtcd/read/walk.h), over the
 * same reader (lib/seg/segread.h): a position (segment, block offset) that
 * only moves past whole, valid blocks; a segment is finished at its
 * SEGMENT_END, or once a newer one has its header on disk; a segment cut
 * back after a failed write is read on from its last valid block; a
 * segment deleted under the byte budget before it was shipped is a gap.  Unlike
 * --follow it never prints, it cuts what it reads into batches at block
 * boundaries, and a gap is not only a stderr line but a row of its own
 * (drops.what = 'unshipped') in the batch that resumes after it.
 *
 * Batches.  Rows accumulate in memory, one JSONEachRow buffer per table,
 * and go out when batch_records rows are waiting or the oldest has waited
 * batch_ms: one INSERT per table that has rows.  Only when ClickHouse
 * answered 200 to every one is the cursor replaced (textfile.h, fsync'ed
 * and renamed) with the position after the batch.
 *
 * Nothing lost, nothing doubled.  Killed at any point, the shipper
 * restarts from the cursor: what was acknowledged is never sent again
 * unless the cursor write itself was cut short, and then the resent rows
 * carry the same keys (ship_rows.c) and collapse.  The cursor's segment is
 * re-read from its start, rows before the cursor left out, so that the
 * reader knows the sessions (their restated starts) of the rows after it.
 *
 * ClickHouse down or refusing.  The batch is kept and sent again, backing
 * off from 200 ms to 5 s; reading stops while a full batch waits, so
 * memory stays bounded, and the byte budget may then delete unshipped
 * segments, which become 'unshipped' rows.  One stderr line when it
 * starts failing, one a minute while it lasts, one when it answers again.
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
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/seg/seg.h"
#include "lib/seg/segread.h"

#include "xtcd/read/ship.h"
#include "xtcd/read/textfile.h"
#include "xtcd/read/walk.h"

#define BACKOFF_MIN_MS 200u
#define BACKOFF_MAX_MS 5000u
#define SAY_EVERY_MS   60000u
#define METRICS_MS     5000u
#define IDLE_MS        1000u

/* Rows waiting for ClickHouse's acknowledgement. */
struct batch {
	FILE    *f[SHIP_NTABLES];
	char    *buf[SHIP_NTABLES];
	size_t   len[SHIP_NTABLES];
	uint64_t rows, events;
	uint64_t since_ms;       /* monotonic ms of the first row */
	uint64_t oldest_real;    /* wall ns of the oldest record in it, 0: none */
};

/* The last position ClickHouse acknowledged everything before. */
struct cursor {
	uint64_t seq;
	off_t    off;
	int      done;           /* the segment was finished (go on to next) */
	uint64_t next;           /* with done: the segment it named, 0: seq + 1 */
};

struct ship {
	const struct ship_opts *o;
	struct segread   *r;
	struct ship_http *http;
	char  dir[PATH_MAX];
	char  cursor_path[PATH_MAX];
	char  url_shown[256];    /* the URL without its query (a password) */
	int   ifd;

	/* where the reader is */
	struct walk w;           /* walk.h */
	int      warm;           /* re-reading w.seq from its start after a resume */
	off_t    skip_below;     /* ... leaving out the blocks before this */

	/* the segment being read */
	char     host[64];
	char     boot[33];
	uint64_t seg_ns;

	/* the block being cut */
	off_t    blk;
	uint32_t idx;
	int      in_blk;
	int      full;           /* the batch is full: stopped before block blk_stop */
	off_t    blk_stop;

	/* a gap waiting for the next segment's header to be placed */
	int      gap;
	uint64_t gap_first, gap_last;
	off_t    gap_at;

	struct batch b;
	struct cursor ack;

	/* health */
	int      down;
	uint64_t down_since_ms, said_ms, retry_ms;
	unsigned backoff_ms;
	char     err[512];
	uint64_t shipped_rows, shipped_events, batches, failures, unshipped;
	uint64_t last_ok_real, metrics_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the batch ---- */

static int batch_open(struct batch *b)
{
	for (int t = 0; t < SHIP_NTABLES; t++) {
		b->f[t] = open_memstream(&b->buf[t], &b->len[t]);
		if (!b->f[t])
			return -ENOMEM;
	}
	return 0;
}

static void batch_close(struct batch *b)
{
	for (int t = 0; t < SHIP_NTABLES; t++) {
		if (b->f[t])
			fclose(b->f[t]);
		free(b->buf[t]);
	}
}

/* Empty it, keeping the buffers. */
static void batch_reset(struct batch *b)
{
	for (int t = 0; t < SHIP_NTABLES; t++)
		rewind(b->f[t]);
	b->rows = b->events = b->oldest_real = 0;
}

/* A row was added; the batch's age starts with its first. */
static void batch_count(struct batch *b, int table, uint64_t real)
{
	if (b->rows++ == 0)
		b->since_ms = now_ms();
	if (table == SHIP_EVENTS)
		b->events++;
	if (real && (!b->oldest_real || real < b->oldest_real))
		b->oldest_real = real;
}

/* ---- the cursor ---- */

static int cursor_write(struct ship *s, const struct cursor *c)
{
	char buf[128];
	int n = snprintf(buf, sizeof(buf), "xtcd-ship-cursor 1 %" PRIu64 " %lld %d %" PRIu64 "\n",
	                 c->seq, (long long)c->off, c->done, c->next);

	return textfile_replace(s->cursor_path, buf, (size_t)n, 1);
}

/* Load the cursor; 1 found, 0 none (or unreadable: then everything is
 * shipped again, which the keys make harmless, and one line says so). */
static int cursor_read(struct ship *s, struct cursor *c)
{
	FILE *f = fopen(s->cursor_path, "re");
	unsigned long long seq, next;
	long long off;
	int done, n;

	if (!f) {
		if (errno != ENOENT)
			fprintf(stderr, "xtcd: cannot read the cursor %s (%s); shipping DIR from its "
			        "oldest segment (rows already in ClickHouse collapse by key)\n",
			        s->cursor_path, strerror(errno));
		return 0;
	}
	n = fscanf(f, "xtcd-ship-cursor 1 %llu %lld %d %llu", &seq, &off, &done, &next);
	fclose(f);
	if (n != 4 || off < 0 || seq == 0) {
		fprintf(stderr, "xtcd: the cursor %s is not one this shipper wrote; shipping DIR from "
		        "its oldest segment (rows already in ClickHouse collapse by key)\n",
		        s->cursor_path);
		return 0;
	}
	*c = (struct cursor){ seq, (off_t)off, done != 0, next };
	return 1;
}

/* The position after everything read so far. */
static struct cursor position(const struct ship *s)
{
	if (!s->w.have_seq)
		return s->ack;   /* waiting after a gap: its row is not sent yet */
	return (struct cursor){ s->w.seq, s->w.off, s->w.seg_done, s->w.next_seq };
}

/* Whether c is ahead of what the cursor file says. */
static int cursor_moved(const struct ship *s, const struct cursor *c)
{
	return c->seq != s->ack.seq || c->off != s->ack.off || c->done != s->ack.done ||
	       c->next != s->ack.next;
}

/* ---- segments in DIR ---- */

/* Bytes on disk not yet acknowledged: the cursor's segment from the
 * cursor on, and every segment after it. */
static uint64_t lag_bytes(struct ship *s)
{
	uint64_t *seqs, total = 0;
	size_t n;

	if (seg_list(s->dir, &seqs, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		struct stat st;

		if (seqs[i] < s->ack.seq || (seqs[i] == s->ack.seq && s->ack.done) ||
		    seg_path(path, sizeof(path), s->dir, seqs[i]) >= (int)sizeof(path) ||
		    stat(path, &st) < 0)
			continue;
		total += (uint64_t)st.st_size;
		if (seqs[i] == s->ack.seq && st.st_size >= s->ack.off)
			total -= (uint64_t)s->ack.off;
	}
	free(seqs);
	return total;
}

/* The walk is at the start of a segment. */
static void ship_moved(void *user, uint64_t seq)
{
	struct ship *s = user;

	(void)seq;
	s->warm = 0;
	s->skip_below = 0;
	s->in_blk = 0;
}

/* Segments first..last were deleted before they were shipped (the first
 * from byte at): one line now, a row with the next segment's header.
 * Numbers that were never segments are no loss: nothing to say. */
static void note_gap(void *user, uint64_t first, off_t at, uint64_t last, uint64_t resume,
                     int not_segments)
{
	struct ship *s = user;
	char from[64] = "";

	(void)resume;
	if (not_segments)
		return;
	if (at)
		snprintf(from, sizeof(from), " (the first from byte %lld on)", (long long)at);
	fprintf(stderr, "xtcd: segment%s %" PRIu64 "..%" PRIu64 " %s deleted under the byte budget "
	        "before %s shipped%s; recording that in ClickHouse as drops.what = 'unshipped'\n",
	        first == last ? "" : "s", first, last, first == last ? "was" : "were",
	        first == last ? "it was" : "they were", from);
	if (s->gap)
		return;  /* an earlier gap not yet placed: its row covers from there */
	s->gap = 1;
	s->gap_first = first;
	s->gap_last = last;
	s->gap_at = at;
}

/* ---- reading ---- */

/* Remember the segment's header: the host and boot of its rows. */
static void segment_begin(struct ship *s, const struct xtc_seg_file_hdr *h)
{
	static const char hex[] = "0123456789abcdef";

	if (s->o->host)
		snprintf(s->host, sizeof(s->host), "%s", s->o->host);
	else
		snprintf(s->host, sizeof(s->host), "%.*s", (int)strnlen(h->host, sizeof(h->host)),
		         h->host);
	for (int i = 0; i < 16; i++) {
		s->boot[2 * i] = hex[h->boot_id[i] >> 4];
		s->boot[2 * i + 1] = hex[h->boot_id[i] & 15];
	}
	s->boot[32] = '\0';
	s->seg_ns = h->created_real_ns;
	if (s->gap) {
		/* Everything between the gap's start and this segment is gone. */
		s->gap_last = h->seq > s->gap_first ? h->seq - 1 : s->gap_first;
		s->unshipped += s->gap_last - s->gap_first + 1;
		ship_row_unshipped(s->b.f[SHIP_DROPS], s->host, s->gap_first, s->gap_last,
		                   (uint64_t)s->gap_at, h->created_real_ns);
		batch_count(&s->b, SHIP_DROPS, h->created_real_ns);
		s->gap = 0;
	}
}

/* Cut one item into the batch.  Returns 1 to stop before a block when the
 * batch is full. */
static int ship_item_cb(const struct segread_item *it, void *user)
{
	struct ship *s = user;
	struct ship_key k;
	int t;

	if (it->type == SEGREAD_SEGMENT_BEGIN) {
		segment_begin(s, it->u.seg_begin);
		return 0;
	}
	if (!s->in_blk || it->offset != s->blk) {
		if (s->b.rows >= s->o->batch_records) {
			s->full = 1;
			s->blk_stop = it->offset;
			return 1;
		}
		s->in_blk = 1;
		s->blk = it->offset;
		s->idx = 0;
	}
	if (it->type == SEGREAD_SEGMENT_END) {
		walk_seg_end(&s->w, it->u.seg_end.next_seq);
	}
	if (it->offset < s->skip_below || (t = ship_row_table(it)) < 0) {
		s->idx++;
		return 0;
	}
	k = (struct ship_key){ .host = s->host, .seg_ns = s->seg_ns, .seg = it->seq,
	                       .blk = (uint64_t)it->offset, .idx = s->idx++ };
	memcpy(k.boot, s->boot, sizeof(k.boot));
	ship_row(s->b.f[t], &k, it);
	batch_count(&s->b, t, it->has_real ? it->real_ns : 0);
	return 0;
}

/* Read problems: the reader goes on; say what was skipped. */
static void ship_problem_cb(const struct segread_problem *p, void *user)
{
	(void)user;
	if (p->kind == SEGREAD_VANISHED)
		return;   /* note_gap says it */
	fprintf(stderr, "xtcd: %s: %s at byte %lld; its records cannot be shipped\n", p->path,
	        p->why ? p->why : "damaged", (long long)p->offset);
}

/* xtcd cut the segment back after a failed write: one line; the blocks
 * written after the cut are shipped from there. */
static void ship_shrunk(void *user, const char *path, off_t from, off_t to)
{
	struct ship *s = user;

	if (s->skip_below > to)
		s->skip_below = to;   /* what comes after the cut is new */
	fprintf(stderr, "xtcd: %s is shorter than byte %lld, where shipping had got to: xtcd cut it "
	        "back after a failed write (and counts that write's records as lost); shipping again "
	        "from byte %lld (rows sent before collapse)\n", path, (long long)from, (long long)to);
}

/* One read of segment seq; after a resume, from its start (the rows
 * before the cursor are left out, see ship_item_cb). */
static int ship_read(void *user, uint64_t seq, off_t from, enum segread_tail tail,
                     struct segread_span *sp)
{
	struct ship *s = user;
	int ret = segread_segment(s->r, seq, s->warm ? 0 : from, tail, sp);

	s->warm = 0;
	if (ret == 1)
		s->w.off = s->blk_stop;   /* the batch filled up before this block */
	return ret;
}

static int ship_stopped(void *user)
{
	return ((struct ship *)user)->full;
}

static const struct walk_ops ship_walk = {
	.read = ship_read, .stopped = ship_stopped, .gap = note_gap, .shrunk = ship_shrunk,
	.moved = ship_moved,
};

/* ---- ClickHouse ---- */

/* The URL up to its query, which may hold a password. */
static void url_shown(struct ship *s)
{
	const char *q = strchr(s->o->url, '?');
	int len = q ? (int)(q - s->o->url) : (int)strlen(s->o->url);

	snprintf(s->url_shown, sizeof(s->url_shown), "%.*s", len, s->o->url);
}

/* Send every table's rows; 0 when all were acknowledged. */
static int batch_send(struct ship *s)
{
	char q[128];

	for (int t = 0; t < SHIP_NTABLES; t++) {
		fflush(s->b.f[t]);
		if (s->b.len[t] == 0)
			continue;
		snprintf(q, sizeof(q), "INSERT INTO %s FORMAT JSONEachRow", ship_table_name(t));
		if (ship_http_post(s->http, q, s->b.buf[t], s->b.len[t], s->err, sizeof(s->err)) < 0)
			return -1;
	}
	return 0;
}

/* A failed send: back off, and say so when it starts and once a minute. */
static void send_failed(struct ship *s)
{
	uint64_t now = now_ms();

	s->failures++;
	if (!s->down) {
		s->down = 1;
		s->down_since_ms = s->said_ms = now;
		s->backoff_ms = BACKOFF_MIN_MS;
		fprintf(stderr, "xtcd: ClickHouse at %s did not take a batch of %" PRIu64 " rows: %s%s; "
		        "keeping them and retrying (every %u s at most), said again once a minute\n",
		        s->url_shown, s->b.rows, s->err,
		        strstr(s->err, "Code: 60,") ? " (create the tables with --ship-create)" : "",
		        BACKOFF_MAX_MS / 1000);
	} else {
		if (now - s->said_ms >= SAY_EVERY_MS) {
			s->said_ms = now;
			fprintf(stderr, "xtcd: ClickHouse at %s still failing after %" PRIu64 " s: %s; "
			        "%" PRIu64 " rows waiting, shipping is %" PRIu64 " bytes behind\n",
			        s->url_shown, (now - s->down_since_ms) / 1000, s->err, s->b.rows,
			        lag_bytes(s));
		}
		s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
	}
	s->retry_ms = now + s->backoff_ms;
}

/* Send the batch; on acknowledgement, make the cursor durable.  0 sent,
 * -1 kept for a retry. */
static int flush(struct ship *s)
{
	struct cursor c = position(s);
	int ret;

	if (s->b.rows == 0 && !s->full) {
		/* Blocks with no row (a segment's end) move the cursor too, so
		 * that a restart does not read them again. */
		if (cursor_moved(s, &c) && cursor_write(s, &c) == 0)
			s->ack = c;
		return 0;
	}
	if (batch_send(s) < 0) {
		send_failed(s);
		return -1;
	}
	if (s->down)
		fprintf(stderr, "xtcd: ClickHouse at %s takes batches again after %" PRIu64 " s\n",
		        s->url_shown, (now_ms() - s->down_since_ms) / 1000);
	s->down = 0;
	if ((ret = cursor_write(s, &c)) < 0)
		fprintf(stderr, "xtcd: cannot write the cursor %s: %s; a restart will ship again "
		        "what was sent since the last write (the rows collapse by key)\n",
		        s->cursor_path, strerror(-ret));
	s->ack = c;
	s->shipped_rows += s->b.rows;
	s->shipped_events += s->b.events;
	s->batches++;
	s->last_ok_real = real_ns();
	s->full = 0;
	batch_reset(&s->b);
	return 0;
}

/* Create the tables (--ship-create).  0, or -1 with a line on stderr. */
static int create_tables(struct ship *s)
{
	for (int t = 0; t < SHIP_NTABLES; t++) {
		if (ship_http_post(s->http, ship_table_sql(t), "", 0, s->err, sizeof(s->err)) < 0) {
			fprintf(stderr, "xtcd: --ship-create: creating table %s at %s failed: %s\n",
			        ship_table_name(t), s->url_shown, s->err);
			return -1;
		}
	}
	return 0;
}

/* ---- the shipper's own textfile for node-exporter ---- */

static void metrics_write(struct ship *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	uint64_t now = real_ns();
	double lag_s = s->b.oldest_real && now > s->b.oldest_real ?
	               (double)(now - s->b.oldest_real) / 1e9 : 0;
	int ret;

	if (!s->o->metrics_file || !(f = open_memstream(&buf, &len)))
		return;
	fprintf(f,
	        "# HELP xtcd_ship_rows_total Rows ClickHouse acknowledged (events, sessions, drops).\n"
	        "# TYPE xtcd_ship_rows_total counter\nxtcd_ship_rows_total %" PRIu64 "\n"
	        "# HELP xtcd_ship_events_total Event records ClickHouse acknowledged.\n"
	        "# TYPE xtcd_ship_events_total counter\nxtcd_ship_events_total %" PRIu64 "\n"
	        "# HELP xtcd_ship_batches_total Batches ClickHouse acknowledged.\n"
	        "# TYPE xtcd_ship_batches_total counter\nxtcd_ship_batches_total %" PRIu64 "\n"
	        "# HELP xtcd_ship_failures_total Batch sends that failed and were retried.\n"
	        "# TYPE xtcd_ship_failures_total counter\nxtcd_ship_failures_total %" PRIu64 "\n"
	        "# HELP xtcd_ship_unshipped_segments_total Segments deleted before they were shipped.\n"
	        "# TYPE xtcd_ship_unshipped_segments_total counter\n"
	        "xtcd_ship_unshipped_segments_total %" PRIu64 "\n"
	        "# HELP xtcd_ship_up Whether the last send to ClickHouse succeeded.\n"
	        "# TYPE xtcd_ship_up gauge\nxtcd_ship_up %d\n"
	        "# HELP xtcd_ship_lag_records Rows read from disk, not yet acknowledged.\n"
	        "# TYPE xtcd_ship_lag_records gauge\nxtcd_ship_lag_records %" PRIu64 "\n"
	        "# HELP xtcd_ship_lag_bytes Segment bytes on disk after the cursor.\n"
	        "# TYPE xtcd_ship_lag_bytes gauge\nxtcd_ship_lag_bytes %" PRIu64 "\n"
	        "# HELP xtcd_ship_lag_seconds Age of the oldest record not yet acknowledged.\n"
	        "# TYPE xtcd_ship_lag_seconds gauge\nxtcd_ship_lag_seconds %.3f\n"
	        "# HELP xtcd_ship_last_success_timestamp_seconds When ClickHouse last took a batch.\n"
	        "# TYPE xtcd_ship_last_success_timestamp_seconds gauge\n"
	        "xtcd_ship_last_success_timestamp_seconds %.3f\n",
	        s->shipped_rows, s->shipped_events, s->batches, s->failures, s->unshipped, !s->down,
	        s->b.rows, lag_bytes(s), lag_s, (double)s->last_ok_real / 1e9);
	if (fclose(f) == 0 && (ret = textfile_replace(s->o->metrics_file, buf, len, 0)) < 0 &&
	    s->metrics_ms == 0)
		fprintf(stderr, "xtcd: cannot write the metrics file %s: %s\n", s->o->metrics_file,
		        strerror(-ret));
	free(buf);
	s->metrics_ms = now_ms();
}

/* ---- waiting ---- */

static void watch_init(struct ship *s)
{
	s->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->ifd >= 0 && inotify_add_watch(s->ifd, s->dir, IN_MODIFY | IN_CREATE | IN_MOVED_TO |
	                                     IN_DELETE | IN_ONLYDIR) < 0) {
		close(s->ifd);
		s->ifd = -1;
	}
}

/* Sleep until DIR changes or timeout_ms passes (a signal ends it too). */
static void wait_for(struct ship *s, uint64_t timeout_ms)
{
	struct pollfd p = { .fd = s->ifd, .events = POLLIN };
	char buf[4096];

	if (poll(&p, s->ifd >= 0 ? 1 : 0, (int)timeout_ms) > 0)
		while (read(s->ifd, buf, sizeof(buf)) > 0)
			;
}

/* How long to sleep: until the batch is due, a retry, or IDLE_MS. */
static uint64_t sleep_ms(struct ship *s, int caught_up)
{
	uint64_t now = now_ms(), due = now + IDLE_MS;

	if (s->down)
		return s->retry_ms > now ? s->retry_ms - now : 0;
	if (!caught_up)
		return 0;
	if (s->b.rows && s->b.since_ms + s->o->batch_ms < due)
		due = s->b.since_ms + s->o->batch_ms;
	return due > now ? due - now : 0;
}

/* ---- the mode ---- */

/* Resume from the cursor, or start at the oldest segment. */
static void resume(struct ship *s)
{
	struct cursor c;

	if (!cursor_read(s, &c))
		return;
	s->ack = c;
	walk_go_to(&s->w, c.seq);
	s->w.off = c.off;
	if (c.done) {
		walk_seg_end(&s->w, c.next ? c.next : c.seq + 1);
	} else if (c.off > 0) {
		s->warm = 1;
		s->skip_below = c.off;
	}
}

/* Whether the batch should go now. */
static int due(struct ship *s)
{
	if (s->down)
		return now_ms() >= s->retry_ms;
	if (!s->b.rows) {
		struct cursor c = position(s);

		return cursor_moved(s, &c);
	}
	return s->full || now_ms() >= s->b.since_ms + s->o->batch_ms;
}

static int ship_loop(struct ship *s)
{
	int ret = 0, caught_up;

	while (!walk_stop) {
		caught_up = 0;
		if (!s->full && !s->down) {
			ret = walk_step(&s->w);
			if (ret < 0)
				break;
			caught_up = ret == 0 && !s->full;
		}
		if (due(s))
			flush(s);
		if (s->o->metrics_file && now_ms() >= s->metrics_ms + METRICS_MS)
			metrics_write(s);
		if (caught_up || s->down)
			wait_for(s, sleep_ms(s, caught_up));
	}
	if (walk_stop && !s->down)
		flush(s);   /* what was read goes out; a failure is resent next start */
	metrics_write(s);
	return ret;
}

static int ship_setup(struct ship *s, const struct ship_opts *o)
{
	int fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (fd < 0) {
		fprintf(stderr, "xtcd: --ship: %s: %s; point it at the directory xtcd writes its "
		        "segments to\n", o->dir, strerror(errno));
		return -1;
	}
	close(fd);
	s->o = o;
	snprintf(s->dir, sizeof(s->dir), "%s", o->dir);
	walk_init(&s->w, o->dir, &ship_walk, s);
	s->w.rewind = 1;   /* blocks shipped again have the same keys */
	if (o->cursor)
		snprintf(s->cursor_path, sizeof(s->cursor_path), "%s", o->cursor);
	else
		snprintf(s->cursor_path, sizeof(s->cursor_path), "%s/.xtcd-ship.cursor", o->dir);
	url_shown(s);
	if (batch_open(&s->b) < 0 || segread_open(&s->r, o->dir, ship_item_cb, ship_problem_cb, s) < 0 ||
	    (ret = ship_http_open(&s->http, o->url)) < 0) {
		fprintf(stderr, "xtcd: --ship: cannot start: %s\n", strerror(ENOMEM));
		return -1;
	}
	return 0;
}

int xtcd_ship(const struct ship_opts *o)
{
	struct ship *s = calloc(1, sizeof(*s));
	int ret, status = 2;

	if (!s)
		return 2;
	s->ifd = -1;
	if (!ship_http_available()) {
		fprintf(stderr, "xtcd: --ship needs libcurl: this xtcd was built without it (install "
		        "libcurl4-openssl-dev and configure again)\n");
		goto out;
	}
	if (ship_setup(s, o) < 0)
		goto out;
	if (o->create && create_tables(s) < 0)
		goto out;
	walk_catch_stop();
	watch_init(s);
	resume(s);
	ret = ship_loop(s);
	if (ret < 0)
		fprintf(stderr, "xtcd: --ship %s failed: %s\n", s->dir, strerror(-ret));
	status = ret < 0 ? 2 : 0;
out:
	if (s->ifd >= 0)
		close(s->ifd);
	segread_close(s->r);
	ship_http_close(s->http);
	batch_close(&s->b);
	free(s);
	return status;
}
