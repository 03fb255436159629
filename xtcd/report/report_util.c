/*
 * xtcd/report/report_util.c - the small tools of xtcd --report: a hash map, a
 * log-linear histogram, the timeline's lanes, time and number formatting.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xtcd/report/report_int.h"

/* ---- hash map ---- */

/* Mix a 3-word key into a slot number. */
static size_t key_hash(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ c * 0x165667b19e3779f9ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (size_t)x;
}

/* The slot holding (a, b, c), or the empty one where it would go. */
static size_t map_probe(const struct rp_map *m, uint64_t a, uint64_t b, uint64_t c)
{
	size_t mask = m->cap - 1, i = key_hash(a, b, c) & mask;

	while (m->vals[i] != RP_NONE) {
		const uint64_t *k = &m->keys[3 * i];

		if (k[0] == a && k[1] == b && k[2] == c)
			break;
		i = (i + 1) & mask;
	}
	return i;
}

/* Double the map; 0 or -ENOMEM. */
static int map_grow(struct rp_map *m)
{
	struct rp_map nm = { .cap = m->cap ? m->cap * 2 : 1024, .n = m->n };

	nm.keys = malloc(nm.cap * 3 * sizeof(*nm.keys));
	nm.vals = malloc(nm.cap * sizeof(*nm.vals));
	if (!nm.keys || !nm.vals) {
		free(nm.keys);
		free(nm.vals);
		return -ENOMEM;
	}
	memset(nm.vals, 0xff, nm.cap * sizeof(*nm.vals));
	for (size_t i = 0; i < m->cap; i++) {
		const uint64_t *k = &m->keys[3 * i];
		size_t j;

		if (m->vals[i] == RP_NONE)
			continue;
		j = map_probe(&nm, k[0], k[1], k[2]);
		memcpy(&nm.keys[3 * j], k, 3 * sizeof(*k));
		nm.vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	*m = nm;
	return 0;
}

/* Look up (and with insert, add) a key. */
uint32_t *rp_map_get(struct rp_map *m, uint64_t a, uint64_t b, uint64_t c, int insert)
{
	size_t i;

	if (m->cap == 0) {
		if (!insert || map_grow(m) < 0)
			return NULL;
	}
	i = map_probe(m, a, b, c);
	if (m->vals[i] != RP_NONE)
		return &m->vals[i];
	if (!insert)
		return NULL;
	if ((m->n + 1) * 4 > m->cap * 3) {
		if (map_grow(m) < 0)
			return NULL;
		i = map_probe(m, a, b, c);
	}
	m->keys[3 * i] = a;
	m->keys[3 * i + 1] = b;
	m->keys[3 * i + 2] = c;
	m->n++;
	return &m->vals[i];
}

/* Free a map's tables. */
void rp_map_free(struct rp_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* Grow an array to hold need elements.  Large elements (a session's
 * loops) start one at a time: most sessions have one loop, and thousands
 * of short sessions must not hold room for eight each. */
int rp_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : elem >= 256 ? 1 : 8;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* ---- histogram ---- */

/* Exact below RP_HIST_SUB; above, 32 linear buckets per power of two. */
static unsigned hist_index(uint64_t v)
{
	unsigned e;

	if (v < RP_HIST_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);          /* >= 5 */
	return RP_HIST_SUB + (e - 5) * RP_HIST_SUB + (unsigned)((v >> (e - 5)) & (RP_HIST_SUB - 1));
}

/* The lowest value that lands in bucket i. */
uint64_t rp_hist_low(unsigned i)
{
	unsigned e, sub;

	if (i < RP_HIST_SUB)
		return i;
	e = (i - RP_HIST_SUB) / RP_HIST_SUB + 5;
	sub = (i - RP_HIST_SUB) % RP_HIST_SUB;
	return (uint64_t)(RP_HIST_SUB + sub) << (e - 5);
}

/* Count one value. */
int rp_hist_add(struct rp_hist *h, uint64_t v)
{
	unsigned i = hist_index(v), k = i / RP_HIST_SUB;

	if (!h->run && !(h->run = calloc(RP_HIST_RUNS, sizeof(*h->run))))
		return -ENOMEM;
	if (!h->run[k] && !(h->run[k] = calloc(RP_HIST_SUB, sizeof(*h->run[k]))))
		return -ENOMEM;
	if (h->n == 0 || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
	h->sum += v;
	h->run[k][i % RP_HIST_SUB]++;
	return 0;
}

/* The count in bucket i. */
uint64_t rp_hist_count(const struct rp_hist *h, unsigned i)
{
	const uint64_t *run = h->run ? h->run[i / RP_HIST_SUB] : NULL;

	return run ? run[i % RP_HIST_SUB] : 0;
}

/* The value at quantile q: the top of the bucket holding it. */
uint64_t rp_hist_quantile(const struct rp_hist *h, double q)
{
	uint64_t want, seen = 0;

	if (h->n == 0)
		return 0;
	if (q >= 1.0)
		return h->max;
	want = (uint64_t)(q * (double)h->n);
	if ((double)want < q * (double)h->n)
		want++;
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < RP_HIST_N; i++) {
		if (!h->run[i / RP_HIST_SUB]) {
			i += RP_HIST_SUB - 1;       /* a run never counted in */
			continue;
		}
		seen += h->run[i / RP_HIST_SUB][i % RP_HIST_SUB];
		if (seen >= want) {
			uint64_t top = i + 1 < RP_HIST_N ? rp_hist_low(i + 1) - 1 : UINT64_MAX;

			return top < h->max ? (top > h->min ? top : h->min) : h->max;
		}
	}
	return h->max;
}

/* Free a histogram's buckets (it reads as empty after). */
void rp_hist_free(struct rp_hist *h)
{
	for (unsigned k = 0; h->run && k < RP_HIST_RUNS; k++)
		free(h->run[k]);
	free(h->run);
	memset(h, 0, sizeof(*h));
}

/* ---- timeline lanes ---- */

#define TL_NCHUNKS (RP_TL_BINS / RP_TL_CHUNK)

/* Add v to one lane of a bin. */
int rp_tl_add(struct rp_tl *tl, size_t bin, unsigned lane, uint64_t v)
{
	struct rp_tl_bin **c;

	if (!tl->chunk && !(tl->chunk = calloc(TL_NCHUNKS, sizeof(*tl->chunk))))
		return -ENOMEM;
	c = &tl->chunk[bin / RP_TL_CHUNK];
	if (!*c && !(*c = calloc(RP_TL_CHUNK, sizeof(**c))))
		return -ENOMEM;
	(*c)[bin % RP_TL_CHUNK].v[lane] += v;
	return 0;
}

/* One lane of a bin. */
uint64_t rp_tl_get(const struct rp_tl *tl, size_t bin, unsigned lane)
{
	const struct rp_tl_bin *c = tl->chunk ? tl->chunk[bin / RP_TL_CHUNK] : NULL;

	return c ? c[bin % RP_TL_CHUNK].v[lane] : 0;
}

/* Pairs of bins of chunk c (NULL: zero) summed into half a chunk. */
static void tl_fold_half(struct rp_tl_bin *half, const struct rp_tl_bin *c)
{
	for (size_t i = 0; i < RP_TL_CHUNK / 2; i++)
		for (unsigned k = 0; k < RP_LANES; k++)
			half[i].v[k] = c ? c[2 * i].v[k] + c[2 * i + 1].v[k] : 0;
}

/* Halve the resolution.  New chunk j comes from old chunks 2j and 2j+1,
 * which no earlier step wrote, so it can go in place; it reuses one of
 * their allocations. */
void rp_tl_fold(struct rp_tl *tl)
{
	struct rp_tl_bin tmp[RP_TL_CHUNK];

	for (size_t j = 0; tl->chunk && j < TL_NCHUNKS / 2; j++) {
		struct rp_tl_bin *lo = tl->chunk[2 * j], *hi = tl->chunk[2 * j + 1];
		struct rp_tl_bin *keep = lo ? lo : hi;

		if (keep) {
			tl_fold_half(tmp, lo);
			tl_fold_half(tmp + RP_TL_CHUNK / 2, hi);
			memcpy(keep, tmp, sizeof(tmp));
			if (lo && hi)
				free(hi);
		}
		tl->chunk[j] = keep;
	}
	for (size_t j = TL_NCHUNKS / 2; tl->chunk && j < TL_NCHUNKS; j++)
		tl->chunk[j] = NULL;
}

/* Free the lanes (they read zero after). */
void rp_tl_free(struct rp_tl *tl)
{
	for (size_t j = 0; tl->chunk && j < TL_NCHUNKS; j++)
		free(tl->chunk[j]);
	free(tl->chunk);
	tl->chunk = NULL;
}

/* ---- formatting ---- */

/* A section of text: its heading, then one part per session in view. */
void report_text_sessions(struct report *rep, const char *heading,
                          void (*part)(struct report *rep, struct rp_sess *s))
{
	fprintf(rep->out, "\n%s\n", heading);
	if (!rep->view_events) {
		fprintf(rep->out, "  no data: no records match\n");
		return;
	}
	for (size_t i = 0; i < rep->nsess; i++)
		if (rep->sess[i]->view_events)
			part(rep, rep->sess[i]);
}

/* A kind's name. */
const char *rp_kind(uint32_t kind)
{
	static char other[24];

	return segname_kind(kind, other, sizeof(other));
}
