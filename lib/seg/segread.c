/*
 * lib/seg/segread.c - read a directory of segments as decoded items (see
 * segread.h for the layers and the contract).
 *
 * Trust: segment files are input like any other.  Block payloads are
 * checked against the exact length their struct and counts imply before
 * anything in them is used; a block that fails is reported and skipped.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/seg/segread.h"

#define BLK_HDR    ((off_t)sizeof(struct xtc_seg_blk_hdr))
#define FILE_HDR   ((off_t)sizeof(struct xtc_seg_file_hdr))
#define CHUNK_MAX  (1u << 20)   /* bytes read per pread at most */
#define CHUNK_MIN  (64u << 10)

/* ---- the block engine ---- */

/* A window of the file in memory, plus scratch for realigning payloads. */
struct rbuf {
	uint8_t *p;
	size_t   cap;
	off_t    base;       /* file offset of p[0] */
	size_t   len;        /* bytes valid at p */
	uint8_t *scratch;    /* 8-byte aligned copy of a misaligned payload */
	size_t   scratch_cap;
};

/* pread all of len bytes at off, retrying EINTR; bytes read or -errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* Make the window at least n bytes big; 0 or -ENOMEM. */
static int rbuf_reserve(struct rbuf *b, size_t n)
{
	uint8_t *np;

	if (n <= b->cap)
		return 0;
	np = realloc(b->p, n);
	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = n;
	return 0;
}

/*
 * Point *out at file bytes [off, off + n), which the caller knows lie
 * below size.  Reads a chunk starting at off when the window does not hold
 * them, keeping the overlap.  0, 1 when the file turned out shorter (it
 * shrank under us), or -errno.
 */
static int rbuf_get(struct rbuf *b, int fd, off_t off, size_t n, off_t size,
                    const uint8_t **out)
{
	size_t have = 0, want;
	ssize_t r;
	int ret;

	if (b->p && off >= b->base && (size_t)(off - b->base) + n <= b->len) {
		*out = b->p + (off - b->base);
		return 0;
	}
	want = (size_t)(size - off) < CHUNK_MAX ? (size_t)(size - off) : CHUNK_MAX;
	if (want < n)
		want = n;
	if ((ret = rbuf_reserve(b, want < CHUNK_MIN ? CHUNK_MIN : want)) < 0)
		return ret;
	if (off >= b->base && off < b->base + (off_t)b->len) {
		have = b->len - (size_t)(off - b->base);
		memmove(b->p, b->p + (off - b->base), have);
	}
	b->base = off;
	b->len = have;
	r = pread_full(fd, b->p + have, want - have, off + (off_t)have);
	if (r < 0)
		return (int)r;
	b->len += (size_t)r;
	if (b->len < n)
		return 1;
	*out = b->p;
	return 0;
}

/* payload, or an 8-byte aligned copy of it; NULL on -ENOMEM. */
static const void *rbuf_align(struct rbuf *b, const uint8_t *payload, size_t len)
{
	if (((uintptr_t)payload & 7) == 0 || len == 0)
		return payload;
	if (len > b->scratch_cap) {
		uint8_t *np = realloc(b->scratch, len); /* malloc alignment >= 8 */

		if (!np)
			return NULL;
		b->scratch = np;
		b->scratch_cap = len;
	}
	memcpy(b->scratch, payload, len);
	return b->scratch;
}

/* CRC a block carries: header with crc 0, then the payload. */
static uint32_t blk_crc(const struct xtc_seg_blk_hdr *h, const uint8_t *payload)
{
	struct xtc_seg_blk_hdr tmp = *h;

	tmp.crc = 0;
	return seg_crc32c(seg_crc32c(0, &tmp, sizeof(tmp)), payload, h->len);
}

/* Record why the engine stopped; returns 0 (stop). */
static int stop_at(struct segread_span *sp, enum segread_stop why)
{
	sp->stop = why;
	return 0;
}

