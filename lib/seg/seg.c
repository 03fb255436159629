/*
 * lib/seg/seg.c - the on-disk segment format (proto/xtc_seg.h): CRC-32C,
 * varints, the compact EVENTS record codec, block and file headers, segment
 * file names and the scan of one segment file.
 *
 * Everything that decodes treats its input as untrusted: every read is
 * bounded by the caller's end pointer or the file size, and malformed input
 * yields 0 or -EBADMSG, never a crash.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/seg/seg.h"

/* ---- CRC-32C (Castagnoli), slicing-by-8 ---- */

#define CRC32C_POLY 0x82F63B78u /* reflected 0x1EDC6F41 */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* Build the eight slicing tables once. */
static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

/* CRC-32C of buf with the tables, continuing from crc. */
uint32_t seg_crc32c_table(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8); /* little-endian: proto/xtc_shm.h refuses others */
		w ^= crc;
		crc = crc_tab[7][w & 0xff] ^ crc_tab[6][(w >> 8) & 0xff] ^
		      crc_tab[5][(w >> 16) & 0xff] ^ crc_tab[4][(w >> 24) & 0xff] ^
		      crc_tab[3][(w >> 32) & 0xff] ^ crc_tab[2][(w >> 40) & 0xff] ^
		      crc_tab[1][(w >> 48) & 0xff] ^ crc_tab[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
/* The same CRC with SSE4.2's crc32 instruction: about ten times faster
 * than the tables, which matters because every byte xtcd writes and every
 * byte a reader reads goes through it. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = (uint32_t)~crc;

	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

static int crc_hw = -1;
#endif

int seg_crc32c_has_hw(void)
{
#if defined(__x86_64__)
	if (__atomic_load_n(&crc_hw, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&crc_hw, __builtin_cpu_supports("sse4.2") ? 1 : 0, __ATOMIC_RELAXED);
	return crc_hw;
#else
	return 0;
#endif
}

/* CRC-32C of buf, continuing from crc (0 to start): the instruction where
 * the CPU has it, else the tables. */
uint32_t seg_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (seg_crc32c_has_hw())
		return crc32c_sse42(crc, buf, len);
#endif
	return seg_crc32c_table(crc, buf, len);
}

/* ---- varints ---- */

/* LEB128, inlined into the encoder (the exported copy below cannot be:
 * it may be interposed). */
