/*
 * xtcd/store_budget.c - the segments in the directory, the byte budget
 * and the per-uid quota.
 *
 * Budget: before a new segment is opened, the oldest closed segments are
 * deleted until the closed ones plus a whole new segment fit in
 * --max-bytes (and --keep-free bytes stay free on the filesystem), so the
 * directory never holds more than the budget.  Every deletion is recorded
 * in the stream as an EVICTED block.
 *
 * Quota (quota, quota.UID in xtcd.conf): a uid may hold at most that many
 * bytes of EVENTS blocks (block headers included) in the directory.  The
 * bytes are charged to the uid of the block's session when the block is
 * appended (and refunded if its write fails), per segment, so deleting a
 * segment gives its bytes back to the uids that wrote them.  A uid at or
 * over its quota gets no new EVENTS blocks: session.c counts its records as
 * dropped, in DROP blocks of cause 5 (quota), until deletions under the
 * budget bring it back under.  Other uids are untouched.  We refuse rather
 * than evict because segments are shared: deleting the over-quota uid's
 * oldest data would delete everyone's data of that time with it.  Session
 * starts and ends, DROP and other bookkeeping blocks are never refused and
 * count for no uid, so the account of what was lost is always written.
 * Segments left by an earlier xtcd are attributed by a scan of their
 * blocks when a quota is first configured.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "lib/seg/idmap.h"
#include "lib/seg/seg.h"
#include "lib/seg/segread.h"
#include "xtcd/conf.h"
#include "xtcd/store_int.h"
#include "xtcd/xtcd.h"

#define EVICT_MAX_IDS 4096  /* session ids one EVICTED block names, at most */

struct uid_bytes {            /* event bytes of one uid */
	uid_t    uid;
	int      over;               /* at or over its quota when last asked */
	uint64_t bytes;
};

struct uid_tab {
	struct uid_bytes *v;
	size_t   n;
};

struct ondisk {               /* a segment in the directory, for the budget */
	uint64_t seq;
	uint64_t bytes;
	struct uid_tab uids;      /* its EVENTS bytes by uid, once attributed */
	int      attributed;
};

static struct {
	struct ondisk *disk;       /* oldest first */
	size_t    ndisk, disk_cap;
	uint64_t  evict_first, evict_last, evict_bytes, evict_records;
	uint64_t *evict_sessions;
	size_t    evict_nsessions;
	struct idmap evict_seen;   /* the ids in evict_sessions */
	int       evict_pending;
	struct uid_tab uids;       /* EVENTS bytes by uid, attributed segments */
	struct store_evictions evicted; /* since start, for the metrics */
} st;

uint64_t store_bytes_used(void)
{
	uint64_t n = 0;

	for (size_t i = 0; i < st.ndisk; i++)
		n += st.disk[i].bytes;
	return n;
}

/* ---------------------------------------------------------------------
 * The directory and its budget
 */

void store_disk_add(uint64_t seq, uint64_t bytes, int attributed)
{
	if (st.ndisk == st.disk_cap) {
		size_t cap = st.disk_cap ? st.disk_cap * 2 : 64;
		struct ondisk *d = realloc(st.disk, cap * sizeof *d);

		if (d == NULL) {
			xlog_error("out of memory tracking segments");
			return;
		}
		st.disk = d;
		st.disk_cap = cap;
	}
	st.disk[st.ndisk++] = (struct ondisk){ .seq = seq, .bytes = bytes, .attributed = attributed };
}

void store_disk_set_bytes(uint64_t seq, uint64_t bytes)
{
	for (size_t i = 0; i < st.ndisk; i++)
		if (st.disk[i].seq == seq)
			st.disk[i].bytes = bytes;
}

/* What the segments hold, the current one's buffered blocks included. */
uint64_t store_disk_bytes(void)
{
	uint64_t n = 0, cur = 0, reserved = 0;
	int have = store_current(&cur, &reserved) == 0;

	for (size_t i = 0; i < st.ndisk; i++)
		n += have && st.disk[i].seq == cur ? reserved : st.disk[i].bytes;
	return n;
}