/* Check and deliver the block at sp->next: 1 go on, 0 stopped, -errno. */
static int next_block(struct rbuf *b, int fd, struct segread_span *sp, seg_block_fn fn,
                      void *user)
{
	off_t off = sp->next, left = sp->file_size - off;
	struct xtc_seg_blk_hdr h;
	const uint8_t *p;
	const void *payload;
	int r;

	if (left == 0)
		return stop_at(sp, SEGREAD_END);
	if (left < BLK_HDR)
		return stop_at(sp, SEGREAD_PARTIAL);
	if ((r = rbuf_get(b, fd, off, sizeof(h), sp->file_size, &p)) != 0)
		return r < 0 ? r : stop_at(sp, SEGREAD_PARTIAL);
	memcpy(&h, p, sizeof(h));
	if (h.type < XTC_BLK_SESSION_START || h.type > XTC_BLK_CORRUPT ||
	    h.len > XTC_SEG_MAX_BLOCK)
		return stop_at(sp, SEGREAD_BAD_HEADER);
	if (left - BLK_HDR < (off_t)h.len)
		return stop_at(sp, SEGREAD_PARTIAL);
	if ((r = rbuf_get(b, fd, off, sizeof(h) + h.len, sp->file_size, &p)) != 0)
		return r < 0 ? r : stop_at(sp, SEGREAD_PARTIAL);
	if (blk_crc(&h, p + sizeof(h)) != h.crc)
		return stop_at(sp, SEGREAD_BAD_CRC);
	if (!(payload = rbuf_align(b, p + sizeof(h), h.len)))
		return -ENOMEM;
	sp->next = off + BLK_HDR + (off_t)h.len;
	sp->blocks++;
	sp->last_type = h.type;
	if (fn && (r = fn(&h, payload, off, user)) != 0) {
		sp->fn_ret = r;
		return stop_at(sp, SEGREAD_STOPPED);
	}
	return 1;
}

/* Deliver the valid blocks of fd from `from` (see segread.h). */
int segread_blocks(int fd, off_t from, seg_block_fn fn, void *user, struct segread_span *sp)
{
	struct rbuf b = { 0 };
	struct stat st;
	int ret;

	memset(sp, 0, sizeof(*sp));
	sp->next = from;
	if (fstat(fd, &st) < 0)
		return -errno;
	sp->file_size = st.st_size;
	if (from < 0 || st.st_size < from)
		return stop_at(sp, SEGREAD_SHRUNK);
	while ((ret = next_block(&b, fd, sp, fn, user)) > 0)
		;
	free(b.p);
	free(b.scratch);
	return ret;
}

/* ---- the session table ---- */

struct sess_tab {
	struct segread_session **slot;  /* open addressing, linear probing */
	size_t cap;                     /* a power of two, or 0 */
	size_t n;
};

/* Spread a session id over the table. */
static size_t hash_id(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

/* The slot holding id, or the empty slot where it would go. */
static size_t tab_probe(const struct sess_tab *t, uint64_t id)
{
	size_t mask = t->cap - 1, i = hash_id(id) & mask;

	while (t->slot[i] && t->slot[i]->id != id)
		i = (i + 1) & mask;
	return i;
}

/* The session with id, or NULL. */
static struct segread_session *tab_find(const struct sess_tab *t, uint64_t id)
{
	return t->cap ? t->slot[tab_probe(t, id)] : NULL;
}

/* Double the table; 0 or -ENOMEM. */
static int tab_grow(struct sess_tab *t)
{
	struct sess_tab nt = { .cap = t->cap ? t->cap * 2 : 64, .n = t->n };

	nt.slot = calloc(nt.cap, sizeof(*nt.slot));
	if (!nt.slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i])
			nt.slot[tab_probe(&nt, t->slot[i]->id)] = t->slot[i];
	free(t->slot);
	*t = nt;
	return 0;
}

/* Add s (whose id is not in t); 0 or -ENOMEM. */
static int tab_add(struct sess_tab *t, struct segread_session *s)
{
	int ret;

	if ((t->n + 1) * 2 > t->cap && (ret = tab_grow(t)) < 0)
		return ret;
	t->slot[tab_probe(t, s->id)] = s;
	t->n++;
	return 0;
}

/* Free every session and the table. */
static void tab_free(struct sess_tab *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slot[i]) {
			free(t->slot[i]->settings);
			free(t->slot[i]);
		}
	}
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* ---- the reader ---- */