static inline size_t varint_put(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Write v as LEB128 at out; returns bytes written (1..10). */
size_t seg_varint_put(uint8_t *out, uint64_t v)
{
	return varint_put(out, v);
}

/* Read a LEB128 varint from [p, end); 0 when truncated, too long or
 * overflowing 64 bits. */
size_t seg_varint_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	size_t avail;

	if (!p || !end || p >= end)
		return 0;
	avail = (size_t)(end - p);
	for (size_t i = 0; i < 10 && i < avail; i++) {
		uint8_t b = p[i];

		if (i == 9 && b > 1)
			return 0; /* bits beyond 64 */
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

/* Bytes seg_varint_put would write for v. */
static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Map a signed difference (as two's complement) to an unsigned zigzag. */
static uint64_t zigzag(uint64_t d)
{
	return (d << 1) ^ (0 - (d >> 63));
}

/* Inverse of zigzag(). */
static uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* Read a varint that must fit 32 bits; 0 when it does not. */
static size_t varint_get32(const uint8_t *p, const uint8_t *end, uint32_t *v)
{
	uint64_t x;
	size_t n = seg_varint_get(p, end, &x);

	if (!n || x > UINT32_MAX)
		return 0;
	*v = (uint32_t)x;
	return n;
}

/* ---- the EVENTS record codec ---- */

#define RF_SRC_MASK   0x07u
#define RF_SRC_VARINT 0x07u
#define RF_PID_SAME   0x08u
#define RF_LOOP_SAME  0x10u
#define RF_DET_SHIFT  5
#define RF_DET_MASK   0x60u
#define RF_RESERVED   0x80u
#define DET_VARINT    0u
#define DET_DELTA     1u
#define DET_ZERO      2u
#define KIND_ESCAPE   255u

/* Start an EVENTS body. */
void seg_codec_begin(struct seg_codec *c, uint32_t loop_id, uint64_t first_ts_ns)
{
	c->ts = first_ts_ns;
	c->loop_id = loop_id;
	c->local_id = 0;
	c->gen = 0;
	c->detail = 0;
}

/* log2(source) when source is a single bit 1..64, else -1. */
static int source_bit(uint32_t source)
{
	if (source == 0 || (source & (source - 1)) || source > 64)
		return -1;
	return __builtin_ctz(source);
}

/* Encode the detail field the cheapest way; returns its flag bits. */
static uint8_t put_detail(const struct seg_codec *c, uint64_t detail, uint8_t **pp)
{
	uint64_t delta;

	if (detail == 0)
		return DET_ZERO << RF_DET_SHIFT;
	delta = zigzag(detail - c->detail);
	if (varint_len(delta) < varint_len(detail)) {
		*pp += varint_put(*pp, delta);
		return DET_DELTA << RF_DET_SHIFT;
	}
	*pp += varint_put(*pp, detail);
	return DET_VARINT << RF_DET_SHIFT;
}

/* Encode one record after the previous one in c. */
size_t seg_encode_rec(struct seg_codec *c, uint8_t *out, const xtc_tail_rec_t *r)
{
	uint8_t *p = out, *flagp;
	uint8_t flags = 0;
	int bit = source_bit(r->source);

	if (r->kind < KIND_ESCAPE) {
		*p++ = (uint8_t)r->kind;
	} else {
		*p++ = KIND_ESCAPE;
		p += varint_put(p, r->kind);
	}
	flagp = p++;
	if (bit >= 0) {
		flags |= (uint8_t)bit;
	} else {
		flags |= RF_SRC_VARINT;
		p += varint_put(p, r->source);
	}
	p += varint_put(p, zigzag(r->ts_ns - c->ts));
	if (r->pid.loop_id == c->loop_id && r->pid.local_id == c->local_id &&
	    r->pid.gen == c->gen) {
		flags |= RF_PID_SAME;
	} else {
		if (r->pid.loop_id == c->loop_id)
			flags |= RF_LOOP_SAME;
		else
			p += varint_put(p, r->pid.loop_id);
		p += varint_put(p, r->pid.local_id);
		p += varint_put(p, r->pid.gen);
	}
	flags |= put_detail(c, r->detail, &p);
	*flagp = flags;

	c->ts = r->ts_ns;
	c->loop_id = r->pid.loop_id;
	c->local_id = r->pid.local_id;
	c->gen = r->pid.gen;
	c->detail = r->detail;
	return (size_t)(p - out);
}

/* Decode the kind byte (and its escape varint); 0 when malformed. */
static size_t get_kind(const uint8_t *p, const uint8_t *end, uint32_t *kind)
{
	size_t n;

	if (p >= end)
		return 0;
	if (*p != KIND_ESCAPE) {
		*kind = *p;
		return 1;
	}
	n = varint_get32(p + 1, end, kind);
	if (!n || *kind < KIND_ESCAPE)
		return 0; /* short kinds are never escaped */
	return n + 1;
}

/* Decode the pid fields per flags into r, from the previous record in c. */
static size_t get_pid(const struct seg_codec *c, uint8_t flags, const uint8_t *p,
                      const uint8_t *end, xtc_tail_rec_t *r)
{
	const uint8_t *q = p;
	size_t n;

	r->pid.loop_id = c->loop_id;
	r->pid.local_id = c->local_id;
	r->pid.gen = c->gen;
	if (flags & RF_PID_SAME)
		return 0;
	if (!(flags & RF_LOOP_SAME)) {
		if (!(n = varint_get32(q, end, &r->pid.loop_id)))
			return SIZE_MAX;
		q += n;
	}
	if (!(n = varint_get32(q, end, &r->pid.local_id)))
		return SIZE_MAX;
	q += n;
	if (!(n = seg_varint_get(q, end, &r->pid.gen)))
		return SIZE_MAX;
	q += n;
	return (size_t)(q - p);
}

/* Decode the detail field per its mode; SIZE_MAX when malformed. */
static size_t get_detail(const struct seg_codec *c, unsigned mode, const uint8_t *p,
                         const uint8_t *end, uint64_t *detail)
{
	uint64_t v;
	size_t n;

	if (mode == DET_ZERO) {
		*detail = 0;
		return 0;
	}
	if (mode != DET_VARINT && mode != DET_DELTA)
		return SIZE_MAX;
	if (!(n = seg_varint_get(p, end, &v)))
		return SIZE_MAX;
	*detail = mode == DET_DELTA ? c->detail + unzigzag(v) : v;
	return n;
}

/* Decode one record from [p, end); c and r change only on success. */
size_t seg_decode_rec(struct seg_codec *c, const uint8_t *p, const uint8_t *end,
                      xtc_tail_rec_t *r)
{
	xtc_tail_rec_t rec;
	const uint8_t *q = p;
	uint64_t zts;
	uint8_t flags;
	size_t n;

	if (!p || !end || p >= end)
		return 0;
	if (!(n = get_kind(q, end, &rec.kind)))
		return 0;
	q += n;
	if (q >= end)
		return 0;
	flags = *q++;
	if (flags & RF_RESERVED)
		return 0;
	if ((flags & RF_SRC_MASK) == RF_SRC_VARINT) {
		if (!(n = varint_get32(q, end, &rec.source)))
			return 0;
		q += n;
	} else {
		rec.source = 1u << (flags & RF_SRC_MASK);
	}
	if (!(n = seg_varint_get(q, end, &zts)))
		return 0;
	q += n;
	rec.ts_ns = c->ts + unzigzag(zts);
	if ((n = get_pid(c, flags, q, end, &rec)) == SIZE_MAX)
		return 0;
	q += n;
	n = get_detail(c, (flags & RF_DET_MASK) >> RF_DET_SHIFT, q, end, &rec.detail);
	if (n == SIZE_MAX)
		return 0;
	q += n;

	*r = rec;
	c->ts = rec.ts_ns;
	c->loop_id = rec.pid.loop_id;
	c->local_id = rec.pid.local_id;
	c->gen = rec.pid.gen;
	c->detail = rec.detail;
	return (size_t)(q - p);
}

/* ---- blocks and file headers ---- */

/* CRC of a block header (its crc taken as 0) and its payload. */
static uint32_t blk_crc(const struct xtc_seg_blk_hdr *h, const void *payload, uint32_t len)
{
	struct xtc_seg_blk_hdr tmp = *h;

	tmp.crc = 0;
	return seg_crc32c(seg_crc32c(0, &tmp, sizeof(tmp)), payload, len);
}

/* Fill in a block header for the len payload bytes after it and seal it. */
void seg_blk_seal(struct xtc_seg_blk_hdr *h, uint16_t type, uint16_t flags, uint32_t len)
{
	h->type = type;
	h->flags = flags;
	h->len = len;
	h->crc = 0;
	h->reserved = 0;
	h->crc = blk_crc(h, h + 1, len);
}

void seg_blk_seal_bytes(void *at, uint16_t type, uint16_t flags, uint32_t len)
{
	struct xtc_seg_blk_hdr h = { .type = type, .flags = flags, .len = len };

	h.crc = seg_crc32c(seg_crc32c(0, &h, sizeof h), (const uint8_t *)at + sizeof h, len);
	memcpy(at, &h, sizeof h);
}

/* 0 when the block (header + len payload bytes after it) is valid. */
int seg_blk_verify(const struct xtc_seg_blk_hdr *h)
{
	if (h->type < XTC_BLK_SESSION_START || h->type > XTC_BLK_CORRUPT)
		return -EBADMSG;
	if (h->len > XTC_SEG_MAX_BLOCK)
		return -EBADMSG;
	return blk_crc(h, h + 1, h->len) == h->crc ? 0 : -EBADMSG;
}

/* CRC a file header carries. */
static uint32_t file_hdr_crc(const struct xtc_seg_file_hdr *h)
{
	return seg_crc32c(0, h, offsetof(struct xtc_seg_file_hdr, crc));
}

/* Build a file header. */
void seg_file_hdr_init(struct xtc_seg_file_hdr *h, uint64_t seq, uint64_t next_session_id,
                       uint64_t real_ns, uint64_t mono_ns, const uint8_t boot_id[16],
                       const char *host)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, XTC_SEG_MAGIC, sizeof(h->magic));
	h->version = XTC_SEG_VERSION;
	h->hdr_size = sizeof(*h);
	h->seq = seq;
	h->created_real_ns = real_ns;
	h->created_mono_ns = mono_ns;
	h->next_session_id = next_session_id;
	if (boot_id)
		memcpy(h->boot_id, boot_id, sizeof(h->boot_id));
	if (host)
		strncpy(h->host, host, sizeof(h->host) - 1);
	h->crc = file_hdr_crc(h);
}

/* 0 when magic, version, size and CRC are right, else -EBADMSG. */
int seg_file_hdr_check(const struct xtc_seg_file_hdr *h)
{
	if (memcmp(h->magic, XTC_SEG_MAGIC, sizeof(h->magic)) != 0)
		return -EBADMSG;
	if (h->version != XTC_SEG_VERSION || h->hdr_size != sizeof(*h))
		return -EBADMSG;
	return file_hdr_crc(h) == h->crc ? 0 : -EBADMSG;
}

/* ---- segment file names ---- */

/* "DIR/xtc-000042.seg" into buf; snprintf's result. */
int seg_path(char *buf, size_t len, const char *dir, uint64_t seq)
{
	return snprintf(buf, len, "%s/xtc-%06" PRIu64 ".seg", dir, seq);
}

/*
 * Parse "xtc-<digits>.seg".  Only the canonical spelling seg_path() writes
 * is accepted (six digits zero-padded, more without leading zeros once the
 * number outgrows them): then every accepted name maps to one seq and back
 * to the same name, so a listed segment can always be opened by its number
 * and "xtc-7.seg" next to "xtc-000007.seg" cannot make one seq appear twice.
 */
int seg_name_parse(const char *name, uint64_t *seq)
{
	const char *p;
	uint64_t v = 0;
	size_t nd = 0;
	char canon[32];

	if (!name || strncmp(name, "xtc-", 4) != 0)
		return 0;
	p = name + 4;
	while (p[nd] >= '0' && p[nd] <= '9') {
		unsigned d = (unsigned)(p[nd] - '0');

		if (nd == 20 || v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
		nd++;
	}
	if (nd == 0 || strcmp(p + nd, ".seg") != 0)
		return 0;
	snprintf(canon, sizeof(canon), "%06" PRIu64, v);
	if (strlen(canon) != nd)
		return 0;
	*seq = v;
	return 1;
}

/* qsort order for segment numbers. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Append v to the growing array (*arr, *n, *cap); 0 or -ENOMEM. */
static int push_u64(uint64_t **arr, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		uint64_t *na;

		if (ncap > SIZE_MAX / sizeof(**arr))
			return -ENOMEM;
		na = realloc(*arr, ncap * sizeof(**arr));
		if (!na)
			return -ENOMEM;
		*arr = na;
		*cap = ncap;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

/* Whether entry de of directory d is a regular file, or a link to one (a
 * reader may be pointed at links to segments): a FIFO, device or
 * directory named like a segment is not a segment, and opening a FIFO
 * could block a reader for good.  (xtcd itself never follows a link
 * there: see xtcd/store_recover.c.) */
static int seg_entry_regular(DIR *d, const struct dirent *de)
{
	struct stat sb;

	if (de->d_type == DT_REG)
		return 1;
	if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK)
		return 0;
	return fstatat(dirfd(d), de->d_name, &sb, 0) == 0 && S_ISREG(sb.st_mode);
}

/* The sorted numbers of the segments (regular files) in dir. */
int seg_list(const char *dir, uint64_t **out, size_t *n)
{
	uint64_t *arr = NULL, seq;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	*out = NULL;
	*n = 0;
	d = opendir(dir);
	if (!d)
		return -errno;
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			ret = -errno;
			break;
		}
		if (seg_name_parse(de->d_name, &seq) && seg_entry_regular(d, de) &&
		    (ret = push_u64(&arr, &cnt, &cap, seq)) < 0)
			break;
	}
	closedir(d);
	if (ret < 0) {
		free(arr);
		return ret;
	}
	if (cnt)
		qsort(arr, cnt, sizeof(*arr), cmp_u64);
	*out = arr;
	*n = cnt;
	return 0;
}