void store_evictions(struct store_evictions *out)
{
	*out = st.evicted;
}

uint64_t store_segments(void)
{
	return st.ndisk;
}

/* ---------------------------------------------------------------------
 * The quota (see the top of this file)
 */

static struct uid_bytes *uid_slot(struct uid_tab *t, uid_t uid, int add)
{
	struct uid_bytes *v;

	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].uid == uid)
			return &t->v[i];
	if (!add || (v = realloc(t->v, (t->n + 1) * sizeof *v)) == NULL)
		return NULL;
	t->v = v;
	t->v[t->n] = (struct uid_bytes){ .uid = uid };
	return &t->v[t->n++];
}

static struct ondisk *disk_find(uint64_t seq)
{
	for (size_t i = st.ndisk; i-- > 0;)
		if (st.disk[i].seq == seq)
			return &st.disk[i];
	return NULL;
}

/* Add (or, with sign < 0, take back) bytes of uid in segment seq. */
void store_uid_charge(uint64_t seq, uid_t uid, uint64_t bytes, int sign)
{
	struct ondisk *d = disk_find(seq);
	struct uid_bytes *seg, *all;

	if (d == NULL || !d->attributed)
		return; /* deleted already: its bytes were given back then */
	seg = uid_slot(&d->uids, uid, 1);
	all = uid_slot(&st.uids, uid, 1);
	if (seg == NULL || all == NULL) {
		xlog_error("out of memory counting the bytes of uid %u", (unsigned)uid);
		return;
	}
	if (sign > 0) {
		seg->bytes += bytes;
		all->bytes += bytes;
	} else {
		seg->bytes -= bytes < seg->bytes ? bytes : seg->bytes;
		all->bytes -= bytes < all->bytes ? bytes : all->bytes;
	}
}

/* A segment leaves the directory: its uids get their bytes back. */
static void uid_release(struct ondisk *d)
{
	for (size_t i = 0; d->attributed && i < d->uids.n; i++) {
		struct uid_bytes *all = uid_slot(&st.uids, d->uids.v[i].uid, 0);

		if (all != NULL)
			all->bytes -= d->uids.v[i].bytes < all->bytes ? d->uids.v[i].bytes : all->bytes;
	}
	free(d->uids.v);
	d->uids = (struct uid_tab){ 0 };
}

uint64_t store_uid_bytes(uid_t uid)
{
	struct uid_bytes *u = uid_slot(&st.uids, uid, 0);

	return u != NULL ? u->bytes : 0;
}

int store_quota_blocked(uid_t uid)
{
	uint64_t quota = conf_quota_for(&cfg, uid);
	struct uid_bytes *u = uid_slot(&st.uids, uid, 0);
	uint64_t used = u != NULL ? u->bytes : 0;
	int over = quota != CONF_NO_QUOTA && used >= quota;
	char q[32];

	if (u == NULL && over)
		u = uid_slot(&st.uids, uid, 1);
	if (u != NULL && over != u->over) {
		u->over = over;
		if (over)
			xlog_warn("uid %u holds %llu bytes of events, its quota is %s: its new events are "
			     "dropped (cause quota) until old segments are deleted", (unsigned)uid,
			     (unsigned long long)used, conf_size_text(quota, q, sizeof q));
		else
			xlog("uid %u is under its quota again (%llu bytes of %s); writing its events",
			     (unsigned)uid, (unsigned long long)used, conf_size_text(quota, q, sizeof q));
	}
	return over;
}

/* Open segment seq to read it: never through a link, never a FIFO or
 * device (which could block the loop), whatever was put in the directory
 * under its name.  The fd, or -1. */