struct segread {
	char *dir;
	segread_item_fn item;
	segread_problem_fn problem;
	void *user;
	struct sess_tab sessions;
	struct segread_stats stats;
	/* the segment being read */
	uint64_t seq;
	struct xtc_seg_file_hdr hdr;
	int stopped;             /* the item callback asked to stop */
	int fatal;               /* -errno that must end the read (-ENOMEM) */
	char path[PATH_MAX];
};

/* Pass a problem to the callback and count it. */
static void tell_problem(struct segread *r, enum segread_problem_kind kind, off_t offset,
                         off_t bytes, int err, const char *why)
{
	struct segread_problem p = {
		.kind = kind, .seq = r->seq, .path = r->path, .offset = offset,
		.bytes = bytes, .err = err, .why = why,
	};

	if (kind == SEGREAD_TORN_TAIL)
		r->stats.torn++;
	else if (kind == SEGREAD_VANISHED)
		r->stats.vanished++;
	else
		r->stats.corrupt++;
	if (r->problem)
		r->problem(&p, r->user);
}

/* Tell a block whose contents do not match its type; 0 (go on). */
static int bad_payload(struct segread *r, off_t off, const char *why)
{
	tell_problem(r, SEGREAD_BAD_PAYLOAD, off, 0, 0, why);
	return 0;
}

/* Wall-clock ns of a monotonic ts of session s. */
uint64_t segread_wall(const struct segread_session *s, uint64_t mono_ns)
{
	return s->start.anchor_real_ns + (mono_ns - s->start.anchor_mono_ns);
}

/* Give it the wall time of mono_ns: the session's anchor, else the
 * segment's creation anchor (same host clock). */
static void set_wall(const struct segread *r, struct segread_item *it, uint64_t mono_ns)
{
	if (it->session)
		it->real_ns = segread_wall(it->session, mono_ns);
	else
		it->real_ns = r->hdr.created_real_ns + (mono_ns - r->hdr.created_mono_ns);
	it->has_real = 1;
}

/* Remember a new session from its SESSION_START; NULL on -ENOMEM. */
static struct segread_session *session_add(struct segread *r,
                                           const struct xtc_seg_session_start *ss,
                                           const char *settings)
{
	struct segread_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->settings = malloc((size_t)ss->settings_len + 1);
	if (!s->settings) {
		free(s);
		return NULL;
	}
	s->id = ss->session_id;
	s->start = *ss;
	memcpy(s->settings, settings, ss->settings_len);
	s->settings[ss->settings_len] = '\0';
	s->settings_len = ss->settings_len;
	s->first_seq = r->seq;
	if (tab_add(&r->sessions, s) < 0) {
		free(s->settings);
		free(s);
		return NULL;
	}
	return s;
}

/* SESSION_START: track the session, then deliver it. */
static int on_session_start(struct segread *r, const struct xtc_seg_blk_hdr *h,
                            const uint8_t *payload, struct segread_item *it)
{
	struct xtc_seg_session_start ss;
	struct segread_session *s;
	char *settings;
	int ret;

	if (h->len < sizeof(ss))
		return bad_payload(r, it->offset, "SESSION_START too short");
	memcpy(&ss, payload, sizeof(ss));
	if ((uint64_t)h->len != sizeof(ss) + (uint64_t)ss.settings_len)
		return bad_payload(r, it->offset, "SESSION_START settings length mismatch");
	settings = malloc((size_t)ss.settings_len + 1);
	if (!settings)
		return r->fatal = -ENOMEM;
	memcpy(settings, payload + sizeof(ss), ss.settings_len);
	settings[ss.settings_len] = '\0';
	s = tab_find(&r->sessions, ss.session_id);
	it->u.start.first = s == NULL;
	if (!s && !(s = session_add(r, &ss, settings))) {
		free(settings);
		return r->fatal = -ENOMEM;
	}
	it->type = SEGREAD_SESSION_START;
	it->session = s;
	it->u.start.ss = &ss;
	it->u.start.settings = settings;
	it->u.start.settings_len = ss.settings_len;
	it->u.start.restated = (h->flags & XTC_SEG_F_RESTATED) != 0;
	set_wall(r, it, ss.start_mono_ns);
	ret = r->item(it, r->user);
	free(settings);
	return ret;
}