int seg_dir_usage(const char *dir, uint64_t *segs, uint64_t *bytes, uint64_t *first,
                  uint64_t *last)
{
	uint64_t *seqs;
	size_t n;
	char path[4096];
	struct stat sb;
	int err;

	*segs = *bytes = *first = *last = 0;
	if ((err = seg_list(dir, &seqs, &n)) < 0)
		return err;
	for (size_t i = 0; i < n; i++) {
		seg_path(path, sizeof(path), dir, seqs[i]);
		if (stat(path, &sb) == 0)
			*bytes += (uint64_t)sb.st_size;
	}
	*segs = n;
	if (n) {
		*first = seqs[0];
		*last = seqs[n - 1];
	}
	free(seqs);
	return 0;
}

int seg_oldest_above(const char *dir, uint64_t seq, uint64_t *out)
{
	uint64_t *seqs;
	size_t n;
	int ret = seg_list(dir, &seqs, &n);

	*out = 0;
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n; i++) {
		if (seqs[i] > seq && seqs[i] <= SEG_SEQ_MAX) {
			*out = seqs[i];
			break;
		}
	}
	free(seqs);
	return 0;
}

int seg_begun(const char *dir, uint64_t seq)
{
	char path[PATH_MAX];
	struct stat st;

	if (seg_path(path, sizeof(path), dir, seq) >= (int)sizeof(path))
		return 0;
	return stat(path, &st) == 0 && st.st_size >= (off_t)sizeof(struct xtc_seg_file_hdr);
}