static int segment_open_read(uint64_t seq)
{
	char name[64];
	struct stat sb;
	int fd;

	seg_path(name, sizeof name, ".", seq);
	fd = openat(store_dir_fd(), name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Which uid each session of a segment belongs to, while it is scanned. */
struct attribution {
	struct ondisk *d;
	struct idmap uid;          /* session id -> uid */
};

static int attribute_cb(const struct xtc_seg_blk_hdr *h, const void *payload, off_t off, void *user)
{
	struct attribution *a = user;
	uint64_t uid;

	(void)off;
	if (h->type == XTC_BLK_SESSION_START && h->len >= sizeof(struct xtc_seg_session_start)) {
		const struct xtc_seg_session_start *ss = payload;

		if (idmap_put(&a->uid, ss->session_id, ss->uid) < 0)
			return 1;
	} else if (h->type == XTC_BLK_EVENTS && h->len >= sizeof(struct xtc_seg_events)) {
		uint64_t id = ((const struct xtc_seg_events *)payload)->session_id;

		if (idmap_get(&a->uid, id, &uid))
			store_uid_charge(a->d->seq, (uid_t)uid, sizeof *h + h->len, 1);
	}
	return 0;
}

/* Charge the EVENTS blocks of segments an earlier xtcd wrote to their
 * uids: a scan of each, the first time a quota is configured. */
static void attribute_existing(void)
{
	size_t done = 0;

	for (size_t i = 0; i < st.ndisk; i++) {
		struct attribution a = { .d = &st.disk[i] };
		struct seg_scan scan;
		int fd;

		if (st.disk[i].attributed)
			continue;
		st.disk[i].attributed = 1;
		fd = segment_open_read(st.disk[i].seq);
		if (fd < 0)
			continue;
		seg_scan_fd(fd, attribute_cb, &a, &scan);
		close(fd);
		idmap_free(&a.uid);
		done++;
	}
	if (done != 0)
		xlog("counted the event bytes of each uid in %zu segments, for the quota", done);
}

static int quota_configured(void)
{
	return cfg.quota != CONF_NO_QUOTA || cfg.quota_count != 0;
}

struct evict_count {
	uint64_t records;
};

/* Count the records and note the sessions of a segment about to go. */
static int evict_scan_cb(const struct xtc_seg_blk_hdr *h, const void *payload, off_t off, void *user)
{
	struct evict_count *ec = user;
	uint64_t id;

	(void)off;
	if (h->type == XTC_BLK_EVENTS && h->len >= sizeof(struct xtc_seg_events))
		ec->records += ((const struct xtc_seg_events *)payload)->count;
	if (h->type != XTC_BLK_SESSION_START || h->len < sizeof(struct xtc_seg_session_start))
		return 0;
	id = ((const struct xtc_seg_session_start *)payload)->session_id;
	if (st.evict_nsessions >= EVICT_MAX_IDS || idmap_get(&st.evict_seen, id, NULL))
		return 0;
	if ((st.evict_nsessions & (st.evict_nsessions - 1)) == 0) {
		size_t cap = st.evict_nsessions ? st.evict_nsessions * 2 : 16;
		uint64_t *p = realloc(st.evict_sessions, cap * sizeof *p);

		if (p == NULL)
			return 0;
		st.evict_sessions = p;
	}
	if (idmap_put(&st.evict_seen, id, 0) == 0)
		st.evict_sessions[st.evict_nsessions++] = id;
	return 0;
}

/* Delete the oldest closed segment, `why` (for the log).  Returns 0, or -1
 * if there is none. */
int store_evict_oldest(const char *why)
{
	char path[4096], name[64];
	struct evict_count ec = { 0 };
	struct seg_scan scan;
	struct ondisk d;
	uint64_t cur, reserved;
	int fd, foreign = 0;

	if (st.ndisk == 0 || (store_current(&cur, &reserved) == 0 && st.disk[0].seq == cur) ||
	    store_segment_writing(st.disk[0].seq))
		return -1;
	d = st.disk[0];
	seg_path(path, sizeof path, cfg.dir, d.seq);
	seg_path(name, sizeof name, ".", d.seq);
	fd = segment_open_read(d.seq);
	if (fd >= 0)
		foreign = seg_scan_fd(fd, evict_scan_cb, &ec, &scan) == 0 && !scan.header_ok;
	if (foreign) {
		close(fd);
		/* put there in place of our segment since: not ours to delete */
		xlog_warn("%s is no longer a segment (someone replaced it): left as it is, and no longer "
		     "counted in the budget", path);
		uid_release(&st.disk[0]);
		memmove(st.disk, st.disk + 1, (st.ndisk - 1) * sizeof *st.disk);
		st.ndisk--;
		return 0;
	}
	/* The name goes now; the blocks and the page cache go when the last
	 * descriptor closes, on the worker: freeing a 64 MiB segment took the
	 * event loop 27-47 ms here, a ring's worth at millions of events/s.
	 * But not when the filesystem is full: the write that failed is tried
	 * again at once, and must find the space (else it fails again, and
	 * the next segment is deleted for it too). */
	if (unlinkat(store_dir_fd(), name, 0) < 0 && errno != ENOENT) {
		xlog_error("cannot delete %s %s: %s", path, why, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fd >= 0 && strcmp(why, STORE_FS_FULL) == 0)
		close(fd);
	else if (fd >= 0)
		worker_release(fd, d.bytes);
	uid_release(&st.disk[0]);
	memmove(st.disk, st.disk + 1, (st.ndisk - 1) * sizeof *st.disk);
	st.ndisk--;
	if (!st.evict_pending)
		st.evict_first = d.seq;
	st.evict_last = d.seq;
	st.evict_bytes += d.bytes;
	st.evict_records += ec.records;
	st.evict_pending = 1;
	st.evicted.segments++;
	st.evicted.bytes += d.bytes;
	st.evicted.records += ec.records;
	xlog("deleted %s (%llu bytes, %llu records) %s", path, (unsigned long long)d.bytes,
	     (unsigned long long)ec.records, why);
	return 0;
}

/* Free bytes on the segment filesystem. */
static uint64_t fs_free(void)
{
	struct statvfs sv;

	if (fstatvfs(store_dir_fd(), &sv) < 0)
		return UINT64_MAX;
	/* and what deleted segments free once the worker closes them */
	return (uint64_t)sv.f_bavail * sv.f_frsize + worker_releasing();
}

/* Delete old segments until `need` more bytes fit the budget. */
void store_evict_for(uint64_t need)
{
	while (store_bytes_used() + need > cfg.max_bytes && store_evict_oldest(STORE_BUDGET) == 0)
		;
	while (cfg.keep_free != 0 && fs_free() < cfg.keep_free + need &&
	       store_evict_oldest("to keep --keep-free bytes free") == 0)
		;
}

/* Record the deletions since the last EVICTED block. */
void store_evicted_block(void)
{
	size_t ids = st.evict_nsessions;
	uint32_t len = (uint32_t)(sizeof(struct xtc_seg_evicted) + ids * sizeof(uint64_t));
	struct xtc_seg_evicted *e;

	if (!st.evict_pending)
		return;
	e = store_block_begin(len);
	if (e == NULL)
		return; /* kept pending for the next chance */
	memset(e, 0, sizeof *e);
	e->first_seq = st.evict_first;
	e->last_seq = st.evict_last;
	e->bytes = st.evict_bytes;
	e->records = st.evict_records;
	e->session_count = (uint32_t)ids;
	if (ids != 0)
		memcpy(e + 1, st.evict_sessions, ids * sizeof(uint64_t)); /* NULL when none */
	store_block_end(XTC_BLK_EVICTED, 0, len, NULL);
	st.evict_pending = 0;
	st.evict_bytes = st.evict_records = 0;
	free(st.evict_sessions);
	st.evict_sessions = NULL;
	st.evict_nsessions = 0;
	idmap_free(&st.evict_seen);
}

void store_quota_attribute(void)
{
	if (quota_configured())
		attribute_existing();
}

void store_disk_forget(uint64_t seq)
{
	if (st.ndisk > 0 && st.disk[st.ndisk - 1].seq == seq) {
		uid_release(&st.disk[st.ndisk - 1]);
		st.ndisk--;
	}
}

void store_budget_fini(void)
{
	for (size_t i = 0; i < st.ndisk; i++)
		free(st.disk[i].uids.v);
	free(st.uids.v);
	free(st.disk);
	free(st.evict_sessions);
	idmap_free(&st.evict_seen);
	st.disk = NULL;
	st.ndisk = st.disk_cap = 0;
}