/* EVENTS: decode the records one by one and deliver each. */
static int on_events(struct segread *r, const struct xtc_seg_blk_hdr *h,
                     const uint8_t *payload, struct segread_item *it)
{
	struct xtc_seg_events ev;
	struct seg_codec c;
	const uint8_t *p, *end;
	uint32_t i;
	int ret;

	if (h->len < sizeof(ev))
		return bad_payload(r, it->offset, "EVENTS too short");
	memcpy(&ev, payload, sizeof(ev));
	if ((uint64_t)h->len != sizeof(ev) + (uint64_t)ev.body_len)
		return bad_payload(r, it->offset, "EVENTS body length mismatch");
	it->type = SEGREAD_EVENT;
	it->session = tab_find(&r->sessions, ev.session_id);
	it->u.event.session_id = ev.session_id;
	it->u.event.ring = ev.ring;
	it->u.event.loop_id = ev.loop_id;
	p = payload + sizeof(ev);
	end = p + ev.body_len;
	seg_codec_begin(&c, ev.loop_id, ev.first_ts_ns);
	for (i = 0; i < ev.count; i++) {
		size_t n = seg_decode_rec(&c, p, end, &it->u.event.rec);

		if (!n)
			return bad_payload(r, it->offset, "EVENTS record undecodable");
		p += n;
		it->u.event.index = ev.first_index + i;
		set_wall(r, it, it->u.event.rec.ts_ns);
		r->stats.events++;
		if ((ret = r->item(it, r->user)) != 0)
			return ret;
	}
	if (p != end)
		return bad_payload(r, it->offset, "EVENTS bytes after the last record");
	return 0;
}

/* EVICTED: the fixed part, then session ids. */
static int on_evicted(struct segread *r, const struct xtc_seg_blk_hdr *h,
                      const uint8_t *payload, struct segread_item *it)
{
	struct xtc_seg_evicted *ev = &it->u.evicted.ev;

	if (h->len < sizeof(*ev))
		return bad_payload(r, it->offset, "EVICTED too short");
	memcpy(ev, payload, sizeof(*ev));
	if ((uint64_t)h->len != sizeof(*ev) + (uint64_t)ev->session_count * sizeof(uint64_t))
		return bad_payload(r, it->offset, "EVICTED session count mismatch");
	it->type = SEGREAD_EVICTED;
	/* payload is 8-byte aligned and the fixed part is 40 bytes */
	it->u.evicted.ids = (const uint64_t *)(const void *)(payload + sizeof(*ev));
	return r->item(it, r->user);
}

/* The blocks that are one struct of a fixed size: where it goes in the
 * item, and what the item is. */
static const struct fixed_block {
	size_t size, at;             /* bytes, and their offset in the item */
	enum segread_type type;
	const char *wrong;           /* the problem when the length differs */
} fixed_blocks[] = {
	[XTC_BLK_DROP] = { sizeof(struct xtc_seg_drop), offsetof(struct segread_item, u.drop),
	                   SEGREAD_DROP, "DROP has the wrong length" },
	[XTC_BLK_SESSION_END] = { sizeof(struct xtc_seg_session_end),
	                          offsetof(struct segread_item, u.end), SEGREAD_SESSION_END,
	                          "SESSION_END has the wrong length" },
	[XTC_BLK_SEGMENT_END] = { sizeof(struct xtc_seg_segment_end),
	                          offsetof(struct segread_item, u.seg_end), SEGREAD_SEGMENT_END,
	                          "SEGMENT_END has the wrong length" },
	[XTC_BLK_CORRUPT] = { sizeof(struct xtc_seg_corrupt), offsetof(struct segread_item, u.corrupt),
	                      SEGREAD_CORRUPT, "CORRUPT has the wrong length" },
};

/* DROP, SESSION_END (which marks its session ended), SEGMENT_END and
 * CORRUPT (a ring, not the file): copy the struct, find the session and
 * the wall-clock time, deliver. */
static int on_fixed(struct segread *r, const struct xtc_seg_blk_hdr *h,
                    const uint8_t *payload, struct segread_item *it)
{
	const struct fixed_block *f = &fixed_blocks[h->type];
	struct segread_session *s = NULL;

	if (h->len != f->size)
		return bad_payload(r, it->offset, f->wrong);
	memcpy((char *)it + f->at, payload, f->size);
	it->type = f->type;
	switch (h->type) {
	case XTC_BLK_DROP:
		it->session = tab_find(&r->sessions, it->u.drop.session_id);
		set_wall(r, it, it->u.drop.from_ts_ns ? it->u.drop.from_ts_ns : it->u.drop.to_ts_ns);
		break;
	case XTC_BLK_SESSION_END:
		if ((s = tab_find(&r->sessions, it->u.end.session_id)))
			s->ended = 1;
		it->session = s;
		set_wall(r, it, it->u.end.end_mono_ns);
		break;
	case XTC_BLK_SEGMENT_END:
		set_wall(r, it, it->u.seg_end.end_mono_ns);
		break;
	default:
		it->session = tab_find(&r->sessions, it->u.corrupt.session_id);
		break;
	}
	return r->item(it, r->user);
}

/* segread_blocks() callback: decode one block into items. */
static int block_cb(const struct xtc_seg_blk_hdr *h, const void *payload, off_t offset,
                    void *user)
{
	struct segread *r = user;
	struct segread_item it;
	int ret;

	memset(&it, 0, sizeof(it));
	it.seq = r->seq;
	it.offset = offset;
	r->stats.blocks++;
	switch (h->type) {
	case XTC_BLK_SESSION_START: ret = on_session_start(r, h, payload, &it); break;
	case XTC_BLK_EVENTS:        ret = on_events(r, h, payload, &it); break;
	case XTC_BLK_EVICTED:       ret = on_evicted(r, h, payload, &it); break;
	case XTC_BLK_DROP:
	case XTC_BLK_SESSION_END:
	case XTC_BLK_SEGMENT_END:
	case XTC_BLK_CORRUPT:       ret = on_fixed(r, h, payload, &it); break;
	default:                    ret = 0; break; /* the engine checked the type */
	}
	if (r->fatal)
		return 1;
	if (ret)
		r->stopped = 1;
	return ret;
}

/* Open a new reader of dir. */
int segread_open(struct segread **rp, const char *dir, segread_item_fn item,
                 segread_problem_fn problem, void *user)
{
	struct segread *r;

	*rp = NULL;
	if (!dir || !item)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->dir = strdup(dir);
	if (!r->dir) {
		free(r);
		return -ENOMEM;
	}
	for (size_t n = strlen(r->dir); n > 1 && r->dir[n - 1] == '/'; n--)
		r->dir[n - 1] = '\0'; /* "DIR/" names files "DIR/xtc-..." */
	r->item = item;
	r->problem = problem;
	r->user = user;
	*rp = r;
	return 0;
}

/* Free a reader. */
void segread_close(struct segread *r)
{
	if (!r)
		return;
	tab_free(&r->sessions);
	free(r->dir);
	free(r);
}

/* Open segment seq read-only as a regular file; fd or -errno (reported). */
static int open_segment(struct segread *r, uint64_t seq)
{
	struct stat st;
	int fd, n;

	r->seq = seq;
	n = seg_path(r->path, sizeof(r->path), r->dir, seq);
	if (n < 0 || (size_t)n >= sizeof(r->path)) {
		tell_problem(r, SEGREAD_IO_ERROR, 0, 0, -ENAMETOOLONG, "path too long");
		return -ENAMETOOLONG;
	}
	/* O_NONBLOCK: a FIFO planted under a segment name must not hang us */
	fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int err = -errno;

		tell_problem(r, err == -ENOENT ? SEGREAD_VANISHED : SEGREAD_IO_ERROR, 0, 0, err,
		             err == -ENOENT ? "deleted before it could be read" : "cannot open");
		return err;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		tell_problem(r, SEGREAD_BAD_FILE_HEADER, 0, 0, -EBADMSG, "not a regular file");
		return -EBADMSG;
	}
	return fd;
}

/* Do the file's first bytes (up to the magic's length) match the segment
 * magic?  A segment being created holds a prefix of its header, so a
 * shorter file that fails this is something else, not a torn segment.
 * A read error answers yes: reading the header reports it. */
static int magic_prefix(int fd, off_t size)
{
	char m[sizeof(XTC_SEG_MAGIC) - 1];
	size_t n = size < (off_t)sizeof m ? (size_t)size : sizeof m;
	ssize_t got = pread_full(fd, m, n, 0);

	return got < (ssize_t)n || memcmp(m, XTC_SEG_MAGIC, n) == 0;
}

/*
 * Read and check the file header into r->hdr.  0 when valid; 1 when the
 * file is shorter than a header (a segment being created: reported as a
 * torn tail unless it is empty or the caller is a follower); -EBADMSG
 * (reported) or -errno.
 */
static int read_header(struct segread *r, int fd, enum segread_tail tail)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size > 0 && !magic_prefix(fd, st.st_size)) {
		tell_problem(r, SEGREAD_BAD_FILE_HEADER, 0, st.st_size, -EBADMSG,
		       "not an xtc segment (no segment magic at its start: move it out of the "
		       "directory)");
		return -EBADMSG;
	}
	if (st.st_size < FILE_HDR) {
		if (st.st_size == 0 || tail == SEGREAD_TAIL_QUIET)
			return 1;
		tell_problem(r, tail == SEGREAD_TAIL_TORN ? SEGREAD_TORN_TAIL : SEGREAD_BAD_FILE_HEADER,
		             0, st.st_size, 0, "file shorter than its header");
		return 1;
	}
	n = pread_full(fd, &r->hdr, sizeof(r->hdr), 0);
	if (n < 0) {
		tell_problem(r, SEGREAD_IO_ERROR, 0, st.st_size, (int)n, "cannot read the header");
		return (int)n;
	}
	if ((size_t)n < sizeof(r->hdr) || seg_file_hdr_check(&r->hdr) < 0) {
		tell_problem(r, SEGREAD_BAD_FILE_HEADER, 0, st.st_size, -EBADMSG,
		             "bad file header (not an xtc segment, or another format version)");
		return -EBADMSG;
	}
	return 0;
}

/* Deliver the SEGMENT_BEGIN item of the segment just opened. */
static int deliver_begin(struct segread *r)
{
	struct segread_item it;
	int ret;

	memset(&it, 0, sizeof(it));
	it.type = SEGREAD_SEGMENT_BEGIN;
	it.seq = r->seq;
	it.u.seg_begin = &r->hdr;
	it.real_ns = r->hdr.created_real_ns;
	it.has_real = 1;
	r->stats.segments++;
	ret = r->item(&it, r->user);
	if (ret)
		r->stopped = 1;
	return ret;
}

/* What the stop reason says about the bytes after sp->next. */
static const char *stop_why(enum segread_stop stop)
{
	switch (stop) {
	case SEGREAD_PARTIAL:    return "block cut short by the end of the file";
	case SEGREAD_BAD_HEADER: return "bad block header";
	case SEGREAD_BAD_CRC:    return "bad block CRC";
	case SEGREAD_SHRUNK:     return "the file shrank below the read position";
	default:                 return NULL;
	}
}

/* Tell the bytes after the last valid block as a problem, per the tail mode. */
static void tell_tail(struct segread *r, const struct segread_span *sp,
                      enum segread_tail tail)
{
	const char *why = stop_why(sp->stop);

	if (!why || tail == SEGREAD_TAIL_QUIET)
		return;
	tell_problem(r, tail == SEGREAD_TAIL_TORN ? SEGREAD_TORN_TAIL : SEGREAD_CORRUPT_TAIL,
	             sp->next, sp->file_size > sp->next ? sp->file_size - sp->next : 0, 0, why);
}

/* Header, SEGMENT_BEGIN when starting, then the blocks of the open fd. */
static int read_segment_fd(struct segread *r, int fd, off_t from, enum segread_tail tail,
                           struct segread_span *sp)
{
	int ret = read_header(r, fd, tail);

	if (ret > 0 && from >= FILE_HDR)
		sp->stop = SEGREAD_SHRUNK;
	if (ret != 0)
		return ret > 0 ? 0 : ret;
	if (from < FILE_HDR) {
		from = FILE_HDR;
		if ((ret = deliver_begin(r)) != 0)
			return ret;
	}
	ret = segread_blocks(fd, from, block_cb, r, sp);
	if (r->fatal)
		return r->fatal;
	if (ret == -ENOMEM)
		return r->fatal = ret;
	if (ret < 0) {
		tell_problem(r, SEGREAD_IO_ERROR, sp->next, sp->file_size - sp->next, ret, "read error");
		return ret;
	}
	if (sp->stop == SEGREAD_STOPPED)
		return sp->fn_ret;
	tell_tail(r, sp, tail);
	return 0;
}

/* Read segment seq from byte `from` (see segread.h). */
int segread_segment(struct segread *r, uint64_t seq, off_t from, enum segread_tail tail,
                    struct segread_span *sp)
{
	int fd, ret;

	memset(sp, 0, sizeof(*sp));
	sp->next = from < FILE_HDR ? 0 : from;
	sp->stop = SEGREAD_PARTIAL;
	r->stopped = 0;
	r->fatal = 0;
	fd = open_segment(r, seq);
	if (fd < 0)
		return fd;
	ret = read_segment_fd(r, fd, from, tail, sp);
	close(fd);
	return ret;
}

/* Read every segment in the directory, oldest first. */
int segread_run(struct segread *r)
{
	struct segread_span sp;
	uint64_t *seqs;
	size_t n;
	int ret;

	ret = seg_list(r->dir, &seqs, &n);
	if (ret < 0)
		return ret;
	r->stats.listed += n;
	for (size_t i = 0; i < n; i++) {
		ret = segread_segment(r, seqs[i], 0,
		                      i + 1 == n ? SEGREAD_TAIL_TORN : SEGREAD_TAIL_CORRUPT, &sp);
		if (r->stopped || r->fatal)
			break;
		ret = 0; /* problems were reported; go on with the next segment */
	}
	free(seqs);
	return ret;
}

/* Counts so far. */
const struct segread_stats *segread_stats(const struct segread *r)
{
	return &r->stats;
}

/* The session with id, or NULL. */
const struct segread_session *segread_session_find(const struct segread *r, uint64_t id)
{
	return tab_find(&r->sessions, id);
}

/* The directory being read. */
const char *segread_dir(const struct segread *r)
{
	return r->dir;
}

/* Read and check the file header; 1 valid, 0 missing or bad, -errno. */
static int read_file_hdr(int fd, off_t size, struct xtc_seg_file_hdr *h)
{
	ssize_t r;

	if (size < (off_t)sizeof(*h))
		return 0;
	r = pread_full(fd, h, sizeof(*h), 0);
	if (r < 0)
		return (int)r;
	if ((size_t)r < sizeof(*h))
		return 0;
	return seg_file_hdr_check(h) == 0;
}

/* Scan a whole segment file: header, then blocks until the first bad one. */
int seg_scan_fd(int fd, seg_block_fn fn, void *user, struct seg_scan *out)
{
	struct segread_span sp;
	struct stat st;
	int ret;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) < 0)
		return -errno;
	out->file_size = st.st_size;
	ret = read_file_hdr(fd, st.st_size, &out->hdr);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		out->torn = out->file_size > 0;
		return 0;
	}
	out->header_ok = 1;
	ret = segread_blocks(fd, sizeof(out->hdr), fn, user, &sp);
	if (ret < 0)
		return ret;
	out->valid_end = sp.next;
	out->file_size = sp.file_size;
	out->blocks = sp.blocks;
	out->clean_end = sp.last_type == XTC_BLK_SEGMENT_END;
	out->torn = sp.stop == SEGREAD_PARTIAL || sp.stop == SEGREAD_BAD_HEADER ||
	            sp.stop == SEGREAD_BAD_CRC;
	return 0;
}
